"""A two-phase-commit sink whose transactions are identified by checkpoint round.

The engine's ``reference.operators.Sink`` publishes plain records; this subclass
returns *batches* ``(txn, records)`` so that the simulator can write one
``output`` event per committed transaction (``attrs {"txn": n, "phase":
"commit"}``). Subsumption (Flink's ``TwoPhaseCommitSinkFunction`` after
FLINK-10377 / apache/flink#895): a completion notification for round ``n``
commits every staged transaction ``≤ n``, so late, reordered or lost
notifications are harmless as long as a later one arrives.
"""

from __future__ import annotations

from snapcheck.reference.operators import Sink


class TxnSink(Sink):
    """``commit(round, committed)`` returns ``[(txn, records), ...]`` in txn order."""

    def commit(self, round: int, committed: set) -> list:
        out: list = []
        for r in sorted(self.staged):
            if r > round:
                break
            if r not in committed:
                committed.add(r)
                out.append((r, self.staged[r]))
            del self.staged[r]
        return out


class StrictTxnSink(TxnSink):
    """FLINK-10377 / PR #895 mutant: a notification commits only the transaction of
    its own checkpoint; transactions whose notification is lost stay staged forever."""

    def commit(self, round: int, committed: set) -> list:
        batch = self.staged.pop(round, None)
        if batch is None or round in committed:
            return []
        committed.add(round)
        return [(round, batch)]
