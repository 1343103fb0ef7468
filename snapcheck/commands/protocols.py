"""``snapcheck protocols``: the protocol catalogue, one row per protocol with the facts
it declares and its mutants (``--json`` for machines, ``--markdown`` for the docs, whose
tables are generated from it)."""

from __future__ import annotations

import click
import orjson
from rich.markup import escape
from rich.table import Table

from snapcheck.console import echo, make_console

console = make_console()


def catalogue_rows(specs: tuple[str, ...] = ()) -> list[dict]:
    """The catalogue rows (``reference.catalogue.entry``): of the user's ``MODULE:CLASS``
    protocols named in ``specs`` if any, else of the built-in protocols and mutants. A
    user's mutant row also lists, as ``problems``, why a campaign would refuse its
    ``expect`` or ``prop`` (``checker.report.expectation_problems``)."""
    from snapcheck.checker.report import expectation_problems
    from snapcheck.reference.catalogue import MUTANTS, PROTOCOLS, entry, resolve

    classes = [resolve(s) for s in specs] if specs else list(PROTOCOLS.values()) + list(MUTANTS.values())
    rows = [entry(cls) for cls in classes]
    for row, cls in zip(rows, classes):
        if specs and cls.mutant_of:
            row["problems"] = expectation_problems(cls.expect, cls.prop)
    return rows


def markdown_tables(rows: list[dict]) -> str:
    """The protocol and mutant tables of docs/protocols.md, in Markdown."""

    def cell(v) -> str:
        if v is None or v == [] or v == "":
            return "-"
        if isinstance(v, bool):
            return "yes" if v else "no"
        if isinstance(v, list):
            return ", ".join(str(x) for x in v)
        return str(v).replace("|", "\\|")

    out = [
        "| protocol | family | topologies | rounds in flight | recovery | aligned | guarantees | "
        "TLA+ trace spec | oracle | mutants |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "mutant_of" in r:
            continue
        out.append(
            f"| `{r['name']}` | {r['family']} | {r['topologies']} | {cell(r['max_rounds_in_flight'])} | "
            f"{cell(r['recovery_modes'])} | {cell(r['aligned'])} | {cell(r['guarantees'])} | "
            f"{cell(r['tla'])} | {cell(r['failure_free_oracle'])} | {cell(r['mutants'])} |"
        )
    out += [
        "",
        "| mutant | of | what is broken | bug behind it | checker reports (property) |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        if "mutant_of" in r:
            out.append(
                f"| `{r['name']}` | `{r['mutant_of']}` | {cell(r['summary'])} | {cell(r['bug'])} | "
                f"{' or '.join(r['expect'])} ({r['prop']}) |"
            )
    return "\n".join(out) + "\n"


@click.command("protocols")
@click.argument("specs", nargs=-1, metavar="[MODULE:CLASS]...")
@click.option("--json", "as_json", is_flag=True, help="Print the catalogue as JSON (one object per protocol).")
@click.option("--markdown", is_flag=True, help="Print the tables of docs/protocols.md.")
def protocols_cmd(specs: tuple[str, ...], as_json: bool, markdown: bool) -> None:
    """The protocol catalogue: every protocol and mutant with the facts it declares.

    Given protocols from your own modules (MODULE:CLASS or path/to/file.py:CLASS), lists
    those alone, read the same way the campaigns and the checker read them; a mutant
    whose expect or prop a campaign would refuse is then exit 2, after the listing.
    """
    rows = catalogue_rows(specs)
    _list(rows, as_json, markdown, bool(specs))
    problems = [f"mutant {spec}: {p}" for spec, r in zip(specs, rows) for p in r.get("problems", ())]
    if problems:
        from snapcheck.traces.errors import UsageError

        raise UsageError("; ".join(problems))


def _list(rows: list[dict], as_json: bool, markdown: bool, own: bool) -> None:
    if as_json:
        echo(orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode())
        return
    if markdown:
        echo(markdown_tables(rows), nl=False)
        return
    table = Table(title="protocols", title_justify="left")
    for col in ("protocol", "family", "topologies", "rounds", "recovery", "guarantees", "TLA+", "mutants"):
        table.add_column(col, overflow="fold")
    for r in rows:
        if "mutant_of" not in r:
            table.add_row(
                escape(r["name"]),
                r["family"],
                r["topologies"],
                str(r["max_rounds_in_flight"] or "any"),
                ", ".join(r["recovery_modes"]),
                ", ".join(r["guarantees"]) or "-",
                r["tla"] or "-",
                str(len(r["mutants"])),
            )
    if table.row_count:
        console.print(table)
    mutants = Table(title="mutants", title_justify="left")
    for col in ("mutant", "of", "bug behind it", "checker reports"):
        mutants.add_column(col, overflow="fold")
    for r in rows:
        if "mutant_of" in r:
            mutants.add_row(*(escape(str(x)) for x in (r["name"], r["mutant_of"], r["bug"], " or ".join(r["expect"]))))
    if mutants.row_count:
        console.print(mutants)
    if own:
        console.print("(the built-in protocols and mutants: snapcheck protocols)")


def register(group) -> None:
    group.add_command(protocols_cmd)
