"""Random simulation configurations drawn from one seed, and the command that reproduces each.

A validation run ``i`` of a campaign with base seed ``S`` uses seed ``S + i``;
its configuration is a pure function of ``i``, that seed and the campaign's
selection (protocols, workloads, mutants, exploration strategy), so any
partitioning of the runs over Spark tasks gives the same runs. A run is a correct
protocol or a mutant (a protocol class declaring ``mutant_of``), drawn blind: a
mutant gets exactly the random configurations its base protocol gets
(``spark_validation.strategies``), never its hand-tuned ``demo``. Every fifth run
is a mutant run when mutants are selected (all runs when no protocol is), the
mutants taking turns, so a campaign of ``5 × #mutants`` runs runs every mutant at
least once. A campaign of known size (``Selection.of(runs=N)``) gives each mutant
at least ``MIN_MUTANT_RUNS`` runs when it can: every fourth, third or second run is
then a mutant run (``mutant_period``). A mutant measures the campaign's power to
find a bug blind; a few runs of a bug caught in one run in ten would let it escape
by chance.

``command(cfg)`` is the ``snapcheck simulate …`` command line that re-creates
exactly the same trace (every field that differs from ``SimConfig``'s default,
as its command-line option).
"""

from __future__ import annotations

import random
import shlex
from dataclasses import dataclass, fields, replace

from snapcheck.reference.workloads import ACYCLIC, CYCLIC
from snapcheck.spark_validation.strategies import STRATEGIES

DEFAULT_WORKLOADS = ACYCLIC + CYCLIC
MUTANT_EVERY = 5  # every fifth run is a mutant run when mutants are selected (at most)
MIN_MUTANT_RUNS = 30  # runs per mutant a campaign of known size gives when it can (mutant_period)
DEFAULT_STRATEGY = "targeted"  # the strategy that found every mutant fastest (benchmarks/bench_hunt.py)

# SimConfig field -> ``snapcheck simulate`` option (fields not listed are never varied).
_OPTIONS = {
    "protocol": "--protocol",
    "mutant": "--mutant",
    "workload": "--workload",
    "parallelism": "--parallelism",
    "seed": "--seed",
    "records": "--records",
    "gap": "--gap",
    "hot_ratio": "--hot-ratio",
    "interval": "--interval",
    "max_concurrent": "--max-concurrent",
    "checkpoint_timeout": "--checkpoint-timeout",
    "aligned_timeout": "--aligned-timeout",
    "latency": "--latency",
    "jitter": "--jitter",
    "control_latency": "--control-latency",
    "control_jitter": "--control-jitter",
    "detect_delay": "--detect-delay",
    "restart_delay": "--restart-delay",
    "buffer": "--buffer",
    "out_buffer": "--out-buffer",
    "decline_prob": "--decline-prob",
    "recovery": "--recovery",
    "max_parallelism": "--max-parallelism",
}
RESCALE_PROB = 0.25  # correct runs that restore at another parallelism (coordinated dataflow simulator)
SECOND_RESCALE_PROB = 1 / 3  # of those: the restored job is rescaled once more
FINISH_PROB = 0.15  # of the others: sources finish early (FLIP-147)


