"""Mutants: each breaks one mechanism of a correct protocol, after a real bug.

A mutant is a subclass of a correct protocol's state machine that overrides the
one method implementing the broken mechanism (or a protocol switch). Every
mutant names the violation kinds the checker must report for it (``expect``)
and a ``demo`` configuration under which it reliably shows (tests run it over
several seeds). The real bugs behind them: docs/bug-zoo.md.

=================================  ======================================================  ====================
mutant                             what is broken                                          checker reports
=================================  ======================================================  ====================
abs-aligned-no-block               aligned ABS that does not block a channel at its        orphan
                                   barrier: post-barrier records enter the snapshot
unaligned-late-snapshot            FLINK-17568: after the first barrier the task keeps     orphan
                                   consuming records (also past barriers) before it
                                   snapshots
chandy-lamport-no-channel-state    Chandy–Lamport that never records channel state         dropped
chandy-lamport-non-fifo            Chandy–Lamport on non-FIFO channels: records overtake   orphan, dropped,
                                   markers and vice versa                                  phantom, order
unaligned-no-output-part           unaligned checkpoints without the overtaken output      dropped
                                   buffers
unaligned-double-persist           FLINK-40016: recovered buffers are persisted at         duplicate-recorded
                                   checkpoint start and again when consumed
unaligned-channel-alias            FLINK-18139: whether an input is still persisted is     dropped
                                   looked up by channel index without the gate
unaligned-obsolete-barrier         FLINK-20654: the persister keeps "barrier received"     dropped
                                   per channel across checkpoints, so a barrier of a
                                   declined round decides what the next round spills
abs-cyclic-as-printed              ABS Algorithm 2 as printed: logging continues on every  phantom
                                   back-edge until all back-edge barriers arrived
abs-cyclic-early-back-edge         cyclic ABS that keeps processing a back-edge whose      orphan
                                   barrier arrived before the task's snapshot (through
                                   other subtasks of the loop)
aligned-no-cancel                  aligned ABS that neither cancels a declined round       incomplete-round
                                   downstream nor abandons alignment on an abort: inputs
                                   stay blocked for a barrier that never comes
abs-aligned-on-cyclic              aligned ABS on a cyclic graph: the loop's barrier       incomplete-round
                                   never arrives, no round completes (deadlock)
unaligned-no-dedup                 recovery without deduplication: records of the failed   duplicate-processing
                                   epoch still in flight are processed after the restore
=================================  ======================================================  ====================
"""

from __future__ import annotations

from dataclasses import replace

from snapcheck.reference.coordinated.abs_aligned import AlignedABS, AlignedTask
from snapcheck.reference.coordinated.abs_cyclic import CyclicABS, CyclicTask
from snapcheck.reference.coordinated.chandy_lamport import ChandyLamport, ChandyLamportTask
from snapcheck.reference.coordinated.unaligned import Unaligned, UnalignedTask


def _cyclic(cfg):
    if isinstance(cfg.workload, str) and cfg.workload not in ("reachability", "random-cyclic"):
        return replace(cfg, workload="reachability")
    return cfg


def _parallel_cycle(cfg):
    """A cyclic workload with parallel subtasks: one subtask per operator carries only a
    task's own barrier round its loop, so a barrier of another subtask can never come
    round before the task's snapshot.

    >>> from snapcheck.reference import SimConfig
    >>> c = _parallel_cycle(SimConfig(workload="q1", parallelism=1))
    >>> c.workload, c.parallelism
    ('reachability', 2)
    """
    cfg = _cyclic(cfg)
    return replace(cfg, parallelism=max(cfg.parallelism, 2))


def _jittery(cfg):
    return replace(cfg, jitter=max(cfg.jitter, 400))


# -- aligned without blocking ------------------------------------------------------------
class NoBlockTask(AlignedTask):
    def block(self, ch) -> None:
        self.arrived[ch] = True  # counts the barrier but keeps processing ch


class AlignedNoBlock(AlignedABS):
    name = "abs-aligned-no-block"
    mutant_of = "abs-aligned"
    summary = "aligned ABS that never blocks an input at its barrier"
    bug = "ABS Algorithm 1 without line 9 (block)"
    expect = ("orphan",)
    prop = "consistency"
    demo = {"workload": "q12", "parallelism": 3, "records": 30, "gap": 40, "jitter": 200}
    task_class = NoBlockTask


