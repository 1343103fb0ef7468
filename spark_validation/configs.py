"""Random simulation configurations drawn from one seed, and the command that reproduces each.

A validation run ``i`` of a campaign with base seed ``S`` uses seed ``S + i``;
its configuration is a pure function of ``i``, that seed and the campaign's
selection (protocols, workloads, mutants), so any partitioning of the runs
over Spark tasks gives the same runs. A run is either a correct protocol
under a random topology, schedule and failure schedule, or a mutant
(``reference.MUTANTS``) under its demonstration configuration with the
run's seed (its ``demo`` shows the bug reliably; the seed varies timing and
inputs). Every fifth run is a mutant run when mutants are selected (all runs
when no protocol is), the mutants taking turns, so a campaign of
``5 × #mutants`` runs runs every mutant at least once.

``command(cfg)`` is the ``snapcheck simulate …`` command line that re-creates
exactly the same trace (every field that differs from ``SimConfig``'s default,
as its command-line option).
"""

from __future__ import annotations

import random
import shlex
from dataclasses import dataclass, fields, replace

ACYCLIC = ("q1", "q3", "q8", "q12", "random-dag")
CYCLIC = ("reachability", "random-cyclic")
DEFAULT_WORKLOADS = ACYCLIC + CYCLIC
MUTANT_EVERY = 5            # every fifth run is a mutant run when mutants are selected

# SimConfig field -> ``snapcheck simulate`` option (fields not listed are never varied).
_OPTIONS = {
    "protocol": "--protocol", "mutant": "--mutant", "workload": "--workload", "parallelism": "--parallelism",
    "seed": "--seed", "records": "--records", "gap": "--gap", "hot_ratio": "--hot-ratio", "interval": "--interval",
    "max_concurrent": "--max-concurrent", "checkpoint_timeout": "--checkpoint-timeout",
    "aligned_timeout": "--aligned-timeout", "latency": "--latency", "jitter": "--jitter", "buffer": "--buffer",
    "out_buffer": "--out-buffer", "decline_prob": "--decline-prob", "recovery": "--recovery",
    "max_parallelism": "--max-parallelism",
}
RESCALE_PROB = 0.25         # correct runs that restore at another parallelism (coordinated dataflow simulator)
FINISH_PROB = 0.15          # of the others: sources finish early (FLIP-147)


@dataclass(frozen=True)
class Selection:
    """What a campaign draws from."""

    protocols: tuple[str, ...] = ()
    workloads: tuple[str, ...] = DEFAULT_WORKLOADS
    mutants: tuple[str, ...] = ()
    failures: bool = True
    oracle: bool = True             # also run the end-to-end exactly-once oracle (runner.run_one)

    @classmethod
    def of(cls, protocols=None, workloads=None, mutants=None, failures: bool = True,
           oracle: bool = True) -> "Selection":
        """A selection from option values; ``mutants=None`` means every mutant of a selected
        protocol (``()`` for none)."""
        from snapcheck.reference.catalogue import PROTOCOLS, mutants_of

        protocols = tuple(protocols) if protocols else tuple(PROTOCOLS)
        if mutants is None:
            mutants = tuple(m.name for p in protocols for m in mutants_of(p))
        return cls(protocols, tuple(workloads) if workloads else DEFAULT_WORKLOADS, tuple(mutants), failures,
                   oracle)

    def check(self) -> None:
        """Unknown names, modules that fail to import and impossible combinations are
        usage errors (exit 2)."""
        from snapcheck.reference import RANDOM_WORKLOADS, WORKLOADS
        from snapcheck.reference.catalogue import resolve
        from snapcheck.traces.errors import UsageError

        known = list(WORKLOADS) + list(RANDOM_WORKLOADS)
        bad = [w for w in self.workloads if w not in known]
        if bad:
            raise UsageError(f"unknown workload(s) {', '.join(bad)} (known: {', '.join(known)})")
        for p in self.protocols:
            resolve(p)
        for m in self.mutants:
            if not resolve(m, "mutant").mutant_of:
                raise UsageError(f"{m} is not a mutant: its class declares no mutant_of")
        if not self.protocols and not self.mutants:
            raise UsageError("nothing to validate: give at least one protocol or mutant")
        for p in self.protocols:
            if resolve(p).topologies != "own" and not self.workloads_for(p):
                raise UsageError(f"protocol {p} runs only on acyclic workloads ({', '.join(ACYCLIC)}); "
                                 "none is selected")

    def workloads_for(self, protocol: str) -> tuple[str, ...]:
        """The selected workloads ``protocol`` can run (its ``topologies`` fact)."""
        from snapcheck.reference.catalogue import resolve

        acyclic_only = resolve(protocol).topologies == "acyclic"
        return tuple(w for w in self.workloads if not acyclic_only or w in ACYCLIC)


