"""Aligned checkpoints with a timeout that switches to unaligned (Flink's
``execution.checkpointing.aligned-checkpoint-timeout``), as in docs/theory.md, "Aligned
checkpoints with a timeout".

Every round starts aligned (ABS Algorithm 1: block each input at its barrier).
A task switches the round to unaligned when the round has run for ``timeout``
ticks (from the coordinator's trigger, carried by the barrier) and its
alignment is not finished, or when a barrier arrives flagged unaligned (its
sender already switched). At the switch:

* inputs that already delivered the barrier hold post-barrier records: not
  persisted (they stay behind the checkpoint);
* an input whose barrier is queued: the barrier is taken out of the queue and the
  records before it are persisted;
* other inputs: persist the queued records and every record arriving until the
  barrier (as in unaligned checkpoints);
* outputs: the barrier overtakes the output buffers, which are persisted.

Aligned-only tasks record no channel state; the snapshot mixes both kinds and is
consistent and complete.
"""

from __future__ import annotations

from snapcheck.reference.protocol import Protocol, TaskProtocol
from snapcheck.traces.protocol_facts import TlaMapping


class _Round:
    __slots__ = ("unaligned", "marked", "ckpt", "pending", "timer")

    def __init__(self) -> None:
        self.unaligned = False
        self.marked: dict = {}
        self.ckpt: int | None = None
        self.pending: dict = {}
        self.timer = False


class AlignedTimeoutTask(TaskProtocol):
    def __init__(self, ctx, protocol) -> None:
        super().__init__(ctx, protocol)
        self.timeout = protocol.params["timeout"]
        self.rounds: dict[int, _Round] = {}
        self.latest = 0  # newest round this task finished or gave up

    def round(self, r: int) -> _Round | None:
        """The state of round r; None if r is obsolete here (finished, given up, or
        older than a round that already reached this task)."""
        st = self.rounds.get(r)
        if st is None and r > self.latest and all(r > o for o in self.rounds):
            st = self.rounds[r] = _Round()
        return st

    def on_trigger(self, round, barrier) -> None:
        st = self.round(round)
        if st is not None:
            self.aligned_snapshot(round, st)

    def barrier_priority(self, ch, barrier) -> bool:
        r = barrier.round
        st = self.round(r)
        if st is None:
            return False  # obsolete: let it pass in FIFO order
        if barrier.unaligned or st.unaligned or self.ctx.now >= barrier.started + self.timeout:
            return True
        if not st.timer:
            st.timer = True
            self.ctx.set_timer(barrier.started + self.timeout, r)
        return False

    def on_barrier(self, ch, barrier, overtaking) -> None:
        r = barrier.round
        self.forget_older(ch, r)
        st = self.round(r)
        if st is None:
            return
        if st.unaligned:
            self.barrier_received(r, st, ch)
        elif overtaking:
            self.switch(r, st, ch)
        else:
            st.marked[ch] = True
            self.ctx.block(ch)
            if len(st.marked) == len(self.ctx.inputs):
                self.aligned_snapshot(r, st)
                self.ctx.unblock_all()

    def on_timer(self, r) -> None:
        st = self.rounds.get(r)
        if st is not None and not st.unaligned and st.ckpt is None:
            self.switch(r, st, None)

    def aligned_snapshot(self, r: int, st: _Round) -> None:
        del self.rounds[r]
        self.latest = max(self.latest, r)
        if self.ctx.checkpoint(r) is not None:
            self.ctx.send_barrier(r)
            self.ctx.complete(r)
        else:
            self.ctx.send_cancel(r)  # declined: downstream must not wait for our barrier

    def switch(self, r: int, st: _Round, trigger) -> None:
        ctx = self.ctx
        st.unaligned = True
        st.ckpt = ctx.checkpoint(r)
        if st.ckpt is None:
            del self.rounds[r]
            self.latest = max(self.latest, r)
            ctx.unblock_all()
            ctx.send_cancel(r)
            return
        for c, records in ctx.send_barrier(r, priority=True, unaligned=True).items():
            if records:
                ctx.record(st.ckpt, c, records, part="output")
        for c in ctx.inputs:
            if c in st.marked:
                continue  # barrier already processed: later records are post-barrier
            pre: list | None
            if c is trigger:
                pre = ctx.queued(c)
            else:
                pre = ctx.take_barrier(c, r)
                if pre is None:
                    st.pending[c] = ctx.queued(c)
                    continue
            st.marked[c] = True
            if pre:
                ctx.record(st.ckpt, c, pre)
        ctx.unblock_all()
        self.maybe_done(r, st)

    def on_arrival(self, ch, msg) -> None:
        for st in self.rounds.values():
            rec = st.pending.get(ch)
            if rec is not None:
                rec.append(msg)

    def barrier_received(self, r: int, st: _Round, ch) -> None:
        st.marked[ch] = True
        recorded = st.pending.pop(ch, None)
        if recorded:
            assert st.ckpt is not None  # recordings open once the checkpoint is taken (switch)
            self.ctx.record(st.ckpt, ch, recorded)
        self.maybe_done(r, st)

    def maybe_done(self, r: int, st: _Round) -> None:
        if not st.pending and len(st.marked) == len(self.ctx.inputs):
            del self.rounds[r]
            self.latest = max(self.latest, r)
            self.ctx.complete(r)

    def on_cancel(self, ch, marker) -> None:
        if self.cancel(marker.round):
            self.ctx.send_cancel(marker.round)  # tell downstream once

    def on_abort(self, round: int) -> None:
        self.cancel(round)

    def cancel(self, r: int) -> bool:
        """Round ``r`` was declined or aborted: abandon its alignment (or its recording),
        and that of any older round, as a newer barrier would; treat later barriers of
        ``r`` as obsolete. False if ``r`` is already over here."""
        if r <= self.latest or any(r < o for o in self.rounds):
            return False
        abandoned = [self.rounds.pop(o) for o in [o for o in self.rounds if o <= r]]
        if any(not st.unaligned for st in abandoned):
            self.ctx.unblock_all()
        self.latest = r
        return True

    def forget_older(self, ch, r: int) -> None:
        for old in [o for o, st in self.rounds.items() if o < r and ch not in st.marked]:
            st = self.rounds.pop(old)
            self.latest = max(self.latest, old)
            if not st.unaligned:
                self.ctx.unblock_all()


class AlignedTimeout(Protocol):
    name = "aligned-timeout"
    situations = Protocol.situations + (
        "aligning",
        "decline-while-aligning",
        "cancel",
        "backpressured-barrier",
        "overtake",
    )
    family = "coordinated"
    max_rounds_in_flight = 1
    tla = TlaMapping("UnalignedTrace", mode="aligned_timeout", models_arrival=True)
    summary = "starts aligned, switches a task to unaligned after the alignment timeout"
    task_class = AlignedTimeoutTask
    observe_arrivals = True
    abort_notices = True

    def __init__(self, timeout: int = 300, **params) -> None:
        super().__init__(timeout=timeout, **params)

    @classmethod
    def from_config(cls, cfg) -> AlignedTimeout:
        super().from_config(cfg)  # checks the recovery mode
        return cls(timeout=cfg.aligned_timeout)