# -- no cancellation of a declined round -------------------------------------------------
class NoCancelTask(AlignedTask):
    """A declined snapshot only tells the coordinator; cancellation markers and the
    coordinator's abort are ignored. A downstream task keeps the inputs that delivered
    the barrier blocked until a newer barrier arrives, which backpressure may stop."""

    def declined(self, r: int) -> None:
        pass

    def on_cancel(self, ch, marker) -> None:
        pass

    def on_abort(self, round: int) -> None:
        pass


class AlignedNoCancel(AlignedABS):
    name = "aligned-no-cancel"
    mutant_of = "abs-aligned"
    summary = "a declined round is neither cancelled downstream nor abandoned on the coordinator's abort"
    bug = (
        "Flink's handling of declined checkpoints during alignment: CancelCheckpointMarker and "
        "notifyCheckpointAborted (FLINK-20654 / FLINK-21104 fixed its races)"
    )
    expect = ("incomplete-round",)
    prop = "termination"
    demo = {
        "workload": "diamond",
        "parallelism": 2,
        "records": 20,
        "gap": 30,
        "interval": 150,
        "latency": 1,
        "jitter": 1,
        "buffer": 1,
        "out_buffer": 1,
        "decline_prob": 0.1,
        "seed": 1,  # seed 0's run never reaches the bug (tests/reference/test_mutant_demos.py runs every demo)
    }
    task_class = NoCancelTask
    abort_notices = False


# -- FLINK-17568: late snapshot ------------------------------------------------------------
class LateSnapshotTask(UnalignedTask):
    """The first barrier only *requests* the checkpoint; the task consumes up to
    ``LATE`` more records from any input (past barriers too) before snapshotting."""

    LATE = 3

    def __init__(self, ctx, protocol) -> None:
        super().__init__(ctx, protocol)
        self.deferred: list | None = None  # [round, trigger, records left, barriers seen meanwhile]

    def start(self, r, trigger) -> None:
        if self.deferred is None and trigger is not None:
            self.latest = r
            self.deferred = [r, trigger, self.LATE, []]
            self.ctx.set_timer(self.ctx.now + 4 * self.LATE * 100, "late")
            return
        super().start(r, trigger)

    def on_barrier(self, ch, barrier, overtaking) -> None:
        if self.deferred is not None and barrier.round == self.deferred[0]:
            self.deferred[3].append(ch)
            return
        super().on_barrier(ch, barrier, overtaking)

    def on_process(self, ch, msg) -> None:
        if self.deferred is not None:
            self.deferred[2] -= 1
            if self.deferred[2] <= 0:
                self.snapshot_now()

    def on_timer(self, key) -> None:
        if key == "late" and self.deferred is not None:
            self.snapshot_now()

    def snapshot_now(self) -> None:
        assert self.deferred is not None  # a snapshot was deferred
        r, trigger, _, seen = self.deferred
        self.deferred = None
        super().start(r, trigger)
        for ch in seen:
            self.barrier_received(ch, r)


class LateSnapshot(Unaligned):
    name = "unaligned-late-snapshot"
    mutant_of = "unaligned"
    summary = "the task consumes records after the first barrier before snapshotting"
    bug = "FLINK-17568 (apache/flink#12034)"
    expect = ("orphan",)
    prop = "consistency"
    demo = {"workload": "q12", "parallelism": 3, "records": 12, "gap": 60}
    task_class = LateSnapshotTask
    observe_processing = True


# -- Chandy-Lamport without channel state / on non-FIFO channels ---------------------------
class NoChannelStateTask(ChandyLamportTask):
    def save(self, ckpt, ch, recorded) -> None:
        pass


class ChandyLamportNoChannelState(ChandyLamport):
    name = "chandy-lamport-no-channel-state"
    mutant_of = "chandy-lamport"
    summary = "Chandy-Lamport without channel-state recording"
    bug = "Chandy-Lamport 1985 without the channel recording rule"
    expect = ("dropped",)
    prop = "channel-state"
    demo = {"workload": "q12", "parallelism": 3, "records": 30, "gap": 40}
    task_class = NoChannelStateTask


