"""Active replication: replica agreement, delivery after deduplication, liveness
(classes P7 and P6 of docs/bug-zoo.md, "Property classes"; Rosinosky et al., "Active
Replication for Latency-Sensitive Stream Processing in Apache Flink"; Materialize #38196).

Trace vocabulary (v1 events; docs/checker.md "Active replication"): the header's
``protocol.params.replicas`` maps a logical task to its replica processes, e.g.
``{"U[0]": ["U[0]#0", "U[0]#1"]}``. Every upstream sends each message to every
replica of its downstream (*duplicate sending*): the *logical identity* of a data
message is ``(logical sender, logical receiver, seq)``, where a replica's logical
name is its task's (so the copies a source sends to the two replicas, and the copies
the two replicas send to the sink, share an identity). A replica's *consumed
sequence* is the logical identities of its ``recv`` events on data channels, in
order (heartbeats, ``attrs.heartbeat``, included: they are propagated
deterministically). Control channels (``kind: control``: leader notifications,
orders) are not inputs.

``replica-agreement`` (P7): for every replicated task, the consumed sequences of its
replicas agree on their common prefix (a crashed replica has a prefix):
``replica-order-divergence``; and the replicas emit the same value (and the same
heartbeat) under the same logical identity: ``replica-output-divergence``.

``replica-delivery`` (exactly-once after deduplication, §III "first come, first
picked"): a receiver of a replicated task's output picks (``recv``) each logical
identity exactly once: ``dedup-duplicate`` (picked twice), ``dedup-lost`` (sent by
some replica, never picked by a receiver that did not fail — discarded as a
duplicate without being picked, or never delivered).

``replica-liveness`` (P6): the trace ends quiescent (the model runs until nothing is
left to do); a process that did not fail and still holds data messages that arrived
(``arrive``) but were neither consumed nor discarded is blocked: ``replica-stalled``
(who waits, on which inputs, since which line).
"""

from __future__ import annotations

from snapcheck.checker.free_fields import UnreadableField
from snapcheck.checker.intervals import History
from snapcheck.checker.report import Violation
from snapcheck.traces.model import Event, Trace


def replicas_of(trace: Trace) -> dict[str, list[str]]:
    """The replicated tasks the trace header declares (``protocol.params.replicas``): task
    -> its replica processes; ``{}`` when there are none.

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["U#0", "U#1"], [], params={"replicas": {"U": ["U#0", "U#1"]}})
    >>> replicas_of(rec.trace())
    {'U': ['U#0', 'U#1']}
    """
    params = (trace.header.protocol or {}).get("params") or {}
    reps = params.get("replicas")
    if reps is None:
        return {}
    if not isinstance(reps, dict) or not all(
        isinstance(v, list) and all(isinstance(x, str) for x in v) for v in reps.values()
    ):
        raise UnreadableField(
            f"line 1: params.replicas must map each task to a list of its replica processes, not {reps!r}"
        )
    return {str(k): list(v) for k, v in reps.items()}


class _Replication:
    """The replication structure of a trace, judged on its effective history
    (``checker.intervals``): what a restore rolled back was never consumed, picked or
    emitted, and a replayed incarnation (``replay``) is its original message."""

    def __init__(self, trace: Trace, replicas: dict[str, list[str]], h: History | None = None):
        self.replicas = replicas
        self.logical = {r: task for task, rs in replicas.items() for r in rs}
        self.chan = {c.id: c for c in trace.header.channels}
        self.sends: dict[str, Event] = {}
        self.failed: set[str] = set()
        self.h = h if h is not None else History(trace)
        self._effective = {id(e) for evs in self.h.eff for e in evs}
        for e in trace.events:
            if e.type == "send":
                assert e.mid is not None  # required of a send
                self.sends[e.mid] = e
            elif e.type == "fail":
                self.failed.add(e.proc)
            elif e.type == "restore":
                self.failed.discard(e.proc)

    def effective(self, e: Event) -> bool:
        """Whether ``e`` is in the effective history (a process outside the analysed ones,
        an external input log, never rolls back)."""
        return e.proc not in self.h.index or id(e) in self._effective

    def original(self, mid: str | None) -> str | None:
        """The send's mid of a message or of a replayed incarnation of it (None: neither)."""
        if mid is None:
            return None
        o = self.h.resolve(mid)
        return o if o in self.sends else None

    def name(self, proc: str) -> str:
        return self.logical.get(proc, proc)

    def data(self, ch: str | None) -> bool:
        """Is ``ch`` (an event's channel, None: it has none) a data channel?"""
        c = self.chan.get(ch) if ch is not None else None
        return c is not None and (c.kind or "data") == "data"

    def identity(self, mid: str | None) -> tuple:
        assert mid is not None  # (callers pass message events' mids, which every one has)
        s = self.sends[self.h.resolve(mid)]
        assert s.ch is not None  # required of a send
        c = self.chan[s.ch]
        return (self.name(c.src), self.name(c.dst), s.seq)


