"""``snapcheck verify-all``: the main job of the README quickstart (command A).

End-to-end validation on the embedded default, in stages:

1. **golden traces**: every trace in ``traces/examples/`` is checked and its
   verdict compared with the one it states in ``metadata.expected`` (CheckMate's
   Figures 2, 4 and 5 and the worked examples of docs/theory.md);
2. **specs**: every TLA+ specification's default configurations are model
   checked with TLC and compared with the manifest (``snapcheck specs check``);
3. **spark**: randomized validation of every protocol and mutant, simulated
   and checked on Spark local mode (``snapcheck validate``).

Each stage prints its own table; a summary of the stages ends the run. Exit 0
when every stage passes, 1 otherwise.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import click
from rich.table import Table

from snapcheck.checker import CheckOptions, check_trace
from snapcheck.checker.expected import compare_expected, options_from_expected
from snapcheck.console import make_console
from snapcheck.traces import read_trace
from snapcheck.traces.errors import EXIT_CLEAN, EXIT_VIOLATION
from snapcheck.traces.golden import golden_dir

console = make_console()


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
        got = report.verdict + (": " + ", ".join(kinds) if kinds else "")
        useless = " ".join(f"{p}:{x}" for p, x in sorted(report.useless)) or "-"
        table.add_row(
            path.stem, want, got, useless, "[green]yes[/]" if not problems else "[red]NO[/]: " + "; ".join(problems)
        )
    return table, mismatches


def run_stage(argv: list[str]) -> tuple[int, float]:
    """Run one stage as ``snapcheck ARGV...`` in a child process (its own JVM, if any);
    its output streams through. Returns (exit code, seconds)."""
    start = time.perf_counter()
    rc = subprocess.call([sys.executable, "-m", "snapcheck", *argv])
    return rc, time.perf_counter() - start


@click.command("verify-all")
@click.option(
    "--golden",
    "golden",
    type=click.Path(file_okay=False, exists=True),
    default=None,
    help="Directory of golden traces (default: the ones shipped in traces/examples).",
)
@click.option("--skip-specs", is_flag=True, help="Do not model-check the TLA+ specifications.")
@click.option("--skip-spark", is_flag=True, help="Do not run the randomized Spark validation.")
@click.option(
    "--traces",
    "-n",
    "n_traces",
    type=click.IntRange(1),
    default=3_000,
    show_default=True,
    help="Number of simulated runs in the Spark validation stage.",
)
@click.option("--master", default="local[*]", show_default=True, help="Spark master for the validation stage.")
def verify_all(golden: str | None, skip_specs: bool, skip_spark: bool, n_traces: int, master: str) -> None:
    """Run the main job: golden traces, TLA+ specs with TLC, randomized validation on Spark."""
    summary = Table(title="verify-all", title_justify="left")
    for col in ("stage", "result", "seconds"):
        summary.add_column(col)
    failed = 0

    start = time.perf_counter()
    table, bad = check_golden(Path(golden) if golden else golden_dir())
    console.print(table)
    failed += bool(bad)
    summary.add_row(
        "golden traces",
        "[green]pass[/]" if not bad else f"[red]FAIL[/] ({bad} mismatch(es))",
        f"{time.perf_counter() - start:.1f}",
    )

    stages, skipped = [], []
    for name, skip, argv in (
        ("TLA+ specs (TLC)", skip_specs, ["specs", "check"]),
        ("Spark validation", skip_spark, ["validate", "--traces", str(n_traces), "--master", master]),
    ):
        if skip:
            skipped.append(name)
            summary.add_row(name, "[yellow]skipped[/]", "-")
        else:
            stages.append((name, argv))
    for name, argv in stages:
        console.rule(f"{name}: snapcheck {' '.join(argv)}")
        rc, seconds = run_stage(argv)
        failed += rc != 0
        summary.add_row(name, "[green]pass[/]" if rc == 0 else f"[red]FAIL[/] (exit {rc})", f"{seconds:.1f}")

    console.print(summary)
    if failed:
        console.print(f"[red]FAILED[/]: {failed} stage(s) did not pass")
        sys.exit(EXIT_VIOLATION)
    if skipped:
        console.print(f"[green]OK[/]: every stage that ran passed; [yellow]skipped[/]: {', '.join(skipped)}")
    else:
        console.print("[green]OK[/]: every stage passed")
    sys.exit(EXIT_CLEAN)


def register(group: click.Group) -> None:
    group.add_command(verify_all)