class ChandyLamportNonFifo(ChandyLamport):
    name = "chandy-lamport-non-fifo"
    mutant_of = "chandy-lamport"
    summary = "Chandy-Lamport on non-FIFO channels"
    bug = "Chandy-Lamport 1985 assumes FIFO channels"
    expect = ("orphan", "dropped", "phantom", "order")
    prop = "channel-state"
    demo = {"workload": "q12", "parallelism": 3, "records": 12, "gap": 60}
    adjust = staticmethod(_jittery)
    fifo = False


# -- unaligned without the output part -------------------------------------------------------
class NoOutputPartTask(UnalignedTask):
    def persist_output(self, ckpt, overtaken) -> None:
        pass


class UnalignedNoOutputPart(Unaligned):
    name = "unaligned-no-output-part"
    mutant_of = "unaligned"
    summary = "unaligned checkpoints that do not persist the overtaken output buffers"
    bug = "FLIP-76 output side missing"
    expect = ("dropped",)
    prop = "channel-state"
    demo = {
        "workload": "q12",
        "parallelism": 2,
        "records": 16,
        "gap": 40,
        "buffer": 1,
        "out_buffer": 3,
        "stragglers": (("window_count[0]", 4), ("window_count[1]", 4)),
    }
    task_class = NoOutputPartTask


# -- FLINK-40016: recovered buffers persisted twice -----------------------------------------
class DoublePersistTask(UnalignedTask):
    """``maybePersist`` also persists a recovered buffer when it is consumed while its
    channel is BARRIER_PENDING, although checkpoint start already persisted it."""

    def on_process(self, ch, msg) -> None:
        if msg.recovered:
            self.record_in_flight(ch, msg)


class UnalignedDoublePersist(Unaligned):
    name = "unaligned-double-persist"
    mutant_of = "unaligned"
    summary = "recovered buffers persisted twice into one checkpoint"
    bug = "FLINK-40016 (apache/flink#28605)"
    expect = ("duplicate-recorded",)
    prop = "channel-state"
    demo = {
        "workload": "reachability",
        "parallelism": 2,
        "records": 10,
        "gap": 80,
        "interval": 200,
        "failures": (("select[0]", 900),),
    }
    task_class = DoublePersistTask
    observe_processing = True


# -- FLINK-18139: channel index without the gate ----------------------------------------------
class ChannelAliasTask(UnalignedTask):
    """Asks "is this channel still persisting?" of the first input with the same
    channel index, whatever its gate (``hasInflightData`` without gate context)."""

    def __init__(self, ctx, protocol) -> None:
        super().__init__(ctx, protocol)
        self.alias = {}
        first: dict[int, object] = {}
        for c in ctx.inputs:
            first.setdefault(c.index, c)
            self.alias[c] = first[c.index]

    def on_arrival(self, ch, msg) -> None:
        for _, pending in self.active.values():
            rec = pending.get(ch)
            if rec is not None and self.alias[ch] in pending:
                rec.append(msg)


class UnalignedChannelAlias(Unaligned):
    name = "unaligned-channel-alias"
    mutant_of = "unaligned"
    summary = "in-flight recording keyed by channel index without the gate"
    bug = "FLINK-18139 (apache/flink#12506)"
    expect = ("dropped",)
    prop = "channel-state"
    demo = {"workload": "q8", "parallelism": 3, "records": 30, "gap": 40, "jitter": 200}
    task_class = ChannelAliasTask


# -- FLINK-20654: obsolete barrier decides what to spill -----------------------------------------
class ObsoleteBarrierTask(UnalignedTask):
    """Per-channel persister state (BARRIER_RECEIVED) is not keyed by checkpoint: it is
    reset only when a checkpoint completes here, so after a declined round the
    channels that delivered its barrier are taken as already done for the next."""

    def __init__(self, ctx, protocol) -> None:
        super().__init__(ctx, protocol)
        self.received: dict = {}

    def on_barrier(self, ch, barrier, overtaking) -> None:
        self.received[ch] = True
        super().on_barrier(ch, barrier, overtaking)

    def persisting(self, ch, r) -> bool:
        return ch not in self.received

    def done(self, r) -> None:
        self.received = {}
        super().done(r)