@dataclass(frozen=True)
class Selection:
    """What a campaign draws from."""

    protocols: tuple[str, ...] = ()
    workloads: tuple[str, ...] = DEFAULT_WORKLOADS
    mutants: tuple[str, ...] = ()
    failures: bool = True
    oracle: bool = True  # also run the end-to-end exactly-once oracle (runner.run_one)
    explore: str = "uniform"  # exploration strategy (spark_validation.strategies.STRATEGIES)
    mutant_every: int = MUTANT_EVERY  # every this many runs is a mutant run (with protocols selected)
    conform: float = 0.0  # fraction of the runs also validated against their TLA+ specification

    @classmethod
    def of(
        cls,
        protocols=None,
        workloads=None,
        mutants=None,
        failures: bool = True,
        oracle: bool = True,
        explore: str | None = None,
        runs: int | None = None,
        conform: float = 0.0,
    ) -> Selection:
        """A selection from option values; ``mutants=None`` means every mutant of a selected
        protocol (of a user's protocol, those its module defines; ``()`` for none); ``runs``: the campaign's size, if known (``mutant_period``)."""
        from snapcheck.reference.catalogue import PROTOCOLS, mutants_of, spec_of

        protocols = tuple(protocols) if protocols else tuple(PROTOCOLS)
        if mutants is None:  # a user's protocol: the mutants its module defines
            mutants = tuple(spec_of(m) for p in protocols for m in mutants_of(p))
        return cls(
            protocols,
            tuple(workloads) if workloads else DEFAULT_WORKLOADS,
            tuple(mutants),
            failures,
            oracle,
            explore or DEFAULT_STRATEGY,
            mutant_period(runs, len(mutants)) if runs else MUTANT_EVERY,
            conform,
        )

    def check(self) -> None:
        """Unknown names, modules that fail to import and impossible combinations are
        usage errors (exit 2)."""
        from snapcheck.checker.report import expectation_problems
        from snapcheck.reference import RANDOM_WORKLOADS, WORKLOADS
        from snapcheck.reference.catalogue import is_builtin, mutant_class, resolve
        from snapcheck.reference.simulation import resolve as sim_resolve
        from snapcheck.traces.errors import UsageError

        known = list(WORKLOADS) + list(RANDOM_WORKLOADS)
        bad = [w for w in self.workloads if w not in known]
        if bad:
            raise UsageError(f"unknown workload(s) {', '.join(bad)} (known: {', '.join(known)})")
        for p in self.protocols:
            if resolve(p).mutant_of:
                raise UsageError(
                    f"{p} is a mutant (its class declares mutant_of): give it as a mutant (--mutants), "
                    "which runs it blind under its base protocol's configurations and counts its catches"
                )
        for m in self.mutants:
            cls = mutant_class(m)
            if not is_builtin(cls):
                problems = expectation_problems(cls.expect, cls.prop)
                if problems:
                    raise UsageError(f"mutant {m}: " + "; ".join(problems))
        if not self.protocols and not self.mutants:
            raise UsageError("nothing to validate: give at least one protocol or mutant")
        if not 0 <= self.conform <= 1:
            raise UsageError(f"--conform {self.conform}: a fraction of the runs, 0 < FRACTION <= 1")
        if self.explore not in STRATEGIES:
            raise UsageError(f"unknown exploration strategy {self.explore!r} (known: {', '.join(STRATEGIES)})")
        for p in self.protocols + self.mutants:
            cls = resolve(p)
            if cls.topologies != "own" and not self.workloads_for(cls):
                raise UsageError(
                    f"{p} runs only on {cls.topologies} workloads "
                    f"({', '.join(ACYCLIC if cls.topologies == 'acyclic' else CYCLIC)}); none is selected"
                )
            if not is_builtin(cls):  # a user's hooks (a mutant's adjust, the constructor) run here first,
                mutant = p in self.mutants  # on the driver: a broken one is exit 2 before any run
                alone = replace(self, protocols=() if mutant else (p,), mutants=(p,) if mutant else ())
                sim_resolve(draw_config(0, 0, alone))

    def workloads_for(self, protocol) -> tuple[str, ...]:
        """The selected workloads ``protocol`` (a spec or class) can run: its ``topologies``
        fact, ``acyclic`` or ``cyclic`` graphs only, or ``any``."""
        from snapcheck.reference.catalogue import resolve

        only = resolve(protocol).topologies
        return tuple(
            w
            for w in self.workloads
            if only not in ("acyclic", "cyclic") or w in (ACYCLIC if only == "acyclic" else CYCLIC)
        )