def _fmt(ident: tuple) -> str:
    return f"{ident[0]}->{ident[1]} seq {ident[2]}"


def _hb(e):
    return e.attrs.get("heartbeat") if e.attrs else None


def agreement_violations(trace: Trace, rp: _Replication) -> list[Violation]:
    """``replica-agreement`` violations (module docstring): replicas of one task whose
    consumed sequences differ on their common prefix (``replica-order-divergence``), or
    that emit different values under one logical identity
    (``replica-output-divergence``). ``rp``: the trace's replication structure.

    A source sends two records to both replicas of ``U``, which consume them in
    different orders:

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["S", "U#0", "U#1"], [("s0", "S", "U#0"), ("s1", "S", "U#1")],
    ...                     params={"replicas": {"U": ["U#0", "U#1"]}})
    >>> a0, a1, b0, b1 = (rec.send("S", ch) for ch in ("s0", "s1", "s0", "s1"))
    >>> rec.recv("U#0", a0); rec.recv("U#0", b0); rec.recv("U#1", b1); rec.recv("U#1", a1)
    >>> t = rec.trace()
    >>> [(v.kind, v.witness["position"]) for v in agreement_violations(t, _Replication(t, replicas_of(t)))]
    [('replica-order-divergence', 0)]
    """
    out = []
    by_proc = trace.by_process()
    for task, reps in rp.replicas.items():
        seqs = {
            r: [
                (rp.identity(e.mid), e.line, e.mid)
                for e in by_proc.get(r, [])
                if e.type == "recv" and rp.data(e.ch) and rp.original(e.mid) and rp.effective(e)
            ]
            for r in reps
        }
        first = reps[0]
        for other in reps[1:]:
            a, b = seqs[first], seqs[other]
            for k, ((ia, la, ma), (ib, lb, mb)) in enumerate(zip(a, b)):
                if ia != ib:
                    out.append(
                        Violation(
                            "replica-order-divergence",
                            "replica-agreement",
                            f"task {task}",
                            f"replicas {first} and {other} of {task} agree on their first {k} consumed events, then "
                            f"{first} consumes {_fmt(ia)} (line {la}) and {other} consumes {_fmt(ib)} (line {lb}): "
                            f"a deterministic task fed different orders diverges.",
                            [la, lb],
                            {"messages": [ma, mb], "position": k, "replicas": [first, other]},
                        )
                    )
                    break
        sent: dict[tuple, tuple] = {}
        for r in reps:
            for e in by_proc.get(r, []):
                if e.type != "send" or not rp.data(e.ch) or not rp.effective(e):
                    continue
                assert e.mid is not None  # required of a send
                ident = rp.identity(e.mid)
                seen = sent.setdefault(ident, (r, e))
                r0, e0 = seen
                if r0 != r and (e0.value != e.value or _hb(e0) != _hb(e)):
                    what = (
                        f"value {e0.value!r}" if _hb(e0) is None else f"heartbeat {_hb(e0)}",
                        f"value {e.value!r}" if _hb(e) is None else f"heartbeat {_hb(e)}",
                    )
                    out.append(
                        Violation(
                            "replica-output-divergence",
                            "replica-agreement",
                            f"task {task}",
                            f"replicas {r0} and {r} of {task} emit different outputs under {_fmt(ident)}: {what[0]} "
                            f"(line {e0.line}) and {what[1]} (line {e.line}); the receiver's deduplication keeps "
                            f"whichever comes first.",
                            [e0.line, e.line],
                            {"messages": [e0.mid, e.mid], "replicas": [r0, r]},
                        )
                    )
                    break
            else:
                continue
            break
    return out


