"""``snapcheck simulate``: run the reference simulator and write a trace.

    snapcheck simulate --protocol unaligned --workload q3 --parallelism 2 --seed 7 \\
        --fail join[0]@1500 -o trace.jsonl
    snapcheck simulate --mutant unaligned-late-snapshot --demo -o bad.jsonl
    snapcheck simulate --list
"""

from __future__ import annotations

import click
import orjson
from click.core import ParameterSource

from snapcheck.console import make_console
from snapcheck.options import OUTPUT_FILE, DefaultsFromCode, recovery_choices
from snapcheck.traces.errors import UsageError

console = make_console()

# SimConfig fields whose command-line option has another name (every other field of a
# mutant's --demo config is set by the option of the same name, when the command line
# does not give it).
_OPTION_OF = {"failures": "fail", "stragglers": "straggler"}


def _parse_fail(spec: str) -> tuple:
    from snapcheck.reference.sim.exploration import parse_fault

    try:
        return parse_fault(spec)
    except ValueError as exc:
        raise UsageError(f"--fail: {exc}") from None


def _parse_pause(spec: str) -> tuple[int, int]:
    step, sep, ticks = spec.partition(":")
    if not sep or not step.isdigit() or not ticks.isdigit() or int(step) < 1:
        raise UsageError(f"--pause {spec!r}: expected STEP:TICKS (positive integers), e.g. 120:400")
    return int(step), int(ticks)


def _parse_rescale(spec: str) -> tuple[str, int, int]:
    """``KIND@TIME:P`` (KIND ``savepoint`` or ``failure``) as a ``SimConfig.rescale`` entry.

    >>> _parse_rescale("savepoint@1500:3")
    ('savepoint', 1500, 3)
    >>> _parse_rescale("savepoint@1500:0")
    Traceback (most recent call last):
    ...
    snapcheck.traces.errors.UsageError: --rescale 'savepoint@1500:0': PARALLELISM must be 1 or more
    """
    kind, sep, rest = spec.partition("@")
    when, sep2, p = rest.partition(":")
    try:
        t, n = int(when), int(p)
    except ValueError:
        t = n = -1
    why = "TIME must be 0 or more" if t < 0 and when.lstrip("-").isdigit() else ""
    why = why or ("PARALLELISM must be 1 or more" if n < 1 and p.lstrip("-").isdigit() else "")
    if not sep or not sep2 or kind not in ("savepoint", "failure") or t < 0 or n < 1:
        if why and sep and sep2 and kind in ("savepoint", "failure"):
            raise UsageError(f"--rescale {spec!r}: {why}")
        raise UsageError(
            f"--rescale {spec!r}: expected KIND@TIME:PARALLELISM with KIND savepoint or failure, e.g. savepoint@1500:3"
        )
    return kind, t, n


def _parse_straggler(spec: str) -> tuple[str, float]:
    task, sep, factor = spec.rpartition("=")
    try:
        f = float(factor)
    except ValueError:
        f = -1.0
    if not sep or not task or f <= 0:
        raise UsageError(f"--straggler {spec!r}: expected TASK=FACTOR with FACTOR > 0, e.g. join[0]=3")
    return task, f


def _print_list() -> None:
    from snapcheck.reference import MUTANTS, PROTOCOLS, RANDOM_WORKLOADS, WORKLOADS
    from snapcheck.reference.workloads import make_workload

    def section(title: str, rows: list[tuple[str, str]]) -> None:
        console.print(title, style="bold", markup=False)
        width = max(len(name) for name, _ in rows)
        for name, text in rows:
            console.print(f"  {name.ljust(width)}  {text}", markup=False)

    section("protocols", [(name, cls.summary) for name, cls in PROTOCOLS.items()])
    section(
        "workloads",
        [(name, make_workload(name).description) for name in WORKLOADS]
        + [
            (name, f"random {'cyclic graph' if name == 'random-cyclic' else 'DAG'}, structure drawn from --seed")
            for name in RANDOM_WORKLOADS
        ],
    )
    section(
        "mutants (run one with: snapcheck simulate --mutant NAME --demo -o trace.jsonl)",
        [
            (m.name, f"[{m.mutant_of}] {m.summary}; {m.bug}; checker reports {' or '.join(m.expect)}")
            for m in MUTANTS.values()
        ],
    )


