"""Mutants of ``abs-aligned-2pc`` (registered in ``reference.mutants.MUTANTS``).

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

from snapcheck.reference.commit.protocol import (CommitOnCheckpoint, CoordEventUnacked, EosBeforeFinalCommit,
                                       RestoreAborted, RestoreEmpty, StrictNotify, UnreliableFinalNotify)
from snapcheck.reference.mutants import Mutant

BASE = "abs-aligned-2pc"
_DEMO = {"workload": "q1", "parallelism": 2, "records": 20}

COMMIT_MUTANTS: dict[str, Mutant] = {m.name: m for m in (
    Mutant("2pc-strict-notify", StrictNotify, BASE,
           "a completion notification commits only its own checkpoint's transaction",
           "FLINK-10377 (apache/flink#6723, #895)", ("uncommitted", "eos-before-commit"), "output-commit",
           dict(_DEMO)),
    Mutant("2pc-commit-on-checkpoint", CommitOnCheckpoint, BASE,
           "the sink publishes at its checkpoint instead of on global completion",
           "volga-project/volga#300", ("premature-commit",), "output-commit", dict(_DEMO)),
    Mutant("2pc-unreliable-final-notify", UnreliableFinalNotify, BASE,
           "the final completion notification is sent at most once",
           "FLINK-21080 (apache/flink#16633)", ("uncommitted",), "output-commit", {**_DEMO, "parallelism": 4}),
    Mutant("2pc-eos-before-final-commit", EosBeforeFinalCommit, BASE,
           "end of stream is sent before the final transaction is committed",
           "FLINK-38614 (apache/flink#28476)", ("eos-before-commit",), "output-commit", dict(_DEMO)),
    Mutant("2pc-coord-event-unacked", CoordEventUnacked, BASE,
           "rounds complete although operator events were lost on the control channel",
           "FLINK-21996 (apache/flink#15557)", ("control-dropped",), "control-delivery", dict(_DEMO)),
    Mutant("2pc-restore-aborted", RestoreAborted, BASE,
           "recovery rolls back to an aborted round that every task had checkpointed",
           "WallarooLabs/wally#3032", ("restore-aborted",), "recovery-lineage",
           {**_DEMO, "checkpoint_timeout": 200, "interval": 300, "failures": (("sink[0]", 2500),)}),
    Mutant("2pc-restore-empty", RestoreEmpty, BASE,
           "recovery restarts from the empty initial state although rounds completed",
           "FLINK-34518 (apache/flink#24382)", ("restore-stale",), "recovery-lineage",
           {**_DEMO, "failures": (("sink[0]", 2500),)}),
)}
