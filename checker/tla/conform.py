"""Trace validation: is a recorded v1 trace a behaviour of its protocol's TLA+
specification? (``snapcheck conform``; docs/specs.md, "Trace validation".)

For each trace:

1. ``traces.read_trace`` checks the schema and the format's semantic rules;
   a trace that fails is an ERROR (``FILE:LINE: reason``), never given to TLC.
   A large trace is read and mapped (step 2) in a child process (``apart``),
   which gives the memory reading it fragments back to the system.
2. The protocol (``header.protocol.name``) selects the specification and its
   trace module in ``specs/`` through the ``TlaMapping`` its catalogue entry
   declares; the mapping modules turn the trace's events, in a causal order,
   into spec events: ``map_snapshot`` (chandy-lamport, abs-*, unaligned,
   aligned-timeout; bcs, hmnr), ``map_unc``, ``map_replication``. A trace of a
   coordinated protocol that restores a task goes to ``map_rescale`` (its
   recoveries against RescaleTrace), one of bcs or hmnr with restores to
   ``map_unc`` (its recovery lines). A trace with events its specification
   does not model is an ERROR ("outside the specification").
3. A long trace of a snapshot protocol is cut into segments where every round
   so far is finished (``segments``): each segment starts from the state the
   cut determines, so the per-round state a run carries stays small and the
   cost is linear in the length of the trace.
4. Traces and segments with the same specification and topology share TLC
   runs, up to ``parallel`` at once; their data reaches TLC through a binary
   file and a Java operator override (``tracelog``, ``trace_data``), not as TLA+
   text for SANY. TLC explores the trace specification (cursor variable,
   ``-deadlock``); a trace is ACCEPTed iff some behaviour matches all of its
   events, otherwise REJECTed with the longest matched prefix and the first
   event no behaviour matches (``FILE:LINE``). The refinement property
   (``TlaMapping.refinement``; ``AbsSteps`` for segments that start mid-run) and
   the invariants it does not imply are checked along the way; if one fails,
   the specification itself is wrong for that trace (an ERROR).
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
import threading
from collections import defaultdict
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import cast

from snapcheck.checker.tla import apart
from snapcheck.checker.tla.manifest import specs_dir
from snapcheck.checker.tla.map_regional import prepare_regional
from snapcheck.checker.tla.map_replication import prepare_replication
from snapcheck.checker.tla.map_rescale import has_recovery, prepare_recovery
from snapcheck.checker.tla.map_snapshot import prepare_snapshot
from snapcheck.checker.tla.map_unc import prepare_unc
from snapcheck.checker.tla.segments import Segment, split
from snapcheck.checker.tla.tlc import TlcJob, find_jar, find_java, run_tlc
from snapcheck.checker.tla.trace_data import override_classes
from snapcheck.checker.tla.trace_events import OutOfScope, Prepared
from snapcheck.checker.tla.tracelog import write_tracelog
from snapcheck.traces import read_trace
from snapcheck.traces.errors import TraceErrors
from snapcheck.traces.model import Trace
from snapcheck.traces.protocol_facts import TlaMapping

ACCEPT, REJECT, ERROR = "ACCEPT", "REJECT", "ERROR"
# Why an ERROR has no verdict: the trace is not a valid v1 trace; it holds a protocol, event
# or topology no specification models; TLC failed or ran out of time on it; the
# specification itself broke an invariant on a behaviour the trace matched.
ERRORS = ("invalid-trace", "outside-specification", "tlc-failed", "tlc-timeout", "specification-violated")
MAX_EVENTS_PER_RUN = 500_000  # events per TLC run (its trace data and states: about 500 MB resident)
MIN_EVENTS_PER_RUN = 10_000  # below this one more run costs more than it saves
SEGMENT_EVENTS = 100  # spec events per segment at least (a round or two)
# Event-rounds a TLC run must save to be worth its own (``_round_classes``): a step costs
# about 0.25 ms more per round of the batch's per-round state (aligned-timeout on
# reachability, 42 channels), a warm TLC run about a second.
ROUND_CLASS_SPLIT = 4_000
HEAP_MB = 1024  # two runs and the mapped trace of 10^6 events within 2 GB
# A trace file this large is read and mapped in a child process (``apart``): the parent
# keeps the mapped events only, compact, not the memory reading the trace fragmented
# (at 10^6 events, 140 MB of file: 340 MiB resident beside TLC's JVMs instead of 815 MiB).
APART_BYTES = 32 << 20
# A trace-validation run has about as many distinct states as events (a few per event),
# a few MB of fingerprints per million: TLC's default of a quarter of the heap for the
# fingerprint set only adds resident memory (measured at 1,000,000 events: see
# docs/benchmarks.md).
FPMEM = 0.05
TEXT_ENV = "SNAPCHECK_TLC_TEXT"  # set: write the trace data as TLA+ text, never the override
# refinement properties and their step-only forms (for segments that start mid-run)
STEP_REFINEMENT = {"AbsSpec": "AbsSteps"}
# Invariants a refinement implies: ConsistentSnapshot's Consistent and ChannelStateExact
# are inductive for its Next (given rcvd <= sent, which every start state satisfies), so a
# run that checks AbsSpec or AbsSteps need not evaluate them on every state.
IMPLIED: dict[str | None, tuple[str, ...]] = {"AbsSpec": ("Consistent", "ChannelStateExact")}

PREPARE = {"unc": prepare_unc, "replication": prepare_replication, "regional": prepare_regional}


@dataclass
class Verdict:
    path: str
    verdict: str
    protocol: str = ""
    matched: int = 0  # events of the spec-level trace matched
    total: int = 0  # events of the spec-level trace (including the final "end")
    location: str = ""  # FILE:LINE of the first non-matching event
    message: str = ""
    ignored: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    spec: str = ""  # the trace specification module that judged it
    outside: str = ""  # ERROR outside the specification: the event it does not model ("fail", "send:cancel")
    error: str = ""  # of an ERROR, why it has no verdict: one of ERRORS

    @property
    def mapped(self) -> int:
        """The trace's events the specification judges (``total`` without the final ``end``)."""
        return max(self.total - 1, 0)

    @property
    def prefix(self) -> int:
        """Of those events, how many the longest matched prefix holds (ACCEPT: all)."""
        return min(self.matched, self.mapped)

    def render(self) -> str:
        head = f"{self.path}: {self.verdict}"
        if self.protocol:
            head += f" ({self.protocol})"
        if self.verdict == ACCEPT:
            head += f": all {self.total - 1} mapped events matched"
        elif self.verdict == REJECT:
            head += f": longest matched prefix {self.matched} of {self.total - 1} mapped events"
        lines = [head]
        if self.location or self.message:
            lines.append(f"  {self.location + ': ' if self.location else ''}{self.message}")
        if self.ignored:
            lines.append(
                "  not mapped (outside the specification): "
                + ", ".join(f"{n} {k}" for k, n in sorted(self.ignored.items()))
            )
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


