"""``snapcheck check``: verify traces (consistency, channel state, Z-cycles, recovery
lines, observed recoveries, exactly-once, rounds, RDT). See docs/checker.md."""

from __future__ import annotations

import sys

import click
import orjson

from snapcheck.options import cut_option
from snapcheck.traces.errors import EXIT_CLEAN, EXIT_VIOLATION, UsageError


@click.command("check")
@click.argument("traces", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the JSON report (schema in docs/checker.md).")
@click.option("--junit", "junit_file", type=click.Path(dir_okay=False), default=None,
              help="Write JUnit XML: one test case per property per round/cut/recovery.")
@click.option("--property", "-p", "properties", multiple=True,
              help="Check only this property (repeatable): consistency, channel-state, termination, z-cycles, "
                   "recovery-line, observed-recovery, exactly-once, rdt.")
@cut_option("Explicit global checkpoint to analyse, e.g. P0=1,P1=V.")
@click.option("--failures", default=None, help="Failure set for the recovery line: P0,P1 or all.")
@click.option("--semantics", type=click.Choice(["partial", "restart-all"]), default=None,
              help="partial: survivors may keep their current state (default); restart-all: CheckMate.")
@click.option("--z3", "use_z3", is_flag=True, help="Prove the recovery line maximal with z3 (unsat certificate).")
@click.option("--z3-min-replay", is_flag=True, help="Also find the line with the fewest messages to replay (z3).")
@click.option("--expect", is_flag=True,
              help="Compare with each trace's metadata.expected; exit 1 on a mismatch, 0 when all hold.")
@click.option("--verbose", "-v", is_flag=True, help="Also list passed checks and every rollback chain.")
@click.option("--html", "html_file", type=click.Path(dir_okay=False), default=None,
              help="Write a self-contained HTML report (verdicts, witnesses, diagrams); one file per trace.")
def check(traces, as_json, junit_file, properties, cut, failures, semantics, use_z3, z3_min_replay, expect,
          verbose, html_file) -> None:
    """Check TRACE files (JSONL or Parquet) and report violations with their witnesses.

    When no --cut/--failures/--semantics is given, a trace's metadata.expected.check
    options apply. Exit codes: 0 clean, 1 violation (or, with --expect, a mismatch with
    metadata.expected), 2 bad input or usage.
    """
    from snapcheck.checker import CheckerUsageError, CheckOptions, check_trace
    from snapcheck.checker.expected import compare_expected, options_from_expected
    from snapcheck.reference.catalogue import header_facts
    from snapcheck.traces import read_trace

    explicit = cut is not None or failures is not None or semantics is not None
    reports, mismatches, exit_code = [], {}, EXIT_CLEAN
    for path in traces:
        trace = read_trace(path)
        opts = CheckOptions(properties=set(properties) if properties else None, cut=cut,
                            failures=failures, semantics=semantics or "partial", z3=use_z3 or z3_min_replay,
                            z3_min_replay=z3_min_replay, facts=header_facts(trace.header.protocol))
        if not explicit:
            opts = options_from_expected(trace, opts)
        try:
            report = check_trace(trace, opts)
        except CheckerUsageError as exc:
            raise UsageError(f"{path}: {exc}") from None
        reports.append(report)
        if html_file:
            from snapcheck.debug.html_report import html_target, write_html_report

            write_html_report(trace, report, html_target(html_file, path, len(traces)))
        if expect and trace.header.expected:
            mm = compare_expected(trace, report)
            mismatches[report.trace] = mm
            if mm:
                exit_code = EXIT_VIOLATION
        elif not report.ok:
            exit_code = EXIT_VIOLATION
    if as_json:
        doc = {"schema": "snapcheck-check", "version": 1, "ok": exit_code == EXIT_CLEAN,
               "reports": [r.to_json() for r in reports]}
        if expect:
            for r in doc["reports"]:
                r["expected_mismatches"] = mismatches.get(r["trace"])
        sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        for r in reports:
            click.echo(r.render_text(verbose))
            if expect and r.trace in mismatches:
                mm = mismatches[r.trace]
                click.echo("expected verdict: " + ("holds" if not mm else "MISMATCH\n  " + "\n  ".join(mm)))
            click.echo("")
    if junit_file:
        from snapcheck.checker.junit import junit_xml

        try:
            with open(junit_file, "wb") as f:
                f.write(junit_xml(reports, mismatches if expect else None))
        except OSError as exc:
            raise UsageError(f"cannot write {junit_file}: {exc.strerror}") from None
    if exit_code:
        sys.exit(exit_code)


def register(group: click.Group) -> None:
    group.add_command(check)



