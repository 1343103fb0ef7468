"""``snapcheck replay``, ``render``, ``shrink`` and ``shiviz``: seeing why a trace fails.

The libraries live in ``snapcheck.debug``; these commands parse options, run
the checker where violations are needed, and print or write the results.
"""

from __future__ import annotations

import json
import sys

import click
from rich.console import Console

from snapcheck.debug.findings import Findings, check_options, findings_from_report, options_dict, run_checker
from snapcheck.errors import UsageError
from traces import read_trace
from traces.model import Trace

_TRACE = click.argument("trace_path", metavar="TRACE", type=click.Path(dir_okay=False))


def _failures(value: str | None):
    if value is None:
        return None
    return "all" if value == "all" else [p for p in value.split(",") if p]


def _cut(value: str | None) -> dict | None:
    """``P0=1,P1=V`` -> ``{"P0": 1, "P1": "V"}``."""
    if value is None:
        return None
    out = {}
    for item in value.split(","):
        proc, sep, c = item.partition("=")
        if not sep or not proc or not (c == "V" or c.isdigit()):
            raise UsageError(f"bad --cut item {item!r}: use PROC=CKPT or PROC=V, comma-separated")
        out[proc] = c if c == "V" else int(c)
    return out


def _check_opts(f):
    f = click.option("--cut", default=None, help="Global checkpoint to analyse, e.g. P0=1,P1=V.")(f)
    f = click.option("--semantics", type=click.Choice(["partial", "restart-all"]), default=None,
                     help="Recovery semantics (default: the trace's expected.check, else partial).")(f)
    f = click.option("--failures", default=None, help="Failed processes (comma-separated) or 'all'.")(f)
    return f


def _findings(trace: Trace, failures, semantics, cut, required: bool) -> tuple[object | None, Findings, str]:
    """Run the checker; without it (``required`` False) return empty findings and a note."""
    try:
        opts = check_options(trace, failures=_failures(failures), semantics=semantics, cut=_cut(cut))
        report = run_checker(trace, opts)
    except (ImportError, UsageError) as exc:
        if required:
            raise UsageError(str(exc)) from None
        return None, Findings(), f"(no violations shown: {exc})"
    return report, findings_from_report(trace, report), ""


# -- replay ----------------------------------------------------------------------
@click.command("replay")
@_TRACE
@click.option("--until", "until", type=int, default=None, metavar="N",
              help="Print the state after the first N events and exit.")
@click.option("--until-line", type=int, default=None, metavar="L",
              help="Print the state once every event up to file line L is applied, and exit.")
@click.option("--at-violation", "at_violation", type=int, default=None, is_flag=False, flag_value=1,
              metavar="[K]", help="Print the state where violation K (default 1) becomes visible, and exit.")
@click.option("--json", "as_json", is_flag=True, help="Print the state as JSON (with --until/--at-violation).")
@click.option("--no-check", is_flag=True, help="Do not run the checker (no violation jumping).")
@click.option("--all-channels", is_flag=True, help="Also list channels with nothing in flight or recorded.")
@click.option("--commands", "-c", "commands", default=None,
              help="Run these ';'-separated stepper commands instead of reading the terminal.")