def draw_config(run_id: int, seed: int, sel: Selection):
    """The ``SimConfig`` of run ``run_id`` with this seed (deterministic)."""
    from snapcheck.reference import SimConfig
    from snapcheck.reference.catalogue import resolve
    from snapcheck.reference.testing import task_ids

    rnd = random.Random(seed)
    if sel.mutants and (not sel.protocols or run_id % MUTANT_EVERY == MUTANT_EVERY - 1):
        turn = run_id if not sel.protocols else run_id // MUTANT_EVERY
        spec = sel.mutants[turn % len(sel.mutants)]
        m = resolve(spec, "mutant")
        return replace(SimConfig(protocol=m.mutant_of, mutant=spec, seed=seed), **m.demo)
    protocol = rnd.choice(sel.protocols)
    cls = resolve(protocol)
    if cls.topologies == "own":
        return cls.random_config(protocol, seed, rnd, sel.failures)
    workload = rnd.choice(sel.workloads_for(protocol))
    parallelism = rnd.randint(1, 3)
    records = rnd.randint(2, 8 if workload == "reachability" else 12)
    gap = rnd.choice((30, 80, 150))
    interval = rnd.choice((150, 300, 600))
    cfg = SimConfig(
        protocol=protocol, workload=workload, parallelism=parallelism, seed=seed, records=records, gap=gap,
        hot_ratio=rnd.choice((0.0, 0.0, 0.8)), interval=interval,
        max_concurrent=1 if cls.max_rounds_in_flight == 1 else rnd.randint(1, 2),
        checkpoint_timeout=rnd.choice((None, None, 1500)), aligned_timeout=rnd.choice((50, 200, 400)),
        latency=rnd.randint(1, 80), jitter=rnd.choice((1, 30, 60, 150)), buffer=rnd.randint(1, 6),
        out_buffer=rnd.randint(1, 4), decline_prob=rnd.choice((0.0, 0.0, 0.05)))
    if sel.failures and rnd.random() < 0.5:
        tasks = task_ids(workload, parallelism, seed)
        horizon = records * gap + 4 * interval
        crashes = sorted((rnd.choice(tasks), rnd.randrange(horizon)) for _ in range(rnd.randint(1, 2)))
        cfg = replace(cfg, failures=tuple(crashes))
    if len(cls.recovery_modes) > 1:        # e.g. restart every task, or only those rollback propagation reaches;
        cfg = replace(cfg, recovery=rnd.choice(cls.recovery_modes))     # drawn last: the other draws stay as they were
    if cls.simulator is None and cls.family == "coordinated" and workload in ACYCLIC:
        cfg = _draw_rescale(cfg, rnd, cls.finished_inputs)   # drawn last: earlier draws stay as they were
    return cfg


def _draw_rescale(cfg, rnd: random.Random, finish: bool):
    """A restore at another parallelism (stop-with-savepoint or a failure, up or down) in
    ``RESCALE_PROB`` of the runs; else sources that finish early in ``FINISH_PROB`` (for
    protocols whose tasks let a finished input leave)."""
    x = rnd.random()
    if x < RESCALE_PROB:
        horizon = (cfg.records or 6) * (cfg.gap or 80) + 2 * cfg.interval
        kind = rnd.choice(("savepoint", "failure"))
        new = rnd.choice([p for p in (1, 2, 3, 4) if p != cfg.parallelism])
        return replace(cfg, rescale=((kind, cfg.interval + rnd.randrange(horizon), new),),
                       max_parallelism=rnd.choice((4, 16, 128)))
    if x < RESCALE_PROB + FINISH_PROB and finish:
        return replace(cfg, finish_sources=True)
    return cfg


def command(cfg, output: str = "run.jsonl") -> str:
    """The ``snapcheck simulate`` command that reproduces ``cfg``'s trace byte for byte."""
    from snapcheck.reference import SimConfig

    default = SimConfig()
    args = ["snapcheck", "simulate"]
    for f in fields(SimConfig):
        v = getattr(cfg, f.name)
        if f.name in ("protocol", "seed", "workload", "parallelism") or v != getattr(default, f.name):
            if f.name == "failures":
                for task, t in v:
                    args += ["--fail", f"{task}@{t}"]
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

    default = SimConfig()
    out = {}
    for f in fields(SimConfig):
        v = getattr(cfg, f.name)
        if v != getattr(default, f.name) or f.name in ("protocol", "seed"):
            out[f.name] = [list(x) for x in v] if f.name in ("failures", "stragglers", "rescale") else v
    return out