# -- mapping -------------------------------------------------------------------


def prepare(trace: Trace, mappings: Mapping[str, TlaMapping]) -> Prepared:
    """Map a validated trace to spec events (raises ``OutOfScope``). ``mappings``:
    trace protocol name -> its ``TlaMapping`` (``reference.catalogue.tla_mappings()``)."""
    h = trace.header
    protocol = str(h.protocol.get("name", "unknown"))
    family = mappings.get(protocol)
    _fits_tlc(trace)
    if family is None:
        raise OutOfScope(
            f"no TLA+ trace specification for protocol {protocol!r} (supported: {', '.join(sorted(mappings))})"
        )
    if family.kind in PREPARE:
        return PREPARE[family.kind](trace, protocol, family)
    if family.kind == "snapshot" and has_recovery(trace):  # failures, restores, rescales
        return prepare_recovery(trace, protocol, family)
    if family.kind == "cic" and "unc" in mappings and has_recovery(trace):  # CIC with failures: its
        return prepare_unc(trace, protocol, mappings["unc"], forced=True)  # recovery lines, as unc's
    return prepare_snapshot(trace, protocol, family)


TLC_INT_MIN, TLC_INT_MAX = -(2**31), 2**31 - 1  # TLC's integers are Java ints


def _fits_tlc(trace: Trace) -> None:
    """Raise ``OutOfScope`` at the first event whose round, sequence or checkpoint number
    TLC cannot represent (the trace format allows 64 bits, TLC 32).

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["A"], [])
    >>> _ = rec.checkpoint("A", round=2**31)
    >>> _fits_tlc(rec.trace())
    Traceback (most recent call last):
    ...
    snapcheck.checker.tla.trace_events.OutOfScope: round 2147483648 is beyond TLC's 32-bit integers
    """
    for e in trace.events:
        for name in ("round", "seq", "ckpt"):
            v = getattr(e, name)
            if v is not None and not TLC_INT_MIN <= v <= TLC_INT_MAX:
                raise OutOfScope(f"{name} {v} is beyond TLC's 32-bit integers", e.line)


