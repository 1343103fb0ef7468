"""``snapcheck check``: verify traces (consistency, channel state, Z-cycles, recovery
lines, observed recoveries, exactly-once, rounds, RDT, ...), each file on its own:
a file that cannot be read is reported (exit 2) and the others are still checked.
See docs/checker.md."""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace

import click
import orjson

from snapcheck.checker.options import CheckOptions
from snapcheck.checker.report import JSON_SCHEMA_VERSION, VERDICT_EXIT, UnreadTrace, worst_exit
from snapcheck.console import echo
from snapcheck.options import OUTPUT_FILE, cut_option, json_option, junit_option
from snapcheck.traces.errors import EXIT_BAD_INPUT, EXIT_CLEAN, EXIT_VIOLATION, UsageError
from snapcheck.traces.gc_pause import paused_gc
from snapcheck.traces.process_exit import hold, holding


def _unknown_protocol_note(protocol: dict) -> str | None:
    """The note for a protocol the catalogue does not know and whose header declares no facts."""
    from snapcheck.reference.catalogue import header_facts
    from snapcheck.traces.protocol_facts import DeclaredFacts

    if header_facts(protocol) is not None or DeclaredFacts.of(protocol).declared:
        return None
    return (
        f"protocol {str(protocol.get('name', 'unknown'))!r} is not in the protocol catalogue and the trace header "
        "declares none of its facts (params.aligned, params.guarantees, params.cic): nothing a protocol may "
        "promise (z-cycles, rdt, cic-conformance, cic-efficiency, timestamps) was judged and rounds were judged "
        "as unaligned; declare the facts in the header, or name a property with --property to judge it anyway."
    )


