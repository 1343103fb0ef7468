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
* no later event refers to a round ``<= R`` (no late record, decline or
  marker of an old round).

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

from collections import deque
from dataclasses import dataclass, replace

from snapcheck.checker.tla.trace_events import Prepared
from snapcheck.checker.tla.tracelog import start_state

ROUND_OPS = ("ckpt", "decline", "start", "complete", "abort", "record")


def _round_of(e: dict) -> int | None:
    """The round an event refers to (markers, checkpoints, records, the coordinator's
    round events), or None."""
    if e["op"] in ROUND_OPS or (e["op"] in ("send", "recv", "arrive") and e["k"] != "d"):
        return e["n"]
    return None


@dataclass
class Segment:
    prepared: Prepared  # the segment's events (renumbered), start and cut states, bounds
    offset: int  # index of its first event among the whole trace's spec events
    real: int  # its events that are trace events (not the synthetic cut and end)


def clean_cuts(p: Prepared):
    """The clean cuts of a mapped trace, in order: ``(i, R, state)`` -- after the first
    ``i`` spec events, with every round up to ``R`` finished; ``state()`` returns the
    records in flight and the counters there (the keyword arguments of
    ``tracelog.start_state``) and must be called before the next cut is asked for."""
    family, procs, coords, data_chans, ctrl_chans, ends, back = p.topology
    chans = sorted(set(data_chans) | set(ctrl_chans))
    events = p.events[:-1] if p.events and p.events[-1]["op"] == "end" else p.events
    arrival = family.models_arrival
    wire: dict[str, deque[int]] = {c: deque() for c in chans}  # data in flight (ABS, CL: all of it)
    ibuf: dict[str, deque[int]] = {c: deque() for c in chans}
    closed = dict.fromkeys(chans, 0)
    sent = dict.fromkeys(data_chans, 0)
    rcvd = dict.fromkeys(data_chans, 0)
    started = resolved_upto = markers = 0
    at_started = len(chans)  # channels whose last processed marker is of round `started`
    resolved: set[int] = set()
    completed: set[int] = set()
    later = [0] * len(events) + [float("inf")]  # the smallest round referred to from event i on
    low = float("inf")
    for i in range(len(events) - 1, -1, -1):
        r = _round_of(events[i])
        if r is not None and r < low:
            low = r
        later[i] = low

    def state() -> dict:
        inflight = {c: (tuple(wire[c]), tuple(ibuf[c])) if arrival else tuple(wire[c]) for c in chans}
        return {"inflight": inflight, "counters": {c: (sent[c], rcvd[c]) for c in data_chans}}

    for i, e in enumerate(events):
        op, c, k, n = e["op"], e["c"], e["k"], e["n"]
        if op == "send":
            if k == "d":
                sent[c] = n
                wire[c].append(n)
            else:
                markers += 1
        elif op == "arrive":
            if k == "d" and arrival and wire[c] and wire[c][0] == n:
                ibuf[c].append(wire[c].popleft())
        elif op == "recv":
            if k == "d":
                rcvd[c] += 1
                q = ibuf[c] if arrival else wire[c]
                if q and q[0] == n:
                    q.popleft()
            else:
                markers -= 1
                at_started += (n == started) - (closed[c] == started)
                closed[c] = n
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
        if (
            not markers
            and (at_started == len(chans) or started not in completed)
            and resolved_upto >= started
            and later[i + 1] > started
        ):
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
            start=None if start is None else start_state(p.topology, **start),
            cut=None if cut is None else {**start_state(p.topology, **cut), "rounds": upto - base},
        )
        out.append(Segment(seg, a, b - a))
    return out


def _renumber(e: dict, base: int) -> dict:
    if not base or _round_of(e) is None:
        return e
    return {**e, "n": e["n"] - base}
