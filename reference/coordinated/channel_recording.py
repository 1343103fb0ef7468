"""Rounds that record each input channel's in-flight messages until the round's
barrier arrives on it: the channel recording of Chandy & Lamport ("Distributed
Snapshots: Determining Global States of Distributed Systems"; docs/theory.md, "Chandy-Lamport")
and the input part of unaligned checkpoints (FLIP-76; docs/theory.md, "Unaligned checkpoints").

A task keeps, per active round, its checkpoint number and the messages recorded so
far on each input channel that has not yet delivered the round's barrier. The
subclass says how a round starts (``start(r, trigger)``: checkpoint, send the
barriers, open the recordings) and when a message counts as in flight (it calls
``record_in_flight`` on processing for Chandy-Lamport, on arrival for unaligned
checkpoints).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcheck.reference.protocol import TaskProtocol


class ChannelRecordingTask(TaskProtocol):
    if TYPE_CHECKING:

        def start(self, r: int, trigger) -> None: ...  # the subclass's (module docstring)

    def __init__(self, ctx, protocol) -> None:
        super().__init__(ctx, protocol)
        self.active: dict[int, tuple[int, dict]] = {}  # round -> (ckpt, {pending channel: records})
        self.latest = 0  # newest round started (or declined) here

    def on_trigger(self, round, barrier) -> None:
        self.start(round, None)

    def on_barrier(self, ch, barrier, overtaking) -> None:
        r = barrier.round
        self.forget_older(ch, r)
        if r > self.latest:
            self.start(r, ch)
        else:
            self.barrier_received(ch, r)

    def record_in_flight(self, ch, msg) -> None:
        """``msg`` on ``ch`` is in flight for every active round still recording ``ch``."""
        for _, pending in self.active.values():
            rec = pending.get(ch)
            if rec is not None:
                rec.append(msg)

    def barrier_received(self, ch, r: int) -> None:
        """Round r's barrier on ch: stop recording ch and persist what was recorded."""
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

    def forget_older(self, ch, r: int) -> None:
        """A barrier of round r on ch while an older round still awaits ch's barrier: with
        FIFO channels that barrier was never sent (its sender declined), so the older round
        is obsolete here (Flink aborts it when a newer barrier arrives)."""
        for old in [o for o, (_, pending) in self.active.items() if o < r and ch in pending]:
            del self.active[old]

    def done(self, r: int) -> None:
        del self.active[r]
        self.ctx.complete(r)