def mutant_period(runs: int, mutants: int) -> int:
    """Every how many runs a campaign of ``runs`` runs makes a mutant run: every fifth, or
    more often (every second at most: half the runs stay with the correct protocols) so
    that each of ``mutants`` mutants gets ``MIN_MUTANT_RUNS`` runs.

    >>> mutant_period(2000, 47), mutant_period(3000, 47), mutant_period(100_000, 47)
    (2, 2, 5)
    """
    if not mutants:
        return MUTANT_EVERY
    return max(2, min(MUTANT_EVERY, runs // (MIN_MUTANT_RUNS * mutants)))


def draw_config(run_id: int, seed: int, sel: Selection):
    """The ``SimConfig`` of run ``run_id`` with this seed (deterministic): a correct
    protocol, or a mutant in its turn, under the selection's exploration strategy
    (``spark_validation.strategies``). A mutant is drawn exactly as its base protocol
    would be — blind, the way a hunted bug meets a campaign — and then gets its forced
    adjustments (``Protocol.adjust``); its ``demo`` configuration is for
    ``snapcheck simulate --demo`` and the docs only. A protocol with non-FIFO channels
    gets room to reorder records (``strategies.reordering``), drawn after the rest; under
    ``targeted`` the coordinator's timing is drawn next (``strategies.timing``), then a
    checkpoint timeout is landed on the run's own round durations
    (``strategies.land_timeout``) and the drawn crashes on moments the run reaches
    (``strategies.land``)."""
    from snapcheck.reference import SimConfig
    from snapcheck.reference.catalogue import base_of, resolve
    from snapcheck.spark_validation.strategies import (
        LANDED,
        TIMED,
        draw,
        land,
        land_timeout,
        own_moments,
        pick,
        reordering,
        sparse,
        timing,
    )

    rnd = random.Random(seed)
    mutant = None
    every = sel.mutant_every
    if sel.mutants and (not sel.protocols or run_id % every == every - 1):
        turn = run_id if not sel.protocols else run_id // every
        mutant = sel.mutants[turn % len(sel.mutants)]
        cls = resolve(mutant, "mutant")
        protocol = rnd.choice((base_of(cls),))  # the draw a campaign of the base alone makes: same stream
    else:
        protocol = rnd.choice(sel.protocols)
        cls = resolve(protocol)
    strategy = pick(sel.explore, rnd)
    if cls.topologies == "own":
        cfg = SimConfig(
            protocol=protocol, seed=seed, **cls.random_config(rnd, sel.failures, hard=strategy == "stress", seed=seed)
        )
        own = cfg.failures  # the protocol's own draws: never landed
        cfg = own_moments(strategy, rnd, cls, cfg, sel.failures)
        drawn = cfg.failures[len(own) :]
    else:
        cfg = draw(strategy, rnd, protocol, cls, seed, sel.workloads_for(cls), sel.failures)
        drawn = cfg.failures
        if cls.simulator is None and cfg.workload in ACYCLIC:  # the shared simulator's rescales, finished sources
            cfg = _draw_rescale(cfg, rnd, cls, sel.failures)  # drawn last: earlier draws stay
        if not resolve(protocol).fifo:  # the base protocol's channels (a mutant is drawn blind); after the rest
            cfg = reordering(rnd, cfg)
    if mutant is not None:
        cfg = _adjusted(cls, cfg, mutant, seed)
    if sel.explore in TIMED:
        cfg = timing(rnd, cls, sparse(rnd, cls, cfg))
    if sel.explore not in LANDED:
        return cfg
    return land(rnd, cls, land_timeout(rnd, cfg, drawn), drawn)


def _adjusted(cls, cfg, mutant: str, seed: int):
    """``cfg`` with the mutant's forced adjustments (``Protocol.adjust``); crashes and
    stragglers of tasks an adjusted workload does not have are dropped, and so are the
    rescales and finishing sources drawn for an acyclic workload when the adjusted one
    is cyclic (the simulator models them on acyclic dataflows only)."""
    from snapcheck.reference import SimConfig
    from snapcheck.reference.simulation import adjusted as adjust

    adjusted = adjust(cls, replace(cfg, mutant=mutant))
    if adjusted.workload != cfg.workload:  # crashes and stragglers were drawn for the other workload's tasks
        from snapcheck.reference.simulation import is_cyclic
        from snapcheck.reference.testing import task_ids
        from snapcheck.reference.workloads import make_workload

        known = set(task_ids(adjusted.workload, adjusted.parallelism, seed)) | {"self"}
        adjusted = replace(
            adjusted,
            failures=tuple(f for f in adjusted.failures if f[0] in known),
            stragglers=tuple(s for s in adjusted.stragglers if s[0] in known),
        )
        wl = adjusted.workload
        if (adjusted.rescale or adjusted.finish_sources) and is_cyclic(
            make_workload(wl, adjusted.parallelism, seed) if isinstance(wl, str) else wl
        ):
            adjusted = replace(adjusted, rescale=(), finish_sources=False, max_parallelism=SimConfig.max_parallelism)
    return adjusted


def _named(cfg):
    """``cfg`` with its protocol and mutant as the strings that name them (catalogue names,
    ``MODULE:CLASS`` or ``FILE.py:CLASS``), not classes or instances."""
    from snapcheck.reference.catalogue import resolve, spec_of

    named = {
        k: spec_of(resolve(v))
        for k in ("protocol", "mutant")
        if (v := getattr(cfg, k)) is not None and not isinstance(v, str)
    }
    return replace(cfg, **named) if named else cfg


def _draw_rescale(cfg, rnd: random.Random, cls, failures: bool):
    """A restore at another parallelism (stop-with-savepoint, or a failure when ``failures``
    are drawn at all; up or down) in ``RESCALE_PROB`` of the runs, a third of them followed
    by a second one (``SECOND_RESCALE_PROB``), for a protocol ``cls`` that is ``rescalable``
    (the others run those runs as drawn); else sources that finish early in
    ``FINISH_PROB`` (for protocols whose tasks let a finished input leave)."""
    x = rnd.random()
    if x < RESCALE_PROB:
        if not cls.rescalable:
            return cfg
        horizon = (cfg.records or 6) * (cfg.gap or 80) + 2 * cfg.interval
        kinds = ("savepoint", "failure") if failures else ("savepoint",)
        kind, new = rnd.choice(kinds), rnd.choice([p for p in (1, 2, 3, 4) if p != cfg.parallelism])
        rescale: tuple[tuple[str, int, int], ...] = ((kind, cfg.interval + rnd.randrange(horizon), new),)
        max_parallelism = rnd.choice((4, 16, 128))
        if rnd.random() < SECOND_RESCALE_PROB:  # the restored job is rescaled again (e.g. 2 -> 3 -> 2)
            rescale += (
                (
                    rnd.choice(kinds),
                    rescale[0][1] + cfg.interval + rnd.randrange(horizon),
                    rnd.choice([p for p in (1, 2, 3, 4) if p != new]),
                ),
            )
        return replace(cfg, rescale=rescale, max_parallelism=max_parallelism)
    if x < RESCALE_PROB + FINISH_PROB and cls.finished_inputs:
        return replace(cfg, finish_sources=True)
    return cfg


def command(cfg, output: str = "run.jsonl") -> str:
    """The ``snapcheck simulate`` command that reproduces ``cfg``'s trace byte for byte."""
    from snapcheck.reference import SimConfig
    from snapcheck.reference.catalogue import resolve
    from snapcheck.reference.sim.exploration import format_fault

    cfg = _named(cfg)
    default = SimConfig()
    always = {"protocol", "seed", "parallelism"}
    if resolve(cfg.protocol).topologies != "own":  # a protocol with its own topology reads no workload
        always.add("workload")
    args = ["snapcheck", "simulate"]
    for f in fields(SimConfig):
        v = getattr(cfg, f.name)
        if f.name in always or v != getattr(default, f.name):
            if f.name == "failures":
                for entry in v:
                    args += ["--fail", format_fault(entry)]
            elif f.name == "pauses":
                for step, ticks in v:
                    args += ["--pause", f"{step}:{ticks}"]
            elif f.name == "stragglers":
                for task, factor in v:
                    args += ["--straggler", f"{task}={factor}"]
            elif f.name == "fifo":
                args.append("--non-fifo")
            elif f.name == "rescale":
                for kind, t, p in v:
                    args += ["--rescale", f"{kind}@{t}:{p}"]
            elif f.name == "finish_sources":
                args.append("--finish-sources")
            elif f.name in _OPTIONS:
                args += [_OPTIONS[f.name], str(v)]
            else:
                raise ValueError(f"config field {f.name} has no snapcheck simulate option")
    return shlex.join(args + ["-o", output])


def describe(cfg) -> dict:
    """The fields of ``cfg`` that differ from ``SimConfig``'s defaults (JSON-serialisable)."""
    from snapcheck.reference import SimConfig

    cfg = _named(cfg)
    default = SimConfig()
    out = {}
    for f in fields(SimConfig):
        v = getattr(cfg, f.name)
        if v != getattr(default, f.name) or f.name in ("protocol", "seed"):
            out[f.name] = [list(x) for x in v] if f.name in ("failures", "stragglers", "pauses", "rescale") else v
    return out
