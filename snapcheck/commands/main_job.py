"""``snapcheck verify-all``: the main job of the README quickstart (command A).

It checks every golden trace in ``traces/examples/`` with the checker and
compares the verdict with the one the trace states in ``metadata.expected``
(CheckMate's Figures 2, 4 and 5 and theory.md's worked examples), printing a
verdict table. Exit 0 when every verdict is as expected, 1 otherwise.
"""

from __future__ import annotations

import shutil
import sys
import time
from importlib import resources
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from checker import CheckOptions, check_trace
from checker.expected import compare_expected, options_from_expected
from snapcheck.errors import EXIT_CLEAN, EXIT_VIOLATION
from traces import read_trace

console = Console(highlight=False, width=shutil.get_terminal_size((120, 24)).columns)


def golden_dir() -> Path:
    return Path(str(resources.files("traces").joinpath("examples")))


def check_golden(directory: Path) -> tuple[Table, int]:
    """Check every golden trace; return the verdict table and the number of mismatches."""
    table = Table(title=f"Golden traces ({directory})", title_justify="left")
    for col in ("trace", "expected", "got", "useless checkpoints", "as expected"):
        table.add_column(col, overflow="fold")
    mismatches = 0
    for path in sorted(directory.glob("*.jsonl")):
        trace = read_trace(path)
        expected = trace.header.expected or {}
        report = check_trace(trace, options_from_expected(trace, CheckOptions()))
        problems = compare_expected(trace, report)
        mismatches += bool(problems)
        want = expected.get("verdict", "?")
        if expected.get("violations"):
            want += ": " + ", ".join(sorted(expected["violations"]))
        kinds = sorted({v.kind for v in report.violations})
        got = "clean" if report.ok else "violation: " + ", ".join(kinds)
        useless = " ".join(f"{p}:{x}" for p, x in sorted(report.useless)) or "-"
        table.add_row(path.stem, want, got, useless,
                      "[green]yes[/]" if not problems else "[red]NO[/]: " + "; ".join(problems))
    return table, mismatches


@click.command("verify-all")
@click.option("--golden", "golden", type=click.Path(file_okay=False, exists=True), default=None,
              help="Directory of golden traces (default: the ones shipped in traces/examples).")
def verify_all(golden: str | None) -> None:
    """Run the main job: check the golden traces against their expected verdicts."""
    start = time.perf_counter()
    table, bad = check_golden(Path(golden) if golden else golden_dir())
    console.print(table)
    elapsed = time.perf_counter() - start
    if bad:
        console.print(f"[red]FAILED[/]: {bad} golden trace(s) did not give their expected verdict ({elapsed:.1f} s)")
        sys.exit(EXIT_VIOLATION)
    console.print(f"[green]OK[/]: every golden trace gave its expected verdict ({elapsed:.1f} s)")
    sys.exit(EXIT_CLEAN)


def register(group: click.Group) -> None:
    group.add_command(verify_all)
