"""Replay a trace to any event position and see the state of every process and channel.

The state at *position* ``n`` is the result of applying the first ``n`` events
of the trace in file order (position 0: nothing happened; position ``N``: the
whole trace). It is computed from the trace alone:

* per process: the current checkpoint interval ``ι`` (docs/theory.md, "Interval indices": ``x+1``
  after ``C_{i,x}``), the last checkpoint (taken or restored), its epoch
  (restores so far), whether it has failed, its **blocked** channels, the
  channels it is **recording**, and its protocol variables (the ``vars`` of its
  checkpoints and receives, merged in order; the ``piggyback`` of its last send);
* per channel: the messages **in flight** (sent or replayed, not yet processed
  nor discarded, in send order; those that already *arrived* in the receiver's
  buffer are flagged), the **recorded channel state** (the latest ``record`` of
  each part) and the sender's durable **log**.

Blocked and recording channels follow the barrier protocols (ABS,
Chandy–Lamport, unaligned checkpoints; docs/theory.md, "Coordinated snapshots"): a channel ``c`` into
``P`` is *blocked* from the arrival of the barrier of round ``r`` on ``c``
(its ``arrive`` event, or its ``recv`` if no arrival was traced) until ``P``
takes its checkpoint of round ``r`` (or the round is aborted, or ``P``
restores). After ``P``'s checkpoint of round ``r``, a data input channel from a
process that takes part in rounds (not external, not the coordinator) whose
round-``r`` barrier has not arrived yet is *recording* (its in-flight messages
belong to the snapshot's channel state) until that barrier arrives.

``Replay`` is the navigation API (forward, backward, go to a position or a
line, run to a breakpoint); it caches snapshots so that moving backwards is
cheap on long traces.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field

from snapcheck.debug.history import describe_event, message_table
from snapcheck.traces.gc_pause import paused_gc
from snapcheck.traces.model import Event, Trace

SNAPSHOT_EVERY = 128
MAX_SNAPSHOTS = 512


@dataclass(slots=True)
class InFlight:
    mid: str
    kind: str
    seq: int | None
    round: int | None
    sent_line: int
    arrived: bool = False
    replay_of: str | None = None


@dataclass(slots=True)
class CheckpointRef:
    ckpt: int
    kind: str
    round: int | None
    line: int  # 0 for the implied initial checkpoint
    restored: bool = False  # reached by a restore, not taken here


@dataclass(slots=True)
class ProcessView:
    id: str
    role: str
    events: int = 0
    interval: int = 1
    last_checkpoint: CheckpointRef = field(default_factory=lambda: CheckpointRef(0, "initial", None, 0))
    epoch: int = 0
    failed: bool = False
    blocked: dict[str, int] = field(default_factory=dict)  # channel -> round
    recording: dict[str, int] = field(default_factory=dict)  # channel -> round
    vars: dict = field(default_factory=dict)
    piggyback: dict | None = None
    rounds: list[int] = field(default_factory=list)  # rounds it has checkpointed for


@dataclass(slots=True)
class RecordedPart:
    proc: str
    ckpt: int
    part: str
    mids: list[str]
    line: int


@dataclass(slots=True)
class ChannelView:
    id: str
    src: str
    dst: str
    fifo: bool
    in_flight: list[InFlight] = field(default_factory=list)
    recorded: dict[str, RecordedPart] = field(default_factory=dict)  # part -> latest record
    log: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ReplayState:
    """The state of the whole system after ``position`` events."""

    position: int
    event: Event | None  # the event just applied (None at position 0)
    processes: dict[str, ProcessView]
    channels: dict[str, ChannelView]
    aborted_rounds: set[int] = field(default_factory=set)
    early: set[str] = field(default_factory=set)  # processed before their send (file order)

    def to_json(self, trace: Trace | None = None) -> dict:
        """A JSON-ready dict (the ``--json`` output of ``snapcheck replay``)."""
        ev = None
        if self.event is not None:
            ev = self.event.to_dict()
            ev["line"] = self.event.line
            if trace is not None:
                ev["text"] = describe_event(self.event)
        return {
            "position": self.position,
            "event": ev,
            "processes": {p: _process_json(v) for p, v in self.processes.items()},
            "channels": {c: _channel_json(v) for c, v in self.channels.items()},
            "aborted_rounds": sorted(self.aborted_rounds),
        }


def _process_json(v: ProcessView) -> dict:
    d = asdict(v)
    d["blocked"] = dict(sorted(v.blocked.items()))
    d["recording"] = dict(sorted(v.recording.items()))
    return d


def _channel_json(v: ChannelView) -> dict:
    return {
        "src": v.src,
        "dst": v.dst,
        "fifo": v.fifo,
        "in_flight": [asdict(m) for m in v.in_flight],
        "recorded": {part: asdict(r) for part, r in sorted(v.recorded.items())},
        "log": list(v.log),
    }


class _Machine:
    """Applies events one at a time to a ``ReplayState`` (mutating it)."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self.msgs = message_table(trace)
        self.logged_channels = {c.id for c in trace.channels if c.logged}  # every send on them is logged
        # inputs that carry barriers: data channels from processes that take part in rounds
        roles = {p.id: p.role for p in trace.processes}
        self.inputs: dict[str, list[str]] = {p.id: [] for p in trace.processes}
        for c in trace.channels:
            if c.kind != "control" and roles[c.src] not in ("external", "coordinator"):
                self.inputs[c.dst].append(c.id)
        self.barrier_arrivals: dict[tuple[str, int], list[int]] = {}
        self.barrier_round: dict[str, int] = {}  # mid -> round, of the barriers that name one
        for m in self.msgs.values():
            if not m.is_barrier:
                continue
            first = m.arrive or m.recv
            if first is not None:
                self.barrier_arrivals.setdefault((m.ch, m.round), []).append(first.line)
            if m.round is not None:
                self.barrier_round[m.mid] = m.round
        self.ckpt_kind: dict[tuple[str, int | None], str | None] = {}
        # (process, round) -> position of the process's first checkpoint for that round: whether
        # it has checkpointed for the round by a position, without searching its list of rounds
        self.round_ckpt: dict[tuple[str, int], int] = {}
        for k, e in enumerate(trace.events):
            if e.type == "checkpoint":
                self.ckpt_kind[(e.proc, e.ckpt)] = e.kind
                if e.round is not None:
                    self.round_ckpt.setdefault((e.proc, e.round), k)
        self._handlers = {
            t: getattr(self, "_on_" + t)
            for t in (
                "send",
                "replay",
                "arrive",
                "recv",
                "discard",
                "checkpoint",
                "record",
                "log",
                "log_truncate",
                "fail",
                "restore",
                "round_abort",
            )
        }

    def initial(self) -> ReplayState:
        return ReplayState(
            position=0,
            event=None,
            processes={p.id: ProcessView(p.id, p.role) for p in self.trace.processes},
            channels={c.id: ChannelView(c.id, c.src, c.dst, c.fifo) for c in self.trace.channels},
        )

    def apply(self, st: ReplayState, e: Event) -> None:
        st.position += 1
        st.event = e
        pv = st.processes[e.proc]
        pv.events += 1
        self._handlers.get(e.type, self._on_other)(st, pv, e)

    # -- messages ---------------------------------------------------------------
    def _on_send(self, st: ReplayState, pv: ProcessView, e: Event) -> None:
        if e.piggyback is not None:
            pv.piggyback = e.piggyback
        if e.mid in st.early:
            st.early.discard(e.mid)
            return
        if e.type == "send":  # its message's kind, seq and round are the send's
            kind, seq, rnd = e.kind or "data", e.seq, e.round
        else:  # a replay's are those of the message it replays
            m = self.msgs[e.mid]
            kind, seq, rnd = m.kind, m.seq, m.round
        chan = st.channels[e.ch]
        chan.in_flight.append(InFlight(e.mid, kind, seq, rnd, e.line, replay_of=e.replay_of))
        if e.logged or e.ch in self.logged_channels:
            chan.log.append(e.mid)

    _on_replay = _on_send

    def _find(self, st: ReplayState, e: Event) -> tuple[int, InFlight | None]:
        flight = st.channels[e.ch].in_flight
        for k, m in enumerate(flight):
            if m.mid == e.mid:
                return k, m
        return -1, None

    def _on_arrive(self, st: ReplayState, pv: ProcessView, e: Event) -> None:
        _, m = self._find(st, e)
        if m is not None:
            m.arrived = True
        r = self.barrier_round.get(e.mid)
        if r is not None:
            self._barrier_arrived(st, pv, e.ch, r)

    def _on_recv(self, st: ReplayState, pv: ProcessView, e: Event) -> None:
        k, m = self._find(st, e)
        if m is not None:
            del st.channels[e.ch].in_flight[k]
        elif e.mid not in self.msgs or self.msgs[e.mid].origin.line > e.line:
            st.early.add(e.mid)
        if e.type == "recv" and e.vars:
            pv.vars.update(e.vars)
        r = self.barrier_round.get(e.mid)
        if r is not None and self.msgs[e.mid].arrive is None:
            self._barrier_arrived(st, pv, e.ch, r)

    _on_discard = _on_recv

    def _barrier_arrived(self, st: ReplayState, pv: ProcessView, ch: str, r: int) -> None:
        """A barrier of round ``r`` arrived on input ``ch``: it ends the recording of ``ch`` for
        round ``r`` (or an earlier one) and blocks ``ch`` until the process checkpoints for ``r``."""
        if pv.recording.get(ch) is not None and pv.recording[ch] <= r:
            del pv.recording[ch]
        if self.round_ckpt.get((pv.id, r), st.position) >= st.position - 1 and r not in st.aborted_rounds:
            pv.blocked[ch] = r  # not checkpointed for r before this event (r not in pv.rounds)

    # -- checkpoints and state --------------------------------------------------
    def _on_checkpoint(self, st: ReplayState, pv: ProcessView, e: Event) -> None:
        pv.last_checkpoint = CheckpointRef(e.ckpt, e.kind, e.round, e.line)
        pv.interval = e.ckpt + 1
        if e.vars:
            pv.vars.update(e.vars)
        if e.kind == "coordinated" or e.round is not None:
            r = e.round
            released = [c for c, br in pv.blocked.items() if r is None or br <= r]
            for c in released:
                del pv.blocked[c]
            if r is not None:
                pv.rounds.append(r)
                arrived = {c for c in self.inputs[e.proc] if self._barrier_seen(st, c, r)}
                for c in self.inputs[e.proc]:
                    if c not in arrived and c not in released:
                        pv.recording[c] = r

    def _barrier_seen(self, st: ReplayState, ch: str, r: int) -> bool:
        """Whether a round-``r`` barrier on ``ch`` arrived at or before this position."""
        return any(line <= st.event.line for line in self.barrier_arrivals.get((ch, r), ()))

    def _on_record(self, st: ReplayState, pv: ProcessView, e: Event) -> None:
        part = e.part or "input"
        st.channels[e.ch].recorded[part] = RecordedPart(e.proc, e.ckpt, part, list(e.mids), e.line)

    def _on_log(self, st: ReplayState, pv: ProcessView, e: Event) -> None:
        log = st.channels[e.ch].log
        log.extend(m for m in e.mids or () if m not in log)

    def _on_log_truncate(self, st: ReplayState, pv: ProcessView, e: Event) -> None:
        chv = st.channels[e.ch]
        chv.log = [m for m in chv.log if (self.msgs[m].seq or 0) > e.through_seq]

    def _on_fail(self, st: ReplayState, pv: ProcessView, e: Event) -> None:
        pv.failed = True
        pv.blocked.clear()
        pv.recording.clear()

    def _on_restore(self, st: ReplayState, pv: ProcessView, e: Event) -> None:
        pv.failed = False
        pv.epoch += 1
        pv.blocked.clear()
        pv.recording.clear()
        kind = self.ckpt_kind.get((e.proc, e.ckpt), "initial" if e.ckpt == 0 else "basic")
        pv.last_checkpoint = CheckpointRef(e.ckpt, kind, e.round, e.line, restored=True)
        pv.interval = e.ckpt + 1

    def _on_round_abort(self, st: ReplayState, pv: ProcessView, e: Event) -> None:
        st.aborted_rounds.add(e.round)
        for p in st.processes.values():
            for table in (p.blocked, p.recording):
                for c in [c for c, r in table.items() if r == e.round]:
                    del table[c]

    def _on_other(self, st: ReplayState, pv: ProcessView, e: Event) -> None:
        """Events that change no replayed state (round start/complete, output)."""


