"""Trace validation: is a recorded v1 trace a behaviour of its protocol's TLA+
specification? (``snapcheck conform``; docs/specs.md, "Trace validation".)

For each trace:

1. ``traces.read_trace`` checks the schema and the format's semantic rules;
   a trace that fails is an ERROR (``FILE:LINE: reason``), never given to TLC.
2. The protocol (``header.protocol.name``) selects the specification and its
   trace module in ``specs/`` through the ``TlaMapping`` its catalogue entry
   declares (``Protocol.tla``; ``snapcheck protocols`` lists them): e.g. aligned
   ABS maps to ABSTrace without back-edges (Algorithm 1), cyclic ABS to ABSTrace
   with the header's back-edges (Algorithm 2), unc to UncoordinatedTrace
   (mapping in ``checker.tla.map_unc``), liverobin to LiveRobinTrace
   (``checker.tla.map_replication``).
   The snapshot and CIC specifications model failure-free runs in which every
   round runs to the end: such a trace with ``fail``, ``restore``, ``replay``,
   ``discard`` or ``round_abort`` events is an ERROR ("outside the
   specification"), not a guess; unc traces include failures, restores,
   replays from the logs and discards, liverobin traces replica crashes. For
   bcs and hmnr a forced checkpoint is folded into the receive that follows
   it, and the specification decides whether it was due.
3. The events are put in a causal order (a receive after its send)
   and mapped to spec events (unc and liverobin: see their mapping modules;
   the others here) ``[op, p, c, k, n, x, s, part]``: data messages
   are known by their per-channel sequence number, barriers by their round,
   recorded channel state by the sequence numbers it lists, checkpoints and
   records by their round. Events the specification does not model are
   counted, not mapped: external input (``external`` processes and their
   channels), non-barrier messages on control channels (acknowledgements,
   commits), ``output``, ``log`` and ``log_truncate``; for chandy-lamport and
   abs-* also ``arrive`` (buffering is not modelled there). For unaligned and
   aligned-timeout a message without an ``arrive`` event arrives right before
   it is received. A synthetic last event ``end`` asks that every non-empty
   channel state was reported by a ``record`` event.
4. The traces with the same specification and topology go to TLC together,
   as ``Traces == <<...>>`` in a generated ``TraceLog.tla`` (a plain
   definition, never a CONSTANT override). TLC explores
   the trace specification (cursor variable, ``-deadlock``) and prints every new
   longest matched prefix; a trace is ACCEPTed iff some behaviour matches all
   of its events, otherwise REJECTed with the longest matched prefix and the
   first event no behaviour matches (``FILE:LINE``). The family's invariants
   and refinement property (``TlaMapping.invariants``, ``TlaMapping.refinement``) are
   checked along the way; if one fails, the specification itself is wrong for
   that trace (an ERROR).
"""

from __future__ import annotations

import re
import tempfile
import threading
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from snapcheck.checker.tla.manifest import specs_dir
from snapcheck.checker.tla.map_regional import prepare_regional
from snapcheck.checker.tla.map_replication import prepare_replication
from snapcheck.checker.tla.map_rescale import has_recovery, prepare_recovery
from snapcheck.checker.tla.map_unc import prepare_unc
from snapcheck.checker.tla.tlc import TlcJob, run_tlc
from snapcheck.checker.tla.trace_events import (OutOfScope, Prepared, causal_order, task_topology, tla,
                                      tla_function)
from snapcheck.traces import read_trace
from snapcheck.traces.errors import TraceErrors
from snapcheck.traces.model import Trace
from snapcheck.traces.protocol_facts import TlaMapping

ACCEPT, REJECT, ERROR = "ACCEPT", "REJECT", "ERROR"
OUT_OF_SCOPE = ("fail", "restore", "replay", "discard", "round_abort")
ALWAYS_IGNORED = ("output", "log", "log_truncate")
MAX_EVENTS_PER_RUN = 20000
CHUNK = 40                  # events per generated TLA+ definition


PREPARE = {"unc": prepare_unc, "replication": prepare_replication, "regional": prepare_regional}