class UnalignedObsoleteBarrier(Unaligned):
    name = "unaligned-obsolete-barrier"
    mutant_of = "unaligned"
    summary = "a barrier of a declined checkpoint decides what the next checkpoint spills"
    bug = "FLINK-20654 / FLINK-21104 (apache/flink#14807)"
    expect = ("dropped",)
    prop = "channel-state"
    demo = {"workload": "q12", "parallelism": 3, "records": 40, "gap": 50, "decline_prob": 0.12, "interval": 180}
    task_class = ObsoleteBarrierTask


# -- ABS Algorithm 2 as printed ------------------------------------------------------------------
class AsPrintedTask(CyclicTask):
    """Line 25 as printed: log every back-edge record while ``logging``, i.e. until the
    barrier arrived on *all* inputs; and, as printed, never block a back-edge."""

    def hold_back_edge(self, ch) -> None:
        pass

    def on_process(self, ch, msg) -> None:
        if ch.back_edge:
            for st in self.rounds.values():
                if st.ckpt is not None:
                    st.log.setdefault(ch, []).append(msg)


class CyclicAsPrinted(CyclicABS):
    name = "abs-cyclic-as-printed"
    mutant_of = "abs-cyclic"
    summary = "ABS Algorithm 2 as printed: duplicate logging with two back-edges into one task"
    bug = (
        'Algorithm 2 line 25 as printed in "Lightweight Asynchronous Snapshots for Distributed Dataflows"; '
        'docs/theory.md "Pitfall: Algorithm 2 as printed"'
    )
    expect = ("phantom",)
    prop = "channel-state"
    demo = {"workload": "reachability", "parallelism": 2, "records": 8, "gap": 80}
    task_class = AsPrintedTask


# -- cyclic ABS: a back-edge barrier before the snapshot ---------------------------------------
class EarlyBackEdgeTask(CyclicTask):
    """A back-edge barrier that arrives before the task's own snapshot only stops the
    back-edge's log; the back-edge is not held, so the records behind the barrier (sent
    after the sender's snapshot) are processed before this task's snapshot."""

    def hold_back_edge(self, ch) -> None:
        pass


class CyclicEarlyBackEdge(CyclicABS):
    name = "abs-cyclic-early-back-edge"
    mutant_of = "abs-cyclic"
    summary = "a back-edge barrier that arrives before the task's snapshot is not held: orphans"
    bug = (
        'Algorithm 2 of "Lightweight Asynchronous Snapshots for Distributed Dataflows" with parallel subtasks: '
        "a back-edge barrier can come round the loop before the task's own snapshot; "
        'docs/theory.md "Pitfall: an early back-edge barrier"'
    )
    expect = ("orphan",)
    prop = "consistency"
    demo = {
        "workload": "reachability",
        "parallelism": 3,
        "records": 40,
        "gap": 20,
        "interval": 150,
        "latency": 1,
        "jitter": 20,
        "buffer": 1,
        "out_buffer": 1,
    }
    adjust = staticmethod(_parallel_cycle)  # "with parallel subtasks": the bug needs two
    task_class = EarlyBackEdgeTask


# -- unaligned without deduplication on recovery ------------------------------------------------
class UnalignedNoDedup(Unaligned):
    name = "unaligned-no-dedup"
    mutant_of = "unaligned"
    summary = "recovery without deduplication of the failed epoch's in-flight records"
    bug = (
        'recovery in "Lightweight Asynchronous Snapshots for Distributed Dataflows": '
        "duplicate records must be ignored downstream"
    )
    expect = ("duplicate-processing",)
    prop = "exactly-once"
    demo = {"workload": "q12", "parallelism": 2, "records": 30, "gap": 40, "failures": (("sink[0]", 500),)}
    dedup = False


class AlignedOnCyclic(AlignedABS):
    name = "abs-aligned-on-cyclic"
    topologies = "cyclic"
    mutant_of = "abs-aligned"
    summary = "aligned ABS on a cyclic graph deadlocks: no round completes"
    bug = (
        'Algorithm 1 of "Lightweight Asynchronous Snapshots for Distributed Dataflows" '
        "is for acyclic graphs: on a cycle it deadlocks"
    )
    expect = ("incomplete-round",)
    prop = "termination"
    demo = {"workload": "reachability", "parallelism": 2, "records": 8, "gap": 80}
    adjust = staticmethod(_cyclic)
