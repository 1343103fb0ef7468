"""Mutants of the communication-induced protocols (HMNR), each after a published
condition or implementation; registered with the protocol catalogue.

=================================  ======================================================  ==========================
mutant                             what is broken                                          checker reports
=================================  ======================================================  ==========================
hmnr-no-c1                         HMNR without condition C1                               missing-forced-checkpoint,
                                                                                           useless-checkpoint
hmnr-no-c2                         HMNR without condition C2                               missing-forced-checkpoint,
                                                                                           useless-checkpoint
hmnr-min-to-every-send             clock[] form that sets min_to[k] := min(clock[k],       spurious-forced-checkpoint
                                   clock[i]) on every send (BlackSP's HMNRProtocol.cs):
                                   still ZCF, but many needless forced checkpoints
=================================  ======================================================  ==========================
"""

from __future__ import annotations

from snapcheck.reference.cic.hmnr import HMNR, HMNRClockTask, HMNRTask

_CYCLIC = {"workload": "reachability", "parallelism": 2, "records": 6, "gap": 40, "interval": 1500, "jitter": 60}


class NoC1Task(HMNRTask):
    use_c1 = False


class NoC2Task(HMNRTask):
    use_c2 = False


class HMNRNoC1(HMNR):
    name = "hmnr-no-c1"
    mutant_of = "hmnr"
    summary = "HMNR without condition C1"
    bug = 'both HMNR conditions are necessary (C1 alone / C2 alone leave useless checkpoints); docs/theory.md "HMNR"'
    expect = ("missing-forced-checkpoint", "useless-checkpoint")
    prop = "cic-conformance"
    demo = dict(_CYCLIC)
    task_class = NoC1Task


class HMNRNoC2(HMNR):
    name = "hmnr-no-c2"
    mutant_of = "hmnr"
    summary = "HMNR without condition C2"
    bug = 'both HMNR conditions are necessary; docs/theory.md "HMNR"'
    expect = ("missing-forced-checkpoint", "useless-checkpoint")
    prop = "cic-conformance"
    demo = dict(_CYCLIC)
    task_class = NoC2Task


class MinToEverySendTask(HMNRClockTask):
    """BlackSP: ``min_to[k] := min(clock[k], clock[i])`` at every send to ``P_k``."""

    def note_send(self, k: int) -> None:
        self.sent_to[k] = True
        self.min_to[k] = min(self.clock[k], self.clock[self.i])


class HMNRMinToEverySend(HMNR):
    name = "hmnr-min-to-every-send"
    mutant_of = "hmnr"
    summary = "HMNR clock[] form updating min_to on every send"
    bug = 'BlackSP HMNRProtocol.cs: still ZCF, many more forced checkpoints; docs/theory.md "The clock form of HMNR"'
    expect = ("spurious-forced-checkpoint",)
    prop = "cic-efficiency"
    demo = dict(_CYCLIC)
    task_class = MinToEverySendTask