@dataclass
class Verdict:
    path: str
    verdict: str
    protocol: str = ""
    matched: int = 0           # events of the spec-level trace matched
    total: int = 0             # events of the spec-level trace (including the final "end")
    location: str = ""         # FILE:LINE of the first non-matching event
    message: str = ""
    ignored: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

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
            lines.append("  not mapped (outside the specification): "
                         + ", ".join(f"{n} {k}" for k, n in sorted(self.ignored.items())))
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


# -- mapping -------------------------------------------------------------------

def prepare(trace: Trace, mappings: Mapping[str, TlaMapping]) -> Prepared:
    """Map a validated trace to spec events (raises ``OutOfScope``). ``mappings``:
    trace protocol name -> its ``TlaMapping`` (``reference.catalogue.tla_mappings()``)."""
    h = trace.header
    protocol = str(h.protocol.get("name", "unknown"))
    family = mappings.get(protocol)
    if family is None:
        raise OutOfScope(f"no TLA+ trace specification for protocol {protocol!r} "
                         f"(supported: {', '.join(sorted(mappings))})")
    if family.kind in PREPARE:
        return PREPARE[family.kind](trace, protocol, family)
    if family.kind == "snapshot" and has_recovery(trace):      # failures, restores, rescales
        return prepare_recovery(trace, protocol, family)
    if family.kind == "cic" and "unc" in mappings and has_recovery(trace):   # CIC with failures: its
        return prepare_unc(trace, protocol, mappings["unc"], forced=True)   # recovery lines, as unc's
    for e in trace.events:
        if e.type in OUT_OF_SCOPE:
            raise OutOfScope(f"{e.type!r} event: the TLA+ specification of {protocol} models "
                             "failure-free runs whose rounds all complete", e.line)
    if family.kind == "cic":
        return _prepare_cic(trace, protocol, family)
    for e in trace.events:
        if e.type == "checkpoint" and e.kind not in ("coordinated", "initial"):
            raise OutOfScope(f"{e.kind} checkpoint: {protocol} takes coordinated checkpoints only", e.line)
        if e.type == "checkpoint" and e.kind == "coordinated" and e.round is None:
            raise OutOfScope("coordinated checkpoint without a round", e.line)

    roles, procs, data_chans = task_topology(trace)
    coords = sorted(p for p, r in roles.items() if r == "coordinator")
    chans = {c.id: c for c in h.channels}
    ctrl_chans = sorted({e.ch for e in trace.events
                         if e.type == "send" and e.kind == "barrier" and chans[e.ch].kind == "control"
                         and roles[chans[e.ch].src] == "coordinator" and roles[chans[e.ch].dst] != "coordinator"})
    for c in ctrl_chans:
        if roles[chans[c].dst] not in ("task", "source", "sink"):
            raise OutOfScope(f"barrier sent on control channel {c!r} to a {roles[chans[c].dst]} process")
    modelled = set(data_chans) | set(ctrl_chans)
    back = sorted(c for c in data_chans if chans[c].back_edge) if family.back_edges else []

    # message identities: mid -> (channel, kind, number)
    msg: dict[str, tuple[str, str, int]] = {}
    ckpt_round: dict[tuple[str, int], int] = {}
    for e in trace.events:
        if e.type == "send":
            if e.kind == "barrier":
                msg[e.mid] = (e.ch, "b", e.round)
            else:
                msg[e.mid] = (e.ch, "d", e.seq)
        elif e.type == "checkpoint" and e.kind == "coordinated":
            ckpt_round[(e.proc, e.ckpt)] = e.round

    # output parts (unaligned): how many records a barrier overtook
    overtaken: dict[tuple[str, str, int], int] = {}
    for e in trace.events:
        if e.type == "record" and e.part == "output":
            r = ckpt_round.get((e.proc, e.ckpt))
            if r is not None:
                overtaken[(e.proc, e.ch, r)] = len(e.mids)

    arrived = {e.mid for e in trace.events if e.type == "arrive"}
    in_wire: dict[str, list[str]] = defaultdict(list)   # per channel: sent, not yet arrived (send order)
    events: list[dict] = []
    lines: list[int] = []
    descr: list[str] = []
    ignored: Counter = Counter()
    rounds = 1
    max_data = 1

    def add(line: int, text: str, op: str, p: str, c: str = "", k: str = "", n: int = 0, x: int = 0,
            s: tuple = (), part: str = "") -> None:
        events.append({"op": op, "p": p, "c": c, "k": k, "n": n, "x": x, "s": list(s), "part": part})
        lines.append(line)
        descr.append(text)

    for e in causal_order(trace):
        where = e.line
        if e.type in ALWAYS_IGNORED:
            ignored[e.type] += 1
            continue
        if e.type in ("send", "recv", "arrive"):
            if e.ch not in modelled:
                ignored[f"{e.type} (external input or control message)"] += 1
                continue
            ch, k, n = msg[e.mid]
            if k == "d" and e.ch in ctrl_chans:
                ignored[f"{e.type} (control message)"] += 1
                continue
            if k == "d":
                max_data = max(max_data, n)
            else:
                rounds = max(rounds, n)
            what = f"{e.type} of {'barrier ' + str(n) if k == 'b' else 'record seq ' + str(n)} " \
                   f"({e.mid!r}) on {e.ch!r} by {e.proc}"
            if e.type == "arrive" and not family.models_arrival:
                ignored["arrive"] += 1
                continue
            if e.type in ("arrive", "recv") and family.models_arrival:
                # A message without an arrive event arrives as late as FIFO allows:
                # right before its receipt or before a later message of its channel arrives.
                queue = in_wire[e.ch]
                upto = queue.index(e.mid) if e.mid in queue else 0
                for m in queue[:upto]:
                    if m not in arrived:
                        add(where, f"arrival (implied) of {m!r} on {e.ch!r}", "arrive", e.proc, *msg[m])
                del queue[:upto]
                if queue and queue[0] == e.mid:
                    queue.pop(0)
                    if e.type == "recv" and e.mid not in arrived:
                        add(where, f"arrival (implied) of {e.mid!r} on {e.ch!r}", "arrive", e.proc, ch, k, n)
            if e.type == "send":
                in_wire[e.ch].append(e.mid)
                x = overtaken.get((e.proc, e.ch, n), 0) if k == "b" else 0
                add(where, what, "send", e.proc, ch, k, n, x)
            else:
                add(where, what, e.type, e.proc, ch, k, n)
        elif e.type == "checkpoint":
            if e.kind == "initial":
                ignored["checkpoint (initial)"] += 1
                continue
            if e.proc not in procs:
                raise OutOfScope(f"checkpoint of {e.proc}, a {roles[e.proc]} process", where)
            rounds = max(rounds, e.round)
            add(where, f"checkpoint {e.ckpt} (round {e.round}) of {e.proc}", "ckpt", e.proc, n=e.round)
        elif e.type == "record":
            r = ckpt_round.get((e.proc, e.ckpt))
            if r is None:
                raise OutOfScope(f"record for checkpoint {e.ckpt} of {e.proc}, which is not a "
                                 "coordinated checkpoint", where)
            if e.ch not in data_chans:
                raise OutOfScope(f"record of channel {e.ch!r}, which is not a data channel between tasks", where)
            seqs = []
            for m in e.mids:
                ch, k, n = msg[m]
                if k != "d":
                    raise OutOfScope(f"record lists the barrier {m!r} as channel state", where)
                seqs.append(n)
            part = e.part or "input"
            add(where, f"record of the {part} part of {e.ch!r} for round {r} by {e.proc}: {list(e.mids)}",
                "record", e.proc, e.ch, n=r, s=tuple(seqs), part=part)
        elif e.type in ("round_start", "round_complete"):
            if e.proc not in coords:
                raise OutOfScope(f"{e.type} by {e.proc}, which is not a coordinator", where)
            rounds = max(rounds, e.round)
            op = "start" if e.type == "round_start" else "complete"
            add(where, f"{e.type} {e.round} by {e.proc}", op, e.proc, n=e.round)
        else:
            raise OutOfScope(f"{e.type!r} events are not mapped", where)
    add(0, "end of trace: every non-empty recorded channel state must have been reported "
           "by a record event", "end", "")

    started = {e.round for e in trace.events if e.type == "round_start"}
    completed = {e.round for e in trace.events if e.type == "round_complete"}
    notes = []
    if started - completed:
        notes.append(f"round(s) {sorted(started - completed)} started and never completed in this trace; "
                     "a trace is a finite prefix, so whether they ever complete (liveness) is decided by "
                     "model checking, not here")
    topology = (family, tuple(procs), tuple(coords), tuple(data_chans), tuple(ctrl_chans),
                tuple((c, chans[c].src, chans[c].dst) for c in sorted(modelled)), tuple(back))
    return Prepared(trace.path, protocol, family, topology, _snapshot_consts(topology),
                    {"TRounds": rounds, "TMaxData": max_data},
                    events, lines, descr, ignored, notes)


