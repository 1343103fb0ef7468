"""The active-replication models as ``reference.simulate`` protocols, and their mutants.

``SimConfig`` fields used: ``seed``, ``records`` (records per source, default 40),
``failures`` (``("U[0]#0", time)``: a replica crash, time in the model's ticks).
``parallelism`` and ``workload`` are not used (one replicated task partition merging
two sources). Parameters: ``reference.replication.model.DEFAULTS`` (e.g.
``LiveRobin(hb_period=25, quiet=(1, 5))``: source ``S1`` stops after 5 records).
"""

from __future__ import annotations

from snapcheck.reference.protocol import Protocol
from snapcheck.reference.replication.model import ReplicationModel
from snapcheck.reference.sim.standalone import StandaloneSimulator
from snapcheck.traces.protocol_facts import TlaMapping


class ReplicationSimulator(StandaloneSimulator):
    def model(self, cfg):
        p = self.protocol
        params = {"merge": p.merge, **p.params}
        if cfg.records is not None:
            params["records"] = cfg.records
        if p.mutant:
            params["mutant"] = p.mutant
        m = p.model_class(params, cfg.seed, cfg.failures, p.header_name())
        rec = m.run()
        return rec, m.metrics(), m.final_states(), list(m.sink_out)


class LiveRobin(Protocol):
    name = "liverobin"
    situations = ()  # its own model: no simulator situations
    family = "replication"
    topologies = "own"
    crash_targets = "U[0]#0 or U[0]#1: a replica, at a time in the model's ticks"
    tla: TlaMapping | None = TlaMapping(
        "LiveRobinTrace", kind="replication", invariants=("ReplicaAgreement",), refinement="MergeSpec"
    )
    summary = (
        "active replication, leaderless: duplicate sending, dedup by sequence number, "
        "LiveRobin deterministic merge with heartbeat generator and mergers"
    )
    simulator = ReplicationSimulator
    model_class = ReplicationModel
    merge = "liverobin"

    @classmethod
    def random_config(cls, rnd, failures: bool, hard: bool = False, seed: int = 0) -> dict:
        """One task ``U[0]`` with replicas ``U[0]#0``/``U[0]#1``, 5–40 records per source
        (20 ticks apart); half the runs crash one replica (``hard``: nine in ten)."""
        records = rnd.randint(5, 40)
        crashes = ((f"U[0]#{rnd.randint(0, 1)}", rnd.randrange(records * 20)),)
        return {"records": records, "failures": crashes if failures and rnd.random() < (0.9 if hard else 0.5) else ()}

    # replicas fold a merge whose order follows where heartbeats (KaZoo: leader orders) fall,
    # so a crash legitimately changes states and outputs; judged by the checker instead
    failure_free_oracle = False


class KaZoo(LiveRobin):
    name = "kazoo"
    tla = None  # the trace specification models the leaderless merge only
    summary = (
        "active replication, leader-based: leader election (zk) and an ordered log (Kafka) "
        "decide one consumption order for both replicas"
    )
    merge = "kazoo"
