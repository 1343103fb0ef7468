"""The active-replication models as ``reference.simulate`` protocols, and their mutants.

``SimConfig`` fields used: ``seed``, ``records`` (records per source, default 40),
``failures`` (``("U[0]#0", time)``: a replica crash, time in the model's ticks).
``parallelism`` and ``workload`` are not used (one replicated task partition merging
two sources). Parameters: ``reference.replication.model.DEFAULTS`` (e.g.
``LiveRobin(hb_period=25, quiet=(1, 5))``: source ``S1`` stops after 5 records).
"""

from __future__ import annotations

from snapcheck.reference.changelog.standalone import StandaloneSimulator
from snapcheck.reference.protocol import Protocol
from snapcheck.reference.replication.model import (MixedMergeConfigModel, NoOrderingModel, PlainRoundRobinModel,
                                         ReplicationModel)


class ReplicationSimulator(StandaloneSimulator):
    def model(self, cfg):
        p = self.protocol
        params = {"merge": p.merge, **p.params}
        if cfg.records is not None:
            params["records"] = cfg.records
        if p.mutant:
            params["mutant"] = p.mutant
        m = p.model_class(params, cfg.seed, cfg.failures, p.name)
        rec = m.run()
        return rec, m.metrics(), m.final_states(), list(m.sink_out)


class LiveRobin(Protocol):
    name = "liverobin"
    summary = ("active replication, leaderless: duplicate sending, dedup by sequence number, "
               "LiveRobin deterministic merge with heartbeat generator and mergers")
    simulator = ReplicationSimulator
    model_class = ReplicationModel
    merge = "liverobin"
    # replicas fold a merge whose order follows where heartbeats (KaZoo: leader orders) fall,
    # so a crash legitimately changes states and outputs; judged by the checker instead
    failure_free_oracle = False


class KaZoo(LiveRobin):
    name = "kazoo"
    summary = ("active replication, leader-based: leader election (zk) and an ordered log (Kafka) "
               "decide one consumption order for both replicas")
    merge = "kazoo"


class NoOrdering(LiveRobin):
    model_class = NoOrderingModel


class PlainRoundRobin(LiveRobin):
    """Its scenario makes source ``S1`` go quiet after 5 records (``quiet=(1, 5)``),
    which LiveRobin's heartbeats survive (tests run ``LiveRobin(quiet=(1, 5))``)."""

    model_class = PlainRoundRobinModel

    def __init__(self, **params) -> None:
        super().__init__(**{"quiet": [1, 5], **params})


class MixedMergeConfig(LiveRobin):
    model_class = MixedMergeConfigModel
