"""``snapcheck replay``, ``render``, ``shrink`` and ``shiviz``: seeing why a trace fails.

The libraries live in ``snapcheck.debug``; these commands parse options, run
the checker where violations are needed, and print or write the results.
"""

from __future__ import annotations

import json
import os

import click
import orjson

from snapcheck.console import echo, make_console
from snapcheck.debug.findings import Findings, check_options, findings_from_report, options_dict, run_checker
from snapcheck.options import OUTPUT_FILE, cut_option
from snapcheck.traces import read_trace
from snapcheck.traces.errors import UsageError
from snapcheck.traces.gc_pause import paused_gc
from snapcheck.traces.model import Trace

_TRACE = click.argument("trace_path", metavar="TRACE", type=click.Path(dir_okay=False, readable=False))
_TRACE_ID = click.option("--trace-id", default=None, help="Which trace of a multi-trace Parquet file to use.")


def _properties_opt(f):
    return click.option(
        "--property",
        "properties",
        multiple=True,
        help="Check only this property (repeatable); selecting z-cycles makes useless "
        "checkpoints violations with Z-cycle witnesses.",
    )(f)


def _check_opts(f):
    f = cut_option()(f)
    f = click.option(
        "--semantics",
        type=click.Choice(["partial", "restart-all"]),
        default=None,
        help="Recovery semantics (default: the trace's expected.check, else partial).",
    )(f)
    f = click.option("--failures", default=None, help="Failed processes (comma-separated) or 'all'.")(f)
    return f


def _findings(trace: Trace, properties, failures, semantics, cut) -> Findings:
    """Run the checker with the command's options; bad options are usage errors."""
    opts = check_options(trace, properties=set(properties) or None, failures=failures, semantics=semantics, cut=cut)
    return findings_from_report(trace, run_checker(trace, opts))


# -- replay ----------------------------------------------------------------------
@click.command("replay")
@_TRACE
@click.option(
    "--until", "until", type=int, default=None, metavar="N", help="Print the state after the first N events and exit."
)
@click.option(
    "--until-line",
    type=int,
    default=None,
    metavar="L",
    help="Print the state once every event up to file line L is applied, and exit.",
)
@click.option(
    "--at-violation",
    "at_violation",
    type=int,
    default=None,
    is_flag=False,
    flag_value=0,
    metavar="[K]",
    help="Print the state where violation K (numbered as in the report) becomes visible, and exit; "
    "without K (or with 0), where the first violation to become visible does.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the state as JSON (with --until/--at-violation).")
@click.option("--no-check", is_flag=True, help="Do not run the checker (no violation jumping).")
@click.option("--all-channels", is_flag=True, help="Also list channels with nothing in flight or recorded.")
@click.option(
    "--commands",
    "-c",
    "commands",
    default=None,
    help="Run these ';'-separated stepper commands instead of reading the terminal.",
)
@_properties_opt
@_check_opts
@_TRACE_ID
def replay(
    trace_path,
    until,
    until_line,
    at_violation,
    as_json,
    no_check,
    all_channels,
    commands,
    properties,
    failures,
    semantics,
    cut,
    trace_id,
) -> None:
    """Step through TRACE event by event and see every process and channel.

    Interactive (default): a prompt takes commands (n, p, g N, v, b proc P, c, h, q, ...;
    type h). Shown per process: checkpoint interval, last checkpoint, blocked and
    recording channels, protocol variables; per channel: in-flight messages, recorded
    channel state, sender log; and the violations the checker finds where they become
    visible. With --until N, --until-line L or --at-violation [K] the state at that point
    is printed (as JSON with --json) for scripts.
    """
    from snapcheck.debug.stepper import Stepper

    targets = [x is not None for x in (until, until_line, at_violation)]
    with paused_gc():  # the trace, the findings and the stepper's tables are alive and acyclic
        trace = read_trace(trace_path, trace_id=trace_id)
        findings = Findings(checked=False) if no_check else _findings(trace, properties, failures, semantics, cut)
        console = make_console()
        stepper = Stepper(trace, findings, console=console, show_all_channels=all_channels, navigable=not any(targets))
    if sum(targets) > 1:
        raise UsageError("give at most one of --until, --until-line, --at-violation")
    if any(targets):
        violation = None
        if until is not None:
            if not 0 <= until <= len(trace.events):
                raise UsageError(f"--until {until}: the trace has events 0..{len(trace.events)}")
            stepper.replay.goto(until)
        elif until_line is not None:
            last = trace.events[-1].line if trace.events else 1
            if not 1 <= until_line <= last:
                raise UsageError(f"--until-line {until_line}: the trace has lines 1..{last}")
            stepper.replay.goto_line(until_line)
        else:
            if not findings.items and not at_violation:  # the first violation, of none
                if as_json:  # what a script reads: no state to show, and why
                    echo(json.dumps({"violation": None, "violations": 0, "checked": not no_check}, indent=1))
                else:
                    echo("no violation found" + (" (--no-check: the checker did not run)" if no_check else ""))
                return
            if not 0 <= at_violation <= len(findings.items):
                raise UsageError(f"--at-violation {at_violation}: there are {len(findings.items)} violation(s)")
            violation = findings.items[at_violation - 1] if at_violation else findings.first()
            stepper.replay.goto(violation.position)
        if as_json:
            out = stepper.replay.state.to_json()
            out["violations_here"] = [_finding_json(f) for f in findings.at(stepper.replay.position)]
            out["violations_visible"] = [_finding_json(f) for f in findings.visible(stepper.replay.position)]
            if violation is not None:
                out["violation"] = _finding_json(violation)
            echo(json.dumps(out, indent=1, default=str))
        else:
            stepper.show()
        return
    if as_json:
        raise UsageError("--json needs --until, --until-line or --at-violation")
    if commands is not None:
        stepper.loop([c for c in commands.split(";")])
        if stepper.mistakes:  # a script that did not run as written: its output is not what it asked for
            raise UsageError(f"--commands: {'; '.join(stepper.mistakes)}")
    else:
        stepper.loop()