def _prepare_cic(trace: Trace, protocol: str, family: TlaMapping) -> Prepared:
    """CIC traces: basic checkpoints, sends and receives; a forced checkpoint is folded
    into the receive that follows it on its process (x = 1)."""
    roles, procs, data_chans = task_topology(trace)
    modelled = set(data_chans)
    by_proc = trace.by_process()
    next_of = {}
    for evs in by_proc.values():
        for a, b in zip(evs, evs[1:]):
            next_of[id(a)] = b
    forced_before: set[int] = set()
    seq_of = {e.mid: e.seq for e in trace.events if e.type == "send"}
    events: list[dict] = []
    lines: list[int] = []
    descr: list[str] = []
    ignored: Counter = Counter()
    basic: Counter = Counter()
    sends = 0

    def add(line, text, op, p, c="", n=0, x=0):
        events.append({"op": op, "p": p, "c": c, "k": "d", "n": n, "x": x, "s": [], "part": ""})
        lines.append(line)
        descr.append(text)

    for e in causal_order(trace):
        if e.type in ALWAYS_IGNORED:
            ignored[e.type] += 1
        elif e.type in ("send", "recv", "arrive"):
            if e.ch not in modelled:
                ignored[f"{e.type} (external input or control message)"] += 1
            elif e.type == "arrive":
                ignored["arrive"] += 1
            elif e.type == "send":
                if e.kind == "barrier":
                    raise OutOfScope(f"barrier on {e.ch!r}: {protocol} sends no barriers", e.line)
                sends += 1
                add(e.line, f"send of record seq {e.seq} ({e.mid!r}) on {e.ch!r} by {e.proc}", "send",
                    e.proc, e.ch, e.seq)
            else:
                forced = id(e) in forced_before
                seq = seq_of[e.mid]
                add(e.line, f"recv of record seq {seq} ({e.mid!r}) on {e.ch!r} by {e.proc}, "
                            f"{'after a forced checkpoint' if forced else 'without a forced checkpoint'}",
                    "recv", e.proc, e.ch, seq, 1 if forced else 0)
        elif e.type == "checkpoint":
            if e.kind == "initial":
                ignored["checkpoint (initial)"] += 1
            elif e.kind == "basic":
                basic[e.proc] += 1
                add(e.line, f"basic checkpoint {e.ckpt} of {e.proc}", "ckpt", e.proc)
            elif e.kind == "forced":
                nxt = next_of.get(id(e))
                if nxt is None or nxt.type != "recv" or nxt.ch not in modelled:
                    add(e.line, f"forced checkpoint {e.ckpt} of {e.proc} that no receive follows",
                        "forced-alone", e.proc)
                else:
                    forced_before.add(id(nxt))
            else:
                raise OutOfScope(f"{e.kind} checkpoint: {protocol} takes basic and forced checkpoints", e.line)
        else:
            raise OutOfScope(f"{e.type!r} events are not mapped for {protocol}", e.line)
    add(0, "end of trace", "end", "")
    ends = tuple((c.id, c.src, c.dst) for c in sorted(trace.header.channels, key=lambda c: c.id)
                 if c.id in modelled)
    topology = (family, tuple(procs), (), tuple(data_chans), (), ends, ())
    bounds = {"TMaxMsgs": max(1, sends), "TMaxBasic": max([1, *basic.values()])}
    return Prepared(trace.path, protocol, family, topology, _snapshot_consts(topology), bounds,
                    events, lines, descr, ignored, [])


