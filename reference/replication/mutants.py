"""Mutants of ``liverobin`` (declared to the protocol catalogue, ``reference.catalogue``).

===============================  ==================================================  ==========================
mutant                           what is broken                                      checker reports
===============================  ==================================================  ==========================
replication-no-ordering          the paper's "No ordering" baseline: each replica     replica-order-divergence,
                                 consumes in arrival order                           replica-output-divergence
replication-plain-round-robin    round-robin merge without heartbeats: a replica     replica-stalled
                                 blocks on the queue of a source that went quiet
replication-mixed-merge-config   Materialize #38196: replicas rendered with          replica-order-divergence,
                                 different merge configurations                     replica-output-divergence
===============================  ==================================================  ==========================
"""

from __future__ import annotations

from snapcheck.reference.replication.model import MixedMergeConfigModel, NoOrderingModel, PlainRoundRobinModel
from snapcheck.reference.replication.protocol import LiveRobin

DIVERGE = ("replica-order-divergence", "replica-output-divergence")


class NoOrdering(LiveRobin):
    name = "replication-no-ordering"
    mutant_of = "liverobin"
    summary = "replicas consume their deduplicated inputs in arrival order"
    bug = (
        '"Active Replication for Latency-Sensitive Stream Processing in Apache Flink" '
        "§VII, configuration 3 (No ordering)"
    )
    expect = DIVERGE
    prop = "replica-agreement"
    demo = {"records": 30}
    model_class = NoOrderingModel


class PlainRoundRobin(LiveRobin):
    """Its scenario makes source ``S1`` go quiet after 5 records (``quiet=(1, 5)``),
    which LiveRobin's heartbeats survive (tests run ``LiveRobin(quiet=(1, 5))``)."""

    name = "replication-plain-round-robin"
    mutant_of = "liverobin"
    summary = "round-robin merge without heartbeats stalls when a source goes quiet"
    bug = (
        '"Active Replication for Latency-Sensitive Stream Processing in Apache Flink" §V.A: round-robin has no liveness'
    )
    expect = ("replica-stalled",)
    prop = "replica-liveness"
    demo = {"records": 30}

    model_class = PlainRoundRobinModel

    def __init__(self, **params) -> None:
        super().__init__(**{"quiet": [1, 5], **params})


class MixedMergeConfig(LiveRobin):
    name = "replication-mixed-merge-config"
    mutant_of = "liverobin"
    summary = "the two replicas use different merge (round-robin order) configurations"
    bug = "MaterializeInc/materialize#38196"
    expect = DIVERGE
    prop = "replica-agreement"
    demo = {"records": 30}
    model_class = MixedMergeConfigModel