@click.command("check")
# any path (a directory: reported unreadable like a missing file)
@click.argument("traces", nargs=-1, required=True, type=click.Path(readable=False))
@json_option("with a report per trace (schema: checker/schema/check-report.schema.json)")
@junit_option(
    "a test case per property per round/cut/recovery; skipped cases for what was not judged; "
    "an error case per unreadable trace"
)
@click.option(
    "--property",
    "properties",
    multiple=True,
    help="Check only this property (repeatable): consistency, channel-state, termination, z-cycles, "
    "recovery-line, observed-recovery, exactly-once, rdt, ... (docs/checker.md).",
)
@cut_option("Explicit global checkpoint to analyse, e.g. P0=1,P1=V.")
@click.option("--failures", default=None, help="Failure set for the recovery line: P0,P1 or all.")
@click.option(
    "--semantics",
    type=click.Choice(["partial", "restart-all"]),
    default=None,
    help="partial: survivors may keep their current state (default); restart-all: CheckMate.",
)
@click.option("--z3", "use_z3", is_flag=True, help="Prove the recovery line maximal with z3 (unsat certificate).")
@click.option("--z3-min-replay", is_flag=True, help="Also find the line with the fewest messages to replay (z3).")
@click.option(
    "--expect", is_flag=True, help="Compare with each trace's metadata.expected; exit 1 on a mismatch, 0 when all hold."
)
@click.option(
    "--require-faults",
    is_flag=True,
    help="Exit 1 when a fault the trace's producer was asked to inject (a simulated crash, Flink --fail) "
    "never happened: its recovery was not exercised.",
)
@click.option("--trace-id", default=None, help="Which trace of a multi-trace Parquet file to check.")
@click.option("--verbose", "-v", is_flag=True, help="Also list passed checks, every rollback chain and every reason.")
@click.option(
    "--html",
    "html_file",
    type=OUTPUT_FILE,
    default=None,
    help="Write a self-contained HTML report (verdicts, witnesses, diagrams); with several traces, one "
    "file per trace and an index page at this path.",
)
def check(
    traces,
    as_json,
    junit_file,
    properties,
    cut,
    failures,
    semantics,
    use_z3,
    z3_min_replay,
    expect,
    require_faults,
    trace_id,
    verbose,
    html_file,
) -> None:
    """Check TRACE files (JSONL or Parquet) and report violations with their witnesses.

    Every file is checked and reported, also when another one is unreadable. Every
    property is either judged or listed as not judged with the reason. When no
    --cut/--failures/--semantics is given, a trace's metadata.expected.check options
    apply. Exit codes (the worst over the files: 2, then 1, then 4): 0 clean, 1
    violation (or, with --expect, a mismatch with metadata.expected; with
    --require-faults, a requested fault that never happened), 2 bad input or usage,
    4 nothing judged (no property applied to a trace, or none of those named with
    --property: no verdict).
    """
    from snapcheck.traces.atomic import StagedFiles, distinct_outputs, ensure_writable

    html_outs: list[str | None] = [None] * len(traces)
    if html_file:
        from snapcheck.debug.html_report import html_targets

        html_outs = list(html_targets(html_file, traces))
    outputs = [o for o in (junit_file, html_file) if o] + [o for o in html_outs if o and o != html_file]
    distinct_outputs(*outputs)
    for out in outputs:  # before any work: a report that cannot be written is refused first
        ensure_writable(out, traces)
    run = _Run(
        options=CheckOptions(
            properties=set(properties) if properties else None,
            cut=cut,
            failures=failures,
            semantics=semantics or "partial",
            z3=use_z3 or z3_min_replay,
            z3_min_replay=z3_min_replay,
        ),
        from_expected=cut is None and failures is None and semantics is None,
        trace_id=trace_id,
        expect=expect,
        require_faults=require_faults,
    )
    try:  # a property or semantics the checker does not know is the command's mistake, not a trace's
        run.options.validate()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    # several traces: their pages are written aside and moved into place with the index at the end,
    # so an interrupted run (Ctrl-C) leaves no partial set of new pages next to an older index
    with StagedFiles(html_outs, staged=html_file is not None and len(traces) > 1) as pages:
        reports, mismatches, codes = [], {}, []
        unwritten: list[str] = []  # the output files the command could not write, why
        for k, path in enumerate(traces):
            # the trace's events and the checker's indexes are alive and acyclic until reported; those of
            # the last trace are held to the end when the process ends after the command (traces.process_exit)
            with paused_gc(), holding(last=k == len(traces) - 1):
                report, code = _check_one(path, run, mismatches, pages.paths[k], unwritten)
            reports.append(report)
            codes.append(code)
        pages_written = not unwritten
        # the files first, so that the exit code (and the JSON document's) says when one could not be written
        if junit_file:
            from snapcheck.checker.junit import junit_xml

            _write(unwritten, junit_file, junit_xml(reports, mismatches if expect else None, require_faults), traces)
        if html_file and len(traces) > 1 and pages_written:
            try:
                pages.publish()
                _write_html_index(html_file, traces, reports, html_outs)
            except UsageError as exc:
                unwritten.append(str(exc))
        exit_code = worst_exit(codes + [EXIT_BAD_INPUT] * bool(unwritten))
        for r in reports:
            if isinstance(r, UnreadTrace):  # on stderr also with --json: stdout holds the JSON document only
                echo(r.render_text(), err=True)
            elif not as_json:
                echo(r.render_text(verbose, mismatches.get(r.trace)))
                if require_faults and r.faults_not_exercised:
                    echo(f"--require-faults: {len(r.faults_not_exercised)} requested fault(s) never happened")
                echo("")
        if as_json:
            doc = {
                "schema": "snapcheck-check",
                "version": JSON_SCHEMA_VERSION,
                "ok": exit_code == EXIT_CLEAN,
                "exit_code": exit_code,
                "reports": [r.to_json() for r in reports],
            }
            if expect:
                for r in doc["reports"]:
                    r["expected_mismatches"] = mismatches.get(r["trace"])
            if unwritten:
                doc["unwritten"] = unwritten
            sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
        for why in unwritten:
            echo(f"Error: {why}", err=True)
    if exit_code:
        sys.exit(exit_code)


