"""Happened-before between two events of a trace, for traces whose file order is not causal.

Lamport's relation ("Time, Clocks, and the Ordering of Events in a Distributed System",
1978): ``a → b`` when ``a`` comes before ``b`` at one process, or ``a`` sends (or
re-injects: ``replay``) a message whose receipt (``recv``, ``arrive``, ``discard``) is
``b``, or by transitivity. A trace may interleave its processes' events in any order
that keeps each process's own (a merge of per-process logs, docs/trace-format.md,
convention 5), and a receive may then come before its send in the file. Where a
definition compares two events of different processes by *when* they happened (a
round declared complete before a checkpoint), the file order stands in for time only
where no message orders them: an event the file puts later that happened before the
other is not later.

When every receive comes after its send in the file, the file order is a linearization
of ``→``: an event the file puts later never happened before, and nothing is computed.

>>> from snapcheck.traces import TraceRecorder
>>> from snapcheck.checker.trace_index import TraceIndex
>>> rec = TraceRecorder(["A", "B"], [("ab", "A", "B")])
>>> m = rec.send("A", "ab"); rec.recv("B", m)
>>> t = rec.trace(); send, recv = t.events
>>> Causality(TraceIndex(t)).before(send, recv), Causality(TraceIndex(t)).before(recv, send)
(True, False)
"""

from __future__ import annotations

from math import inf

from snapcheck.checker.trace_index import TraceIndex

_SENDS = ("send", "replay")  # events that put a message (or a re-injected incarnation) on a channel
_RECEIVES = ("recv", "arrive", "discard")


class Causality:
    """``before(a, b)``: does event ``a`` happen before event ``b`` (module docstring)?

    ``B``'s log first: its receive comes before ``A``'s send in the file, and after it in
    happened-before; ``A``'s checkpoint after the send is ordered with nothing of ``B``'s:

    >>> from snapcheck.traces.jsonl import parse_trace
    >>> t = parse_trace("\\n".join([
    ...     '{"format": "snapcheck-trace", "version": 1, "processes": [{"id": "A"}, {"id": "B"}],'
    ...     ' "channels": [{"id": "ab", "src": "A", "dst": "B"}]}',
    ...     '{"type": "recv", "proc": "B", "idx": 0, "ch": "ab", "mid": "m"}',
    ...     '{"type": "send", "proc": "A", "idx": 0, "ch": "ab", "mid": "m", "seq": 1}',
    ...     '{"type": "checkpoint", "proc": "A", "idx": 1, "ckpt": 1, "kind": "basic"}']) + "\\n", "t.jsonl")
    >>> recv, send, ckpt = t.events
    >>> c = Causality(TraceIndex(t))
    >>> c.file_order_causal, c.before(send, recv), c.before(recv, send), c.before(ckpt, recv)
    (False, True, False, False)
    """

    def __init__(self, ix: TraceIndex):
        self.ix = ix
        self._receivers: dict[str, list] | None = None
        self._pos: dict[int, int] = {}
        self._causal: bool | None = None

    @property
    def file_order_causal(self) -> bool:
        """Does every receive come after its send in the file?"""
        if self._causal is None:
            sent: dict[str, int] = {}
            for t in _SENDS:
                for e in self.ix.of_type(t):
                    sent.setdefault(e.mid, e.line)
            self._causal = all(e.mid not in sent or sent[e.mid] < e.line for t in _RECEIVES for e in self.ix.of_type(t))
        return self._causal

    def before(self, a, b) -> bool:
        """``a → b``: ``a`` precedes ``b`` at one process, or a chain of messages leads from
        ``a`` (or an event after it at its process) to ``b`` (or an event before it)."""
        if a.proc == b.proc:
            return a.line < b.line
        if self.file_order_causal:
            return a.line < b.line and self._reaches(a, b)
        return self._reaches(a, b)

    def _reaches(self, a, b) -> bool:
        """Forward from ``a`` over process order and messages: the earliest event of each
        process reached; ``b`` is reached when its process is reached at or before it."""
        if self._receivers is None:
            self._index()
        by_proc, receivers, pos = self.ix.by_proc, self._receivers, self._pos
        assert receivers is not None
        target = pos[id(b)]
        reach: dict[str, float] = {a.proc: pos[id(a)]}
        scanned: dict[str, float] = {a.proc: inf}  # each process's events are scanned from reach on, once
        todo = [a.proc]
        while todo:
            p = todo.pop()
            lo, hi = int(reach[p]), scanned[p]
            scanned[p] = lo
            for e in by_proc[p][lo : None if hi == inf else int(hi)]:
                if e.type in _SENDS:
                    for r in receivers.get(e.mid, ()):
                        j = pos[id(r)]
                        if j < reach.get(r.proc, inf):
                            reach[r.proc] = j
                            scanned.setdefault(r.proc, inf)
                            if r.proc == b.proc and j <= target:
                                return True
                            todo.append(r.proc)
        return reach.get(b.proc, inf) <= target

    def _index(self) -> None:
        receivers: dict[str, list] = {}
        for t in _RECEIVES:
            for e in self.ix.of_type(t):
                receivers.setdefault(e.mid, []).append(e)
        self._receivers = receivers
        for evs in self.ix.by_proc.values():
            for i, e in enumerate(evs):
                self._pos[id(e)] = i
