"""A two-phase-commit sink that gets subsumption wrong (FLINK-10377 / apache/flink#895):
the engine's ``reference.operators.Sink`` commits every sealed transaction up to the
notified round; this one only the notified round's own."""

from __future__ import annotations

from snapcheck.reference.operators import Sink


class StrictTxnSink(Sink):
    """A notification commits only the transaction of its own checkpoint; transactions
    whose notification is lost stay staged forever."""

    def commit(self, round: int, committed: set) -> list:
        batch = self.staged.pop(round, None)
        if batch is None or round in committed:
            return []
        committed.add(round)
        return [(round, batch)]
