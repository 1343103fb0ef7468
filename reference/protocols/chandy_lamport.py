"""Chandy–Lamport distributed snapshots (Chandy & Lamport, "Distributed Snapshots:
Determining Global States of Distributed Systems", 1985), as in theory.md §6.1.

Per task:

* on the first marker of round n (or the coordinator's trigger at a source):
  record the local state, send a marker on every output before any further
  message, start recording every *other* input channel;
* on a later marker of round n on channel c: stop recording c. The channel state
  CS(c) is the records *processed* on c after the local state was recorded and
  before c's marker.

No channel is ever blocked. Requires FIFO channels (markers must not be overtaken);
the ``chandy-lamport-non-fifo`` mutant shows what breaks without them. Works on
cyclic graphs. Rounds may overlap (``max_concurrent`` > 1): each round keeps its
own recording.
"""

from __future__ import annotations

from reference.protocol import Protocol, TaskProtocol


class ChandyLamportTask(TaskProtocol):
    def __init__(self, ctx, protocol) -> None:
        super().__init__(ctx, protocol)
        self.active: dict[int, tuple[int, dict]] = {}   # round -> (ckpt, {channel: records})
        self.latest = 0                                  # newest round whose state was recorded

    def on_trigger(self, round, barrier) -> None:
        self.record_state(round, None)

    def on_barrier(self, ch, barrier, overtaking) -> None:
        r = barrier.round
        self.forget_older(ch, r)
        if r > self.latest:
            self.record_state(r, ch)
        else:
            self.marker(ch, r)

    def record_state(self, r: int, first) -> None:
        self.latest = r
        ckpt = self.ctx.checkpoint(r)
        if ckpt is None:                   # declined: no markers for this round
            return
        self.ctx.send_barrier(r)
        pending = {c: [] for c in self.ctx.inputs if c is not first}
        self.active[r] = (ckpt, pending)
        if not pending:
            self.done(r)

    def marker(self, ch, r: int) -> None:
        entry = self.active.get(r)
        if entry is None:
            return
        ckpt, pending = entry
        recorded = pending.pop(ch, None)
        if recorded:
            self.save(ckpt, ch, recorded)
        if not pending:
            self.done(r)

    def save(self, ckpt: int, ch, recorded: list) -> None:
        self.ctx.record(ckpt, ch, recorded)

    def on_process(self, ch, msg) -> None:
        for _, pending in self.active.values():
            rec = pending.get(ch)
            if rec is not None:
                rec.append(msg)

    def forget_older(self, ch, r: int) -> None:
        """A marker of round r on ch while an older round still waits for ch's marker:
        with FIFO channels that marker was never sent (its sender declined the round)."""
        for old in [o for o, (_, pending) in self.active.items() if o < r and ch in pending]:
            del self.active[old]

    def done(self, r: int) -> None:
        del self.active[r]
        self.ctx.complete(r)


class ChandyLamport(Protocol):
    name = "chandy-lamport"
    summary = "markers, no blocking; records channel state on processing (FIFO channels)"
    task_class = ChandyLamportTask
    observe_processing = True
