"""What a check judged and what it did not, and why; faults that were asked for and never happened.

A report must never let "not judged" read as "clean". After ``check_trace`` has
run every analysis that applies, ``not_judged`` names each property of
``checker.options.PROPERTIES`` without a result and the reason, stated from the
trace and the options (``REASONS``, one function per property): not selected,
no global checkpoint to judge (no ``--cut`` and no completed round), no rounds,
no round declared complete, no failure set, no recovery, nothing promised by the
protocol, none of the property's vocabulary in the trace.

``requested_faults`` lists the faults a trace's producer says it was asked to
inject, and whether each one happened: a test whose crash never fired did not
exercise recovery, whatever its verdict. Producers declare them in the header
(docs/trace-format.md, "Requested faults"): ``metadata.faults`` (any producer:
a list of ``{"fault", "proc", "fired"}``), the reference simulator's
``metadata.simulator.config.failures`` (``[task, time]`` crashes and ``[task,
situation, k]`` crashes after a situation's ``k``-th occurrence, ``task`` possibly
``self``: wherever it occurs) and the Flink
adapter's ``metadata.flink.faults`` / ``fired``; when ``metadata.faults`` is
present the other two are not read. A fault whose producer does not say whether
it fired counts as exercised when the trace has a ``fail`` event of its process
(one per requested crash of that process, in order); a ``self`` crash counts as
exercised when a ``fail`` event is left that no crash of a named process accounts
for. A ``fail`` event with ``attrs.rescale`` (the crash of a failure rescale, which
the simulator makes itself) accounts for no requested fault; a trace whose producer
does not mark such crashes cannot tell them from requested ones. A fault of the
whole job (a target that is no process, e.g. a regional ``rescale``) counts as
exercised when the trace has a restore; one that names no process either is listed
as not exercised. The shape of ``metadata.faults`` is part of
the trace format (its JSON Schema): a malformed entry is an invalid trace.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass

from snapcheck.checker.cic import zcf_applies
from snapcheck.checker.free_fields import UnreadableField
from snapcheck.checker.options import NO_PARTICIPANTS, NOT_SELECTED, PROPERTIES, UNKNOWN_RESCALE_ROUND
from snapcheck.traces.model import GENERATION, Trace


def _no_participants(run) -> str | None:
    """Why no round was judged when the trace's rounds all lack participants, else None."""
    rounds = run.report.rounds
    if rounds and all(e.get("not_analysed") == NO_PARTICIPANTS for e in rounds.values()):
        return f"none of the trace's {len(rounds)} round(s) was judged: {NO_PARTICIPANTS}"
    return None


def _rounds_or(reason: str):
    return lambda run: _no_participants(run) or reason


def _cut(run) -> str:
    rounds = run.report.rounds
    if empty := _no_participants(run):
        where = empty
    elif rounds:
        where = f"none of the trace's {len(rounds)} snapshot round(s) completed"
    else:
        where = "the trace has no snapshot rounds (its checkpoints are not coordinated)"
    useless = len(run.report.useless)
    return (
        f"no global checkpoint to judge: no --cut was given and {where}; no cut was judged for orphans or "
        f"channel state (what was computed: the recovery lines, which are consistent by construction, and "
        f"{useless} useless checkpoint(s) on Z-cycles)"
    )


def _promise(what: str, param: str):
    def reason(run) -> str:
        return (
            f"protocol {run.report.protocol!r} does not promise {what} (header params.{param}"
            f"{'' if run.opts.facts else '; the protocol catalogue adds nothing for this name'})"
        )

    return reason


def _zcycles(run) -> str:
    return (
        _promise("Z-cycle freedom", "guarantees")(run)
        + f"; the {len(run.report.useless)} useless checkpoint(s) found are listed as information"
    )