def _write(unwritten: list[str], path: str, data: bytes, inputs) -> None:
    """Write ``path`` atomically; a file that cannot be written is added to ``unwritten``."""
    from snapcheck.traces.atomic import write_atomic

    try:
        write_atomic(path, data, inputs=inputs)
    except UsageError as exc:
        unwritten.append(str(exc))


def _write_html_index(html_file: str, traces, reports, html_outs) -> None:
    """The index page of a multi-trace ``--html``: every trace, its verdict, a link to its report."""
    import os

    from snapcheck.debug.html_report import html_index
    from snapcheck.traces.atomic import write_atomic

    rows = []
    for path, r, out in zip(traces, reports, html_outs):
        if isinstance(r, UnreadTrace):
            rows.append((path, "bad input", "; ".join(r.errors[:3]), None))
        else:
            rows.append(
                (
                    path,
                    r.verdict,
                    ", ".join(sorted(r.kinds)),
                    os.path.basename(out),
                )
            )
    write_atomic(html_file, html_index(rows), inputs=traces)


@dataclass(frozen=True)
class _Run:
    """What every file of one ``snapcheck check`` invocation is checked with: the checker's
    options (completed per trace by its protocol's facts and, when ``from_expected``, by its
    ``metadata.expected.check``) and what the command does with each report."""

    options: CheckOptions
    from_expected: bool  # no --cut/--failures/--semantics given: the trace's expected options apply
    trace_id: str | None
    expect: bool
    require_faults: bool


def _check_one(path: str, run: _Run, mismatches: dict, html_out: str | None, unwritten: list[str]):
    """Check one file: (its report or ``UnreadTrace``, its exit code); its HTML report is
    written to ``html_out`` when given (when it cannot be, why is added to ``unwritten``)."""
    from snapcheck.checker import CheckerUsageError, check_trace
    from snapcheck.checker.expected import compare_expected, options_from_expected
    from snapcheck.reference.catalogue import header_facts
    from snapcheck.traces import read_trace
    from snapcheck.traces.errors import TraceErrors

    try:
        trace = read_trace(path, trace_id=run.trace_id)
    except TraceErrors as exc:
        return UnreadTrace(path, [str(e) for e in exc.errors], exc.total), EXIT_BAD_INPUT
    opts = replace(run.options, facts=header_facts(trace.header.protocol))
    chosen = run.options.cut, run.options.failures, run.options.properties
    if run.from_expected:
        opts = options_from_expected(trace, opts)
    try:
        report = check_trace(trace, opts)
    except CheckerUsageError as exc:
        why = str(exc)
        if (opts.cut, opts.failures, opts.properties) != chosen and not why.startswith("line "):
            why = f"line 1: metadata.expected.check: {why}"  # the options came from the trace's header
        return UnreadTrace(path, [f"{path}: {why}"], 1), EXIT_BAD_INPUT
    report.trace_id = run.trace_id
    note = _unknown_protocol_note(trace.header.protocol)
    if note:
        report.notes.insert(0, note)
    if html_out:
        from snapcheck.debug.html_report import write_html_report

        try:
            write_html_report(trace, report, html_out)
        except UsageError as exc:
            unwritten.append(str(exc))
    if run.expect and trace.header.expected:
        try:
            mm = compare_expected(trace, report)
        except CheckerUsageError as exc:
            why = str(exc) if str(exc).startswith("line ") else f"line 1: metadata.expected: {exc}"
            return UnreadTrace(path, [f"{path}: {why}"], 1), EXIT_BAD_INPUT
        mismatches[report.trace] = mm
        code = EXIT_VIOLATION if mm else EXIT_CLEAN
    else:
        if run.expect:
            report.notes.insert(0, "--expect: the trace has no metadata.expected to compare with; its verdict decides")
        code = VERDICT_EXIT[report.verdict]
    if run.require_faults and report.faults_not_exercised:
        code = EXIT_VIOLATION
    hold(trace)  # not freed when the process ends next (traces.process_exit)
    return report, code


def register(group: click.Group) -> None:
    group.add_command(check)
