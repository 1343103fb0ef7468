"""Trace validation in segments: a long trace of a snapshot protocol is cut where
every round so far is finished, and each segment is validated on its own,
started from the state the cut determines, all segments in parallel.

Why: a trace module's state holds per-round histories (``sentAt``, ``rcvdAt``,
recorded channel states, the refinement mapping's ``taken``/``sealed``/``cs``),
so on a whole trace every state and every refinement step costs O(rounds), and
the run O(events x rounds): quadratic in the trace length. A segment holds only
its own rounds, renumbered from 1, so the cost per event does not grow with
the trace.

A *clean cut* after spec event ``i`` is a point where (all read from the mapped
events, ``R`` the newest round started):

* every round up to ``R`` completed or aborted;
* no marker is in flight, and either ``R`` was aborted or the last marker
  processed on every modelled channel (data and control) is of round ``R``;
  or, for the specifications that model obsolete markers (``OBSOLETE_IN_FLIGHT``:
  ABS, Unaligned), every marker in flight is harmless (below);
* no later event refers to a round ``<= R`` (no late record, decline or
  marker of an old round), apart from the arrival and processing of the
  markers in flight at the cut.

Obsolete markers in flight. On a slow channel (one-record buffers, a
straggler, a cycle) barriers and cancellation markers of finished rounds can
queue behind records for a long time, so a cut that waited for none would
leave segments of dozens of rounds, and the cost per event grows with the
rounds a segment holds. A marker in flight on ``c`` is harmless when its
destination ``d`` takes it without an event, whatever it did with the round
``r``, and nothing recorded for ``r`` is read again: ``d`` handled ``r``
without a checkpoint (declined or gave it up: ``r`` was aborted), or ``r`` is
an aborted round ``d`` checkpointed and the marker a cancellation (``d`` gives
the round up, at most) or, in the Unaligned specification (``LATE_BARRIERS``),
a barrier that only ends the recording of that round's channel state -- in
mode ``aligned_timeout`` only one that the trace processes at the head of its
queue, since the next segment may take an obsolete barrier nowhere else while
the whole run may take this one anywhere (as a priority event) -- or ``r``
is an aborted round ``d`` never handled and the mode is not ``unaligned``
(``d`` may align it and learn of the abort; under ``unaligned`` a barrier
forces a snapshot, an event); the checks at
``end`` skip aborted rounds. Otherwise it must be the only marker on ``c``,
the barrier of ``d``'s newest checkpoint, with no record ahead of it and
none recorded for it on ``c`` since that checkpoint (nothing is or will be
recorded for its round on ``c``). The next segment starts with these markers
as markers of round 0 (``_shifted``; their deliveries are renumbered alike):
older than every round to come, obsolete for every process, as the original
ones are for the events to come. A cut whose state TLC does not reach still
sends the trace to a whole run.

There, a state of the trace specification that matched the prefix and in
which no process owes or aligns anything behaves, for the events to come, as
the initial state with rounds shifted by ``R`` -- every process handled ``R``,
every channel is closed at ``R`` -- with the data records in flight and the
channel counters the events determine. After an aborted round not every
process handled ``R`` (a task whose upstream declined ``R`` without
cancellation markers never heard of it) and some channels are closed at older
rounds; since every later marker, checkpoint and decline is of a round
``> R``, a process that handled an older round, none of whose inputs is closed
beyond what it handled, takes every later step exactly as one that handled
``R`` (the specifications compare those rounds only with ``>``, ``<`` against
newer ones) -- except a process without inputs, whose next round is its own
plus one. A task still aligning an aborted round may give it up between two
events (``LearnAbort``), which only allows more. The next segment starts from
that shifted initial state (``TInit``); the segment before it ends with a
synthetic ``cut`` event whose step requires TLC's state to be one of that
class (``TCut``: nothing owed, nothing aligned, every round resolved, in
flight exactly the cut's records), so a cut no behaviour reaches is never a
silent verdict: that trace is validated whole instead (``conform.combine``).
Per-round state of finished rounds (histories, recorded channel states,
``recorded``) is dropped: no later event changes what the refinement mapping
shows of them, and the segment's ``end`` event has already checked that every
non-empty recorded channel state of its rounds was reported.

Verdicts combine so that a segmented run finds exactly what a whole run finds
(``combine``): the first segment whose real events do not all match gives the
REJECT and its location; a failed ``cut`` sends the trace to a whole run; a failed ``end`` of any
segment is the whole trace's REJECT at ``end``, unless a real event of a later
segment is rejected first.
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, replace

from snapcheck.checker.tla.trace_events import Prepared
from snapcheck.checker.tla.tracelog import start_state

ROUND_OPS = ("ckpt", "decline", "start", "complete", "abort", "record")
# Specifications whose segments may start with obsolete markers in flight (``clean_cuts``).
OBSOLETE_IN_FLIGHT = frozenset({"ABSTrace", "UnalignedTrace"})
# ... and among them, with a late barrier of an aborted round its destination checkpointed.
LATE_BARRIERS = frozenset({"UnalignedTrace"})


def _round_of(e: dict) -> int | None:
    """The round an event refers to (markers, checkpoints, records, the coordinator's
    round events), or None."""
    if e["op"] in ROUND_OPS or (e["op"] in ("send", "recv", "arrive") and e["k"] != "d"):
        return e["n"]
    return None


def _delivers_marker(e: dict) -> bool:
    return e["op"] in ("recv", "arrive") and e["k"] != "d"


@dataclass
class Segment:
    prepared: Prepared  # the segment's events (renumbered), start and cut states, bounds
    offset: int  # index of its first event among the whole trace's spec events
    real: int  # its events that are trace events (not the synthetic cut and end)


class InFlight:
    """What the events leave in flight on each channel: ``wire`` (sent, not arrived;
    without modelled arrival everything not processed yet) and ``ibuf`` (arrived, not
    processed), data records as sequence numbers, markers as ``(kind, round)``.

    >>> q = InFlight(["c"], arrival=False)
    >>> [q.step({"op": op, "c": "c", "k": k, "n": n, "x": 0})
    ...  for op, k, n in [("send", "d", 1), ("send", "b", 1), ("recv", "b", 1), ("recv", "d", 1)]]
    [False, False, False, True]
    """

    def __init__(self, chans, arrival: bool):
        self.arrival = arrival
        self.wire: dict[str, deque] = {c: deque() for c in chans}
        self.ibuf: dict[str, deque] = {c: deque() for c in chans}

    def step(self, e: dict) -> bool:
        """Apply a ``send``, ``arrive`` or ``recv`` event (others change nothing); whether
        an arrival or a processing took the item at the head of its queue (a barrier
        processed behind other items is a priority event)."""
        op, c, k, n = e["op"], e["c"], e["k"], e["n"]
        item = n if k == "d" else (k, n)
        if op == "send":
            wire = self.wire[c]  # a barrier sent as a priority event overtakes the last x records (arrival modelled)
            wire.insert(len(wire) - (e["x"] if self.arrival and k == "b" else 0), item)
        elif op == "arrive" and self.arrival and self.wire[c] and self.wire[c][0] == item:
            self.ibuf[c].append(self.wire[c].popleft())
            return True
        elif op == "recv":
            q = self.ibuf[c] if self.arrival else self.wire[c]
            if q and q[0] == item:
                q.popleft()
                return True
            if k != "d" and item in q:
                q.remove(item)
        return False

    def queue(self, c: str) -> list:
        """What is in flight on ``c``, the next to be processed first."""
        return [*self.ibuf[c], *self.wire[c]]


def late_barriers_at_head(events: list[dict], chans, arrival: bool) -> set[tuple[str, int]]:
    """``(channel, round)`` of every barrier the events process at the head of its
    queue, nothing ahead of it (not as a priority event).

    >>> ev = [{"op": op, "c": "c", "k": k, "n": n, "x": 0}
    ...       for op, k, n in [("send", "d", 1), ("send", "b", 1), ("send", "b", 2), ("recv", "b", 2),
    ...                        ("recv", "d", 1), ("recv", "b", 1)]]
    >>> sorted(late_barriers_at_head(ev, ["c"], arrival=False))
    [('c', 1)]
    """
    q = InFlight(chans, arrival)
    return {(e["c"], e["n"]) for e in events if q.step(e) and e["op"] == "recv" and e["k"] == "b"}


def clean_cuts(p: Prepared):
    """The clean cuts of a mapped trace, in order: ``(i, R, state)`` -- after the first
    ``i`` spec events, with every round up to ``R`` finished; ``state()`` returns what is
    in flight and the counters there (the keyword arguments of ``tracelog.start_state``:
    data records as sequence numbers, obsolete markers as ``(kind, round)``, rounds
    absolute) and must be called before the next cut is asked for."""
    family, procs, coords, data_chans, ctrl_chans, ends, back = p.topology
    chans = sorted(set(data_chans) | set(ctrl_chans))
    dst = {c: d for c, _, d in ends}
    events = p.events[:-1] if p.events and p.events[-1]["op"] == "end" else p.events
    arrival = family.models_arrival
    obsolete_ok = family.module in OBSOLETE_IN_FLIGHT
    flight = InFlight(chans, arrival)
    closed = dict.fromkeys(chans, 0)
    sent = dict.fromkeys(data_chans, 0)
    rcvd = dict.fromkeys(data_chans, 0)
    handled: dict[str, int] = defaultdict(int)  # the newest round a process checkpointed or declined
    took: dict[str, set[int]] = defaultdict(set)
    newest: dict[str, int] = {}  # the round of a process's newest checkpoint
    fresh = dict.fromkeys(chans, 0)  # records on c its destination may have recorded since its newest checkpoint
    started = resolved_upto = markers = 0
    at_started = len(chans)  # channels whose last processed marker is of round `started`
    resolved: set[int] = set()
    completed: set[int] = set()
    at_head = late_barriers_at_head(events, chans, arrival) if family.module in LATE_BARRIERS else set()
    later = [0] * len(events) + [float("inf")]  # the smallest round referred to from event i on
    low = float("inf")
    for i in range(len(events) - 1, -1, -1):
        r = _round_of(events[i])
        if r is not None and r < low and not (obsolete_ok and _delivers_marker(events[i])):
            low = r
        later[i] = low

    def state() -> dict:
        wire, ibuf = flight.wire, flight.ibuf
        inflight = {c: (tuple(wire[c]), tuple(ibuf[c])) if arrival else tuple(wire[c]) for c in chans}
        return {"inflight": inflight, "counters": {c: (sent[c], rcvd[c]) for c in data_chans}}

    def harmless(c: str) -> bool:
        """The markers in flight on c (all of finished rounds) change nothing the events
        to come can observe: each is ``obsolete`` for its destination (all of aborted
        rounds, whose recorded channel states no check reads), or there is one, the
        barrier of the destination's newest checkpoint, with no record ahead of it and
        none recorded for it on c yet (nothing more is recorded for its round). With
        none in flight, c's last marker is of the newest round, unless that was aborted."""
        queue = flight.queue(c)
        marks = [m for m in queue if not isinstance(m, int)]
        d = dst[c]
        if not marks:
            return closed[c] == started or started not in completed
        if all(obsolete(k, r, c) for k, r in marks):
            return True
        return marks == [("b", newest.get(d))] == queue[:1] and not fresh[c]

    def obsolete(kind: str, r: int, c: str) -> bool:
        """A marker of round r on c that its destination d takes without an event and
        whatever it did with r: a round it handled without a checkpoint, a cancellation
        of an aborted round it checkpointed (it gives the round up, at most) or, under
        ``LATE_BARRIERS``, a barrier of such a round (``late_ok``), or a round it never
        handled that it can take ``silent``-ly."""
        d = dst[c]
        if r in took[d]:
            return r not in completed and (kind == "cancel" or late_ok(c, r))
        return r <= handled[d] or silent(r)

    def late_ok(c: str, r: int) -> bool:
        """A barrier of an aborted round its destination checkpointed (Unaligned) only
        ends the recording of an aborted round's channel state, which no check reads;
        the next segment takes it as obsolete, which it may be only at the head of its
        queue in mode aligned_timeout (in mode unaligned every barrier is taken there)."""
        return family.module in LATE_BARRIERS and (family.mode == "unaligned" or (c, r) in at_head)

    def silent(r: int) -> bool:
        """A task that never handled round r can take a marker of it without an event:
        r was aborted, and the task may align it and learn of the abort (``LearnAbort``)
        instead of snapshotting it -- not in mode unaligned, where a barrier forces the
        snapshot."""
        return r not in completed and family.mode != "unaligned"

    for i, e in enumerate(events):
        op, c, k, n = e["op"], e["c"], e["k"], e["n"]
        moved = flight.step(e)
        if op == "send":
            if k == "d":
                sent[c] = n
            else:
                markers += 1
        elif op == "arrive":
            fresh[c] += moved and k == "d"
        elif op == "recv":
            if k == "d":
                rcvd[c] += 1
                fresh[c] += not arrival
            else:
                markers -= 1
                at_started += (n == started) - (closed[c] == started)
                closed[c] = n
        elif op in ("ckpt", "decline"):
            handled[e["p"]] = max(handled[e["p"]], n)
            if op == "ckpt":
                took[e["p"]].add(n)
                newest[e["p"]] = n
                for x in chans:
                    if dst[x] == e["p"]:
                        fresh[x] = 0
        elif op == "start":
            if n > started:
                started = n
                at_started = sum(closed[x] == started for x in chans)
        elif op in ("complete", "abort"):
            resolved.add(n)
            if op == "complete":
                completed.add(n)
            while resolved_upto + 1 in resolved:
                resolved_upto += 1
        if resolved_upto < started or later[i + 1] <= started:
            continue
        if not markers and (at_started == len(chans) or started not in completed):
            yield i + 1, started, state
        elif obsolete_ok and all(harmless(x) for x in chans):
            yield i + 1, started, state