def _cic(run) -> str:
    if run.facts.cic is None:
        return f"protocol {run.report.protocol!r} declares no communication-induced rules (params.cic: bcs or hmnr)"
    if not zcf_applies(run.ix):
        return "the trace carries none of the CIC protocol's data (forced checkpoints, piggybacks, checkpoint vars)"
    return "not applicable"


def _rescale(run) -> str:
    """Why no rescale was judged: there is none, or none has a known restored round."""
    if any(e.sources is not None for e in run.ix.of_type("restore")):
        return UNKNOWN_RESCALE_ROUND
    return "the trace has no restore at another parallelism (no restore names its sources)"


def _no_restore(run) -> str:
    if run.ix.has("restore"):  # every recovery it has was interrupted by the protocol error (checker.api.interrupted)
        return "the run broke (a protocol error) during the recovery its restores began: none finished to judge"
    return "the trace has no restore: no recovery happened to judge"


def _lineage(run) -> str:
    if not run.ix.has("round_start"):
        return "the trace has no coordinated rounds (round_start events)"
    return _no_restore(run)


def _regional(run) -> bool:
    return any(info.declared_complete and info.fallback for info in run.rounds.values())


_NOT_REGIONAL = "no round completes regionally (no round_complete names a fallback in attrs.fallback)"


def _regional_restore(run) -> str:
    return (
        _NOT_REGIONAL + " and no restore carries the digest of the state it restores (attrs.digest); "
        "the list-state elements a rescale hands a task (restore attrs.elements) are judged against "
        "regional completions only"
    )


def _regional_commit(run) -> str:
    if not _regional(run):
        return _NOT_REGIONAL
    return "no output of the trace is a two-phase-commit transaction (attrs.phase)"


def _regional_drift(run) -> str:
    if not _regional(run):
        return _NOT_REGIONAL
    return "the protocol declares no limit of consecutive regional completions (params.max_consecutive)"


REASONS = {
    "consistency": _cut,
    "channel-state": _cut,
    "termination": _rounds_or("the trace has no snapshot rounds"),
    "completion": _rounds_or("no round is declared complete (no round_complete event)"),
    "protocol-error": lambda run: (
        "the trace has no protocol_error event (its producer reported no exception of "
        "the protocol and no broken invariant of the simulator)"
    ),
    "z-cycles": _zcycles,
    "recovery-line": lambda run: (
        "no failure set given (--failures); the restart-all recovery line is computed as information"
    ),
    "observed-recovery": _no_restore,
    "exactly-once": _no_restore,
    "rdt": _promise("rollback-dependency trackability", "guarantees"),
    "cic-conformance": _cic,
    "cic-efficiency": _cic,
    "timestamps": _cic,
    "log-retention": lambda run: "the trace truncates no sender log (no log_truncate events)",
    "output-commit": lambda run: "no output of the trace is a two-phase-commit transaction (attrs.phase)",
    "control-delivery": lambda run: "no message of the trace carries an operator event (attrs.event)",
    "recovery-lineage": _lineage,
    "changelog-restore": lambda run: "the trace has no changelog data (artifacts, checkpoint vars.changelog)",
    "artifact-retention": lambda run: "the trace has no changelog data (artifacts, checkpoint vars.changelog)",
    "replica-agreement": lambda run: "the protocol declares no replicas (params.replicas)",
    "replica-delivery": lambda run: "the protocol declares no replicas (params.replicas)",
    "replica-liveness": lambda run: "the protocol declares no replicas (params.replicas)",
    "rescale-state": _rescale,
    "rescale-in-flight": _rescale,
    "finished-tasks": lambda run: "no task of the trace finishes (no finish event)",
    "regional-restore": _regional_restore,
    "regional-cut": lambda run: _NOT_REGIONAL + " and no process declares a region (attrs.region)",
    "regional-commit": _regional_commit,
    "split-assignment": lambda run: "the trace has no input split logs (external processes with attrs.split)",
    "agreement": lambda run: "no checkpoint declares values its subtasks must agree on (checkpoint attrs.agreed)",
    "regional-drift": _regional_drift,
}