@_check_opts
def replay(trace_path, until, until_line, at_violation, as_json, no_check, all_channels, commands,
           failures, semantics, cut) -> None:
    """Step through TRACE event by event and see every process and channel.

    Interactive (default): a prompt takes commands (n, p, g N, v, b proc P, c, h, q, ...;
    type h). Shown per process: checkpoint interval, last checkpoint, blocked and
    recording channels, protocol variables; per channel: in-flight messages, recorded
    channel state, sender log; and the violations the checker finds where they become
    visible. With --until N, --until-line L or --at-violation [K] the state at that point
    is printed (as JSON with --json) for scripts.
    """
    from snapcheck.debug.stepper import Stepper

    trace = read_trace(trace_path)
    report, findings, note = (None, Findings(), "") if no_check else \
        _findings(trace, failures, semantics, cut, required=at_violation is not None)
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 140)
    stepper = Stepper(trace, findings, console=console, show_all_channels=all_channels)
    targets = [x is not None for x in (until, until_line, at_violation)]
    if sum(targets) > 1:
        raise UsageError("give at most one of --until, --until-line, --at-violation")
    if any(targets):
        violation = None
        if until is not None:
            if not 0 <= until <= len(trace.events):
                raise UsageError(f"--until {until}: the trace has events 0..{len(trace.events)}")
            stepper.replay.goto(until)
        elif until_line is not None:
            stepper.replay.goto_line(until_line)
        else:
            if not findings.items:
                click.echo("no violation found" + (f" {note}" if note else ""))
                return
            if not 1 <= at_violation <= len(findings.items):
                raise UsageError(f"--at-violation {at_violation}: there are {len(findings.items)} violation(s)")
            violation = findings.items[at_violation - 1]
            stepper.replay.goto(violation.position)
        if as_json:
            out = stepper.replay.state.to_json()
            out["violations_here"] = [_finding_json(f) for f in findings.at(stepper.replay.position)]
            if violation is not None:
                out["violation"] = _finding_json(violation)
            click.echo(json.dumps(out, indent=1, default=str))
        else:
            stepper.show()
        return
    if as_json:
        raise UsageError("--json needs --until, --until-line or --at-violation")
    if note:
        console.print(note, markup=False)
    if commands is not None:
        stepper.loop([c for c in commands.split(";")])
    else:
        stepper.loop()


def _finding_json(f) -> dict:
    return {"number": f.number, "kind": f.kind, "property": f.property, "subject": f.subject,
            "message": f.message, "lines": f.lines, "position": f.position,
            "witness": {"messages": f.messages, "checkpoints": [list(c) for c in f.checkpoints], "cut": f.cut}}