@dataclass(frozen=True)
class Breakpoint:
    """Stop on events of a process (``proc``), involving a message (``msg``: its
    send, arrival, processing, discard, replay, recording or logging), of a type
    (``type``), or on a checkpoint of a process (``ckpt``)."""

    what: str  # "proc" | "msg" | "type" | "ckpt"
    value: str

    def matches(self, e: Event) -> bool:
        if self.what == "proc":
            return e.proc == self.value
        if self.what == "type":
            return e.type == self.value
        if self.what == "ckpt":
            return e.type == "checkpoint" and e.proc == self.value
        if self.what == "msg":
            return self.value in (e.mid, e.replay_of) or self.value in (e.mids or ())
        raise ValueError(f"unknown breakpoint kind {self.what!r}")

    def __str__(self) -> str:
        return f"{self.what} {self.value}"


class Replay:
    """A cursor over the positions ``0..len(trace)`` of a trace."""

    def __init__(self, trace: Trace, snapshot_every: int = SNAPSHOT_EVERY, navigable: bool = True):
        """``navigable=False``: a cursor that only moves forward once (no snapshots kept)."""
        self.trace = trace
        self.events = trace.events
        with paused_gc():
            self._m = _Machine(trace)
        self._every = (
            max(1, snapshot_every, -(-len(self.events) // MAX_SNAPSHOTS)) if navigable else len(self.events) + 1
        )
        self._snapshots: dict[int, ReplayState] = {0: self._m.initial()}
        self._state = copy.deepcopy(self._snapshots[0])
        self.breakpoints: list[Breakpoint] = []

    @property
    def messages(self):
        return self._m.msgs

    @property
    def position(self) -> int:
        return self._state.position

    @property
    def state(self) -> ReplayState:
        return self._state

    def __len__(self) -> int:
        return len(self.events)

    # -- moving -----------------------------------------------------------------
    def goto(self, n: int) -> ReplayState:
        """Move to position ``n`` (clamped to ``0..len``)."""
        with paused_gc():
            return self._goto(n)

    def _goto(self, n: int) -> ReplayState:
        n = max(0, min(n, len(self.events)))
        cur = self._state.position
        if n < cur or (n - cur) > self._every:
            base = max(k for k in self._snapshots if k <= n)
            if not (base <= cur <= n):
                self._state = copy.deepcopy(self._snapshots[base])
        st, apply, events, every, snapshots = self._state, self._m.apply, self.events, self._every, self._snapshots
        for p in range(st.position + 1, n + 1):  # p: the position after the event
            apply(st, events[p - 1])
            if p % every == 0 and p not in snapshots:
                snapshots[p] = copy.deepcopy(st)
        return st

    def forward(self, k: int = 1) -> ReplayState:
        return self.goto(self.position + k)

    def backward(self, k: int = 1) -> ReplayState:
        return self.goto(self.position - k)

    def goto_line(self, line: int) -> ReplayState:
        """Move to just after the last event at or before file line ``line``."""
        return self.goto(position_of_line(self.events, line))

    def state_at(self, n: int) -> ReplayState:
        """The state at position ``n`` (a copy; the cursor does not move)."""
        here = self.position
        st = copy.deepcopy(self.goto(n))
        self.goto(here)
        return st

    def find(self, pred: Callable[[Event], bool], forward: bool = True) -> int | None:
        """The next (or previous) position whose just-applied event satisfies ``pred``."""
        if forward:
            rng = range(self.position, len(self.events))
        else:
            rng = range(self.position - 2, -1, -1)
        for i in rng:
            if pred(self.events[i]):
                return i + 1
        return None

    def run_to_break(self, forward: bool = True) -> Breakpoint | None:
        """Move to the next (or previous) event that hits a breakpoint; at the end
        (or start) of the trace if none does. Returns the breakpoint hit."""
        hit: list[Breakpoint] = []

        def pred(e: Event) -> bool:
            hit[:] = [b for b in self.breakpoints if b.matches(e)]
            return bool(hit)

        pos = self.find(pred, forward)
        self.goto(pos if pos is not None else (len(self.events) if forward else 0))
        return hit[0] if pos is not None else None

    def next_of(self, positions: Iterable[int], forward: bool = True) -> int | None:
        """The nearest position in ``positions`` strictly after (before) the cursor."""
        here = self.position
        cands = [p for p in positions if (p > here if forward else p < here)]
        if not cands:
            return None
        return min(cands) if forward else max(cands)


def position_of_line(events: list[Event], line: int) -> int:
    """The position reached once every event at or before file line ``line`` is applied."""
    lo, hi = 0, len(events)
    while lo < hi:  # events are in increasing line order
        mid = (lo + hi) // 2
        if events[mid].line <= line:
            lo = mid + 1
        else:
            hi = mid
    return lo
