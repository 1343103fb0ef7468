"""Fast in-memory recording of the simulator's trace.

``traces.TraceRecorder`` is the general instrumentation API; the simulator needs
the same trace with less overhead, because randomized validation runs it
millions of times. ``EventLog`` builds ``traces.Event`` objects directly (so a
``Trace`` for the checker costs nothing more) and numbers the per-process
``idx`` and file ``line``. Message ids, sequence numbers and checkpoint numbers
are assigned by the simulator with the recorder's conventions (``ch:seq``,
``ch:b<round>`` for barriers, ``@<epoch>`` after a restore, ``<mid>/r<k>`` for
the k-th replay of a message). ``dumps`` serializes through the traces layer's
writer on its fast path (``traces.writer.dumps_trace``: the events are valid by
construction, so no per-event check). ``NullLog`` records nothing: it measures
the simulation alone.
"""

from __future__ import annotations

from snapcheck.traces.model import EVENT_FIELDS, Event, Header, Trace
from snapcheck.traces.writer import dumps_trace


def _constructor(etype: str, *names: str):
    """A positional constructor of ``Event`` for one event type, generated from the
    model's field order (positional construction is twice as fast as keywords)."""
    order = list(EVENT_FIELDS)
    params = ("proc", "idx", "line") + names
    last = max(order.index(n) for n in params)
    args = [repr(etype) if n == "type" else n if n in params else "None" for n in order[: last + 1]]
    return eval(f"lambda {', '.join(params)}: Event({', '.join(args)})", {"Event": Event})


_SEND = _constructor("send", "t", "ch", "mid", "seq", "size", "key", "value")
_MARKER = _constructor("send", "t", "ch", "mid", "kind", "round", "size")
_ARRIVE = _constructor("arrive", "t", "ch", "mid")
_RECV = _constructor("recv", "t", "ch", "mid")
_DISCARD = _constructor("discard", "t", "ch", "mid", "reason")
_REPLAY = _constructor("replay", "t", "ch", "mid", "replay_of", "source")
_CHECKPOINT = _constructor("checkpoint", "t", "ckpt", "kind", "round", "digest", "size")
_RECORD = _constructor("record", "t", "ckpt", "ch", "part", "mids")
_FAIL = _constructor("fail", "t", "reason", "attrs")
_RESTORE = _constructor("restore", "t", "ckpt", "recovery", "round", "attrs")
_ROUND = {
    etype: _constructor(etype, "t", "round", "reason") for etype in ("round_start", "round_complete", "round_abort")
}
_OUTPUT = _constructor("output", "t", "value", "attrs")
_SEND_ATTRS = _constructor("send", "t", "ch", "mid", "seq", "size", "key", "value", "attrs")
_PROTOCOL_ERROR = _constructor("protocol_error", "t", "reason", "attrs")
_FINISH = _constructor("finish", "t", "reason")
_RETIRE = _constructor("retire", "t", "ckpt", "reason")
_RESTORE_FROM = _constructor("restore", "t", "ckpt", "recovery", "round", "sources", "channels")


