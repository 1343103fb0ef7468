"""Mutants of uncoordinated checkpointing with message logging (UNC), each after a real bug or a
published deviation; declared to the protocol catalogue, ``reference.catalogue``.

=================================  ======================================================  ==========================
mutant                             what is broken                                          checker reports
=================================  ======================================================  ==========================
unc-no-logging                     UNC without sender-side message logging: in-transit    lost
                                   messages of the recovery line cannot be replayed
unc-no-rollback-propagation        UNC recovery restores the latest checkpoints (the      inconsistent-restore
                                   bound) without rollback propagation
unc-replay-skip-single             replay of a channel's window is skipped when it holds  lost
                                   exactly one message (an off-by-one bound)
unc-early-log-truncation           SPARK-6222: a log is truncated when the receiver's     premature-truncation,
                                   *latest* checkpoint covers the entries, before a       lost
                                   checkpoint on the recovery line does
unc-colocated-channels             the recovery graph ignores channels between tasks on   inconsistent-restore
                                   the same worker (CheckMate's add_edges_between_workers)
unc-open-interval-edges            the recovery graph has no edges for messages sent      inconsistent-restore
                                   after the sender's last checkpoint
=================================  ======================================================  ==========================

``unc-replay-skip-single``, ``unc-colocated-channels`` and ``unc-open-interval-edges`` break
a step of recovery code as a published testbed writes it (CheckMate's:
its recovery graph skips channels between operators on one worker and adds an edge for
messages sent after the last checkpoint; ``find_last_sent_offset`` bounds its replay):
docs/theory.md, "Pitfalls of recovery-line computation"; docs/bug-zoo.md, "Uncoordinated
checkpointing".
"""

from __future__ import annotations

from snapcheck.reference.uncoordinated.protocol import UNC
from snapcheck.reference.uncoordinated.recovery import LineDefects

_FAILING = {
    "workload": "q12",
    "parallelism": 2,
    "records": 30,
    "gap": 40,
    "interval": 300,
    "failures": (("window_count[0]", 700),),
}


class UNCNoLogging(UNC):
    name = "unc-no-logging"
    mutant_of = "unc"
    summary = "UNC without sender-side message logging"
    bug = "CheckMate §III-B: without logs UNC gives at-most-once"
    expect = ("lost",)
    prop = "exactly-once"
    demo = dict(_FAILING)
    logging = False


class UNCNoPropagation(UNC):
    name = "unc-no-rollback-propagation"
    mutant_of = "unc"
    summary = "UNC recovery restores the latest checkpoints without rollback propagation"
    bug = "CheckMate §III-B: the latest checkpoints need not form a consistent state"
    expect = ("inconsistent-restore",)
    prop = "observed-recovery"
    demo = dict(_FAILING)
    defects = LineDefects(no_propagation=True)


class UNCReplaySkipSingle(UNC):
    name = "unc-replay-skip-single"
    mutant_of = "unc"
    summary = "replay skips a channel's window when it holds a single message (off by one)"
    bug = "published testbed's replay-window bound (find_last_sent_offset)"
    expect = ("lost",)
    prop = "exactly-once"
    demo = {
        "workload": "q12",
        "parallelism": 2,
        "records": 30,
        "gap": 150,
        "interval": 300,
        "failures": (("window_count[0]", 1500),),
    }
    skip_single_replay = True


class UNCEarlyTruncation(UNC):
    name = "unc-early-log-truncation"
    mutant_of = "unc"
    summary = "log truncated when the receiver's latest checkpoint covers it, not the recovery line's"
    bug = "SPARK-6222 (apache/spark#4964): WAL cleaned before a covering checkpoint"
    expect = ("premature-truncation", "lost")
    prop = "log-retention"
    demo = dict(_FAILING)
    truncation = "latest-checkpoint"


class UNCColocated(UNC):
    name = "unc-colocated-channels"
    mutant_of = "unc"
    summary = "recovery graph without the channels between tasks on the same worker"
    bug = 'published testbed\'s add_edges_between_workers; docs/theory.md "Co-located tasks are separate processes"'
    expect = ("inconsistent-restore",)
    prop = "observed-recovery"
    demo = dict(_FAILING)
    defects = LineDefects(skip_colocated=True)


class UNCOpenInterval(UNC):
    name = "unc-open-interval-edges"
    mutant_of = "unc"
    summary = "recovery graph without edges for messages sent after the sender's last checkpoint"
    bug = 'published testbed\'s checkpoint graph; docs/theory.md "Messages after the last checkpoint"'
    expect = ("inconsistent-restore",)
    prop = "observed-recovery"
    demo = dict(_FAILING)
    defects = LineDefects(skip_open_interval=True)
