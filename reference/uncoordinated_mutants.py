"""Mutants of the uncoordinated protocols (UNC, HMNR), each after a real bug or a
published deviation; registered in ``reference.mutants.MUTANTS``.

=================================  ======================================================  ==========================
mutant                             what is broken                                          checker reports
=================================  ======================================================  ==========================
hmnr-no-c1                         HMNR without condition C1 (theory.md §4.3)              missing-forced-checkpoint,
                                                                                           useless-checkpoint
hmnr-no-c2                         HMNR without condition C2                               missing-forced-checkpoint,
                                                                                           useless-checkpoint
hmnr-min-to-every-send             clock[] form that sets min_to[k] := min(clock[k],       spurious-forced-checkpoint
                                   clock[i]) on every send (BlackSP's HMNRProtocol.cs):
                                   still ZCF, but many needless forced checkpoints
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

The last four are defects observed in a published testbed's recovery code
(theory.md §3.7 items 3, 7; CheckMate's ``find_last_sent_offset`` bounds replay).
"""

from __future__ import annotations

from snapcheck.reference.mutants import Mutant
from snapcheck.reference.protocols.hmnr import HMNR, HMNRClockTask, HMNRTask
from snapcheck.reference.protocols.unc import UNC
from snapcheck.reference.recovery_uncoordinated import LineDefects


class NoC1Task(HMNRTask):
    use_c1 = False


class NoC2Task(HMNRTask):
    use_c2 = False


class HMNRNoC1(HMNR):
    task_class = NoC1Task


class HMNRNoC2(HMNR):
    task_class = NoC2Task


class MinToEverySendTask(HMNRClockTask):
    """BlackSP: ``min_to[k] := min(clock[k], clock[i])`` at every send to ``P_k``."""

    def note_send(self, k: int) -> None:
        self.sent_to[k] = True
        self.min_to[k] = min(self.clock[k], self.clock[self.i])


class HMNRMinToEverySend(HMNR):
    task_class = MinToEverySendTask


class UNCNoLogging(UNC):
    logging = False


class UNCNoPropagation(UNC):
    defects = LineDefects(no_propagation=True)


class UNCReplaySkipSingle(UNC):
    skip_single_replay = True


class UNCEarlyTruncation(UNC):
    truncation = "latest-checkpoint"


class UNCColocated(UNC):
    defects = LineDefects(skip_colocated=True)


class UNCOpenInterval(UNC):
    defects = LineDefects(skip_open_interval=True)


_CYCLIC = {"workload": "reachability", "parallelism": 2, "records": 6, "gap": 40, "interval": 1500, "jitter": 60}
_FAILING = {"workload": "q12", "parallelism": 2, "records": 30, "gap": 40, "interval": 300,
            "failures": (("window_count[0]", 700),)}

UNCOORDINATED_MUTANTS = {m.name: m for m in (
    Mutant("hmnr-no-c1", HMNRNoC1, "hmnr", "HMNR without condition C1",
           "theory.md §4.3: both conditions are necessary (C1 alone / C2 alone leave useless checkpoints)",
           ("missing-forced-checkpoint", "useless-checkpoint"), "cic-conformance", dict(_CYCLIC)),
    Mutant("hmnr-no-c2", HMNRNoC2, "hmnr", "HMNR without condition C2",
           "theory.md §4.3: both conditions are necessary",
           ("missing-forced-checkpoint", "useless-checkpoint"), "cic-conformance", dict(_CYCLIC)),
    Mutant("hmnr-min-to-every-send", HMNRMinToEverySend, "hmnr",
           "HMNR clock[] form updating min_to on every send",
           "BlackSP HMNRProtocol.cs (theory.md §4.3: 2.8x more forced checkpoints)",
           ("spurious-forced-checkpoint",), "cic-efficiency", dict(_CYCLIC)),
    Mutant("unc-no-logging", UNCNoLogging, "unc", "UNC without sender-side message logging",
           "CheckMate §III-B: without logs UNC gives at-most-once", ("lost",), "exactly-once", dict(_FAILING)),
    Mutant("unc-no-rollback-propagation", UNCNoPropagation, "unc",
           "UNC recovery restores the latest checkpoints without rollback propagation",
           "CheckMate §III-B: the latest checkpoints need not form a consistent state",
           ("inconsistent-restore",), "observed-recovery", dict(_FAILING)),
    Mutant("unc-replay-skip-single", UNCReplaySkipSingle, "unc",
           "replay skips a channel's window when it holds a single message (off by one)",
           "published testbed's replay-window bound (find_last_sent_offset)", ("lost",), "exactly-once",
           {"workload": "q12", "parallelism": 2, "records": 30, "gap": 150, "interval": 300,
            "failures": (("window_count[0]", 1500),)}),
    Mutant("unc-early-log-truncation", UNCEarlyTruncation, "unc",
           "log truncated when the receiver's latest checkpoint covers it, not the recovery line's",
           "SPARK-6222 (apache/spark#4964): WAL cleaned before a covering checkpoint",
           ("premature-truncation", "lost"), "log-retention", dict(_FAILING)),
    Mutant("unc-colocated-channels", UNCColocated, "unc",
           "recovery graph without the channels between tasks on the same worker",
           "published testbed's add_edges_between_workers (theory.md §3.7 item 7)",
           ("inconsistent-restore",), "observed-recovery", dict(_FAILING)),
    Mutant("unc-open-interval-edges", UNCOpenInterval, "unc",
           "recovery graph without edges for messages sent after the sender's last checkpoint",
           "published testbed's checkpoint graph (theory.md §3.7 item 3)",
           ("inconsistent-restore",), "observed-recovery", dict(_FAILING)),
)}
