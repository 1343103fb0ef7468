"""Aligned ABS with two-phase-commit sinks over lossy control channels, and its
mutants (one real bug each). See ``reference.commit.simulator`` for the model.

Parameters (``TwoPhaseCommitABS(notify_loss=..., ...)``, written to the trace
header): ``notify_loss`` / ``notify_jitter`` — loss probability and extra delay of
completion notifications; ``event_loss`` / ``event_jitter`` — the same for
operator events; ``events`` — operator events per source.
"""

from __future__ import annotations

from snapcheck.reference.commit.simulator import CommitSimulator
from snapcheck.reference.commit.sink import StrictTxnSink, TxnSink
from snapcheck.reference.protocols.abs_aligned import AlignedABS

DEFAULTS = {"notify_loss": 0.3, "notify_jitter": 300, "event_loss": 0.3, "event_jitter": 300, "events": 3}


class TwoPhaseCommitABS(AlignedABS):
    name = "abs-aligned-2pc"
    summary = ("aligned ABS + two-phase-commit sinks; lossy, reordering notifications and "
               "operator events; reliable final commit and end of stream")
    simulator = CommitSimulator
    sink_class = TxnSink
    commit_on_checkpoint = False     # publish at the checkpoint instead of on global completion
    final_resend = True              # re-send the last notification until acknowledged
    eos_early = False                # end of stream sent when the final round completes
    await_event_acks = True          # FLINK-21996 fix: no completion with unacknowledged events
    restore_policy = "latest-completed"

    def __init__(self, **params) -> None:
        super().__init__(**{**DEFAULTS, **params})


class StrictNotify(TwoPhaseCommitABS):
    """FLINK-10377 / apache/flink#895: the commit handler commits only the notified
    checkpoint's transaction, so a lost notification is never subsumed."""

    sink_class = StrictTxnSink


class CommitOnCheckpoint(TwoPhaseCommitABS):
    """volga#300 (bug-zoo §1.3): publish at the barrier instead of on global completion."""

    commit_on_checkpoint = True


class UnreliableFinalNotify(TwoPhaseCommitABS):
    """FLINK-21080: the final notification is sent at most once; a sink that misses it
    waits forever with its last transaction uncommitted."""

    final_resend = False


class EosBeforeFinalCommit(TwoPhaseCommitABS):
    """FLINK-38614: end of stream is sent as soon as the final round completes, before
    the final transaction is committed; the closed sink drops the late notification."""

    eos_early = True


class CoordEventUnacked(TwoPhaseCommitABS):
    """FLINK-21996: rounds complete without waiting for operator-event
    acknowledgements, and lost events are never re-sent."""

    await_event_acks = False


class RestoreAborted(TwoPhaseCommitABS):
    """Wallaroo #3032: recovery rolls back to the latest round every task checkpointed,
    although the coordinator aborted it."""

    restore_policy = "latest-taken"


class RestoreEmpty(TwoPhaseCommitABS):
    """FLINK-34518: the completed-checkpoint store was cleaned up; the job restarts from
    the empty initial state although rounds had completed."""

    restore_policy = "empty"