class EventLog:
    """Events of one run, in file order."""

    records = True  # False: nothing is kept (the simulator skips state digests)

    def __init__(self, header: Header) -> None:
        self.header = header
        self.names = [p.id for p in header.processes]
        self.next_idx = [0] * len(self.names)
        self.events: list[Event] = []

    def _add(self, ctor, pid: int, *fields) -> None:
        i = self.next_idx[pid]
        self.next_idx[pid] = i + 1
        ev = self.events
        ev.append(ctor(self.names[pid], i, len(ev) + 2, *fields))

    # The three most frequent events number themselves inline (no extra call).
    def send(self, pid, t, ch, mid, seq, size, key, value) -> None:
        i = self.next_idx[pid]
        self.next_idx[pid] = i + 1
        ev = self.events
        ev.append(_SEND(self.names[pid], i, len(ev) + 2, t, ch, mid, seq, size, key, value))

    def recv(self, pid, t, ch, mid) -> None:
        i = self.next_idx[pid]
        self.next_idx[pid] = i + 1
        ev = self.events
        ev.append(_RECV(self.names[pid], i, len(ev) + 2, t, ch, mid))

    def arrive(self, pid, t, ch, mid) -> None:
        i = self.next_idx[pid]
        self.next_idx[pid] = i + 1
        ev = self.events
        ev.append(_ARRIVE(self.names[pid], i, len(ev) + 2, t, ch, mid))

    def marker(self, pid, t, ch, mid, kind, round, size) -> None:
        """A barrier (``kind`` "barrier") or a cancellation marker ("cancel") of ``round``."""
        self._add(_MARKER, pid, t, ch, mid, kind, round, size)

    def discard(self, pid, t, ch, mid, reason) -> None:
        self._add(_DISCARD, pid, t, ch, mid, reason)

    def replay(self, pid, t, ch, mid, replay_of, source) -> None:
        self._add(_REPLAY, pid, t, ch, mid, replay_of, source)

    def checkpoint(self, pid, t, ckpt, round, digest, size) -> None:
        self._add(_CHECKPOINT, pid, t, ckpt, "coordinated", round, digest, size)

    def record(self, pid, t, ckpt, ch, part, mids) -> None:
        self._add(_RECORD, pid, t, ckpt, ch, part, mids)

    def protocol_error(self, pid, t, reason, attrs) -> None:
        self._add(_PROTOCOL_ERROR, pid, t, reason, attrs)

    def fail(self, pid, t, reason, attrs=None) -> None:
        self._add(_FAIL, pid, t, reason, attrs)

    def restore(self, pid, t, ckpt, recovery, round, attrs=None) -> None:
        self._add(_RESTORE, pid, t, ckpt, recovery, round, attrs)

    def round_event(self, etype, pid, t, round, reason=None) -> None:
        self._add(_ROUND[etype], pid, t, round, reason)

    def output(self, pid, t, value, attrs=None) -> None:
        self._add(_OUTPUT, pid, t, value, attrs)

    def send_attrs(self, pid, t, ch, mid, seq, size, key, value, attrs) -> None:
        """A ``send`` with ``attrs`` (a completion notification, an operator event)."""
        self._add(_SEND_ATTRS, pid, t, ch, mid, seq, size, key, value, attrs)

    # -- rescaling and finished tasks ----------------------------------------------
    def add_processes(self, procs: list, channels: list) -> None:
        """Processes and channels that join the run (a job restored at another parallelism)."""
        self.header.processes.extend(procs)
        self.header.channels.extend(channels)
        self.names.extend(p.id for p in procs)
        self.next_idx.extend(0 for _ in procs)

    def key_group(self, kg) -> None:
        """Tag the last event (a keyed send) with its key group."""
        self.events[-1].key_group = kg

    def finish(self, pid, t, reason) -> None:
        self._add(_FINISH, pid, t, reason)

    def retire(self, pid, t, ckpt, reason) -> None:
        self._add(_RETIRE, pid, t, ckpt, reason)

    def restore_from(self, pid, t, recovery, round, sources, channels) -> None:
        self._add(_RESTORE_FROM, pid, t, 0, recovery, round, sources, channels or None)

    def annotate(self, pid: int, etype: str, attrs: dict) -> None:
        """Set ``attrs`` on the latest ``etype`` event of process ``pid`` (a protocol family
        completing an event the shared simulator recorded)."""
        name = self.names[pid]
        for e in reversed(self.events):
            if e.proc == name and e.type == etype:
                e.attrs = attrs
                return
        raise ValueError(f"no {etype} event of {name} to annotate")

    # -- results ----------------------------------------------------------------
    def trace(self, path: str = "<simulation>") -> Trace:
        return Trace(self.header, self.events, path)

    def dumps(self) -> bytes:
        return dumps_trace(self.header, self.events)


class NullLog(EventLog):
    """Records nothing (for measuring the simulation alone)."""

    records = False

    def _nothing(self, *args, **kw) -> None:
        pass

    send = marker = arrive = recv = discard = replay = checkpoint = record = _nothing
    fail = restore = round_event = output = protocol_error = send_attrs = annotate = _nothing
    key_group = finish = retire = restore_from = _nothing