def _finding_json(f) -> dict:
    return {
        "number": f.number,
        "kind": f.kind,
        "property": f.property,
        "subject": f.subject,
        "message": f.message,
        "lines": f.lines,
        "position": f.position,
        "witness": {"messages": f.messages, "checkpoints": [list(c) for c in f.checkpoints], "cut": f.cut},
    }


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
@click.option("-o", "--output", required=True, type=OUTPUT_FILE, help="Image to write: .svg, .png or .pdf.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["svg", "png", "pdf"]),
    default=None,
    help="The image format, when the output's name does not say it (e.g. -o /dev/stdout).",
)
@click.option(
    "--layout",
    type=click.Choice(["lamport", "file", "time"]),
    default="lamport",
    show_default=True,
    help="x axis: compact logical time, file order, or the events' t.",
)
@click.option("--window", default=None, metavar="A:B", help="Draw only events A..B (1-based event numbers).")
@click.option("--procs", default=None, help="Draw only these processes (comma-separated).")
@click.option(
    "--line",
    "line",
    default="auto",
    show_default=True,
    help="Recovery line to draw: a failure-set label of the report ('none', 'all', 'P0', ...), 'auto', or 'off'.",
)
@click.option("--violation", "only", type=int, multiple=True, help="Highlight only violation K (repeatable).")
@click.option("--labels/--no-labels", default=None, help="Label every message (default: only when few).")
@click.option("--no-check", is_flag=True, help="Do not run the checker (plain diagram).")
@click.option("--title", default=None, help="Diagram title.")
@_properties_opt
@_check_opts
@_TRACE_ID
def render(
    trace_path,
    output,
    fmt,
    layout,
    window,
    procs,
    line,
    only,
    labels,
    no_check,
    title,
    properties,
    failures,
    semantics,
    cut,
    trace_id,
) -> None:
    """Draw TRACE as a space-time diagram (one lane per process, messages as arrows).

    Barriers are dashed; checkpoints are marked by kind; with the checker's findings the
    recovery line, the orphan / dropped / phantom messages, and Z-cycle witnesses with
    their useless checkpoints are highlighted.
    """
    from snapcheck.debug.render import RenderOptions, chosen, image_format, in_window, plan_view
    from snapcheck.debug.render import render as draw
    from snapcheck.traces.atomic import ensure_writable

    image_format(output, fmt)
    ensure_writable(output, [trace_path])
    with _Phases() as phases:
        trace = phases.read(trace_path, trace_id)
        phases.step("checking")
        findings = Findings(checked=False) if no_check else _findings(trace, properties, failures, semantics, cut)
        checked = None if no_check else options_dict(trace, failures=failures, semantics=semantics, cut=cut).get("cut")
        opts = RenderOptions(
            layout=layout,
            window=_window(window),
            procs=procs.split(",") if procs else None,
            recovery_line=None if line == "off" else line,
            only=list(only) or None,
            labels=labels,
            title=title,
            cut=checked,
        )
        unknown = [k for k in only if not 1 <= k <= len(findings.items)]
        if unknown:
            raise UsageError(f"--violation {unknown[0]}: there are {len(findings.items)} violation(s)")
        view = plan_view(trace, findings, opts)
        phases.step("drawing")
        draw(trace, output, findings, opts, fmt)
    aside = os.path.realpath(output) == os.path.realpath("/dev/stdout")  # the image is the output: the rest aside
    for note in view.notes:
        echo(f"note: {note}", err=aside)
    picked = chosen(findings, opts)
    drawn = sum(in_window(trace, fi, view.window) for fi in picked)
    outside = f", {len(picked) - drawn} outside the window: --violation K draws K" if drawn < len(picked) else ""
    echo(
        f"wrote {output} ({len(trace.events)} events, {len(trace.processes)} processes"
        + (f", {drawn} violation(s) highlighted{outside}" if picked else "")
        + ")",
        err=aside,
    )


