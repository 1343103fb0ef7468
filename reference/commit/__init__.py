"""Control channels, output commit and recovery lineage (issue 9, bug-zoo.md patterns
3–4): two-phase-commit sinks over lossy, reordering completion notifications;
operator events over a lossy coordinator→task channel; end-of-stream ordering;
the recovery line's lineage. See docs/protocols.md ("Control channels, output
commit and lineage")."""

from snapcheck.reference.commit.protocol import (CommitOnCheckpoint, CoordEventUnacked, EosBeforeFinalCommit,
                                       RestoreAborted, RestoreEmpty, StrictNotify, TwoPhaseCommitABS,
                                       UnreliableFinalNotify)

__all__ = ["CommitOnCheckpoint", "CoordEventUnacked", "EosBeforeFinalCommit", "RestoreAborted", "RestoreEmpty",
           "StrictNotify", "TwoPhaseCommitABS", "UnreliableFinalNotify"]
