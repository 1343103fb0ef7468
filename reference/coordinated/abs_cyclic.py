"""Asynchronous Barrier Snapshotting for cyclic graphs: Algorithm 2 of Carbone et
al., "Lightweight Asynchronous Snapshots for Distributed Dataflows" (2015), with
the per-back-edge logging fix of docs/theory.md, "Pitfall: Algorithm 2 as printed",
and a back-edge held back when its barrier arrives before the task's snapshot
(docs/theory.md, "Pitfall: an early back-edge barrier").

Back-edges (``Chan.back_edge``, found by DFS) are not waited for. Per task and
round n (line numbers of Algorithm 2):

* a barrier on a regular input blocks it (11–12); once every regular input
  delivered the barrier, copy the state (the task's checkpoint), broadcast the
  barrier and unblock (13–17); from then on log the records *processed* from each
  back-edge until that back-edge's own barrier arrives (24–26, fixed: the printed
  condition keeps logging on every back-edge until *all* of them delivered, which
  logs post-snapshot records when two back-edges enter one task — the
  ``abs-cyclic-as-printed`` mutant);
* a barrier on a back-edge that arrives *before* the state copy blocks that
  back-edge until the copy. The algorithm takes for granted that a round's barrier
  comes back round the loop only after the task's own snapshot, which holds when
  each operator runs once; with parallel subtasks and a shuffle on the loop, the
  barrier can come back through *other* subtasks that aligned sooner, and the
  records behind it were sent after its sender's snapshot: processed before this
  task's copy they would be orphans (the ``abs-cyclic-early-back-edge`` mutant).
  A back-edge is unbounded (``reference.sim.network``), so holding it back never
  exerts backpressure and cannot close a wait cycle; the records wait in its queue;
* once every input delivered the barrier, persist the state copy with the
  back-edge logs (19–22) and acknowledge;
* declined and aborted rounds are given up as in ``abs_aligned``: a cancellation
  marker is forwarded once, a barrier of a newer round on an input ends the older
  rounds that input skipped, and the coordinator's abort notice of n ends round n
  only (older rounds may still be on their way). A cancellation of a round the task
  snapshotted and still logs is forwarded only while no newer round reached the
  task (as Flink's barrier handler ignores a cancellation older than its current
  checkpoint): otherwise its marker would follow the newer round's on the outputs.

G* = (T*, L*): task states plus back-edge records in transit. Only back-edges
carry channel state: the header says ``params.aligned: true`` (the checker
accepts state on ``back_edge`` channels only).
"""

from __future__ import annotations

from snapcheck.reference.protocol import Protocol, TaskProtocol
from snapcheck.traces.protocol_facts import TlaMapping


class _Round:
    __slots__ = ("marked", "ckpt", "log")

    def __init__(self) -> None:
        self.marked: dict = {}
        self.ckpt: int | None = None
        self.log: dict = {}


