"""When each process belongs to the job: appearance, finish and retirement.

A process declared with ``appears: true`` joins the job at its first event (the
restore that names its sources, when the job is restored at another
parallelism); every other process is there from the start. A ``retire`` ends its
membership; a ``finish`` (FLIP-147: the end of its input) does not — a finished
task still takes checkpoints until its final checkpoint is confirmed, then retires.

The members of a coordinated round are the participants that belong to the job
when the round starts. In the round's global checkpoint a process that retired
before contributes its final state (position ``V``: for a finished task, the state
a checkpoint after it finished must reflect; for a process retired at a
checkpoint, that checkpoint), and one that has not appeared yet its empty initial
state (position 0).
"""

from __future__ import annotations

from snapcheck.traces.model import Trace


class Lifetimes:
    """When each process of ``trace`` belongs to the job (module docstring), from its
    ``index`` (a ``TraceIndex``). Per process: ``first`` (line of its first event),
    ``finished`` (line of its ``finish``), ``retired`` (line of its ``retire``);
    ``appears``: the processes the header declares ``appears: true``; ``handed``: those
    that retire at a checkpoint (their state lives on in the restores that name it);
    ``dynamic`` is False for traces whose processes all live from the start to the end
    (then nothing changes).

    ``T`` checkpoints and retires at that checkpoint; ``U`` appears by restoring from it:

    >>> from snapcheck.traces import TraceRecorder
    >>> from snapcheck.checker.trace_index import TraceIndex
    >>> rec = TraceRecorder(["T", {"id": "U", "appears": True}], [])
    >>> _ = rec.checkpoint("T"); rec.retire("T", 1)
    >>> rec.restore("U", 0, sources=[{"proc": "T", "ckpt": 1}])
    >>> trace = rec.trace()
    >>> life = Lifetimes(trace, TraceIndex(trace))
    >>> life.first, life.retired, life.dynamic
    ({'T': 2, 'U': 4}, {'T': 3}, True)
    >>> [life.members(["T", "U"], line) for line in (2, 3, 4)]
    [['T'], [], ['U']]
    >>> life.handed_over("T", 3)
    True

    In a global checkpoint taken at line 3 the retired ``T`` is at its end (position
    ``V``, here 2) and the not yet appeared ``U`` at its start:

    >>> from snapcheck.checker.intervals import History
    >>> h = History(trace)
    >>> [life.position(h, i, 3) for i in range(h.n)]
    [2, 0]
    """

    def __init__(self, trace: Trace, index) -> None:
        self.appears = {p.id for p in trace.header.processes if p.appears}
        self.first: dict[str, int] = {}
        for p, evs in index.by_proc.items():
            if evs:
                self.first[p] = evs[0].line
        self.finished = {e.proc: e.line for e in index.of_type("finish")}
        self.retired = {e.proc: e.line for e in index.of_type("retire")}
        self.handed = {e.proc for e in index.of_type("retire") if e.ckpt is not None}
        self.dynamic = bool(self.appears or self.retired)

    def member(self, p: str, line: int) -> bool:
        """Whether ``p`` belongs to the job at ``line``."""
        if p in self.appears and self.first.get(p, float("inf")) > line:
            return False
        return self.retired.get(p, float("inf")) > line

    def handed_over(self, p: str, line: int) -> bool:
        """Whether ``p`` left the job before ``line`` handing its state at a checkpoint to
        the processes restored from it (messages to it are then re-homed, not in transit)."""
        return p in self.handed and self.retired[p] <= line

    def members(self, procs: list[str], line: int) -> list[str]:
        """The processes of ``procs`` that belong to the job at ``line``, in order."""
        return [p for p in procs if self.member(p, line)] if self.dynamic else procs

    def position(self, h, i: int, line: int) -> int:
        """The position of a non-member in a global checkpoint taken at ``line``:
        ``V`` once retired, 0 before it appears."""
        return h.V(i) if self.retired.get(h.procs[i], float("inf")) <= line else 0