# -- running ---------------------------------------------------------------------

_PROGRESS = re.compile(r'<<"snapcheck-progress", (\d+), (\d+)>>')
_STATE_T = re.compile(r"/\\ traceNo = (\d+)")


@functools.cache
def _overrides() -> Path | None:
    """The compiled ``TraceLog`` operator override (None: write the data as TLA+ text)."""
    if os.environ.get(TEXT_ENV):
        return None
    return override_classes(find_jar(), find_java())


def validate_batch(batch: list[Prepared], timeout: float = 600.0, refinement: bool = True) -> list[Verdict]:
    """Validate traces (or segments of traces) that share a specification and
    topology; one ``Verdict`` per element, its ``matched`` the longest matched
    prefix of that element's events.

    A first TLC run reports only which elements are matched to the end (printing
    every new longest prefix costs about a fifth of TLC's time); the others run
    again, reporting their longest prefixes. A run in which one element makes the
    specification itself violate an invariant is repeated without it. A run that
    exceeds ``timeout`` seconds is repeated on two halves of its elements
    (``halves``: the largest elements apart from the small ones), recursively, so
    only an element that exceeds the limit alone is an ERROR (naming the limit)."""
    verdicts: dict[int, Verdict] = {}
    pending = list(range(len(batch)))
    report = "Accepted"
    while pending:
        res, best = _run_tlc(batch, pending, report, timeout, refinement)
        if res.result == "timeout":
            if len(pending) == 1:
                verdicts[pending[0]] = _timed_out(batch[pending[0]], timeout)
            else:
                for part in halves([len(batch[k].events) for k in pending]):
                    members = [pending[j] for j in part]
                    for k, v in zip(members, validate_batch([batch[k] for k in members], timeout, refinement)):
                        verdicts[k] = v
            break
        if res.result == "pass":
            for j, k in enumerate(list(pending)):
                if report == "Progress" or best[j + 1] >= len(batch[k].events):
                    verdicts[k] = _verdict(batch[k], best[j + 1])
                    pending.remove(k)
            report = "Progress"
            continue
        culprit = None
        if res.result.startswith(("invariant:", "action-property:")) and res.trace:
            m = _STATE_T.search(res.trace[-1])
            if m:
                culprit = pending[int(m.group(1)) - 1]
        if culprit is None:
            for k in pending:
                p = batch[k]
                verdicts[k] = Verdict(
                    p.path,
                    ERROR,
                    p.protocol,
                    total=len(p.events),
                    message=f"TLC failed ({res.result}): {res.error_text()[:2000]}",
                    ignored=dict(p.ignored),
                    notes=list(p.notes),
                    error="tlc-failed",
                )
            break
        p = batch[culprit]
        step = len(res.trace) - 1
        name = res.result.partition(":")[2]
        if name in p.unproven:  # the trace's topology is outside what the invariant is proven for
            verdict = REJECT
            message = f"the trace reaches a state that violates {name} after this event: {p.unproven[name]}"
        else:
            verdict = ERROR
            message = (
                f"the specification violates {res.result} after this event: the trace is a "
                "behaviour of the specification, but the specification is wrong here"
            )
        verdicts[culprit] = Verdict(
            p.path,
            verdict,
            p.protocol,
            matched=step,
            total=len(p.events),
            location=_where(p, step - 1),
            message=message,
            ignored=dict(p.ignored),
            notes=list(p.notes),
            error="" if verdict == REJECT else "specification-violated",
        )
        pending.remove(culprit)
    return [verdicts[k] for k in range(len(batch))]


def halves(sizes: list[int]) -> tuple[list[int], list[int]]:
    """Two non-empty parts of a batch whose elements have these ``sizes`` (events), as
    indices: the largest elements until they hold half of all events, and the rest; so a
    run that timed out because of one huge element has it alone in the next step.

    >>> halves([10, 10_000, 12, 9])
    ([1], [0, 2, 3])
    >>> halves([5, 5, 5, 5])
    ([0, 1], [2, 3])
    """
    order = sorted(range(len(sizes)), key=lambda i: -sizes[i])
    total, big, held = sum(sizes), [], 0
    for i in order[:-1]:
        big.append(i)
        held += sizes[i]
        if 2 * held >= total:
            break
    return sorted(big), sorted(set(order) - set(big))