# -- TLA+ generation -------------------------------------------------------------

def _snapshot_consts(topology: tuple) -> list[tuple[str, str]]:
    """The topology definitions of the snapshot and CIC trace modules."""
    family, procs, coords, data_chans, ctrl_chans, ends, back = topology
    src = {c: s for c, s, _ in ends}
    dst = {c: d for c, _, d in ends}
    initiators = [] if coords else list(procs)
    return [
        ("TProcs", tla(set(procs))),
        ("TCoords", tla(set(coords))),
        ("TChans", tla(set(data_chans) | set(ctrl_chans))),
        ("TCtrlChans", tla(set(ctrl_chans))),
        ("TSrc", tla_function(src)),
        ("TDst", tla_function(dst)),
        ("TBackEdges", tla(set(back))),
        ("TInitiators", tla(set(initiators))),
        ("TMode", tla(family.mode or "unaligned")),
    ]


def tracelog_module(batch: list[Prepared]) -> str:
    defs = list(batch[0].consts)
    for key in sorted({k for p in batch for k in p.bounds}):
        defs.append((key, str(max(p.bounds.get(key, 1) for p in batch))))
    body = [f"{name} == {expr}" for name, expr in defs]
    # SANY's time grows faster than linearly in the size of one expression
    # (1,000 events in one tuple: 16 s CPU; in chunks of 50: 2 s), so every
    # trace is a concatenation of short definitions.
    traces = []
    for n, p in enumerate(batch, 1):
        parts = []
        for k in range(0, len(p.events), CHUNK):
            name = f"T{n}_{k // CHUNK}"
            body.append(f"{name} == {tla(p.events[k:k + CHUNK])}")
            parts.append(name)
        traces.append(" \\o ".join(parts))
    body.append("Traces == <<" + ",\n  ".join(traces) + ">>")
    return ("---- MODULE TraceLog ----\n(* Generated by checker/tla/conform.py. *)\n"
            "EXTENDS Sequences, TLC\n" + "\n".join(body) + "\n====\n")