def delivery_violations(trace: Trace, rp: _Replication) -> list[Violation]:
    """``replica-delivery`` violations (module docstring): a receiver of a replicated
    task's output that picks one logical identity twice (``dedup-duplicate``) or never,
    although it did not fail (``dedup-lost``). ``rp``: the trace's replication structure.

    Both replicas of ``U`` send record 1 to ``K``, which processes both copies:

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["U#0", "U#1", "K"], [("u0", "U#0", "K"), ("u1", "U#1", "K")],
    ...                     params={"replicas": {"U": ["U#0", "U#1"]}})
    >>> rec.recv("K", rec.send("U#0", "u0", value=1)); rec.recv("K", rec.send("U#1", "u1", value=1))
    >>> t = rec.trace()
    >>> [(v.kind, v.witness) for v in delivery_violations(t, _Replication(t, replicas_of(t)))]
    [('dedup-duplicate', {'identity': ['U', 'K', 1]})]
    """
    out = []
    picked: dict[tuple, list] = {}
    dropped: dict[tuple, int] = {}
    sent: dict[tuple, int] = {}
    receivers: set[str] = set()
    for e in trace.events:
        if not rp.effective(e):
            continue
        o = rp.original(e.mid)
        if e.type == "send" and rp.data(e.ch) and e.proc in rp.logical:
            assert e.ch is not None and e.mid is not None  # required of a send
            dst = rp.chan[e.ch].dst
            receivers.add(dst)
            sent.setdefault(rp.identity(e.mid), e.line)
        elif e.type == "recv" and o is not None and rp.sends[o].proc in rp.logical and rp.data(e.ch):
            assert e.mid is not None  # required of a recv
            picked.setdefault((e.proc, rp.identity(e.mid)), []).append(e.line)
        elif e.type == "discard" and o is not None and rp.sends[o].proc in rp.logical:
            dropped.setdefault((e.proc, rp.identity(e.mid)), e.line)
    for (proc, ident), lines in sorted(picked.items(), key=lambda kv: kv[1][0]):
        if len(lines) > 1:
            out.append(
                Violation(
                    "dedup-duplicate",
                    "replica-delivery",
                    f"receiver {proc}",
                    f"{proc} picks {_fmt(ident)} {len(lines)} times (lines "
                    f"{', '.join(map(str, lines))}): deduplication by sequence number failed.",
                    lines,
                    {"identity": list(ident)},
                )
            )
    for ident, line in sorted(sent.items(), key=lambda kv: kv[1]):
        dst = ident[1]
        for proc in sorted(receivers):
            if rp.name(proc) != dst or proc in rp.failed or (proc, ident) in picked:
                continue
            why = (
                f"discarded at line {dropped[(proc, ident)]} without ever being picked"
                if (proc, ident) in dropped
                else "never delivered"
            )
            out.append(
                Violation(
                    "dedup-lost",
                    "replica-delivery",
                    f"receiver {proc}",
                    f"{_fmt(ident)} (first sent at line {line}) is {why} at {proc}: lost after deduplication.",
                    [line, dropped.get((proc, ident), 0)],
                    {"identity": list(ident)},
                )
            )
    return out


