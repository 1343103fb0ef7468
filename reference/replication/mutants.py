"""Mutants of ``liverobin`` (registered in ``reference.mutants.MUTANTS``).

===============================  ==================================================  ==========================
mutant                           what is broken                                      checker reports
===============================  ==================================================  ==========================
replication-no-ordering          the seed's "No ordering" baseline: each replica     replica-order-divergence,
                                 consumes in arrival order                           replica-output-divergence
replication-plain-round-robin    round-robin merge without heartbeats: a replica     replica-stalled
                                 blocks on the queue of a source that went quiet
replication-mixed-merge-config   Materialize #38196: replicas rendered with          replica-order-divergence,
                                 different merge configurations                     replica-output-divergence
===============================  ==================================================  ==========================
"""

from __future__ import annotations

from snapcheck.reference.mutants import Mutant
from snapcheck.reference.replication.protocol import MixedMergeConfig, NoOrdering, PlainRoundRobin

BASE = "liverobin"
DIVERGE = ("replica-order-divergence", "replica-output-divergence")

REPLICATION_MUTANTS: dict[str, Mutant] = {m.name: m for m in (
    Mutant("replication-no-ordering", NoOrdering, BASE,
           "replicas consume their deduplicated inputs in arrival order",
           "active-replication seed §VII, configuration 3 (No ordering)", DIVERGE, "replica-agreement",
           {"records": 30}),
    Mutant("replication-plain-round-robin", PlainRoundRobin, BASE,
           "round-robin merge without heartbeats stalls when a source goes quiet",
           "active-replication seed §V.A (RR has no liveness)", ("replica-stalled",), "replica-liveness",
           {"records": 30}),
    Mutant("replication-mixed-merge-config", MixedMergeConfig, BASE,
           "the two replicas use different merge (round-robin order) configurations",
           "MaterializeInc/materialize#38196", DIVERGE, "replica-agreement", {"records": 30}),
)}
