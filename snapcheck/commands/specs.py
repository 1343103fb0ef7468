"""``snapcheck specs check`` (model-check the TLA+ specifications against the
manifest) and ``snapcheck conform`` (validate traces against the specifications
with TLC). See ``docs/specs.md``."""

from __future__ import annotations

import os
import sys
import time

import click
from rich.table import Table

from snapcheck.console import make_console
from snapcheck.options import json_option, junit_option
from snapcheck.traces.errors import EXIT_VIOLATION, UsageError

console = make_console()


def _default_parallel() -> int:
    return max(1, min(2, os.cpu_count() or 1))


@click.group("specs")
def specs_group() -> None:
    """The TLA+ specifications in specs/ and their model-checking manifest."""


@specs_group.command("check")
@click.argument("name", required=False)
@click.option("--heavy", is_flag=True, help="Also run the heavy configurations (larger bounds).")
@click.option(
    "--parallel",
    "-j",
    type=click.IntRange(1, 64),
    default=None,
    help="TLC runs at a time (each with one worker). Default: min(2, CPUs).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(1),
    default=900.0,
    show_default=True,
    help="Wall-clock limit per TLC run, in seconds.",
)
@click.option(
    "--backend",
    type=click.Choice(["tlc", "apalache"]),
    default="tlc",
    show_default=True,
    help="apalache: bounded symbolic check with apalache-mc (must be on PATH).",
)
@click.option(
    "--length", type=click.IntRange(1), default=10, show_default=True, help="Apalache: number of steps to explore."
)
@click.option(
    "--update",
    is_flag=True,
    help="Write the measured result, distinct states and depth into the manifest "
    "(after a deliberate change of a specification).",
)
def specs_check(
    name: str | None, heavy: bool, parallel: int | None, timeout: float, backend: str, length: int, update: bool
) -> None:
    """Model-check the specifications: every configuration of specs/manifest.json (or those
    whose spec or configuration name contains NAME) must give its expected result, number of
    distinct states and depth.

    Prints a table (spec, config, expected, result, distinct states, depth, time). Exit 0 if
    every run matches the manifest, 1 if any differs, 2 on bad usage (e.g. no Java 17).
    """
    from snapcheck.checker.tla.manifest import load_manifest, run_entries, specs_dir

    man = load_manifest()
    entries = man.select(name, heavy)
    if backend == "apalache":
        if update:
            raise UsageError("--update records TLC's figures; it cannot be used with --backend apalache")
        _apalache(entries, length, timeout)
        return
    from snapcheck.checker.tla.tlc import find_jar, find_java

    find_jar(), find_java()  # fail early, with a clear message
    par = parallel or _default_parallel()
    console.print(f"model checking {len(entries)} configuration(s) with TLC, {par} at a time", markup=False)
    start = time.monotonic()

    def progress(o) -> None:
        mark = "ok" if o.matches else "DIFFERS"
        console.print(f"  {o.entry.name}: {o.result.result} ({o.result.seconds:.1f}s) {mark}", markup=False)

    outcomes = run_entries(entries, specs_dir(), parallel=par, timeout=timeout, on_done=progress)
    elapsed = time.monotonic() - start
    table = Table(title="TLC model checking (specs/manifest.json)")
    for col in ("spec", "config", "expected", "result", "distinct states", "depth", "time"):
        table.add_column(col, justify="right" if col in ("distinct states", "depth", "time") else "left")
    bad = []
    for o in outcomes:
        r = o.result
        style = None if o.matches else "bold red"
        table.add_row(
            o.entry.spec,
            o.entry.name,
            o.entry.expected,
            r.result,
            "" if r.distinct is None else f"{r.distinct:,}",
            "" if r.depth is None else str(r.depth),
            f"{r.seconds:.1f}s",
            style=style,
        )
        if not o.matches:
            bad.append(o)
    console.print(table)
    cpu = sum(o.result.cpu_seconds for o in outcomes)
    console.print(
        f"{len(outcomes)} configuration(s) in {elapsed:.1f}s wall, {cpu:.1f}s CPU; "
        f"{len(outcomes) - len(bad)} as expected, {len(bad)} differ",
        markup=False,
    )
    if update:
        for o in outcomes:
            o.entry.distinct, o.entry.depth = o.result.distinct, o.result.depth
            o.entry.seconds, o.entry.cpu_seconds = o.result.seconds, o.result.cpu_seconds
            if not o.result.is_error:
                o.entry.expected = o.result.result
        man.save()
        console.print(f"updated {man.path}", markup=False)
        return
    for o in bad:
        console.print(f"{o.entry.name}: " + "; ".join(o.differences()), markup=False)
        if o.result.is_error:
            console.print(o.result.error_text(), markup=False)
    if bad:
        sys.exit(EXIT_VIOLATION)


def _apalache(entries, length: int, timeout: float) -> None:
    from snapcheck.checker.tla.apalache import run_apalache
    from snapcheck.checker.tla.manifest import specs_dir

    table = Table(title=f"Apalache bounded check ({length} steps)")
    for col in ("spec", "config", "expected", "result", "time"):
        table.add_column(col)
    bad = 0
    for e in entries:
        res = run_apalache(specs_dir(), e.module, e.config, length=length, timeout=timeout)
        agrees = res.result in (e.expected, "skipped")
        bad += 0 if agrees else 1
        table.add_row(
            e.spec, e.name, e.expected, res.result, f"{res.seconds:.1f}s", style=None if agrees else "bold red"
        )
    console.print(table)
    if bad:
        sys.exit(EXIT_VIOLATION)