def _timed_out(p: Prepared, timeout: float) -> Verdict:
    return Verdict(
        p.path,
        ERROR,
        p.protocol,
        total=len(p.events),
        message=f"TLC did not finish within its time limit of {timeout:g} s on this "
        f"{'segment of the trace' if p.start is not None or p.cut is not None else 'trace'} alone "
        f"({len(p.events) - 1:,} mapped events); the other traces of its TLC run were judged without it",
        error="tlc-timeout",
        ignored=dict(p.ignored),
        notes=list(p.notes),
    )


def _run_tlc(batch: list[Prepared], members: list[int], report: str, timeout: float, refinement: bool):
    """One TLC run on ``batch[k]`` for k in ``members``; returns its result and, per
    member (numbered from 1), the longest prefix it reported: every new one
    (``report = "Progress"``) or only complete matches (``"Accepted"``)."""
    sub = [batch[k] for k in members]
    family = sub[0].family
    classes = _overrides()
    with tempfile.TemporaryDirectory(prefix="snapcheck-conform-") as tmp:
        props = write_tracelog(sub, Path(tmp), binary=classes is not None)
        Path(tmp, "TVRun.tla").write_text(
            f"---- MODULE TVRun ----\nEXTENDS {family.module}\n"
            'Accepted == cursor = Len(Traces[traceNo]) => PrintT(<<"snapcheck-progress", traceNo, cursor>>)\n'
            "====\n"
        )
        invariants = [i for i in family.invariants if not (refinement and i in IMPLIED.get(family.refinement, ()))]
        cfg = ["SPECIFICATION TraceSpec", "INVARIANTS " + " ".join((report, *invariants))]
        if refinement and family.refinement:
            mid_run = any(p.start is not None for p in sub)
            cfg.append(f"PROPERTY {STEP_REFINEMENT[family.refinement] if mid_run else family.refinement}")
        Path(tmp, "TVRun.cfg").write_text("\n".join(cfg) + "\n")
        res = run_tlc(
            TlcJob(
                directory=Path(tmp),
                module="TVRun",
                config="TVRun.cfg",
                library=[specs_dir()],
                timeout=timeout,
                deadlock=False,
                heap_mb=HEAP_MB,
                fpmem=FPMEM,
                classpath=[classes] if classes else [],
                properties=props,
            )
        )
    best: defaultdict[int, int] = defaultdict(int)
    for line in res.printed:
        m = _PROGRESS.search(line)
        if m:
            k, n = int(m.group(1)), int(m.group(2))
            best[k] = max(best[k], n)
    return res, best


def _where(p: Prepared, index: int) -> str:
    if index < 0 or index >= len(p.events):
        return p.path
    line = p.lines[index]
    return f"{p.path}:{line}" if line else f"{p.path}:end"


def _verdict(p: Prepared, matched: int) -> Verdict:
    total = len(p.events)
    if matched >= total:
        return Verdict(
            p.path, ACCEPT, p.protocol, matched=matched, total=total, ignored=dict(p.ignored), notes=list(p.notes)
        )
    return Verdict(
        p.path,
        REJECT,
        p.protocol,
        matched=matched,
        total=total,
        location=_where(p, matched),
        message=f"first event no behaviour of the specification matches: {p.descr[matched]}",
        ignored=dict(p.ignored),
        notes=list(p.notes),
    )


def combine(p: Prepared, segments: list[Segment], results: list[Verdict]) -> Verdict | None:
    """The verdict on a whole trace from the verdicts on its segments: exactly what a
    run on the whole trace finds (see ``segments``). The first segment whose trace
    events do not all match gives the REJECT (at the whole trace's index); a
    failed ``end`` of any segment (a channel state never reported) is the whole
    trace's REJECT at ``end``. None if a segment matched all its trace events but
    not its ``cut``: no state after them is the one the next segment starts from
    (e.g. a process that never recorded a channel it should have is still
    recording there), so only a run on the whole trace can judge it."""
    end_failed = False
    for seg, v in zip(segments, results):
        if v.verdict == ERROR:
            return replace(v, path=p.path, matched=seg.offset + v.matched, total=len(p.events))
        if v.matched < seg.real:
            return _verdict(p, seg.offset + v.matched)
        if seg.prepared.cut is not None and v.matched == seg.real:
            return None
        end_failed |= v.matched < len(seg.prepared.events)
    return _verdict(p, len(p.events) - 1 if end_failed else len(p.events))


