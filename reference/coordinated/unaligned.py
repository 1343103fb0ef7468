"""Unaligned checkpoints (Flink ≥ 1.11, FLIP-76), as in docs/theory.md, "Unaligned checkpoints".

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

from snapcheck.reference.coordinated.channel_recording import ChannelRecordingTask
from snapcheck.reference.protocol import Protocol
from snapcheck.traces.protocol_facts import TlaMapping


class UnalignedTask(ChannelRecordingTask):
    def barrier_priority(self, ch, barrier) -> bool:
        return True

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
        self.record_in_flight(ch, msg)


class Unaligned(Protocol):
    name = "unaligned"
    situations = Protocol.situations + ("overtake", "backpressured-barrier")
    family = "coordinated"
    max_rounds_in_flight = 1  # FLIP-76: no concurrent unaligned checkpoints
    tla: TlaMapping | None = TlaMapping("UnalignedTrace", mode="unaligned", models_arrival=True)
    summary = "FLIP-76: priority barriers overtake buffers; persists input and output parts"
    task_class = UnalignedTask
    observe_arrivals = True
