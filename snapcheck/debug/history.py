"""The message table and checkpoint intervals of a trace, and a causal layout.

Conventions follow docs/theory.md, "Conventions": ``recv`` is processing; the interval index of
an event of process ``P_i`` is ``ι = x + 1`` where ``C_{i,x}`` is the latest
checkpoint of ``P_i`` taken (or restored) before it, ``C_{i,0}`` being implied.
A message is ``(src, s, dst, r)`` with ``s`` the interval of its send and ``r``
the interval of its (first) processing, ``None`` when it is never processed.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from snapcheck.traces.model import Event, Trace

RECEIVE_LIKE = ("arrive", "recv", "discard")


@dataclass(slots=True)
class Message:
    """One message incarnation: a ``send`` (or a ``replay``, which re-injects an
    earlier message under a new mid) and what became of it."""

    mid: str
    ch: str
    src: str
    dst: str
    kind: str  # "data" | "barrier"
    origin: Event  # the send or replay event
    round: int | None = None
    seq: int | None = None
    replay_of: str | None = None
    arrive: Event | None = None
    recv: Event | None = None
    discard: Event | None = None
    s: int | None = None  # interval of the send on src
    r: int | None = None  # interval of the processing on dst

    @property
    def is_barrier(self) -> bool:
        return self.kind == "barrier"

    @property
    def end(self) -> Event | None:
        """The event where the message was consumed: processed or discarded."""
        return self.recv or self.discard


def event_intervals(trace: Trace) -> list[int]:
    """ι of every event of ``trace`` (same order as ``trace.events``).

    A checkpoint event ``C_{i,x}`` gets ``x`` (it closes interval ``x``); a
    ``restore`` of ``C_{i,x}`` also gets ``x`` and the events after it ``x+1``.
    """
    current = {p.id: 0 for p in trace.processes}
    out = []
    for e in trace.events:
        if e.type in ("checkpoint", "restore"):
            current[e.proc] = e.ckpt
            out.append(e.ckpt)
        else:
            out.append(current[e.proc] + 1)
    return out


def message_table(trace: Trace) -> dict[str, Message]:
    """Every message incarnation of the trace by mid, with its fate and intervals
    (``event_intervals``: ι of a send or receive is its process's interval index + 1,
    followed here in one pass, not kept per event)."""
    ends = {c.id: (c.src, c.dst) for c in trace.channels}
    current = {p.id: 0 for p in trace.processes}  # the last checkpoint (or restore) of each process
    msgs: dict[str, Message] = {}
    pending: list[tuple[Event, int]] = []
    for e in trace.events:
        t = e.type
        if t == "send":
            src, dst = ends[e.ch]  # positional: mid ch src dst kind origin round seq replay_of ... s
            msgs[e.mid] = Message(
                e.mid, e.ch, src, dst, e.kind or "data", e, e.round, e.seq, None, None, None, None, current[e.proc] + 1
            )
        elif t in RECEIVE_LIKE:
            pending.append((e, current[e.proc] + 1))
        elif t == "checkpoint" or t == "restore":
            current[e.proc] = e.ckpt
        elif t == "replay":
            src, dst = ends[e.ch]
            orig = msgs.get(e.replay_of)
            msgs[e.mid] = Message(
                e.mid,
                e.ch,
                src,
                dst,
                (orig.kind if orig else None) or "data",
                e,
                orig.round if orig else None,
                orig.seq if orig else None,
                e.replay_of,
                None,
                None,
                None,
                current[e.proc] + 1,
            )
    for e, ι in pending:  # a receive may precede its send in file order
        m = msgs[e.mid]
        if e.type == "arrive" and m.arrive is None:
            m.arrive = e
        elif e.type == "recv" and m.recv is None:
            m.recv, m.r = e, ι
        elif e.type == "discard" and m.discard is None:
            m.discard = e
    return msgs


def causal_order(trace: Trace) -> list[int]:
    """Indices into ``trace.events`` in an order that respects happened-before
    (program order, and each send before the receive-like events of its mid),
    staying as close to file order as possible. The validator guarantees that
    such an order exists."""
    n = len(trace.events)
    by_proc: dict[str, list[int]] = {p.id: [] for p in trace.processes}
    for i, e in enumerate(trace.events):
        by_proc[e.proc].append(i)
    pos = {p: 0 for p in by_proc}
    sent: set[str] = set()
    order: list[int] = []
    heap = [(lst[0], p) for p, lst in by_proc.items() if lst]
    heapq.heapify(heap)
    blocked: dict[str, list[str]] = {}
    while heap:
        i, p = heapq.heappop(heap)
        e = trace.events[i]
        if e.type in RECEIVE_LIKE and e.mid not in sent:
            blocked.setdefault(e.mid, []).append(p)
            continue
        order.append(i)
        if e.type in ("send", "replay"):
            sent.add(e.mid)
            for q in blocked.pop(e.mid, ()):
                heapq.heappush(heap, (by_proc[q][pos[q]], q))
        pos[p] += 1
        if pos[p] < len(by_proc[p]):
            heapq.heappush(heap, (by_proc[p][pos[p]], p))
    if len(order) != n:
        raise ValueError("happened-before has a cycle (the trace was not validated)")
    return order


def lamport_columns(trace: Trace) -> list[int]:
    """A compact column for every event (Lamport clock, starting at 1): program
    order and send→receive edges always go strictly to the right."""
    col = [0] * len(trace.events)
    last = {p.id: 0 for p in trace.processes}
    sent_at: dict[str, int] = {}
    for i in causal_order(trace):
        e = trace.events[i]
        c = last[e.proc] + 1
        if e.type in RECEIVE_LIKE:
            c = max(c, sent_at[e.mid] + 1)
        col[i] = c
        last[e.proc] = c
        if e.type in ("send", "replay"):
            sent_at[e.mid] = c
    return col


def vector_clocks(trace: Trace) -> list[dict[str, int]]:
    """The vector clock of every event (same order as ``trace.events``).

    Every event increments its own process's component; the first receive-like
    event (arrive, recv or discard) of a message merges the clock of its send.
    Zero components are omitted.
    """
    clocks: list[dict[str, int]] = [{} for _ in trace.events]
    cur: dict[str, dict[str, int]] = {p.id: {} for p in trace.processes}
    at_send: dict[str, dict[str, int]] = {}
    merged: set[str] = set()
    for i in causal_order(trace):
        e = trace.events[i]
        vc = cur[e.proc]
        if e.type in RECEIVE_LIKE and e.mid not in merged:
            merged.add(e.mid)
            for k, v in at_send[e.mid].items():
                if vc.get(k, 0) < v:
                    vc[k] = v
        vc[e.proc] = vc.get(e.proc, 0) + 1
        clocks[i] = dict(vc)
        if e.type in ("send", "replay"):
            at_send[e.mid] = dict(vc)
    return clocks


def describe_event(e: Event, msgs: dict[str, Message] | None = None) -> str:
    """A one-line human description of an event (used by the stepper, ShiViz, HTML)."""
    t = e.type
    if t == "send":
        what = f"barrier round {e.round}" if e.kind == "barrier" else f"seq {e.seq}"
        dst = f" to {msgs[e.mid].dst}" if msgs and e.mid in msgs else ""
        return f"send {e.mid} on {e.ch}{dst} ({what})"
    if t in RECEIVE_LIKE:
        src = f" from {msgs[e.mid].src}" if msgs and e.mid in msgs else ""
        extra = f" ({e.reason})" if t == "discard" and e.reason else ""
        return f"{t} {e.mid} on {e.ch}{src}{extra}"
    if t == "replay":
        return f"replay {e.replay_of} as {e.mid} on {e.ch} from {e.source}"
    if t == "checkpoint":
        rnd = f" round {e.round}" if e.round is not None else ""
        return f"checkpoint C{e.ckpt} ({e.kind}{rnd})"
    if t == "record":
        return f"record C{e.ckpt} {e.part or 'input'} state of {e.ch}: [{', '.join(e.mids)}]"
    if t == "log":
        return f"log on {e.ch}: [{', '.join(e.mids or ())}]"
    if t == "log_truncate":
        return f"log_truncate {e.ch} through seq {e.through_seq}"
    if t == "fail":
        return "fail" + (f" ({e.reason})" if e.reason else "")
    if t == "restore":
        rec = f", recovery {e.recovery}" if e.recovery is not None else ""
        return f"restore C{e.ckpt}{rec}"
    if t in ("round_start", "round_complete", "round_abort"):
        return f"{t} {e.round}" + (f" ({e.reason})" if e.reason else "")
    if t == "output":
        return f"output {e.value!r}" + (f" (of {e.mid})" if e.mid else "")
    return t
