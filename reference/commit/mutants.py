"""Mutants of ``abs-aligned-2pc`` (declared to the protocol catalogue, ``reference.catalogue``).

=============================  ===================================================  ==========================
mutant                         what is broken                                       checker reports
=============================  ===================================================  ==========================
2pc-strict-notify              FLINK-10377 / apache/flink#895: a notification       uncommitted,
                               commits only its own checkpoint's transaction        eos-before-commit
2pc-commit-on-checkpoint       volga#300: publish at the barrier, not on global     premature-commit
                               completion
2pc-unreliable-final-notify    FLINK-21080: the final notification is sent at       uncommitted
                               most once; the sink waits forever
2pc-eos-before-final-commit    FLINK-38614: end of stream overtakes the final       eos-before-commit
                               commit
2pc-coord-event-unacked        FLINK-21996: rounds complete with operator events    control-dropped
                               lost in flight; lost events are never re-sent
2pc-restore-aborted            Wallaroo #3032: roll back to a round a participant   restore-aborted
                               (the coordinator) aborted
2pc-restore-empty              FLINK-34518: restart from the empty state after      restore-stale
                               the completed-checkpoint store was cleaned up
=============================  ===================================================  ==========================
"""

from __future__ import annotations

from snapcheck.reference.commit.protocol import TwoPhaseCommitABS
from snapcheck.reference.commit.sink import StrictTxnSink

_DEMO = {"workload": "q1", "parallelism": 2, "records": 20}


class StrictNotify(TwoPhaseCommitABS):
    """FLINK-10377 / apache/flink#895: the commit handler commits only the notified
    checkpoint's transaction, so a lost notification is never subsumed."""

    name = "2pc-strict-notify"
    mutant_of = "abs-aligned-2pc"
    summary = "a completion notification commits only its own checkpoint's transaction"
    bug = "FLINK-10377 (apache/flink#6723, #895)"
    expect = ("uncommitted", "eos-before-commit")
    prop = "output-commit"
    demo = dict(_DEMO)

    sink_class = StrictTxnSink


class CommitOnCheckpoint(TwoPhaseCommitABS):
    """volga#300: publish at the barrier instead of on global completion."""

    name = "2pc-commit-on-checkpoint"
    mutant_of = "abs-aligned-2pc"
    summary = "the sink publishes at its checkpoint instead of on global completion"
    bug = "volga-project/volga#300"
    expect = ("premature-commit",)
    prop = "output-commit"
    demo = dict(_DEMO)

    commit_on_checkpoint = True


class UnreliableFinalNotify(TwoPhaseCommitABS):
    """FLINK-21080: the final notification is sent at most once; a sink that misses it
    waits forever with its last transaction uncommitted."""

    name = "2pc-unreliable-final-notify"
    mutant_of = "abs-aligned-2pc"
    summary = "the final completion notification is sent at most once"
    bug = "FLINK-21080 (apache/flink#16633)"
    expect = ("uncommitted",)
    prop = "output-commit"
    demo = {**_DEMO, "parallelism": 4}

    final_resend = False


class EosBeforeFinalCommit(TwoPhaseCommitABS):
    """FLINK-38614: end of stream is sent as soon as the final round completes, before
    the final transaction is committed; the closed sink drops the late notification."""

    name = "2pc-eos-before-final-commit"
    mutant_of = "abs-aligned-2pc"
    summary = "end of stream is sent before the final transaction is committed"
    bug = "FLINK-38614 (apache/flink#28476)"
    expect = ("eos-before-commit",)
    prop = "output-commit"
    demo = dict(_DEMO)

    eos_early = True


class CoordEventUnacked(TwoPhaseCommitABS):
    """FLINK-21996: rounds complete without waiting for operator-event
    acknowledgements, and lost events are never re-sent."""

    name = "2pc-coord-event-unacked"
    mutant_of = "abs-aligned-2pc"
    summary = "rounds complete although operator events were lost on the control channel"
    bug = "FLINK-21996 (apache/flink#15557)"
    expect = ("control-dropped",)
    prop = "control-delivery"
    demo = dict(_DEMO)

    await_event_acks = False


class RestoreAborted(TwoPhaseCommitABS):
    """Wallaroo #3032: recovery rolls back to the latest round every task checkpointed,
    although the coordinator aborted it."""

    name = "2pc-restore-aborted"
    mutant_of = "abs-aligned-2pc"
    summary = "recovery rolls back to an aborted round that every task had checkpointed"
    bug = "WallarooLabs/wally#3032"
    expect = ("restore-aborted",)
    prop = "recovery-lineage"
    demo = {**_DEMO, "checkpoint_timeout": 200, "interval": 300, "failures": (("sink[0]", 2500),)}

    restore_policy = "latest-taken"


class RestoreEmpty(TwoPhaseCommitABS):
    """FLINK-34518: the completed-checkpoint store was cleaned up; the job restarts from
    the empty initial state although rounds had completed."""

    name = "2pc-restore-empty"
    mutant_of = "abs-aligned-2pc"
    summary = "recovery restarts from the empty initial state although rounds completed"
    bug = "FLINK-34518 (apache/flink#24382)"
    expect = ("restore-stale",)
    prop = "recovery-lineage"
    demo = {**_DEMO, "failures": (("sink[0]", 2500),)}

    restore_policy = "empty"