@click.command("simulate")
@click.option(
    "--protocol",
    "-p",
    default=None,
    help="Protocol: a catalogue name (see --list), MODULE:CLASS or path/to/file.py:CLASS. "
    "Default: abs-aligned, or the mutant's.",
)
@click.option("--workload", "-w", default="q1", show_default=True, help="Workload (see --list).")
@click.option(
    "--parallelism",
    "-P",
    default=2,
    show_default=True,
    type=int,
    help="Parallelism of every operator (at most 256: an all-to-all edge has P^2 channels, each simulated).",
)
@click.option("--seed", "-s", default=0, show_default=True, type=int, help="Seed: one seed, one trace.")
@click.option("--records", type=int, default=None, help="Input records per source partition.")
@click.option("--gap", type=int, default=None, help="Mean ticks between input records of a partition.")
@click.option("--hot-ratio", type=float, default=0.0, show_default=True, help="Fraction of records on hot keys (skew).")
@click.option(
    "--fail",
    multiple=True,
    metavar="TASK@TIME|TASK@SITUATION#K",
    help="Crash TASK at TIME ticks, or right after the K-th occurrence of SITUATION (TASK may be "
    "'self': the task where it occurred, or a task a rescale starts: g1.map[0] for the first; "
    "situations: see docs/protocols.md). Repeatable.",
)
@click.option(
    "--pause",
    multiple=True,
    metavar="STEP:TICKS",
    help="Hold back the task that makes the STEP-th step of the run for TICKS more (a schedule "
    "perturbation). Repeatable.",
)
@click.option(
    "--straggler", multiple=True, metavar="TASK=FACTOR", help="Multiply TASK's processing cost by FACTOR (repeatable)."
)
@click.option(
    "--mutant",
    "-m",
    default=None,
    help="Run a mutant: a catalogue name (see --list) or MODULE:CLASS of a class declaring mutant_of.",
)
@click.option(
    "--demo",
    is_flag=True,
    help="With --mutant: start from the mutant's demonstration config (exit 2 if it declares none).",
)
@click.option("--interval", type=int, default=600, show_default=True, help="Checkpoint interval (ticks).")
@click.option("--max-concurrent", type=int, default=1, show_default=True, help="Rounds in progress at once.")
@click.option("--checkpoint-timeout", type=int, default=None, help="Abort rounds running longer (ticks).")
@click.option(
    "--aligned-timeout", type=int, default=300, show_default=True, help="Alignment timeout of aligned-timeout (ticks)."
)
@click.option(
    "--recovery",
    type=click.Choice(["restart-all", "partial", "region-restart", "region-continue"]),
    default="restart-all",
    show_default=True,
    cls=DefaultsFromCode,
    defaults=recovery_choices,
    help="Recovery of the protocols that implement a choice ({defaults}): the uncoordinated family "
    "restarts every task from the recovery line (restart-all) or only the failed tasks and those "
    "rollback propagation reaches (partial); regional checkpoints restart a region that fell back "
    "(region-restart, the FLIP's text; what restart-all means for them) or keep it running "
    "(region-continue, the pull requests).",
)
@click.option("--latency", type=int, default=40, show_default=True, help="Minimum network delay (ticks).")
@click.option("--jitter", type=int, default=60, show_default=True, help="Random extra network delay (ticks).")
@click.option(
    "--control-latency",
    type=int,
    default=20,
    show_default=True,
    help="Delay of control messages: triggers, acknowledgements, completion and abort notices (ticks).",
)
@click.option(
    "--control-jitter",
    type=int,
    default=0,
    show_default=True,
    help="Random extra delay of control messages (ticks); control channels stay FIFO.",
)
@click.option(
    "--detect-delay",
    type=int,
    default=100,
    show_default=True,
    help="Ticks from a crash until the coordinator notices it.",
)
@click.option(
    "--restart-delay",
    type=int,
    default=200,
    show_default=True,
    help="Ticks from noticing a crash until the tasks restart.",
)
@click.option("--non-fifo", is_flag=True, help="Make data channels non-FIFO.")
@click.option("--buffer", type=int, default=4, show_default=True, help="Input buffer per channel (records).")
@click.option("--out-buffer", type=int, default=2, show_default=True, help="Output buffer per channel (records).")
@click.option(
    "--decline-prob",
    type=float,
    default=0.0,
    show_default=True,
    help="Probability that a task's snapshot fails (the round is declined).",
)
@click.option(
    "--rescale",
    multiple=True,
    metavar="KIND@TIME:P",
    help="Restore the job at parallelism P: KIND savepoint (stop-with-savepoint at TIME, then restore) or "
    "failure (a task crashes at TIME; the recovery restores at P). Repeatable.",
)
@click.option(
    "--max-parallelism",
    type=int,
    default=16,
    show_default=True,
    help="Key groups of keyed operators (runs that rescale). A keyed operator's parallelism, initial "
    "or after a rescale, must not exceed it (as in Flink; exit 2 otherwise).",
)
@click.option(
    "--finish-sources",
    is_flag=True,
    help="Sources finish at the end of their input (FLIP-147) while the rest of the job goes on.",
)
@click.option("--output", "-o", type=OUTPUT_FILE, default=None, help="Trace file to write (.jsonl).")
@click.option("--metrics-json", type=OUTPUT_FILE, default=None, help="Also write the metrics as JSON.")
@click.option(
    "--oracle",
    is_flag=True,
    help="Also compare the run's results with its failure-free twin (the end-to-end exactly-once "
    "oracle of the campaigns): exit 1 when they differ.",
)
@click.option("--list", "list_", is_flag=True, help="List protocols, workloads and mutants.")
@click.pass_context
def simulate_cmd(
    ctx,
    protocol,
    workload,
    parallelism,
    seed,
    records,
    gap,
    hot_ratio,
    fail,
    pause,
    straggler,
    mutant,
    demo,
    interval,
    max_concurrent,
    checkpoint_timeout,
    aligned_timeout,
    recovery,
    latency,
    jitter,
    control_latency,
    control_jitter,
    detect_delay,
    restart_delay,
    non_fifo,
    buffer,
    out_buffer,
    decline_prob,
    rescale,
    max_parallelism,
    finish_sources,
    output,
    metrics_json,
    oracle,
    list_,
) -> None:
    """Simulate a streaming dataflow under a checkpointing protocol and write its trace.

    Deterministic: the same options give a byte-identical trace. Times are in ticks
    (simulated microseconds). Check the result with `snapcheck check TRACE`; with
    --oracle, the final states and sink output are also compared with those of the same
    run without failures, declines, rescales or mutant (exit 1 when they differ).

    Exit 1 also when the protocol raised or broke the simulator's rules: the trace is
    written up to there and ends with the protocol_error that check reports.
    """
    if list_:
        _print_list()
        return
    if output is None:
        raise UsageError("simulate: -o/--output FILE is required (or use --list)")
    from snapcheck.reference import SimConfig, simulate
    from snapcheck.reference.catalogue import resolve, user_files
    from snapcheck.reference.simulation import demo_problems
    from snapcheck.traces.atomic import distinct_outputs, ensure_writable, write_atomic

    sources = user_files([protocol, mutant])  # the user's protocol files are inputs
    distinct_outputs(output, metrics_json)
    ensure_writable(output, sources)
    if metrics_json:
        ensure_writable(metrics_json, sources)

    fields = dict(
        protocol=protocol,  # None: abs-aligned, or the mutant's (SimConfig)
        workload=workload,
        parallelism=parallelism,
        seed=seed,
        records=records,
        gap=gap,
        hot_ratio=hot_ratio,
        failures=tuple(_parse_fail(f) for f in fail),
        stragglers=tuple(_parse_straggler(s) for s in straggler),
        pauses=tuple(_parse_pause(p) for p in pause),
        mutant=mutant,
        interval=interval,
        max_concurrent=max_concurrent,
        checkpoint_timeout=checkpoint_timeout,
        aligned_timeout=aligned_timeout,
        recovery=recovery,
        latency=latency,
        jitter=jitter,
        control_latency=control_latency,
        control_jitter=control_jitter,
        detect_delay=detect_delay,
        restart_delay=restart_delay,
        fifo=not non_fifo,
        buffer=buffer,
        out_buffer=out_buffer,
        decline_prob=decline_prob,
        rescale=tuple(_parse_rescale(r) for r in rescale),
        max_parallelism=max_parallelism,
        finish_sources=finish_sources,
    )
    if mutant is not None:
        m = resolve(mutant, "mutant")
        if not m.mutant_of:
            raise UsageError(f"{mutant} is not a mutant: its class declares no mutant_of (run it with --protocol)")
        if demo and not m.demo:
            raise UsageError(
                f"--demo: mutant {mutant} declares no demonstration config (Protocol.demo); "
                "run it without --demo, or declare one"
            )
        if demo:
            problems = demo_problems(m.demo)
            if problems:
                raise UsageError(f"mutant {mutant}: " + "; ".join(problems))
            for key, value in m.demo.items():  # every field of the demo, unless given on the command line
                if ctx.get_parameter_source(_OPTION_OF.get(key, key)) != ParameterSource.COMMANDLINE:
                    fields[key] = value
    elif demo:
        raise UsageError("--demo needs --mutant")
    for name, value in (
        ("parallelism", parallelism),
        ("interval", interval),
        ("max-concurrent", max_concurrent),
        ("buffer", buffer),
        ("out-buffer", out_buffer),
        ("max-parallelism", max_parallelism),
    ):
        if value < 1:
            raise UsageError(f"--{name} must be at least 1")
    from snapcheck.reference.sim.exploration import FaultError

    try:
        res = simulate(SimConfig(**fields))
    except FaultError as exc:
        raise UsageError(f"--fail: {exc.detail}") from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    write_atomic(output, res.dumps())
    m = res.metrics
    console.print(
        f"{output}: {m['events']} events, {m['tasks']} tasks, protocol {res.header.protocol['name']}"
        f"{' (mutant ' + mutant + ')' if mutant else ''}, workload {m['workload']}, seed {seed}",
        markup=False,
    )
    console.print(
        f"  rounds {m['rounds_completed']}/{m['rounds_started']} completed, checkpoints {m['checkpoints']}, "
        f"failures {m['failures']}, replayed {m['replayed_messages']}, outputs {m['outputs']}, "
        f"simulated time {m['sim_time']} ticks" + _ending(res),
        markup=False,
    )
    if m.get("protocol_error"):
        console.print(
            f"  PROTOCOL ERROR (the run ended there; snapcheck check reports it): {m['protocol_error']}",
            markup=False,
        )
    spec = mutant or fields["protocol"]
    proto = resolve(spec, "mutant" if mutant else "protocol") if isinstance(spec, str) else None
    if proto is not None and getattr(proto, "topologies", None) == "own":
        unused = [
            f"--{o}" for o in ("workload", "parallelism") if ctx.get_parameter_source(o) == ParameterSource.COMMANDLINE
        ]
        if unused:
            console.print(
                f"  note: {proto.name} runs its own model and topology: {' and '.join(unused)} not used",
                markup=False,
            )
    from snapcheck.checker.coverage import requested_faults

    for f in requested_faults(res.trace()):
        if not f.exercised:
            console.print(
                f"  NOT EXERCISED: {f.fault} never happened ({f.detail}); this run tests no recovery from it",
                markup=False,
            )
    if metrics_json:
        write_atomic(metrics_json, orjson.dumps(m, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    if oracle:
        _run_oracle(res)
    if m.get("protocol_error"):
        raise SystemExit(1)  # the trace is written; its protocol-error is a violation


def _ending(res) -> str:
    """How the run ended, when not with every round done: it gave up (every round triggered
    at its end was aborted: declines or timeouts, no round hangs) or is stuck."""
    if res.gave_up:
        return ", GAVE UP (every round triggered at its end was aborted; none hangs)"
    return ", STUCK (a round never completed)" if res.metrics["stuck"] else ""


def _run_oracle(res) -> None:
    """Print the end-to-end oracle's verdict on ``res`` (exit 1 when the results differ)."""
    from snapcheck.reference.oracle import Inconclusive, exactly_once, not_judged

    cfg = res.config
    why = not_judged(cfg)
    if why:
        console.print(f"  oracle: not judged: {why}", markup=False)
        return
    try:
        diffs = exactly_once(cfg, res)
    except Inconclusive as exc:
        console.print(f"  oracle: inconclusive: {exc}", markup=False)
        return
    if not diffs:
        console.print("  oracle: the results equal those of the failure-free run", markup=False)
        return
    for d in diffs:
        console.print(f"  oracle: DIFFERS: {d}", markup=False)
    raise SystemExit(1)


def register(group) -> None:
    group.add_command(simulate_cmd)