def liveness_violations(trace: Trace, rp: _Replication) -> list[Violation]:
    """``replica-stalled`` (property ``replica-liveness``): a process that did not fail
    ends the trace with data messages that arrived and were neither consumed nor
    discarded, e.g. a round-robin merge that waits for a quiet input. ``rp``: the
    trace's replication structure.

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["U#0", "U#1", "K"], [("u0", "U#0", "K"), ("u1", "U#1", "K")],
    ...                     params={"replicas": {"U": ["U#0", "U#1"]}})
    >>> rec.arrive("K", rec.send("U#0", "u0"))             # K waits for U#1's copy
    >>> t = rec.trace()
    >>> [(v.kind, v.subject) for v in liveness_violations(t, _Replication(t, replicas_of(t)))]
    [('replica-stalled', 'process K')]
    """
    out = []
    owed: dict[str, list[Event]] = {}  # replica -> effective data sends to it, by their original mid
    for e in trace.events:
        if e.type == "send" and rp.data(e.ch) and rp.effective(e) and _hb(e) is None:
            assert e.ch is not None  # required of a send
            dst = rp.chan[e.ch].dst
            if dst in rp.logical and dst not in rp.failed:
                owed.setdefault(dst, []).append(e)
    for proc, events in trace.by_process().items():
        if proc in rp.failed:
            continue
        taken = {rp.original(e.mid) for e in events if e.type in ("recv", "discard", "arrive") and rp.effective(e)}
        never = [e for e in owed.get(proc, []) if e.mid not in taken]
        if never:
            out.append(
                Violation(
                    "replica-stalled",
                    "replica-liveness",
                    f"process {proc}",
                    f"{proc} ends with {len(never)} data message(s) sent to it that never arrived, the oldest "
                    f"{never[0].mid} sent at line {never[0].line}: the trace ends quiescent, so the replica fell "
                    "behind its peers and never caught up.",
                    [e.line for e in never[:5]],
                    {"messages": [e.mid for e in never[:20]]},
                )
            )
            continue
        waiting: dict[str, Event] = {}
        for e in events:
            if e.type == "arrive" and rp.data(e.ch) and (o := rp.original(e.mid)) and _hb(rp.sends[o]) is None:
                assert e.mid is not None  # (original() found its send)
                waiting[e.mid] = e
            elif e.type in ("recv", "discard"):
                assert e.mid is not None  # required of a message event
                waiting.pop(e.mid, None)
            elif e.type == "restore":
                waiting.clear()
        if waiting:
            stuck = sorted(waiting.values(), key=lambda e: e.line)
            chans = sorted({e.ch for e in stuck if e.ch is not None})  # arrive events all name theirs
            inputs = sorted(
                {rp.chan[c].src for c in rp.chan if rp.chan[c].dst == proc and rp.data(c)}
                - {rp.chan[c].src for c in chans}
            )
            out.append(
                Violation(
                    "replica-stalled",
                    "replica-liveness",
                    f"process {proc}",
                    f"{proc} ends with {len(stuck)} arrived data message(s) never consumed, the oldest "
                    f"{stuck[0].mid} since line {stuck[0].line} (on {', '.join(chans)}); it is blocked "
                    f"waiting for input from {', '.join(inputs) or 'another queue'}.",
                    [e.line for e in stuck[:5]],
                    {"messages": [e.mid for e in stuck[:20]]},
                )
            )
    return out


def check_replication(run) -> None:
    """Add ``replica-agreement``, ``replica-delivery`` and ``replica-liveness`` to a
    ``check_trace`` run for traces that declare replicas (``replicas_of``), when selected
    (the default: all); otherwise the report lists them as not judged.

    The sink ``K`` picks the first copy of record 1 and discards the second:

    >>> from snapcheck.checker import check_trace
    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["U#0", "U#1", "K"], [("u0", "U#0", "K"), ("u1", "U#1", "K")],
    ...                     params={"replicas": {"U": ["U#0", "U#1"]}})
    >>> rec.recv("K", rec.send("U#0", "u0", value=1)); rec.discard("K", rec.send("U#1", "u1", value=1))
    >>> [(r.property, r.ok) for r in check_trace(rec.trace()).results]
    [('replica-agreement', True), ('replica-delivery', True), ('replica-liveness', True)]
    """
    trace = run.trace
    replicas = replicas_of(trace)
    wanted = [p for p in ("replica-agreement", "replica-delivery", "replica-liveness") if run.want(p) and replicas]
    if not wanted:
        return
    rp = _Replication(trace, replicas, run.h)
    if "replica-agreement" in wanted:
        run.add("replica-agreement", "trace", agreement_violations(trace, rp))
    if "replica-delivery" in wanted:
        run.add("replica-delivery", "trace", delivery_violations(trace, rp))
    if "replica-liveness" in wanted:
        run.add("replica-liveness", "trace", liveness_violations(trace, rp))
