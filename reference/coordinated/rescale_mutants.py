"""Mutants of restoring at another parallelism and of finished tasks, after real bugs.

Each breaks one mechanism of ``reference/sim/rescale.py`` through the protocol's
rescaling hooks (``Protocol.rescale_channel_state``, ``rescale_deliver``,
``final_notification``). A run without a rescale (or without finishing sources)
cannot show them, so ``adjust`` adds one, drawn from the run's seed, when the
configuration has none (``default_rescale``); everything else is the campaign's
random configuration.

=============================  ======================================================  =========================
mutant                         what is broken                                          checker reports
=============================  ======================================================  =========================
rescale-race                   FLINK-38544 / FLIP-547: a new subtask starts on live    in-flight-lost
                               data before the recovered channel state of every old
                               channel merged into one of its inputs was delivered;
                               buffers that arrive late are dropped
rescale-skip-stateless         FLINK-31963: channel state is reassigned only for       in-flight-lost
                               operators with state of their own, so in-flight
                               records into maps and filters are not redistributed
rescale-undispatched           apache/beam#25975: on a downscale the recovered         in-flight-lost
                               records of the removed subtasks are never dispatched
final-notify-lost              FLINK-21080: the final checkpoint's notification to a   final-checkpoint-unnotified
                               finished task is lost and never repeated, so the task
                               waits forever
=============================  ======================================================  =========================
"""

from __future__ import annotations

import random
from dataclasses import replace

from snapcheck.reference.coordinated.abs_aligned import AlignedABS
from snapcheck.reference.coordinated.unaligned import Unaligned
from snapcheck.reference.workloads import ACYCLIC


def _acyclic(cfg):
    """``cfg`` on an acyclic workload (rescaling and finishing sources are modelled for
    acyclic dataflows): a cyclic one becomes a random DAG, without the crashes that
    named its tasks."""
    if isinstance(cfg.workload, str) and cfg.workload not in ACYCLIC:
        return replace(cfg, workload="random-dag", failures=())
    return cfg


def default_rescale(cfg, downscale: bool = False):
    """``cfg`` with a rescale drawn from its seed when it has none: stop-with-savepoint
    or a failure, two to four checkpoint intervals in, to another parallelism (lower
    with ``downscale``, which needs a parallelism of at least 2)."""
    if cfg.finish_sources:
        cfg = replace(cfg, finish_sources=False)
    cfg = _acyclic(cfg)
    if cfg.rescale:
        if not downscale or any(p < cfg.parallelism for _, _, p in cfg.rescale):
            return cfg
    rnd = random.Random(f"{cfg.seed}/default-rescale")
    p = max(cfg.parallelism, 2) if downscale else cfg.parallelism
    new = 1 + int(rnd.random() * (p - 1)) if downscale else max(1, p + (1 if rnd.random() < 0.5 else -1))
    when = 2 * cfg.interval + int(rnd.random() * 2 * cfg.interval)
    kind = "savepoint" if rnd.random() < 0.5 else "failure"
    return replace(cfg, parallelism=p, rescale=((kind, when, new),))


class _Downscaled(Unaligned):
    """Unaligned checkpoints restored at a lower parallelism (a rescale is added to a
    configuration that has no downscale)."""

    @classmethod
    def adjust(cls, cfg):
        return default_rescale(cfg, downscale=True)


class RescaleRace(_Downscaled):
    name = "rescale-race"
    mutant_of = "unaligned"
    summary = "recovered channel state of merged old channels delivered after live data, then dropped"
    bug = "FLINK-38544 / FLIP-547: in-flight records lost on an unaligned downscale (a race in the recovery rewiring)"
    expect = ("in-flight-lost",)
    prop = "rescale-in-flight"
    demo = {"workload": "q12", "parallelism": 3, "records": 40, "gap": 30, "rescale": (("failure", 1500, 1),)}

    def rescale_deliver(self, groups, parallelism):
        first = list(groups[0][1]) if groups else []
        return first, [m for _, msgs in groups[1:] for m in msgs]


class RescaleSkipStateless(Unaligned):
    name = "rescale-skip-stateless"
    mutant_of = "unaligned"
    summary = "channel state redistributed only into operators that have state of their own"
    bug = "FLINK-31963: stateless operators skipped in state reassignment, their channel state not redistributed"
    expect = ("in-flight-lost",)
    prop = "rescale-in-flight"
    demo = {"workload": "q3", "parallelism": 2, "records": 40, "gap": 30, "rescale": (("savepoint", 1500, 3),)}

    @classmethod
    def adjust(cls, cfg):
        return default_rescale(cfg)

    def rescale_channel_state(self, has_state):
        return has_state


class RescaleUndispatched(_Downscaled):
    name = "rescale-undispatched"
    mutant_of = "unaligned"
    summary = "on a downscale, recovered records of the removed subtasks are never dispatched"
    bug = "apache/beam#25975: lowering the parallelism on restore left some bundles never dispatched"
    expect = ("in-flight-lost",)
    prop = "rescale-in-flight"
    demo = {"workload": "q12", "parallelism": 3, "records": 40, "gap": 30, "rescale": (("savepoint", 1500, 1),)}

    def rescale_deliver(self, groups, parallelism):
        return [m for c, msgs in groups if c.dst.subtask < parallelism for m in msgs], []


class FinalNotifyLost(AlignedABS):
    name = "final-notify-lost"
    mutant_of = "abs-aligned"
    summary = "the final checkpoint's notification to a finished task is lost and never repeated"
    bug = "FLINK-21080: a lost final-checkpoint notification left a finished subtask waiting forever"
    expect = ("final-checkpoint-unnotified",)
    prop = "finished-tasks"
    demo = {"workload": "q3", "parallelism": 2, "records": 20, "finish_sources": True}

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self.notified: dict = {}

    @classmethod
    def adjust(cls, cfg):
        return replace(_acyclic(cfg), finish_sources=True, rescale=())

    def final_notification(self, task, round):
        """At most once per task, and the first one of the run is lost."""
        if task in self.notified:
            return "skip"
        self.notified[task] = round
        return "lose" if len(self.notified) == 1 else "deliver"