@click.command("conform")
# any path (a directory: an ERROR verdict like a missing file)
@click.argument("traces", nargs=-1, required=True, type=click.Path(readable=False))
@click.option(
    "--timeout",
    type=click.FloatRange(1),
    default=900.0,
    show_default=True,
    help="Wall-clock limit per TLC run, in seconds.",
)
@click.option(
    "--no-refinement", is_flag=True, help="Do not also check that every step refines ConsistentSnapshot (faster)."
)
@click.option(
    "--parallel",
    "-j",
    type=click.IntRange(1, 64),
    default=None,
    help="TLC runs at a time (traces and segments of one protocol and topology share runs). Default: min(2, CPUs).",
)
@click.option(
    "--no-segments",
    is_flag=True,
    help="Validate every trace whole, not in segments cut where every round so far is finished "
    "(same verdicts; quadratic in the trace length).",
)
@json_option("with a verdict per trace instead of text (schema: checker/schema/conform-report.schema.json)")
@junit_option(
    "a test case per trace (REJECT a failure, a trace outside the specifications skipped, "
    "an invalid trace or a TLC failure an error)"
)
def conform_cmd(
    traces: tuple[str, ...],
    timeout: float,
    no_refinement: bool,
    parallel: int | None,
    no_segments: bool,
    as_json: bool,
    junit_file: str | None,
) -> None:
    """Validate TRACE files against the TLA+ specification of their protocol with TLC.

    Each trace is checked against the trace format first, then mapped event by event to the
    specification's actions (chandy-lamport, abs-aligned, abs-cyclic, unaligned,
    aligned-timeout, bcs, hmnr, unc, liverobin); long traces of the snapshot protocols are validated
    in segments cut where every round so far is finished, and traces and segments with the same
    protocol and topology share TLC runs.
    Verdicts:
    ACCEPT (some behaviour of the specification matches the whole trace), REJECT (the longest
    matched prefix and the first event no behaviour matches, as FILE:LINE), ERROR (invalid
    trace, a protocol or event the specification does not model, or a TLC failure).

    Exit 0 if all are accepted, 1 if any is rejected (and none is an ERROR), 2 if any is an ERROR.
    """
    import orjson

    from snapcheck.checker.tla.conform import conform
    from snapcheck.checker.tla.conform_report import counts, exit_code, junit_xml, to_json
    from snapcheck.checker.tla.tlc import find_jar, find_java
    from snapcheck.reference.catalogue import tla_mappings
    from snapcheck.traces.atomic import ensure_writable, write_atomic

    if junit_file:  # before the work, as check does: a verdict printed, then exit 2 for the file, misled
        ensure_writable(junit_file, traces)
    find_jar(), find_java()
    start = time.monotonic()
    verdicts = conform(
        list(traces),
        tla_mappings(),
        timeout=timeout,
        refinement=not no_refinement,
        on_verdict=None
        if as_json
        else _in_order(list(traces), lambda v: console.print(v.render(), markup=False, emoji=False)),
        parallel=parallel or _default_parallel(),
        segment=not no_segments,
    )
    if junit_file:
        write_atomic(junit_file, junit_xml(verdicts), inputs=traces)
    if as_json:
        sys.stdout.buffer.write(orjson.dumps(to_json(verdicts), option=orjson.OPT_INDENT_2) + b"\n")
    else:
        n = counts(verdicts)
        console.print(
            f"{len(verdicts)} trace(s) in {time.monotonic() - start:.1f}s: {n['accept']} accepted, "
            f"{n['reject']} rejected, {n['error']} error(s)",
            markup=False,
        )
    code = exit_code(verdicts)
    if code:
        sys.exit(code)


def _in_order(paths: list[str], show):
    """A callback that shows each verdict as soon as every trace given before it has one:
    in the order of the command line (as ``--json`` lists them), whatever order the TLC
    runs end in.

    >>> shown = []
    >>> notify = _in_order(["a", "b", "a"], shown.append)
    >>> for path in ["b", "a", "a"]:
    ...     notify(type("V", (), {"path": path})())
    >>> [v.path for v in shown]
    ['a', 'b', 'a']
    """
    done: list = [None] * len(paths)
    slots: dict[str, list[int]] = {}  # path -> its places on the command line not yet filled, last first
    for i in reversed(range(len(paths))):
        slots.setdefault(paths[i], []).append(i)
    nxt = 0

    def notify(v) -> None:
        nonlocal nxt
        free = slots.get(v.path)
        if not free:  # (a path the command was not given: shown as it comes)
            show(v)
            return
        done[free.pop()] = v
        while nxt < len(paths) and done[nxt] is not None:
            show(done[nxt])
            nxt += 1

    return notify


def register(group: click.Group) -> None:
    group.add_command(specs_group)
    group.add_command(conform_cmd)