class _Phases:
    """A progress display on stderr (on a terminal): a bar while the trace is read, then
    the name of each later phase with the time elapsed."""

    def __init__(self):
        from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

        console = make_console(stderr=True)
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TaskProgressColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=not console.is_terminal,
        )
        self.task = None

    def __enter__(self) -> _Phases:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)

    def read(self, path: str, trace_id: str | None) -> Trace:
        import os

        try:
            size = os.path.getsize(path)
        except OSError:
            size = None
        self.task = self.progress.add_task("reading", total=size)
        trace = read_trace(
            path, trace_id=trace_id, progress=lambda done: self.progress.update(self.task, completed=done)
        )
        self.progress.update(self.task, completed=size)
        return trace

    def step(self, name: str) -> None:
        self.progress.update(self.task, description=name, total=None)


# -- shrink ------------------------------------------------------------------------
@click.command("shrink")
@click.argument("trace_path", metavar="[TRACE]", required=False, type=click.Path(dir_okay=False, readable=False))
@click.option(
    "--property",
    "prop",
    required=True,
    help="The property (e.g. consistency, channel-state, z-cycles) or violation kind (e.g. orphan) "
    "that must keep failing.",
)
@click.option("--kind", default=None, help="The violation kind to keep (default: the first one found).")
@click.option(
    "-o",
    "--output",
    default=None,
    type=OUTPUT_FILE,
    help="Where to write the shrunk trace (default: TRACE with .shrunk.jsonl).",
)
@click.option(
    "--simulation",
    is_flag=True,
    help="TRACE came from the reference simulator: first shrink its configuration "
    "(metadata.simulator.config: failures, stragglers, parallelism, records; same seed).",
)
@click.option(
    "--simulate",
    "simulate",
    default=None,
    metavar="CONFIG",
    help="Start from a failing simulation instead of TRACE: a SimConfig as JSON text or @file.json.",
)
@_check_opts
@_TRACE_ID
def shrink(trace_path, prop, kind, output, simulation, simulate, failures, semantics, cut, trace_id) -> None:
    """Delta-debug a failing trace (ddmin) to a 1-minimal trace with the same violation.

    The result still shows one of the trace's violations of that property and kind
    (the same messages and checkpoints, renumbered: not one made by removing events), and
    removing any single remaining element (a process, channel, message, processing,
    checkpoint, failure, record entry, ...) makes that violation disappear. With
    --simulation or --simulate, the simulation's configuration is shrunk first.
    """
    from snapcheck.checker import CheckOptions
    from snapcheck.debug.shrink import CheckerPredicate, ShrinkError, shrink_trace
    from snapcheck.debug.shrink_sim import shrink_config, sim_config, simulate_config
    from snapcheck.spark_validation.configs import command
    from snapcheck.traces.atomic import ensure_writable
    from snapcheck.traces.writer import write_trace

    config = _sim_config(trace_path, simulation, simulate, trace_id)
    if trace_path is None and config is None:
        raise UsageError("give a TRACE or --simulate CONFIG")
    if config is not None:
        _loadable(config, trace_path)
    out = output or (os.path.splitext(trace_path or "simulation")[0] + ".shrunk.jsonl")
    inputs = [trace_path] if trace_path else []
    if simulate and simulate.startswith("@"):
        inputs.append(simulate[1:])  # the configuration file it read
    if config is not None:
        from snapcheck.reference.catalogue import user_files

        inputs += user_files([config.get("protocol"), config.get("mutant")])
    ensure_writable(out, inputs)
    trace = simulate_config(config) if trace_path is None else read_trace(trace_path, trace_id=trace_id)
    base = options_dict(trace, failures=failures, semantics=semantics, cut=cut)
    prop, kind = _target(trace, prop, kind, base)

    def options(d: dict):
        return CheckOptions(properties={prop}, **d)

    violates = CheckerPredicate(prop, kind, options)
    origin: dict = {"trace": trace_path, "events": len(trace.events), "property": prop, "kind": kind}
    if config is not None:
        try:
            small = shrink_config(config, lambda t: violates(t, base))
        except ValueError as exc:  # its run, simulated again, does not fail
            raise UsageError(
                f"{trace_path or 'the configuration'}: {exc}: simulated again, its run does not violate {prop} "
                "(a protocol that depends on something other than the seed, e.g. time, the global random module "
                "or state its class keeps between runs, cannot be shrunk by simulation; shrink the trace "
                "itself: drop --simulation)"
            ) from None
        echo(
            f"configuration: {small.runs} simulations; "
            + ", ".join(
                f"{k} {config.get(k)} -> {small.config.get(k)}"
                for k in ("parallelism", "records", "failures", "stragglers")
                if k in config
            )
        )
        origin.update(config=small.config, simulated_events=len(small.trace.events))
        trace = small.trace
        echo(f"the smallest failing run: {command(sim_config(small.config), out.rsplit('.', 1)[0] + '.run.jsonl')}")
    like = CheckerPredicate(prop, kind, options, like=(trace, base))
    try:  # the trace shrinks keeping its own witness where removing events could forge one
        res = shrink_trace(trace, like, base, kind, prop)
    except ShrinkError as exc:
        raise UsageError(str(exc)) from None
    header = res.trace.header
    # what described the trace it came from (its notes, its expectation, its simulation) no longer describes it
    header.metadata = {k: v for k, v in header.metadata.items() if k not in ("expected", "simulator", "notes")}
    report = run_checker(res.trace, options(res.options))
    shown = like.check_all(res.trace, res.options)  # every kind it shows, as check --expect sees them
    check = {k: v for k, v in res.options.items() if k != "facts"}  # (facts: from the header, at every check)
    if kind not in shown.kinds:  # a property judged only when asked for (say z-cycles): the expectation asks
        check["properties"] = [prop]
        shown = like.check_all(res.trace, res.options, {prop})
    expected = {"verdict": shown.verdict, "violations": sorted(shown.kinds)}
    if check:
        expected["check"] = check
    header.metadata["expected"] = expected
    made = [f"{v.kind} ({v.subject})" for v in like.made(shown, res.names)]
    if made:  # forged elsewhere than at the kept violation (beside it, the shrinker refuses them)
        origin["made_by_shrinking"] = made
    header.metadata["shrunk_from"] = origin
    write_trace(out, header, res.trace.events, inputs=inputs)
    echo(
        f"shrunk {origin.get('simulated_events', origin['events'])} events"
        + (
            f" (the smallest failing run's; the run given had {origin['events']})"
            if "simulated_events" in origin
            else ""
        )
        + f" -> {len(res.trace.events)} events "
        f"({len(res.trace.processes)} processes; {res.tests} checker runs), still {kind} ({prop}); "
        f"1-minimal; wrote {out}"
    )
    echo(like.matches(report, res.names)[0].message)
    if made:
        echo(
            "also shown, made by removing events (the trace shrunk shows none of them; not part of the witness): "
            + ", ".join(made)
        )