class CyclicTask(TaskProtocol):
    def __init__(self, ctx, protocol) -> None:
        super().__init__(ctx, protocol)
        self.regular = [c for c in ctx.inputs if not c.back_edge]
        self.loops = [c for c in ctx.inputs if c.back_edge]
        self.rounds: dict[int, _Round] = {}
        self.latest = 0  # newest round whose barrier reached this task
        self.aborted: set[int] = set()  # rounds newer than latest the coordinator aborted

    def on_trigger(self, round, barrier) -> None:
        st = self.rounds[round] = _Round()
        self.latest = round
        self.copy_state(round, st)
        self.maybe_persist(round, st)

    def on_barrier(self, ch, barrier, overtaking) -> None:
        r = barrier.round
        self.forget_older(ch, r)
        st = self.rounds.get(r)
        if st is None:
            if r <= self.latest:
                return  # obsolete barrier of a round given up here
            obsolete = r in self.aborted  # aborted before its barriers came
            self.passed(r)
            if obsolete:
                return
            st = self.rounds[r] = _Round()
        st.marked[ch] = True  # 9
        if not ch.back_edge:  # 11
            self.ctx.block(ch)  # 12
            if st.ckpt is None and all(c in st.marked for c in self.regular):  # 13
                self.copy_state(r, st)  # 14-17
        elif st.ckpt is None:
            self.hold_back_edge(ch)
        self.maybe_persist(r, st)  # 19

    def hold_back_edge(self, ch) -> None:
        """The barrier came round the loop on back-edge ``ch`` before this task's own
        snapshot of the round (through other subtasks of the loop): the records behind
        it were sent after the sender's snapshot, so ``ch`` stays blocked until this
        task's snapshot, like a regular input."""
        self.ctx.block(ch)

    def copy_state(self, r: int, st: _Round) -> None:
        st.ckpt = self.ctx.checkpoint(r)
        if st.ckpt is None:  # declined: downstream must not wait for our barrier
            del self.rounds[r]
            self.ctx.unblock_all()
            self.ctx.send_cancel(r)
            return
        self.ctx.send_barrier(r)
        self.ctx.unblock_all()
        st.log = {c: [] for c in self.loops if c not in st.marked}

    def maybe_persist(self, r: int, st: _Round) -> None:
        if r in self.rounds and st.ckpt is not None and len(st.marked) == len(self.ctx.inputs):
            for c, records in st.log.items():  # 20
                if records:
                    self.ctx.record(st.ckpt, c, records)
            del self.rounds[r]  # 21-22
            self.ctx.complete(r)

    def on_process(self, ch, msg) -> None:  # 24-26
        if ch.back_edge:
            for st in self.rounds.values():
                if st.ckpt is not None and self.logging(st, ch):
                    st.log[ch].append(msg)

    def logging(self, st: _Round, ch) -> bool:
        """Per-back-edge condition (docs/theory.md, "Cyclic ABS"): log ch until its own barrier."""
        return ch not in st.marked

    def on_cancel(self, ch, marker) -> None:
        r = marker.round
        st = self.rounds.get(r)
        # A round this task snapshotted and still logs, while a barrier or marker of a
        # newer round already reached it: the cancellation is given up on silently
        # (its log is of no use), never forwarded -- its marker would go out behind
        # the newer round's markers.  Flink's barrier handler ignores a cancellation
        # older than its current checkpoint (processCancellationBarrier); ABS.tla's
        # GiveUpTaken forwards only for the newest round the task handled.
        overtaken = st is not None and st.ckpt is not None and r < self.latest
        if self.cancel(r) and not overtaken:
            self.ctx.send_cancel(r)  # tell downstream (and around the loop) once

    def on_abort(self, round: int) -> None:
        """The coordinator aborted ``round``: abandon it, or remember it so that its barriers
        are ignored. Older rounds go on: the notice, unlike a marker on a FIFO input, says
        nothing about them."""
        if round in self.rounds:
            self.cancel(round)
        elif round > self.latest:
            self.aborted.add(round)

    def cancel(self, r: int) -> bool:
        """Round ``r`` was declined or aborted: abandon it (its alignment or its back-edge
        log) and treat its later barriers as obsolete. False if it is already over here
        (or the coordinator's abort told it first)."""
        st = self.rounds.pop(r, None)
        if st is None and r <= self.latest:
            return False
        if st is not None and st.ckpt is None:
            self.ctx.unblock_all()
        first = st is not None or r not in self.aborted
        self.passed(r)
        return first

    def passed(self, r: int) -> None:
        """A barrier or marker of round ``r`` reached this task: rounds up to ``r`` that
        have not started here never will."""
        self.latest = max(self.latest, r)
        if self.aborted:
            self.aborted = {a for a in self.aborted if a > self.latest}

    def forget_older(self, ch, r: int) -> None:
        for old in [o for o, st in self.rounds.items() if o < r and ch not in st.marked]:
            if self.rounds[old].ckpt is None:
                self.ctx.unblock_all()
            del self.rounds[old]


class CyclicABS(Protocol):
    name = "abs-cyclic"
    situations = Protocol.situations + (
        "aligning",
        "decline-while-aligning",
        "cancel",
        "backpressured-barrier",
        "rounds-overlap",
    )
    family = "coordinated"
    tla = TlaMapping("ABSTrace", back_edges=True, aligned=True)
    summary = "ABS Algorithm 2: align regular inputs, log back-edge records (per back-edge)"
    finished_inputs = False  # its regular and back-edge inputs are fixed when a task starts
    task_class = CyclicTask
    aligned = True
    abort_notices = True
    observe_processing = True