# -- running ---------------------------------------------------------------------

_PROGRESS = re.compile(r'<<"snapcheck-progress", (\d+), (\d+)>>')
_STATE_T = re.compile(r"/\\ traceNo = (\d+)")


def validate_batch(batch: list[Prepared], timeout: float = 600.0, refinement: bool = True) -> list[Verdict]:
    """Validate traces that share a specification and topology in one TLC run (re-running
    the rest if one trace makes the specification itself violate an invariant)."""
    verdicts: dict[int, Verdict] = {}
    pending = list(range(len(batch)))
    while pending:
        sub = [batch[k] for k in pending]
        family = sub[0].family
        with tempfile.TemporaryDirectory(prefix="snapcheck-conform-") as tmp:
            Path(tmp, "TraceLog.tla").write_text(tracelog_module(sub))
            Path(tmp, "TVRun.tla").write_text(f"---- MODULE TVRun ----\nEXTENDS {family.module}\n====\n")
            cfg = ["SPECIFICATION TraceSpec", "INVARIANTS " + " ".join(("Progress", *family.invariants))]
            if refinement and family.refinement:
                cfg.append(f"PROPERTY {family.refinement}")
            Path(tmp, "TVRun.cfg").write_text("\n".join(cfg) + "\n")
            res = run_tlc(TlcJob(directory=Path(tmp), module="TVRun", config="TVRun.cfg",
                                 library=[specs_dir()], timeout=timeout, deadlock=False))
        best = defaultdict(int)
        for line in res.printed:
            m = _PROGRESS.search(line)
            if m:
                k, n = int(m.group(1)), int(m.group(2))
                best[k] = max(best[k], n)
        if res.result == "pass":
            for j, k in enumerate(pending):
                verdicts[k] = _verdict(batch[k], best[j + 1])
            break
        culprit = None
        if res.result.startswith(("invariant:", "action-property:")) and res.trace:
            m = _STATE_T.search(res.trace[-1])
            if m:
                culprit = pending[int(m.group(1)) - 1]
        if culprit is None:
            for k in pending:
                p = batch[k]
                verdicts[k] = Verdict(p.path, ERROR, p.protocol, total=len(p.events),
                                      message=f"TLC failed ({res.result}): {res.error_text()[:2000]}",
                                      ignored=dict(p.ignored), notes=list(p.notes))
            break
        p = batch[culprit]
        step = len(res.trace) - 1
        verdicts[culprit] = Verdict(
            p.path, ERROR, p.protocol, matched=step, total=len(p.events),
            location=_where(p, step - 1),
            message=f"the specification violates {res.result} after this event: the trace is a "
                    "behaviour of the specification, but the specification is wrong here",
            ignored=dict(p.ignored), notes=list(p.notes))
        pending.remove(culprit)
    return [verdicts[k] for k in range(len(batch))]


