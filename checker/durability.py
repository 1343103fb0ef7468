"""Where an in-transit message can be recovered from: recorded channel state and durable logs.

docs/theory.md, "Complete snapshots: channel state and logs": a snapshot is complete
when every message in transit with respect
to it is in the recorded channel state ``CS(c)`` or in a durable sender-side log
that recovery will replay.

* Channel state: ``record`` events attach a list of mids (input part, recorded by
  the channel's destination; output part, recorded by its source) to one local
  checkpoint ``(proc, ckpt)``. Records are durable storage: a later restore does not
  remove them, so they are collected from the whole (raw) history.
* Logs: a message is durable from its send when its channel is ``logged``, when the
  send has ``logged: true`` or when its sender is an ``external`` process (a
  replayable input log); otherwise from a ``log`` event naming it. A
  ``log_truncate {ch, through_seq}`` removes the channel's logged entries with
  ``seq <= through_seq`` at that line.
"""

from __future__ import annotations

import heapq
from math import inf

from snapcheck.traces.model import MARKERS, Event


class Durability:
    """Where the messages of the effective history ``history`` can be recovered from
    (module docstring).

    ``records[(proc, ckpt)]``: the ``record`` events of the channel state persisted with
    checkpoint ``ckpt`` of ``proc``; ``start[mid]`` / ``end[mid]``: the line from which an
    (original) message is in a durable log, and the line of the ``log_truncate`` that
    removed it. A truncation by an external input does not end durability: the input
    can always be re-read.

    A message logged at line 3 and truncated at line 4:

    >>> from snapcheck.traces import TraceRecorder
    >>> from snapcheck.checker.intervals import History
    >>> rec = TraceRecorder(["A", "B"], [("a2b", "A", "B")])
    >>> m = rec.send("A", "a2b")
    >>> rec.log("A", "a2b", [m])
    >>> rec.log_truncate("A", "a2b", through_seq=1)
    >>> dur = Durability(History(rec.trace()))
    >>> dur.durable(m, at_line=3), dur.durable(m), dur.truncated_line(m)
    (True, False, 4)
    """

    def __init__(self, history):
        h = history
        self.records: dict[tuple[str, int], list[Event]] = {}
        start: dict[str, int] = {}  # original mid -> line from which it is durable
        end: dict[str, int] = {}  # original mid -> line at which it was truncated
        chans = h.channels
        seq_of: dict[str, int] = {}
        logs: dict[str, list] = {}  # channel -> heap of (seq, mid) currently logged
        ix = h.trace_index
        truncates = ix.has("log_truncate")  # else nothing leaves a log: no heaps needed
        resolve = h.resolve
        events = h.events
        if events is h.trace.events and not truncates and not ix.has("log"):
            events = ix.of_type("send") + ix.of_type("record")  # the only ones that count then
        logged, external = {c.id for c in chans.values() if c.logged}, h.external
        for e in events:
            t = e.type
            if t == "send":
                if e.kind in MARKERS:
                    continue
                if e.proc in external or e.ch in logged or e.logged:
                    start.setdefault(e.mid, e.line)
                    if truncates:
                        heapq.heappush(logs.setdefault(e.ch, []), (e.seq, e.mid))
                if truncates:
                    seq_of[e.mid] = e.seq
            elif t == "record":
                self.records.setdefault((e.proc, e.ckpt), []).append(e)
            elif t == "log":
                for mid in e.mids or ():
                    o = resolve(mid)
                    if o not in start or o in end:
                        start[o] = e.line
                        end.pop(o, None)
                        if truncates:
                            heapq.heappush(logs.setdefault(e.ch, []), (seq_of.get(o, 0), o))
            elif t == "log_truncate":
                heap = logs.get(e.ch)
                while heap and heap[0][0] <= e.through_seq:
                    _, mid = heapq.heappop(heap)
                    if e.proc not in h.external and mid not in end:
                        end[mid] = e.line
        self.start = start
        self.end = end

    def durable(self, mid: str, at_line: float = inf) -> bool:
        """Is (original) ``mid`` in a durable log at ``at_line``?"""
        s = self.start.get(mid)
        if s is None or s > at_line:
            return False
        e = self.end.get(mid)
        return e is None or e > at_line

    def ever_recorded(self) -> set[str]:
        """The mids recorded as channel state of any checkpoint (as recorded, not resolved)."""
        out: set[str] = set()
        for evs in self.records.values():
            for e in evs:
                assert e.mids is not None  # required of a record
                out.update(e.mids)
        return out

    def truncated_line(self, mid: str) -> int | None:
        """The line of the ``log_truncate`` that removed (original) ``mid`` from its log, if any."""
        return self.end.get(mid)
