"""Asynchronous Barrier Snapshotting for acyclic graphs: Algorithm 1 of Carbone et
al., "Lightweight Asynchronous Snapshots for Distributed Dataflows" (2015);
docs/theory.md, "Aligned ABS". The coordinated aligned protocol of CheckMate §III-A.

Per task (comments give the algorithm's line numbers):

* a source, triggered by the coordinator (the "Nil" input), snapshots and
  broadcasts the barrier;
* a barrier of round n on input c blocks c (8–9): records behind it stay queued;
* once every input delivered barrier n (10): snapshot, broadcast the barrier,
  unblock every input (11–15);
* a round that cannot complete is given up, as Flink does: a task whose snapshot
  of n fails sends a cancellation marker of n downstream instead of the barrier;
  a task that receives a cancellation marker of n (forwarded once) or a barrier
  of a newer round abandons the pending alignment and unblocks its inputs. Without
  this, a task keeps inputs blocked for a barrier that never comes, and under
  backpressure nothing moves again (the ``aligned-no-cancel`` mutant);
* the coordinator's abort of n (a notice on a control channel) ends round n only:
  the task gives up n if it is aligning n, else remembers n as aborted and ignores
  its barriers. A marker or a barrier on a FIFO input says that input is past every
  older round, but the notice says nothing about older rounds: with overlapping
  rounds, an older round still running (its barriers still on their way here) must
  not be given up for it, or nobody forwards, acknowledges or declines that round
  and it never completes.

The snapshot has no channel state (E* = ∅): the trace header says
``params.aligned: true`` and the checker reports any message in flight. The
algorithm snapshots after broadcasting (12–13); here the state is recorded first,
which is the same state because nothing is processed in between. On a cyclic
graph it deadlocks (the ``abs-aligned-on-cyclic`` mutant).
"""

from __future__ import annotations

from snapcheck.reference.protocol import Protocol, TaskProtocol
from snapcheck.traces.protocol_facts import TlaMapping


class AlignedTask(TaskProtocol):
    def __init__(self, ctx, protocol) -> None:
        super().__init__(ctx, protocol)
        self.round: int | None = None  # round being aligned
        self.arrived: dict = {}  # blocked_inputs of Algorithm 1
        self.latest = 0  # newest round snapshot or given up
        self.aborted: set[int] = set()  # rounds newer than latest the coordinator aborted

    def on_trigger(self, round, barrier) -> None:
        self.snapshot(round)

    def on_barrier(self, ch, barrier, overtaking) -> None:
        r = barrier.round
        if r <= self.latest or (self.round is not None and r < self.round):
            return  # obsolete: a newer round already reached this task
        if self.round is not None and r > self.round:
            self.give_up()  # newer barrier: the older round can never align
        if r in self.aborted:
            self.passed(r)  # aborted before its barriers came: obsolete
            return
        self.round = r
        self.block(ch)
        if len(self.arrived) == len(self.ctx.inputs):
            self.round = None
            self.arrived = {}
            self.snapshot(r)
            self.ctx.unblock_all()

    def block(self, ch) -> None:
        self.arrived[ch] = True
        self.ctx.block(ch)

    def snapshot(self, r: int) -> None:
        self.passed(r)
        if self.ctx.checkpoint(r) is not None:
            self.ctx.send_barrier(r)
            self.ctx.complete(r)
        else:
            self.declined(r)

    def declined(self, r: int) -> None:
        """The snapshot of ``r`` failed (the coordinator was told): downstream tasks must
        not wait for this task's barrier of ``r``."""
        self.ctx.send_cancel(r)

    def on_cancel(self, ch, marker) -> None:
        if self.cancel(marker.round):
            self.ctx.send_cancel(marker.round)  # tell downstream once, as for a decline

    def on_abort(self, round: int) -> None:
        """The coordinator aborted ``round``: give up its alignment, or remember it so that
        its barriers are ignored; an older round being aligned goes on."""
        if round == self.round:
            self.give_up()
        elif round > self.latest and (self.round is None or round > self.round):
            self.aborted.add(round)

    def cancel(self, r: int) -> bool:
        """A cancellation marker of round ``r`` arrived: give up its alignment (or an older
        one: the marker's input is past it) and treat its barriers as obsolete. False if
        ``r`` is already behind this task or the coordinator's abort told it first."""
        if r <= self.latest or (self.round is not None and r < self.round):
            return False
        if self.round is not None:
            self.give_up()
        first = r not in self.aborted
        self.passed(r)
        return first

    def give_up(self) -> None:
        assert self.round is not None  # called while a round is being aligned
        self.passed(self.round)
        self.round = None
        self.arrived = {}
        self.ctx.unblock_all()

    def passed(self, r: int) -> None:
        """Every round up to ``r`` is over here (snapshot, given up or obsolete)."""
        self.latest = r
        if self.aborted:
            self.aborted = {a for a in self.aborted if a > r}


class AlignedABS(Protocol):
    name = "abs-aligned"
    situations = Protocol.situations + (
        "aligning",
        "decline-while-aligning",
        "cancel",
        "backpressured-barrier",
        "rounds-overlap",
    )
    abort_notices = True
    family = "coordinated"
    topologies = "acyclic"
    tla: TlaMapping | None = TlaMapping(
        "ABSTrace", aligned=True
    )  # Algorithm 1: no back-edges, whatever the header says
    summary = "ABS Algorithm 1: block inputs until aligned; no channel state (DAGs only)"
    task_class = AlignedTask
    aligned = True