def not_judged(run) -> dict[str, str]:
    """Property -> why it has no result in ``run.report`` (``run``: a ``check_trace`` run),
    for every property of ``checker.options.PROPERTIES`` without a result: ``NOT_SELECTED``
    when ``--property`` left it out, else the reason ``REASONS`` states from the trace.
    ``check_trace`` stores it as ``report.not_judged``, so that a property without a
    verdict is never read as a clean one.

    Worked example A of docs/theory.md has checkpoints but no coordinated rounds:

    >>> from snapcheck.checker import CheckOptions, check_trace
    >>> from snapcheck.traces.golden import golden
    >>> report = check_trace(golden("theory_a_zcycle"))
    >>> report.judged, report.not_judged["termination"]
    ([], 'the trace has no snapshot rounds')
    >>> report.not_judged["consistency"]
    'no global checkpoint to judge: no --cut was given and the trace has no snapshot rounds ...'
    >>> report = check_trace(golden("theory_a_zcycle"), CheckOptions(properties=["z-cycles"]))
    >>> report.judged, report.not_judged["rdt"] == NOT_SELECTED
    (['z-cycles'], True)
    """
    judged = {r.property for r in run.report.results}
    out = {}
    for prop in PROPERTIES:
        if prop in judged:
            continue
        if run.opts.properties is not None and prop not in run.opts.properties:
            out[prop] = NOT_SELECTED
        else:
            out[prop] = REASONS[prop](run)
    return out


@dataclass
class RequestedFault:
    """One fault the producer was asked to inject (``fault``: its description; ``proc``:
    the process it targets, if the producer names one), whether it was ``exercised``
    (it happened, so the recovery it was meant to test was tested) and the ``detail``
    of how that was decided (module docstring). ``to_json()`` is its entry in the
    report's ``faults``.

    >>> RequestedFault("crash", "P0", True, "P0 fails in the trace").to_json()
    {'fault': 'crash', 'proc': 'P0', 'exercised': True, 'detail': 'P0 fails in the trace'}
    """

    fault: str
    proc: str | None
    exercised: bool
    detail: str

    def to_json(self) -> dict:
        """The fault as a JSON object (the report's ``faults`` entries)."""
        return asdict(self)


def _at_their_ticks(trace: Trace, failures) -> dict[int, str]:
    """The simulator's timed crashes (``[task, time]`` entries of ``failures``, by position)
    that a ``fail`` event of their task at that very tick accounts for, each event once:
    the others are matched by count (``requested_faults``), so a crash that did not happen
    is the one named even when the crashes of a task are not listed in time order.

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["P0"], [])
    >>> rec.fail("P0", t=1200)
    >>> _at_their_ticks(rec.trace(), [["P0", 1250], ["P0", 1200]])
    {1: 'P0'}
    """
    ticks = Counter((e.proc, e.t) for e in trace.events if e.type == "fail" and "rescale" not in (e.attrs or {}))
    out = {}
    for i, item in enumerate(failures):
        if len(item) == 2 and isinstance(item[1], int) and ticks[(str(item[0]), item[1])] > 0:
            ticks[(str(item[0]), item[1])] -= 1
            out[i] = str(item[0])
    return out


def _fail_counts(trace: Trace) -> Counter:
    """The ``fail`` events of each process that a requested fault may account for: all but
    the crashes of failure rescales (``attrs.rescale``), which the rescale itself made."""
    return Counter(e.proc for e in trace.events if e.type == "fail" and "rescale" not in (e.attrs or {}))