def _sim_config(trace_path: str | None, simulation: bool, simulate: str | None, trace_id: str | None) -> dict | None:
    """The simulation configuration to shrink, if any."""
    if simulate is not None:
        text, where = simulate, "--simulate"
        if simulate.startswith("@"):
            text, where = _config_file(simulate[1:]), f"--simulate {simulate[1:]}"
        try:
            config = orjson.loads(text)  # (nesting is bounded: a deep one is an error, not a recursion)
        except orjson.JSONDecodeError as exc:
            raise UsageError(f"{where}: not JSON: {exc}") from None
        if not isinstance(config, dict):
            raise UsageError("--simulate: expected a JSON object (a SimConfig)")
        return config
    if simulation:
        if trace_path is None:
            raise UsageError("--simulation needs a TRACE written by the reference simulator")
        from snapcheck.traces import read_header

        sim = read_header(trace_path, trace_id).metadata.get("simulator") or {}
        if "config" not in sim:
            raise UsageError(f"{trace_path}: no metadata.simulator.config (not a simulator trace)")
        return dict(sim["config"])
    return None


def _config_file(path: str) -> str:
    """The text of a configuration file named by ``--simulate @FILE``: read up to the line
    limit (``--max-line-bytes``), UTF-8; else ``UsageError`` naming it and why."""
    from snapcheck.traces.lines import max_line_bytes

    limit = max_line_bytes()
    try:
        with open(path, "rb") as fh:
            raw = fh.read(limit + 1)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    if len(raw) > limit:
        raise UsageError(f"{path}: longer than {limit:,} bytes (--max-line-bytes), so not a simulation configuration")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text (byte {exc.start}: {raw[exc.start : exc.start + 4]!r})") from None


