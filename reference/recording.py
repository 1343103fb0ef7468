"""Fast in-memory recording of the simulator's trace.

``traces.TraceRecorder`` is the general instrumentation API; the simulator needs
the same trace with less overhead, because randomized validation runs it
millions of times. ``EventLog`` builds ``traces.Event`` objects directly (so a
``Trace`` for the checker costs nothing more) and numbers the per-process
``idx`` and file ``line``. Message ids, sequence numbers and checkpoint numbers
are assigned by the simulator with the recorder's conventions (``ch:seq``,
``ch:b<round>`` for barriers, ``@<epoch>`` after a restore, ``<mid>/r<k>`` for
the k-th replay of a message). ``NullLog`` records nothing: it measures the
simulation alone.
"""

from __future__ import annotations

import orjson

from traces.model import Event, Header, Trace


class EventLog:
    """Events of one run, in file order."""

    def __init__(self, header: Header) -> None:
        self.header = header
        self.names = [p.id for p in header.processes]
        self.next_idx = [0] * len(self.names)
        self.events: list[Event] = []

    def _pos(self, pid: int) -> tuple[str, int, int]:
        i = self.next_idx[pid]
        self.next_idx[pid] = i + 1
        return self.names[pid], i, len(self.events) + 2

    # Event(type, proc, idx, line, t, attrs, ch, mid, seq, kind, round, logged, size, key, value,
    #       piggyback, vars, replay_of, source, ckpt, digest, part, mids, through_seq, reason, recovery)
    def send(self, pid, t, ch, mid, seq, size, key, value) -> None:
        p, i, ln = self._pos(pid)
        self.events.append(Event("send", p, i, ln, t, None, ch, mid, seq, None, None, None, size, key, value))

    def barrier(self, pid, t, ch, mid, round, size) -> None:
        p, i, ln = self._pos(pid)
        self.events.append(Event("send", p, i, ln, t, None, ch, mid, None, "barrier", round, None, size))

    def arrive(self, pid, t, ch, mid) -> None:
        p, i, ln = self._pos(pid)
        self.events.append(Event("arrive", p, i, ln, t, None, ch, mid))

    def recv(self, pid, t, ch, mid) -> None:
        p, i, ln = self._pos(pid)
        self.events.append(Event("recv", p, i, ln, t, None, ch, mid))

    def discard(self, pid, t, ch, mid, reason) -> None:
        p, i, ln = self._pos(pid)
        self.events.append(Event("discard", p, i, ln, t, None, ch, mid, reason=reason))

    def replay(self, pid, t, ch, mid, replay_of, source) -> None:
        p, i, ln = self._pos(pid)
        self.events.append(Event("replay", p, i, ln, t, None, ch, mid, replay_of=replay_of, source=source))

    def checkpoint(self, pid, t, ckpt, round, digest, size) -> None:
        p, i, ln = self._pos(pid)
        self.events.append(Event("checkpoint", p, i, ln, t, None, kind="coordinated", round=round, size=size,
                                 ckpt=ckpt, digest=digest))

    def record(self, pid, t, ckpt, ch, part, mids) -> None:
        p, i, ln = self._pos(pid)
        self.events.append(Event("record", p, i, ln, t, None, ch, ckpt=ckpt, part=part, mids=mids))

    def fail(self, pid, t, reason) -> None:
        p, i, ln = self._pos(pid)
        self.events.append(Event("fail", p, i, ln, t, reason=reason))

    def restore(self, pid, t, ckpt, recovery, round) -> None:
        p, i, ln = self._pos(pid)
        self.events.append(Event("restore", p, i, ln, t, ckpt=ckpt, recovery=recovery, round=round))

    def round_event(self, etype, pid, t, round, reason=None) -> None:
        p, i, ln = self._pos(pid)
        self.events.append(Event(etype, p, i, ln, t, round=round, reason=reason))

    def output(self, pid, t, value) -> None:
        p, i, ln = self._pos(pid)
        self.events.append(Event("output", p, i, ln, t, value=value))

    # -- results ----------------------------------------------------------------
    def trace(self, path: str = "<simulation>") -> Trace:
        return Trace(self.header, self.events, path)

    def dumps(self) -> bytes:
        dumps = orjson.dumps
        parts = [dumps(self.header.to_dict())]
        parts.extend(dumps(e.to_dict()) for e in self.events)
        parts.append(b"")
        return b"\n".join(parts)


class NullLog(EventLog):
    """Records nothing (for measuring the simulation alone)."""

    def _nothing(self, *args, **kw) -> None:
        pass

    send = barrier = arrive = recv = discard = replay = checkpoint = record = _nothing
    fail = restore = round_event = output = _nothing