def _units(p: Prepared, segment: bool) -> list[Segment]:
    if segment and p.family.kind == "snapshot" and p.family.refinement in (None, *STEP_REFINEMENT):
        return split(p, SEGMENT_EVENTS)
    return [Segment(p, 0, len(p.events) - 1)]


def load(path: str, mappings: Mapping[str, TlaMapping]) -> Prepared | Verdict:
    """The trace at ``path`` read and mapped to spec events (``prepare``), or the ERROR
    verdict of a trace that is not valid or that its specification does not model.

    >>> from snapcheck.reference.catalogue import tla_mappings
    >>> from snapcheck.traces.golden import golden_dir
    >>> load(str(golden_dir() / "theory_c_domino.jsonl"), tla_mappings()).error
    'outside-specification'
    """
    trace = None
    try:
        trace = read_trace(path)
        return prepare(trace, mappings)
    except TraceErrors as exc:
        return Verdict(path, ERROR, message="invalid trace:\n" + exc.render(), error="invalid-trace")
    except OutOfScope as exc:
        assert trace is not None  # raised by prepare, after the trace was read
        loc = f"{path}:{exc.line}" if exc.line else path
        protocol = str(trace.header.protocol.get("name", ""))
        family = mappings.get(protocol)
        return Verdict(
            path,
            ERROR,
            protocol,
            location=loc,
            message=str(exc),
            spec=family.module if family else "",
            outside=outside_reason(trace, exc),
            error="outside-specification",
        )


def conform(
    paths: list[str],
    mappings: Mapping[str, TlaMapping],
    timeout: float = 600.0,
    refinement: bool = True,
    on_verdict=None,
    parallel: int = 1,
    segment: bool = True,
) -> list[Verdict]:
    """Validate trace files; one ``Verdict`` per path, in order. ``mappings``: trace
    protocol name -> ``TlaMapping`` (the protocol catalogue's ``tla_mappings()``).
    Traces of the snapshot protocols are validated in segments (``segment``; see
    ``segments``); traces and segments with the same specification and topology
    share TLC runs, up to ``parallel`` runs at once."""
    verdicts: dict[int, Verdict] = {}
    units: dict[int, tuple[Prepared, list[Segment]]] = {}
    groups: dict[tuple, list[tuple[int, int, Prepared]]] = defaultdict(list)
    for n, path in enumerate(paths):
        big = os.path.isfile(path) and os.path.getsize(path) >= APART_BYTES
        loaded = apart.call(load, path, mappings) if big else load(path, mappings)
        if isinstance(loaded, Verdict):
            verdicts[n] = loaded
            _notify(on_verdict, loaded)
            continue
        p = loaded
        segs = _units(p, segment)
        units[n] = (p, segs)
        for j, seg in enumerate(segs):
            groups[seg.prepared.topology].append((n, j, seg.prepared))
    results: dict[int, list[Verdict | None]] = {n: [None] * len(segs) for n, (_, segs) in units.items()}
    left = {n: len(segs) for n, (_, segs) in units.items()}
    lock = threading.Lock()

    def run(chunk) -> None:
        found = validate_batch([u for _, _, u in chunk], timeout, refinement)
        with lock:
            for (n, j, _), v in zip(chunk, found):
                results[n][j] = v
                left[n] -= 1
                if not left[n]:
                    p, segs = units[n]
                    done = cast(list[Verdict], results[n])  # every segment's verdict is in
                    final = done[0] if len(segs) == 1 and segs[0].prepared is p else combine(p, segs, done)
                    if final is None:  # a cut no state reaches: judged whole, below
                        whole.append(n)
                        continue
                    verdicts[n] = final = replace(final, spec=p.family.module)
                    _notify(on_verdict, final)

    whole: list[int] = []
    chunks = [c for members in groups.values() for c in _chunks(members, parallel)]
    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        list(pool.map(run, chunks))
    if whole:
        regroup: dict[tuple, list[tuple[int, int, Prepared]]] = defaultdict(list)
        for n in whole:
            p = units[n][0]
            units[n] = (p, [Segment(p, 0, len(p.events) - 1)])
            results[n], left[n] = [None], 1
            regroup[p.topology].append((n, 0, p))
        with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
            list(pool.map(run, [c for members in regroup.values() for c in _chunks(members, parallel)]))
    return [verdicts[n] for n in range(len(paths))]