def _requested_rescales(trace: Trace, rescales) -> list[RequestedFault]:
    """The reference simulator's requested restores at another parallelism (``SimConfig.rescale``
    entries ``[kind, time, parallelism]``), in order, matched to the recoveries of the trace
    whose restores name ``sources`` (one per rescale that happened): a rescale asked for
    while another recovery ran, or after the run ended, does not happen.

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["P0"], [], metadata={"simulator": {"config": {"rescale": [["failure", 9, 2]]}}})
    >>> [(f.fault, f.exercised) for f in _requested_rescales(rec.trace(), [["failure", 9, 2]])]
    [('failure rescale at tick 9 to parallelism 2', False)]
    """
    done = len({e.recovery for e in trace.events if e.type == "restore" and e.sources is not None})
    out = []
    for i, item in enumerate(rescales):
        if not (isinstance(item, (list, tuple)) and len(item) == 3):
            continue
        kind, when, p = item
        ok = i < done
        detail = (
            "the job was restored at another parallelism in the trace"
            if ok
            else "the trace has no (further) restore at another parallelism: it came while another recovery "
            "ran, its savepoint never succeeded, or the run ended first"
        )
        out.append(RequestedFault(f"{kind} rescale at tick {when} to parallelism {p}", None, ok, detail))
    return out


