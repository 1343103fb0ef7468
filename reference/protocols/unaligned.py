"""Unaligned checkpoints (Flink ≥ 1.11, FLIP-76), as in theory.md §6.4.

The first barrier of round n is a priority event: it overtakes the records
queued in the input buffers, and the task checkpoints at once. Per task:

* **output part**: the barrier is sent ahead of the records waiting in the output
  buffers; those overtaken records (sent before the checkpoint, delivered after
  the barrier) are persisted by the sender (``record`` part ``output``);
* **input part**, per input channel c: if c delivered the barrier (the trigger
  channel), persist the records queued before it; otherwise persist the queued
  records and every record that *arrives* on c until c's barrier does (Flink's
  ``ChannelStatePersister``: startPersisting, maybePersist, BARRIER_PENDING →
  BARRIER_RECEIVED).

For every channel c = (u→v) the union of u's output part and v's input part is
exactly c's in-transit set, and the two are disjoint. Recovery replays v's input
part, then u's output part, then new data (FIFO is preserved). Barriers never
wait, so the protocol works on cyclic graphs and under backpressure.
"""

from __future__ import annotations

from reference.protocol import Protocol, TaskProtocol


class UnalignedTask(TaskProtocol):
    def __init__(self, ctx, protocol) -> None:
        super().__init__(ctx, protocol)
        self.active: dict[int, tuple[int, dict]] = {}   # round -> (ckpt, {pending channel: records})
        self.latest = 0                                  # newest round started (or declined) here

    def barrier_priority(self, ch, barrier) -> bool:
        return True

    def on_trigger(self, round, barrier) -> None:
        self.start(round, None)

    def on_barrier(self, ch, barrier, overtaking) -> None:
        r = barrier.round
        self.forget_older(ch, r)
        if r > self.latest:
            self.start(r, ch)
        else:
            self.barrier_received(ch, r)

    def start(self, r: int, trigger) -> None:
        self.latest = r
        ctx = self.ctx
        ckpt = ctx.checkpoint(r)
        if ckpt is None:
            return
        self.persist_output(ckpt, ctx.send_barrier(r, priority=True, unaligned=True))
        pending = {}
        for c in ctx.inputs:
            queued = ctx.queued(c)
            if c is trigger:
                if queued:
                    ctx.record(ckpt, c, queued)
            elif self.persisting(c, r):
                pending[c] = queued
        self.active[r] = (ckpt, pending)
        if not pending:
            self.done(r)

    def persisting(self, ch, r: int) -> bool:
        """Whether input ch still awaits round r's barrier when r starts (it does:
        only the trigger channel delivered it)."""
        return True

    def persist_output(self, ckpt: int, overtaken: dict) -> None:
        for c, records in overtaken.items():
            if records:
                self.ctx.record(ckpt, c, records, part="output")

    def on_arrival(self, ch, msg) -> None:
        for _, pending in self.active.values():
            rec = pending.get(ch)
            if rec is not None:
                rec.append(msg)

    def barrier_received(self, ch, r: int) -> None:
        entry = self.active.get(r)
        if entry is None:
            return
        ckpt, pending = entry
        recorded = pending.pop(ch, None)
        if recorded:
            self.ctx.record(ckpt, ch, recorded)
        if not pending:
            self.done(r)

    def forget_older(self, ch, r: int) -> None:
        """A barrier of round r on ch while an older round still awaits ch's barrier:
        that barrier was never sent (its sender declined), so the older round is
        obsolete here (Flink aborts it when a newer barrier arrives)."""
        for old in [o for o, (_, pending) in self.active.items() if o < r and ch in pending]:
            del self.active[old]

    def done(self, r: int) -> None:
        del self.active[r]
        self.ctx.complete(r)


class Unaligned(Protocol):
    name = "unaligned"
    summary = "FLIP-76: priority barriers overtake buffers; persists input and output parts"
    task_class = UnalignedTask
    observe_arrivals = True
