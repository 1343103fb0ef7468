"""How a campaign explores: the random configuration of one run under each exploration
strategy (``--explore``). Every strategy draws from the run's own ``random.Random(seed)``,
so a run is a pure function of its seed, and everything it draws is a field of the
``SimConfig`` that the run's reproduction command carries.

* ``uniform``: topology, schedule and flow control drawn uniformly from their ranges; in
  half the runs one or two crashes at uniformly random times.
* ``moments``: the same schedule; crashes placed at protocol-relevant moments — the
  ``k``-th occurrence of a situation the protocol declares relevant (``Protocol.situations``;
  see ``reference.sim.exploration``): during alignment, between a snapshot and its
  acknowledgement, between a round's completion and its notification, during recovery
  and replay, right after a decline, while two rounds are in flight…
* ``swarm``: swarm testing ("Swarm Testing", Groce, Zhang, Eide, Chen and Regehr, ISSTA
  2012): each run enables a random subset of the features — declines, timeouts, skew and
  stragglers, tiny buffers, non-trivial latency, overlapping rounds — and draws the
  enabled ones aggressively and the others not at all.
* ``pct``: the uniform schedule plus one to three schedule perturbations at uniformly
  placed steps (``SimConfig.pauses``), in the spirit of PCT (Burckhardt et al., ASPLOS
  2010).
* ``targeted``: swarm features, moment-placed crashes and perturbations together.
"""

from __future__ import annotations

from dataclasses import replace

STRATEGIES = ("uniform", "moments", "swarm", "pct", "targeted")
FEATURES = ("declines", "timeouts", "skew", "tiny-buffers", "latency", "overlap")


def draw(strategy: str, rnd, protocol: str, cls, seed: int, workloads: tuple, failures: bool):
    """The ``SimConfig`` of one run of ``protocol`` (class ``cls``) on a dataflow workload."""
    from snapcheck.reference import SimConfig
    from snapcheck.reference.testing import task_ids

    if strategy not in STRATEGIES:
        raise ValueError(f"unknown exploration strategy {strategy!r} (known: {', '.join(STRATEGIES)})")
    if strategy in ("swarm", "targeted"):
        on = {f: rnd.random() < 0.5 for f in FEATURES}
        cfg = _swarm(rnd, protocol, cls, seed, workloads, on)
    else:
        cfg = _uniform(rnd, protocol, cls, seed, workloads)
    tasks = None
    if failures and rnd.random() < 0.5:
        tasks = task_ids(cfg.workload, cfg.parallelism, seed)
        horizon = cfg.records * cfg.gap + 4 * cfg.interval
        if strategy in ("moments", "targeted"):
            crashes = tuple(_moment(rnd, cls, tasks, horizon) for _ in range(rnd.randint(1, 2)))
        else:
            crashes = tuple(sorted((rnd.choice(tasks), rnd.randrange(horizon)) for _ in range(rnd.randint(1, 2))))
        cfg = replace(cfg, failures=crashes)
    if strategy in ("pct", "targeted"):
        tasks = tasks or task_ids(cfg.workload, cfg.parallelism, seed)
        steps = max(10, 3 * cfg.records * len(tasks))
        pauses = sorted({rnd.randint(1, steps): rnd.choice((100, 300, 1000)) for _ in range(rnd.randint(1, 3))}.items())
        cfg = replace(cfg, pauses=tuple(pauses))
    if len(cls.recovery_modes) > 1:        # e.g. restart every task, or only those rollback propagation reaches;
        cfg = replace(cfg, recovery=rnd.choice(cls.recovery_modes))     # drawn last: the other draws stay as they were
    return cfg


def _uniform(rnd, protocol, cls, seed, workloads):
    from snapcheck.reference import SimConfig

    workload = rnd.choice(workloads)
    parallelism = rnd.randint(1, 3)
    records = rnd.randint(2, 8 if workload == "reachability" else 12)
    gap = rnd.choice((30, 80, 150))
    interval = rnd.choice((150, 300, 600))
    return SimConfig(
        protocol=protocol, workload=workload, parallelism=parallelism, seed=seed, records=records, gap=gap,
        hot_ratio=rnd.choice((0.0, 0.0, 0.8)), interval=interval,
        max_concurrent=1 if cls.max_rounds_in_flight == 1 else rnd.randint(1, 2),
        checkpoint_timeout=rnd.choice((None, None, 1500)), aligned_timeout=rnd.choice((50, 200, 400)),
        latency=rnd.randint(1, 80), jitter=rnd.choice((1, 30, 60, 150)), buffer=rnd.randint(1, 6),
        out_buffer=rnd.randint(1, 4), decline_prob=rnd.choice((0.0, 0.0, 0.05)))


def _swarm(rnd, protocol, cls, seed, workloads, on: dict):
    """A configuration with exactly the features ``on`` enabled, each drawn aggressively."""
    from snapcheck.reference import SimConfig
    from snapcheck.reference.testing import task_ids

    workload = rnd.choice(workloads)
    parallelism = rnd.randint(1, 3)
    records = rnd.randint(2, 8 if workload == "reachability" else 16)
    gap = rnd.choice((30, 80, 150))
    overlap = on["overlap"] and cls.max_rounds_in_flight != 1
    cfg = SimConfig(
        protocol=protocol, workload=workload, parallelism=parallelism, seed=seed, records=records, gap=gap,
        interval=rnd.choice((100, 150)) if overlap else rnd.choice((150, 300, 600)),
        max_concurrent=rnd.randint(2, 3) if overlap else 1,
        decline_prob=rnd.choice((0.03, 0.06, 0.1)) if on["declines"] else 0.0,
        checkpoint_timeout=rnd.choice((150, 400, 1000)) if on["timeouts"] else None,
        aligned_timeout=rnd.choice((20, 50, 100)) if on["timeouts"] else rnd.choice((200, 400)),
        hot_ratio=rnd.choice((0.5, 0.9)) if on["skew"] else 0.0,
        buffer=1 if on["tiny-buffers"] else rnd.randint(3, 6),
        out_buffer=1 if on["tiny-buffers"] else rnd.randint(2, 4),
        latency=rnd.randint(60, 200) if on["latency"] else rnd.randint(1, 10),
        jitter=rnd.choice((150, 300, 600)) if on["latency"] else rnd.choice((1, 10)))
    if on["skew"]:
        tasks = task_ids(workload, parallelism, seed)
        cfg = replace(cfg, stragglers=((rnd.choice(tasks), rnd.choice((3.0, 5.0, 8.0))),))
    return cfg


def _moment(rnd, cls, tasks: list, horizon: int) -> tuple:
    """A crash right after the k-th occurrence of a situation relevant to ``cls`` (three
    in four), or at a uniformly random time."""
    from snapcheck.reference.sim.exploration import AT_A_TASK, SELF

    situations = cls.situations
    if not situations or rnd.random() < 0.25:
        return rnd.choice(tasks), rnd.randrange(horizon)
    name = rnd.choice(situations)
    target = SELF if name in AT_A_TASK and rnd.random() < 0.7 else rnd.choice(tasks)
    return target, name, rnd.randint(1, 3)