def split(p: Prepared, min_events: int) -> list[Segment]:
    """Cut a mapped trace into segments of at least ``min_events`` spec events at
    clean cuts (one segment if there is none)."""
    events, lines, descr = p.events, p.lines, p.descr
    body = len(events) - 1 if events and events[-1]["op"] == "end" else len(events)
    chosen, last = [], 0
    for i, r, state in clean_cuts(p):
        if i - last >= min_events and body - i >= min_events // 2:
            chosen.append((i, r, state()))
            last = i
    if not chosen:
        return [Segment(p, 0, body)]
    out = []
    bounds = [(0, 0, None), *chosen, (body, None, None)]
    for (a, base, start), (b, upto, cut) in zip(bounds, bounds[1:]):
        seg_events = [_renumber(e, base) for e in events[a:b]]
        seg_lines, seg_descr = list(lines[a:b]), list(descr[a:b])
        if cut is not None:
            seg_events.append({"op": "cut", "p": "", "c": "", "k": "", "n": 0, "x": 0, "s": [], "part": ""})
            seg_lines.append(0)
            seg_descr.append("cut: every round so far finished, the state the next segment starts from")
        seg_events.append(
            events[body]
            if body < len(events)
            else {"op": "end", "p": "", "c": "", "k": "", "n": 0, "x": 0, "s": [], "part": ""}
        )
        seg_lines.append(0)
        seg_descr.append(descr[body] if body < len(descr) else "end of trace")
        rounds = max([1] + [r for e in seg_events if (r := _round_of(e)) is not None])
        seg = replace(
            p,
            events=seg_events,
            lines=seg_lines,
            descr=seg_descr,
            bounds={**p.bounds, "TRounds": rounds},
            start=None if start is None else start_state(p.topology, **_shifted(start, base, p.family.models_arrival)),
            cut=None
            if cut is None
            else {**start_state(p.topology, **_shifted(cut, base, p.family.models_arrival)), "rounds": upto - base},
        )
        out.append(Segment(seg, a, b - a))
    return out


def _renumber(e: dict, base: int) -> dict:
    """An event of the segment whose rounds start after ``base``; an obsolete marker
    of a round up to ``base`` (in flight at the cut) is of round 0."""
    if not base or _round_of(e) is None:
        return e
    return {**e, "n": max(0, e["n"] - base)}


def _shifted(state: dict, base: int, arrival: bool) -> dict:
    """A cut's state (``clean_cuts``) in the numbering of a segment whose rounds start
    after ``base``: its obsolete markers are of round 0 or later."""

    def shift(queue: tuple) -> tuple:
        return tuple(m if isinstance(m, int) else (m[0], max(0, m[1] - base)) for m in queue)

    inflight = {c: (shift(v[0]), shift(v[1])) if arrival else shift(v) for c, v in state["inflight"].items()}
    return {**state, "inflight": inflight}