# -- render ------------------------------------------------------------------------
def _window(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    a, sep, b = value.partition(":")
    if not sep or not a.isdigit() or not b.isdigit():
        raise UsageError(f"bad --window {value!r}: use START:END (event numbers, e.g. 100:250)")
    return int(a), int(b)


@click.command("render")
@_TRACE
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Image to write: .svg, .png or .pdf.")
@click.option("--layout", type=click.Choice(["lamport", "file", "time"]), default="lamport", show_default=True,
              help="x axis: compact logical time, file order, or the events' t.")
@click.option("--window", default=None, metavar="A:B", help="Draw only events A..B (1-based event numbers).")
@click.option("--procs", default=None, help="Draw only these processes (comma-separated).")
@click.option("--line", "line", default="auto", show_default=True,
              help="Recovery line to draw: a failure-set label of the report ('none', 'all', 'P0', ...), "
                   "'auto', or 'off'.")
@click.option("--violation", "only", type=int, multiple=True, help="Highlight only violation K (repeatable).")
@click.option("--labels/--no-labels", default=None, help="Label every message (default: only when few).")
@click.option("--no-check", is_flag=True, help="Do not run the checker (plain diagram).")
@click.option("--title", default=None, help="Diagram title.")
@_check_opts
def render(trace_path, output, layout, window, procs, line, only, labels, no_check, title,
           failures, semantics, cut) -> None:
    """Draw TRACE as a space-time diagram (one lane per process, messages as arrows).

    Barriers are dashed; checkpoints are marked by kind; with the checker's findings the
    recovery line, the orphan / dropped / phantom messages, and Z-cycle witnesses with
    their useless checkpoints are highlighted.
    """
    from snapcheck.debug.render import RenderOptions, render as draw

    trace = read_trace(trace_path)
    _, findings, note = (None, Findings(), "") if no_check else \
        _findings(trace, failures, semantics, cut, required=False)
    opts = RenderOptions(layout=layout, window=_window(window), procs=procs.split(",") if procs else None,
                         recovery_line=None if line == "off" else line, only=list(only) or None,
                         labels=labels, title=title)
    draw(trace, output, findings, opts)
    click.echo(f"wrote {output} ({len(trace.events)} events, {len(trace.processes)} processes"
               + (f", {len(findings.items)} violation(s) highlighted" if findings.items else "") + ")"
               + (f" {note}" if note else ""))


# -- shrink ------------------------------------------------------------------------
@click.command("shrink")
@_TRACE
@click.option("--property", "-p", "prop", required=True,
              help="The property (e.g. consistency, channel-state, z-cycles) or violation kind (e.g. orphan) "
                   "that must keep failing.")
@click.option("--kind", default=None, help="The violation kind to keep (default: the first one found).")
@click.option("-o", "--output", default=None, type=click.Path(dir_okay=False),
              help="Where to write the shrunk trace (default: TRACE with .shrunk.jsonl).")
@_check_opts
def shrink(trace_path, prop, kind, output, failures, semantics, cut) -> None:
    """Delta-debug TRACE (ddmin) to a 1-minimal trace with the same violation.

    The result still violates the same property with the same kind of witness, and
    removing any single remaining element (a process, channel, message, processing,
    checkpoint, failure, record entry, ...) makes that violation disappear.
    """
    from checker import CheckOptions

    from snapcheck.debug.shrink import ShrinkError, checker_predicate, shrink_trace
    from traces.jsonl import dumps_trace

    trace = read_trace(trace_path)
    base = options_dict(trace, failures=_failures(failures), semantics=semantics, cut=_cut(cut))
    prop, kind = _target(trace, prop, kind, base)

    def options(d: dict):
        return CheckOptions(properties={prop}, **d)

    try:
        res = shrink_trace(trace, checker_predicate(prop, kind, options), base, kind, prop)
    except ShrinkError as exc:
        raise UsageError(str(exc)) from None
    header = res.trace.header
    header.metadata = {k: v for k, v in header.metadata.items() if k != "expected"}
    report = run_checker(res.trace, options(res.options))
    expected = {"verdict": "violation", "violations": sorted({v.kind for v in report.violations})}
    if res.options:
        expected["check"] = res.options
    header.metadata["expected"] = expected
    header.metadata["shrunk_from"] = {"trace": trace_path, "events": len(trace.events),
                                      "property": prop, "kind": kind}
    out = output or (trace_path.rsplit(".", 1)[0] + ".shrunk.jsonl")
    with open(out, "wb") as fh:
        fh.write(dumps_trace(header, res.trace.events))
    click.echo(f"shrunk {len(trace.events)} events -> {len(res.trace.events)} events "
               f"({len(res.trace.processes)} processes; {res.tests} checker runs), still {kind} ({prop}); "
               f"1-minimal; wrote {out}")
    for v in report.violations:
        if v.kind == kind and v.property == prop:
            click.echo(v.message)
            break


def _target(trace: Trace, prop: str, kind: str | None, base: dict) -> tuple[str, str]:
    """Resolve ``--property`` (a property or a kind) and ``--kind`` to (property, kind)."""
    from checker import CheckOptions

    report = run_checker(trace, CheckOptions(properties=None, **base))
    by_kind = [v for v in report.violations if v.kind == prop]
    if by_kind and kind in (None, prop):
        return by_kind[0].property, prop
    try:
        report = run_checker(trace, CheckOptions(properties={prop}, **base))
    except (ValueError, KeyError) as exc:
        raise UsageError(f"unknown property or violation kind {prop!r}: {exc}") from None
    found = [v for v in report.violations if v.property == prop and (kind is None or v.kind == kind)]
    if not found:
        what = f"a {kind} violation of {prop}" if kind else f"a violation of {prop!r}"
        raise UsageError(f"{trace.path}: the checker finds no {what}; nothing to shrink")
    return prop, found[0].kind


# -- shiviz ------------------------------------------------------------------------
@click.command("shiviz")
@_TRACE
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="The log file to write.")
def shiviz(trace_path, output) -> None:
    """Export TRACE as a ShiViz log (vector clocks) to view it in ShiViz.

    The file's first line is the log-parsing regular expression and its second line
    the (empty) executions delimiter, as ShiViz expects of an uploaded log.
    """
    from snapcheck.debug.shiviz import SHIVIZ_REGEX, write_shiviz

    trace = read_trace(trace_path)
    n = write_shiviz(trace, output)
    click.echo(f"wrote {output} ({n} events, {len(trace.processes)} hosts)")
    click.echo(f"ShiViz log parsing regular expression: {SHIVIZ_REGEX}")


def register(group: click.Group) -> None:
    for cmd in (replay, render, shrink, shiviz):
        group.add_command(cmd)