def _where(p: Prepared, index: int) -> str:
    if index < 0 or index >= len(p.events):
        return p.path
    line = p.lines[index]
    return f"{p.path}:{line}" if line else f"{p.path}:end"


def _verdict(p: Prepared, matched: int) -> Verdict:
    total = len(p.events)
    if matched >= total:
        return Verdict(p.path, ACCEPT, p.protocol, matched=matched, total=total,
                       ignored=dict(p.ignored), notes=list(p.notes))
    return Verdict(p.path, REJECT, p.protocol, matched=matched, total=total,
                   location=_where(p, matched),
                   message=f"first event no behaviour of the specification matches: {p.descr[matched]}",
                   ignored=dict(p.ignored), notes=list(p.notes))


def conform(paths: list[str], mappings: Mapping[str, TlaMapping], timeout: float = 600.0, refinement: bool = True,
            on_verdict=None, parallel: int = 1) -> list[Verdict]:
    """Validate trace files; one ``Verdict`` per path, in order. ``mappings``: trace
    protocol name -> ``TlaMapping`` (the protocol catalogue's ``tla_mappings()``).
    Batches of traces with different topologies run in up to ``parallel`` TLC
    processes at once."""
    verdicts: dict[int, Verdict] = {}
    groups: dict[tuple, list[tuple[int, Prepared]]] = defaultdict(list)
    for n, path in enumerate(paths):
        try:
            trace = read_trace(path)
            p = prepare(trace, mappings)
        except TraceErrors as exc:
            verdicts[n] = Verdict(path, ERROR, message="invalid trace:\n" + exc.render())
            _notify(on_verdict, verdicts[n])
            continue
        except OutOfScope as exc:
            loc = f"{path}:{exc.line}" if exc.line else path
            verdicts[n] = Verdict(path, ERROR, str(trace.header.protocol.get("name", "")),
                                  location=loc, message=str(exc))
            _notify(on_verdict, verdicts[n])
            continue
        groups[p.topology].append((n, p))
    chunks = [chunk for members in groups.values() for chunk in _chunks(members)]
    lock = threading.Lock()

    def run(chunk) -> None:
        results = validate_batch([p for _, p in chunk], timeout, refinement)
        with lock:
            for (n, _), v in zip(chunk, results):
                verdicts[n] = v
                _notify(on_verdict, v)

    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        list(pool.map(run, chunks))
    return [verdicts[n] for n in range(len(paths))]


def _chunks(members):
    chunk, size = [], 0
    for item in members:
        if chunk and size + len(item[1].events) > MAX_EVENTS_PER_RUN:
            yield chunk
            chunk, size = [], 0
        chunk.append(item)
        size += len(item[1].events)
    if chunk:
        yield chunk


def _notify(cb, v: Verdict) -> None:
    if cb is not None:
        cb(v)
