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

from snapcheck.traces.model import MARKERS
from snapcheck.traces.model import Event


class Durability:
    def __init__(self, history):
        h = history
        self.records: dict[tuple[str, int], list[Event]] = {}
        start: dict[str, int] = {}          # original mid -> line from which it is durable
        end: dict[str, int] = {}            # original mid -> line at which it was truncated
        chans = h.channels
        seq_of: dict[str, int] = {}
        logs: dict[str, list] = {}          # channel -> heap of (seq, mid) currently logged
        resolve = h.resolve
        for e in h.events:
            t = e.type
            if t == "send":
                if e.kind in MARKERS:
                    continue
                seq_of[e.mid] = e.seq
                c = chans.get(e.ch)
                if e.logged or (c is not None and c.logged) or e.proc in h.external:
                    start.setdefault(e.mid, e.line)
                    heapq.heappush(logs.setdefault(e.ch, []), (e.seq, e.mid))
            elif t == "record":
                self.records.setdefault((e.proc, e.ckpt), []).append(e)
            elif t == "log":
                for mid in e.mids or ():
                    o = resolve(mid)
                    if o not in start or o in end:
                        start[o] = e.line
                        end.pop(o, None)
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
        out: set[str] = set()
        for evs in self.records.values():
            for e in evs:
                out.update(e.mids)
        return out

    def truncated_line(self, mid: str) -> int | None:
        return self.end.get(mid)