def requested_faults(trace: Trace) -> list[RequestedFault]:
    """The faults the trace's header says were requested, in header order, each with
    whether it happened (module docstring): the producer's own ``fired`` when it gives
    one, else the ``fail`` events of the targeted process, matched one to one.

    Two crashes were asked for; ``P0``'s happened, and ``P1``'s producer says it never
    fired:

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["P0", "P1"], [], metadata={"faults": [
    ...     {"fault": "crash", "proc": "P0"}, {"fault": "crash", "proc": "P1", "fired": False}]})
    >>> rec.fail("P0")
    >>> [(f.proc, f.exercised, f.detail) for f in requested_faults(rec.trace())]
    [('P0', True, 'P0 fails in the trace'), ('P1', False, 'the producer reports it never fired (e.g. the run ended first)')]

    A fault of a process the trace does not have is named so:

    >>> rec = TraceRecorder(["P0"], [], metadata={"faults": [{"fault": "crash", "proc": "P9"}]})
    >>> [f.detail for f in requested_faults(rec.trace())]
    ["the trace has no process 'P9' (a misspelt name?)"]

    The reference simulator's crash times: two crashes of ``P0`` requested, one ``fail``
    recorded, so only the first counts as exercised:

    >>> rec = TraceRecorder(["P0"], [], metadata={"simulator": {"config": {"failures": [["P0", 5], ["P0", 9]]}}})
    >>> rec.fail("P0")
    >>> [(f.fault, f.exercised) for f in requested_faults(rec.trace())]
    [('crash of P0 at tick 5', True), ('crash of P0 at tick 9', False)]

    A timed crash is first matched to a ``fail`` event at its very tick: two crashes of
    ``P0`` listed out of time order, of which only the one at tick 1200 happened:

    >>> rec = TraceRecorder(["P0"], [], metadata={"simulator": {"config": {"failures": [["P0", 1250], ["P0", 1200]]}}})
    >>> rec.fail("P0", t=1200)
    >>> [(f.fault, f.exercised) for f in requested_faults(rec.trace())]
    [('crash of P0 at tick 1250', False), ('crash of P0 at tick 1200', True)]

    Crashes at situations: ``P0`` after its first snapshot, and two of whichever task
    declines (``self``); ``P0`` and ``P1`` fail, so one ``self`` crash happened:

    >>> rec = TraceRecorder(["P0", "P1"], [], metadata={"simulator": {"config": {"failures": [
    ...     ["P0", "snapshot", 1], ["self", "decline", 2], ["self", "decline", 5]]}}})
    >>> rec.fail("P0"); rec.fail("P1")
    >>> [(f.fault, f.exercised) for f in requested_faults(rec.trace())]
    [('crash of P0 after snapshot #1', True), ('crash of self after decline #2', True), ('crash of self after decline #5', False)]
    """
    meta = trace.header.metadata or {}
    fails: Counter | None = None  # counted when a fault is matched to the fail events
    used: Counter = Counter()
    out = []

    def by_fail_event(fault: str, proc: str | None) -> RequestedFault:
        if proc is None:
            return RequestedFault(
                fault, None, False, "the producer names no process and says nothing of whether it fired"
            )
        nonlocal fails
        if fails is None:
            fails = _fail_counts(trace)
        used[proc] += 1
        if fails[proc] >= used[proc]:
            return RequestedFault(fault, proc, True, f"{proc} fails in the trace")
        if proc not in {p.id for p in trace.header.processes}:
            why = (
                ", a task a rescale would start: that rescale did not happen"
                if GENERATION.match(proc)
                else " (a misspelt name?)"
            )
            return RequestedFault(fault, proc, False, f"the trace has no process {proc!r}{why}")
        return RequestedFault(fault, proc, False, f"the trace has no (further) fail event of {proc}")

    for f in meta.get("faults") or ():
        fault, proc = str(f.get("fault", "fault")), f.get("proc")
        proc = proc if isinstance(proc, str) else None
        if isinstance(f.get("fired"), bool):
            detail = (
                "the producer reports it fired"
                if f["fired"]
                else "the producer reports it never fired (e.g. the run ended first)"
            )
            out.append(RequestedFault(fault, proc, f["fired"], detail))
        else:
            out.append(by_fail_event(fault, proc))
    if "faults" not in meta:
        sim = (meta.get("simulator") or {}).get("config") or {}
        procs = {p.id for p in trace.header.processes}
        anywhere: list[int] = []  # positions in ``out`` of crashes of "self"
        failures = sim.get("failures") or ()
        for i, item in enumerate(failures):
            if not isinstance(item, (list, tuple)) or len(item) not in (2, 3):
                raise UnreadableField(
                    f"line 1: metadata.simulator.config.failures[{i}] must be [task, time] or "
                    f"[task, situation, k], not {item!r}"
                )
        at_tick = _at_their_ticks(trace, failures)  # timed crashes matched to fail events at their very tick
        for proc in at_tick.values():
            used[proc] += 1  # those fail events are taken
        for i, item in enumerate(failures):
            if i in at_tick:
                out.append(
                    RequestedFault(
                        f"crash of {item[0]} at tick {item[1]}",
                        str(item[0]),
                        True,
                        f"{item[0]} fails at tick {item[1]}",
                    )
                )
            elif len(item) == 2:
                out.append(by_fail_event(f"crash of {item[0]} at tick {item[1]}", str(item[0])))
            else:
                target, situation, k = (str(x) for x in item)
                what = f"crash of {target} after {situation} #{k}"
                if target in procs or GENERATION.match(target):
                    out.append(by_fail_event(what, target))
                elif target == "self":
                    anywhere.append(len(out))
                    out.append(RequestedFault(what, None, False, ""))
                else:
                    restored = any(e.type == "restore" for e in trace.events)
                    why = "the job was restored in the trace" if restored else "the trace has no restore"
                    out.append(RequestedFault(f"{target} after {situation} #{k}", None, restored, why))
        out += _requested_rescales(trace, sim.get("rescale") or ())
        if anywhere:
            counts = fails if fails is not None else _fail_counts(trace)
            left = sum(counts.values()) - sum(min(counts[p], n) for p, n in used.items())
            for i in anywhere:
                ok = left > 0
                left -= ok
                detail = "a fail event no crash of a named task accounts for" if ok else "no fail event is left for it"
                out[i] = RequestedFault(out[i].fault, None, ok, detail)
        flink = meta.get("flink") or {}
        fired = flink.get("fired")
        if not isinstance(fired, dict):
            fired = {}
        for spec in flink.get("faults") or ():
            ok = spec in fired
            out.append(
                RequestedFault(
                    f"Flink --fail {spec}",
                    None,
                    ok,
                    f"fired at {fired[spec]} µs" if ok else "never fired (the job finished before the failure point)",
                )
            )
    return out