def _loadable(config: dict, trace_path: str | None) -> None:
    """The protocol and mutant the configuration names can be loaded here (else exit 2
    saying why: a protocol file named relative to the directory the trace was made in)."""
    from snapcheck.reference.catalogue import resolve

    for key in ("protocol", "mutant"):
        spec = config.get(key)
        if isinstance(spec, str):
            try:
                resolve(spec, key)
            except UsageError as exc:
                where = f"{trace_path}: " if trace_path else ""
                raise UsageError(
                    f"{where}the simulation's {key} cannot be loaded here: {exc} (a protocol file is named as "
                    "the command that made the trace named it: run from that directory, or set PYTHONPATH)"
                ) from None


def _target(trace: Trace, prop: str, kind: str | None, base: dict) -> tuple[str, str]:
    """Resolve ``--property`` (a property or a violation kind) and ``--kind`` to the
    (property, kind) the trace violates."""
    from snapcheck.checker import PROPERTIES, CheckOptions
    from snapcheck.checker.report import KIND_PROPERTY

    if prop in KIND_PROPERTY:
        if kind not in (None, prop):
            raise UsageError(f"--property {prop} is a violation kind; --kind {kind} contradicts it")
        kind, prop = prop, KIND_PROPERTY[prop]
    elif prop not in PROPERTIES:
        raise UsageError(
            f"unknown property or violation kind {prop!r} (properties: {', '.join(PROPERTIES)}; "
            f"kinds: {', '.join(sorted(KIND_PROPERTY))})"
        )
    elif kind is not None and KIND_PROPERTY.get(kind) != prop:
        mine = sorted(k for k, p in KIND_PROPERTY.items() if p == prop)
        where = f"a kind of {KIND_PROPERTY[kind]}" if kind in KIND_PROPERTY else "not a violation kind"
        raise UsageError(f"--kind {kind} is {where}, not of --property {prop} (its kinds: {', '.join(mine)})")
    report = run_checker(trace, CheckOptions(properties={prop}, **base))
    found = [v for v in report.violations if v.property == prop and (kind is None or v.kind == kind)]
    if not found:
        what = f"{kind} violation ({prop})" if kind else f"violation of {prop}"
        raise UsageError(f"{trace.path}: the checker finds no {what}; nothing to shrink")
    return prop, found[0].kind


# -- shiviz ------------------------------------------------------------------------
@click.command("shiviz")
@_TRACE
@click.option("-o", "--output", required=True, type=OUTPUT_FILE, help="The log file to write.")
@_TRACE_ID
def shiviz(trace_path, output, trace_id) -> None:
    """Export TRACE as a ShiViz log (vector clocks) to view it in ShiViz.

    The file's first line is the log-parsing regular expression and its second line
    the (empty) executions delimiter, as ShiViz expects of an uploaded log.
    """
    from snapcheck.debug.shiviz import SHIVIZ_REGEX, write_shiviz
    from snapcheck.traces.atomic import ensure_writable

    ensure_writable(output, [trace_path])
    trace = read_trace(trace_path, trace_id=trace_id)
    n = write_shiviz(trace, output)
    echo(f"wrote {output} ({n} events, {len(trace.processes)} hosts)")
    echo(f"ShiViz log parsing regular expression: {SHIVIZ_REGEX}")


def register(group: click.Group) -> None:
    for cmd in (replay, render, shrink, shiviz):
        group.add_command(cmd)
