"""The split enumerator of the source coordinator and its checkpointed state.

FLIP-27 sources split their input; the coordinator's enumerator hands splits to
readers on request and checkpoints *which splits it has handed out*. A global
checkpoint is consistent when that assignment agrees with the readers' states:
a split is assigned to reader ``i`` in the coordinator's state exactly when
``i``'s state holds it. Assignments travel on the same FIFO control channel as
the round's trigger, so the coordinator's snapshot at the trigger of round
``n`` and the readers' checkpoints of round ``n`` agree.

A regional checkpoint ``n`` in which reader ``i`` keeps its state of an older
round ``k`` breaks that agreement for every split handed to ``i`` between ``k``
and ``n``: ``i``'s state does not hold them, the coordinator's snapshot says
they are assigned. FLIP-600's *coordinator correction*
(``checkpointCoordinatorForRegionFallback``) fixes the coordinator's state of
checkpoint ``n`` before anyone is notified: for a fallback reader it takes the
assignment of its round ``k``. A reader restored from checkpoint ``C`` gets
back exactly the splits ``C`` says it holds; the enumerator takes back the
others (``reset``) and hands them out again.

>>> e = SplitEnumerator({0: 10, 1: 11, 2: 10})
>>> e.next_for(10), e.next_for(11)
(0, 1)
>>> e.snapshot(1); e.complete(1, {})
{0: 10, 1: 11}
>>> e.next_for(10); e.snapshot(2)
2
>>> e.complete(2, {10: 1})            # reader 10 fell back to round 1: split 2 is not in its state
{0: 10, 1: 11}
>>> e.reset(10, 2)                    # reader 10 restarts from checkpoint 2: split 2 comes back
[2]
>>> e.next_for(10)
2
"""

from __future__ import annotations


class SplitEnumerator:
    """Static ownership (``owners``: split -> reader), on-request assignment, per-round
    snapshots and the checkpointed assignment of every completed round."""

    def __init__(self, owners: dict[int, int]) -> None:
        self.owner = dict(owners)
        self.pending: dict[int, list[int]] = {}
        for s, reader in sorted(owners.items()):
            self.pending.setdefault(reader, []).append(s)
        self.assigned: dict[int, int] = {}  # split -> reader, as handed out
        self.idle: set[int] = set()  # readers that asked and got nothing
        self.snapshots: dict[int, dict[int, int]] = {}  # round -> assignment at its trigger
        self.checkpointed: dict[int, dict[int, int]] = {0: {}}  # completed round -> its coordinator state

    def next_for(self, reader: int) -> int | None:
        """The next split for ``reader`` (it asked for one), or None: the reader is idle."""
        queue = self.pending.get(reader)
        if not queue:
            self.idle.add(reader)
            return None
        s = queue.pop(0)
        self.assigned[s] = reader
        self.idle.discard(reader)
        return s

    def exhausted(self, readers) -> bool:
        """Every reader asked for more and nothing is left (all sources finished)."""
        return all(r in self.idle and not self.pending.get(r) for r in readers)

    def snapshot(self, round: int) -> None:
        """The coordinator checkpoints the assignment when round ``round`` is triggered."""
        self.snapshots[round] = dict(self.assigned)

    def complete(self, round: int, fallback: dict[int, int], correct: bool = True) -> dict[int, int]:
        """Round ``round`` completed; ``fallback`` maps each reader that kept an older
        state to the round of that state. Returns the checkpointed assignment: corrected
        (a fallback reader holds what it held at its round) unless ``correct`` is False."""
        snap = self.snapshots.get(round, {})
        state = {s: r for s, r in snap.items() if r not in fallback or not correct}
        if correct:
            for reader, k in fallback.items():
                state.update({s: r for s, r in self.checkpointed[k].items() if r == reader})
        self.checkpointed[round] = dict(sorted(state.items()))
        return self.checkpointed[round]

    def handed_out_since(self, round: int, fallback: dict[int, int]) -> list[int]:
        """The splits a fallback reader holds live that checkpoint ``round`` does not give it."""
        state = self.checkpointed[round]
        return sorted(s for s, r in self.assigned.items() if r in fallback and state.get(s) != r)

    def reset(self, reader: int, round: int) -> list[int]:
        """``reader`` restarts from completed checkpoint ``round`` (0: the initial state):
        the splits handed to it that the checkpoint does not give it come back."""
        state = self.checkpointed[round]
        back = sorted(s for s, r in self.assigned.items() if r == reader and state.get(s) != reader)
        self.give_back(reader, back)
        return back

    def give_back(self, reader: int, splits: list[int]) -> None:
        """Take ``splits`` back from ``reader``: they go first in its queue."""
        for s in splits:
            del self.assigned[s]
        if splits:
            self.pending[reader] = sorted(splits) + self.pending.get(reader, [])
            self.idle.discard(reader)

    def redistribute(self, held: dict[int, int], n: int, readers: list[int]) -> None:
        """After a rescale: the readers hold ``held`` (split -> reader); every other split is
        owned by ``readers[split mod n]`` and waits to be handed out."""
        self.owner = {s: held.get(s, readers[s % n]) for s in self.owner}
        self.assigned = dict(held)
        self.pending = {}
        for s in sorted(self.owner):
            if s not in held:
                self.pending.setdefault(self.owner[s], []).append(s)
        self.idle = set()