def outside_reason(trace: Trace, exc: OutOfScope) -> str:
    """What a trace outside its specification has that the specification does not model:
    the category ``exc`` gives (``OutOfScope.category``), else the type (and kind, or a
    control message's verb) of the event it names, else its message (a topology or header
    the specification does not model).

    >>> from snapcheck.traces.golden import golden
    >>> trace = golden("theory_c_domino")
    >>> [outside_reason(trace, OutOfScope("not modelled", line)) for line in (2, 3)]
    ['checkpoint:basic', 'send']
    >>> outside_reason(trace, OutOfScope("two sinks"))
    'two sinks'
    >>> outside_reason(trace, OutOfScope("split 3 is read by a and b", 0, "a split that moved between readers"))
    'a split that moved between readers'
    """
    if exc.category:
        return exc.category
    if exc.line:
        for e in trace.events:
            if e.line == exc.line:
                if e.kind and e.kind != "data":
                    return f"{e.type}:{e.kind}"
                if e.type == "send" and isinstance(e.value, list) and e.value and isinstance(e.value[0], str):
                    return f"send:{e.value[0]}"  # a control message: its verb ("decline", "ack", …)
                return e.type
    return str(exc)


def _chunks(members: list, parallel: int) -> list[list]:
    """TLC runs for the traces and segments of one topology: members of very different
    numbers of rounds apart (``_round_classes``), then at most ``MAX_EVENTS_PER_RUN``
    events each, and as many as there are parallel runs when there is enough work (a
    JVM's start costs about a second); members with similar numbers of rounds
    together, and of similar lengths (the longest last: a run that times out is
    split, ``validate_batch``)."""
    return [c for group in _round_classes(members) for c in _event_chunks(group, parallel)]


def _round_classes(members: list) -> list[list]:
    """Members grouped by their number of rounds, in classes of powers of two: a batch's
    per-round state is as large as its largest member's, so every step of a one-round
    segment costs as much as one of a 30-round segment in the same run. A class runs
    apart from the next one only when it holds at least ``ROUND_CLASS_SPLIT``
    event-rounds less than the next class's rounds would give it (a TLC run's fixed
    cost is about that many).

    >>> from types import SimpleNamespace as NS
    >>> seg = lambda rounds, events: (0, 0, NS(bounds={"TRounds": rounds}, events=[0] * events))
    >>> [[m[2].bounds["TRounds"] for m in c] for c in _round_classes([seg(1, 3000), seg(2, 100), seg(16, 2000)])]
    [[1, 2], [16]]
    >>> [[m[2].bounds["TRounds"] for m in c] for c in _round_classes([seg(1, 100), seg(16, 2000)])]
    [[1, 16]]
    """
    classes: dict[int, list] = defaultdict(list)
    for m in members:
        classes[(_rounds(m) - 1).bit_length()].append(m)
    out: list[list] = []
    for key in sorted(classes):
        group = classes[key]
        if out:
            low = out[-1]
            rounds = max(_rounds(m) for m in group)
            saved = sum(len(m[2].events) * (rounds - _rounds(m)) for m in low)
            if saved < ROUND_CLASS_SPLIT:
                low.extend(group)
                continue
        out.append(list(group))
    return out


def _rounds(member: tuple) -> int:
    """The rounds of a batch member's per-round state."""
    return member[2].bounds.get("TRounds", 1)


def _event_chunks(members: list, parallel: int) -> list[list]:
    members = sorted(members, key=lambda m: (_rounds(m), len(m[2].events)))
    total = sum(len(m[2].events) for m in members)
    runs = max(-(-total // MAX_EVENTS_PER_RUN), min(parallel, total // MIN_EVENTS_PER_RUN), 1)
    chunks: list[list] = [[] for _ in range(runs)]
    done = 0
    for m in members:  # contiguous runs of the sorted members, about equal in events
        chunks[min(runs - 1, done * runs // max(total, 1))].append(m)
        done += len(m[2].events)
    return [c for c in chunks if c]


def _notify(cb, v: Verdict) -> None:
    if cb is not None:
        cb(v)
