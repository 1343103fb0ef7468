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
* ``stress``: everything at once and hard — frequent (overlapping) rounds, a fast input,
  tiny buffers, declines, timeouts, a straggler in half the runs, one to three crashes
  in most runs, cycles for the protocols made for them.
* ``backpressure``: checkpointing under backpressure — one credit and one output slot per
  channel, a fast input, one round at a time, declined snapshots — where aligned
  barriers wait behind blocked inputs (half the runs on a dataflow whose branches meet
  again); crashes (half the runs) at protocol moments as
  ``moments`` places them: the other half runs failure-free, where a hang or a loss
  that a recovery would mask shows.
* ``pct``: the uniform schedule plus one to three schedule perturbations at uniformly
  placed steps (``SimConfig.pauses``), in the spirit of PCT (Burckhardt et al., ASPLOS
  2010).
* ``targeted``: a portfolio: each run draws one of ``stress``, ``backpressure`` and
  ``moments`` (``PORTFOLIO``), so no bug class is left to a single distribution that
  happens to miss it; and every crash it places at a situation or a time is *landed*
  (``land``): moved to an occurrence of that situation (a time) the run really reaches,
  drawn uniformly over the run, mostly after its first completed round, so it neither
  misses (a situation the run never reaches) nor clusters in the first round (where a
  recovery restarts from the initial state and tests little), and a checkpoint timeout
  is landed on the run's own round durations (``land_timeout``); in half its runs the
  coordinator's timing is drawn too (``timing``): control messages slow or jittery, so a
  completion or abort notice can arrive after the next round's records, and a crash
  noticed at once or late.

Under ``moments``, ``stress`` and ``backpressure`` a protocol with its own dataflow
that declares faults of the whole job (``Protocol.job_faults``, e.g. a rescale) gets
one, when it drew none itself, at a situation of the whole job (``own_moments``).

Under every strategy a protocol that declares non-FIFO channels (``Protocol.fifo``
False; a mutant is drawn by its base protocol's declaration) gets, in
``REORDER_PROB`` of its runs, room for records to overtake each other (``reordering``):
with one credit per channel, as tiny buffers and ``backpressure`` have, a channel
holds one record at a time and cannot reorder records.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from snapcheck.traces.model import GENERATION

STRATEGIES = ("uniform", "moments", "swarm", "stress", "backpressure", "pct", "targeted")
FEATURES = ("declines", "timeouts", "skew", "tiny-buffers", "latency", "overlap")
# What ``targeted`` mixes, and how often: the mixture that found every mutant of the kit
# fastest in the benchmark (benchmarks/bench_hunt.py; docs/benchmarks.md, "Hunting mutants
# blind"), keeping calmer runs with crashes at protocol moments in the mix.
PORTFOLIO = (("stress", 0.45), ("backpressure", 0.45), ("moments", 0.1))
JOB_FAULT_PROB = 0.3  # runs of a member of ``targeted`` with a fault of the whole job at a situation (own_moments)
AFTER_COMPLETION = 0.75  # landed crashes placed after the run's first completed round, when it has one
TIMED = ("targeted",)  # strategies that also draw the coordinator's timing (timing)
TIMING_PROB = 0.5  # runs of a TIMED strategy whose coordinator's timing is drawn
SPARSE_PROB = 0.25  # runs of a TIMED strategy whose checkpoints are drawn sparse (sparse)
LANDED = ("targeted",)  # strategies whose crashes at situations are landed on occurrences the run reaches (land)
REORDER_PROB = 0.5  # runs of a protocol with non-FIFO channels given room to reorder records (reordering)


def pick(strategy: str, rnd) -> str:
    """The strategy a run follows: ``targeted`` draws one of its portfolio."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown exploration strategy {strategy!r} (known: {', '.join(STRATEGIES)})")
    if strategy != "targeted":
        return strategy
    x = rnd.random()
    for name, weight in PORTFOLIO:
        x -= weight
        if x < 0:
            return name
    return PORTFOLIO[-1][0]


def draw(strategy: str, rnd, protocol: str, cls, seed: int, workloads: tuple, failures: bool):
    """The ``SimConfig`` of one run of ``protocol`` (class ``cls``) on a dataflow workload,
    under ``strategy`` (one of ``PORTFOLIO``: see ``pick``)."""
    from snapcheck.reference.testing import task_ids

    if strategy == "swarm":
        cfg = _swarm(rnd, protocol, cls, seed, workloads, {f: rnd.random() < 0.5 for f in FEATURES})
    elif strategy == "stress":
        cfg = _stress(rnd, protocol, cls, seed, workloads)
    elif strategy == "backpressure":
        cfg = _backpressure(rnd, protocol, cls, seed, workloads)
    else:
        cfg = _uniform(rnd, protocol, cls, seed, workloads)
    tasks: list[str] = task_ids(cfg.workload, cfg.parallelism, seed) if failures else []
    horizon = cfg.records * cfg.gap + 4 * cfg.interval
    if strategy == "moments":
        if failures and rnd.random() < 0.7:
            cfg = replace(cfg, failures=_moments(rnd, cls, tasks, horizon))
    elif strategy == "backpressure":
        if failures and rnd.random() < 0.5:
            cfg = replace(cfg, failures=_moments(rnd, cls, tasks, horizon))
    elif strategy == "stress":
        if failures and rnd.random() < 0.8:
            cfg = replace(
                cfg,
                failures=_moments(rnd, cls, tasks, horizon)
                + tuple((rnd.choice(tasks), rnd.randrange(horizon)) for _ in range(rnd.randint(0, 1))),
            )
    elif failures and rnd.random() < 0.5:
        cfg = replace(
            cfg, failures=tuple(sorted((rnd.choice(tasks), rnd.randrange(horizon)) for _ in range(rnd.randint(1, 2))))
        )
    if strategy == "stress" and rnd.random() < 0.5:
        cfg = replace(cfg, stragglers=_straggler(rnd, tasks or task_ids(cfg.workload, cfg.parallelism, seed)))
    if strategy == "pct":
        steps = max(10, 3 * cfg.records * len(tasks or task_ids(cfg.workload, cfg.parallelism, seed)))
        pauses = sorted({rnd.randint(1, steps): rnd.choice((100, 300, 1000)) for _ in range(rnd.randint(1, 3))}.items())
        cfg = replace(cfg, pauses=tuple(pauses))
    if len(cls.recovery_modes) > 1:  # e.g. restart every task, or only those rollback propagation reaches;
        cfg = replace(cfg, recovery=rnd.choice(cls.recovery_modes))  # drawn last: the other draws stay as they were
    return cfg


def rounds_in_flight(rnd, cls, most: int, least: int = 1) -> int:
    """Rounds at once for a run of protocol class ``cls``: drawn from ``least … most``, never
    more than the protocol declares it runs (``Protocol.max_rounds_in_flight``).

    >>> import random
    >>> class Two:
    ...     max_rounds_in_flight = 2
    >>> max(rounds_in_flight(random.Random(s), Two, 3) for s in range(50))
    2
    """
    limit = cls.max_rounds_in_flight or most
    return 1 if limit == 1 else rnd.randint(least, min(most, limit))


def reordering(rnd, cfg):
    """``cfg`` of a protocol with non-FIFO channels (drawn last, after every other draw of
    its run: ``configs.draw_config``) with, in ``REORDER_PROB`` of the runs, room for the
    records of a channel to overtake each other: two to four credits per channel (two records on the
    wire at once) and a network jitter of 60 to 400 ticks, above the gaps between sends;
    each kept where ``cfg`` already has more."""
    if rnd.random() >= REORDER_PROB:
        return cfg
    return replace(cfg, buffer=max(cfg.buffer, rnd.randint(2, 4)), jitter=max(cfg.jitter, rnd.choice((60, 150, 400))))


def _own_model(cls) -> bool:
    """Is ``cls``'s simulator a model of its own, without the dataflow engine's coordinator
    and its checkpoint interval (``Protocol.simulator`` not a ``reference.sim.engine.Simulator``)?"""
    from snapcheck.reference.sim.engine import Simulator

    return cls.simulator is not None and not (isinstance(cls.simulator, type) and issubclass(cls.simulator, Simulator))


def sparse(rnd, cls, cfg):
    """``cfg`` with, in ``SPARSE_PROB`` of the runs, a long checkpoint interval (600 to 2,000
    ticks, where the hard strategies draw 80 to 300): many records between two checkpoints.
    A protocol whose own rules take checkpoints between the periodic ones (forced
    checkpoints of communication-induced checkpointing, an epoch carried on records) shows
    a bug in those rules only when the periodic ones are rare: a user's off-by-one in
    forcing a checkpoint was caught in 11 of 12 runs at the default interval (600) and in
    none at 200. Left as it is for a protocol whose simulator is a model of its own.

    >>> import random
    >>> from snapcheck.reference import SimConfig
    >>> from snapcheck.reference.catalogue import resolve
    >>> drawn = [sparse(random.Random(s), resolve("bcs"), SimConfig(interval=100)).interval for s in range(40)]
    >>> sorted(set(drawn))
    [100, 600, 1000, 2000]
    """
    if _own_model(cls):
        return cfg
    if rnd.random() >= SPARSE_PROB:
        return cfg
    return replace(cfg, interval=rnd.choice((600, 1000, 2000)))


def timing(rnd, cls, cfg):
    """``cfg`` with, in ``TIMING_PROB`` of the runs, the coordinator's timing drawn:
    control messages (triggers, acknowledgements, completion and abort notices) fast,
    slow (longer than a checkpoint interval of the hard strategies: a notice about round
    ``n`` arrives after the barriers and records of round ``n + 1``) or jittery (control
    channels stay FIFO; with a checkpoint timeout, at most a quarter of it each, so that
    rounds can still complete), and a crash noticed at once or late (more of the run
    happens between a crash and its recovery). Every other strategy keeps the defaults (20
    ticks, no jitter, 100 ticks), so bugs that need a late notice or a late detection
    escape them. A protocol whose simulator is a model of its own, without the dataflow
    engine's coordinator (``Protocol.simulator`` not a ``reference.sim.engine.Simulator``),
    is left as it is.

    >>> import random
    >>> from snapcheck.reference import SimConfig
    >>> from snapcheck.reference.catalogue import resolve
    >>> drawn = [timing(random.Random(s), resolve("abs-aligned"), SimConfig()) for s in range(40)]
    >>> any(c.control_latency > SimConfig().interval for c in drawn), any(c == SimConfig() for c in drawn)
    (True, True)
    >>> timing(random.Random(0), resolve("liverobin"), SimConfig(protocol="liverobin")) == SimConfig(protocol="liverobin")
    True
    """
    if _own_model(cls):
        return cfg
    if rnd.random() >= TIMING_PROB:
        return cfg
    latency, jitter = rnd.choice((1, 20, 150, 700)), rnd.choice((0, 0, 100, 400))
    if cfg.checkpoint_timeout is not None:  # a round needs two control hops (trigger, acknowledgement):
        cap = cfg.checkpoint_timeout // 4  # keep it able to complete before its timeout
        latency, jitter = min(latency, cap), min(jitter, cap)
    return replace(cfg, control_latency=latency, control_jitter=jitter, detect_delay=rnd.choice((5, 100, 100, 600)))


def _uniform(rnd, protocol, cls, seed, workloads):
    from snapcheck.reference import SimConfig

    workload = rnd.choice(workloads)
    parallelism = rnd.randint(1, 3)
    records = rnd.randint(2, 8 if workload == "reachability" else 12)
    gap = rnd.choice((30, 80, 150))
    interval = rnd.choice((150, 300, 600))
    return SimConfig(
        protocol=protocol,
        workload=workload,
        parallelism=parallelism,
        seed=seed,
        records=records,
        gap=gap,
        hot_ratio=rnd.choice((0.0, 0.0, 0.8)),
        interval=interval,
        max_concurrent=rounds_in_flight(rnd, cls, 2),
        checkpoint_timeout=rnd.choice((None, None, 1500)),
        aligned_timeout=rnd.choice((50, 200, 400)),
        latency=rnd.randint(1, 80),
        jitter=rnd.choice((1, 30, 60, 150)),
        buffer=rnd.randint(1, 6),
        out_buffer=rnd.randint(1, 4),
        decline_prob=rnd.choice((0.0, 0.0, 0.05)),
    )


def _stress(rnd, protocol, cls, seed, workloads):
    """Everything at once, hard: frequent rounds (overlapping where allowed), a fast
    input, tiny buffers half the time, declines and timeouts half the time, and the
    cycles of a protocol that supports them half the time."""
    from snapcheck.reference import SimConfig

    workload = _workload(rnd, cls, workloads)
    records = rnd.randint(8, 12 if workload == "reachability" else 24)
    tiny = rnd.random() < 0.5
    return SimConfig(
        protocol=protocol,
        workload=workload,
        parallelism=rnd.randint(1, 3),
        seed=seed,
        records=records,
        gap=rnd.choice((20, 30, 50)),
        interval=rnd.choice((80, 120, 200)),
        max_concurrent=rounds_in_flight(rnd, cls, 3),
        decline_prob=rnd.choice((0.0, 0.05, 0.1)),
        checkpoint_timeout=rnd.choice((None, 300, 800)),
        aligned_timeout=rnd.choice((20, 50, 150)),
        hot_ratio=rnd.choice((0.0, 0.8)),
        buffer=1 if tiny else rnd.randint(2, 4),
        out_buffer=1 if tiny else rnd.randint(1, 3),
        latency=rnd.randint(1, 60),
        jitter=rnd.choice((1, 30, 150, 400)),
    )


def _backpressure(rnd, protocol, cls, seed, workloads):
    """Checkpointing under backpressure: one credit and one output slot per channel, an
    input faster than the operators, barely any network delay, one round at a time,
    declined snapshots in most runs — where aligned barriers wait behind blocked inputs
    and a round that cannot complete must be given up everywhere. Half the runs take a
    workload whose branches fan out and meet again (``Workload.reconvergent``): there a
    blocked input of the meeting task backs up into the upstream task that must send
    the barrier of its other input."""
    from snapcheck.reference import SimConfig
    from snapcheck.reference.workloads import make_workload

    workload = _workload(rnd, cls, workloads)
    parallelism = rnd.randint(1, 3)
    if rnd.random() < 0.5:  # a fan-out whose branches meet again, where backpressure can stall a barrier
        meeting = [w for w in workloads if make_workload(w, parallelism, seed).reconvergent]
        workload = rnd.choice(meeting) if meeting else workload
    return SimConfig(
        protocol=protocol,
        workload=workload,
        parallelism=parallelism,
        seed=seed,
        records=rnd.randint(6, 10 if workload == "reachability" else 24),
        gap=rnd.choice((20, 30)),
        interval=rnd.choice((100, 150, 250)),
        max_concurrent=1,
        decline_prob=rnd.choice((0.0, 0.05, 0.1, 0.15)),
        checkpoint_timeout=None,
        aligned_timeout=rnd.choice((50, 200)),
        buffer=1,
        out_buffer=1,
        latency=rnd.randint(1, 5),
        jitter=rnd.choice((1, 5, 20)),
    )


def _workload(rnd, cls, workloads: tuple) -> str:
    """A workload; a protocol made for cyclic dataflows (``topologies`` "any") gets a
    cyclic one in half its runs, when any is selected."""
    cyclic = [w for w in workloads if w in ("reachability", "random-cyclic")]
    if cls.topologies == "any" and cyclic and len(cyclic) < len(workloads) and rnd.random() < 0.5:
        return rnd.choice(cyclic)
    return rnd.choice(workloads)


def _swarm(rnd, protocol, cls, seed, workloads, on: dict):
    """A configuration with exactly the features ``on`` enabled, each drawn aggressively."""
    from snapcheck.reference import SimConfig
    from snapcheck.reference.testing import task_ids

    workload = _workload(rnd, cls, workloads)
    parallelism = rnd.randint(1, 3)
    records = rnd.randint(2, 8 if workload == "reachability" else 16)
    gap = rnd.choice((30, 80, 150))
    overlap = on["overlap"] and cls.max_rounds_in_flight != 1
    cfg = SimConfig(
        protocol=protocol,
        workload=workload,
        parallelism=parallelism,
        seed=seed,
        records=records,
        gap=gap,
        interval=rnd.choice((100, 150)) if overlap else rnd.choice((150, 300, 600)),
        max_concurrent=rounds_in_flight(rnd, cls, 3, least=2) if overlap else 1,
        decline_prob=rnd.choice((0.03, 0.06, 0.1)) if on["declines"] else 0.0,
        checkpoint_timeout=rnd.choice((150, 400, 1000)) if on["timeouts"] else None,
        aligned_timeout=rnd.choice((20, 50, 100)) if on["timeouts"] else rnd.choice((200, 400)),
        hot_ratio=rnd.choice((0.5, 0.9)) if on["skew"] else 0.0,
        buffer=1 if on["tiny-buffers"] else rnd.randint(3, 6),
        out_buffer=1 if on["tiny-buffers"] else rnd.randint(2, 4),
        latency=rnd.randint(60, 200) if on["latency"] else rnd.randint(1, 10),
        jitter=rnd.choice((150, 300, 600)) if on["latency"] else rnd.choice((1, 10)),
    )
    if on["skew"]:
        tasks = task_ids(workload, parallelism, seed)
        cfg = replace(cfg, stragglers=_straggler(rnd, tasks))
    return cfg


def own_moments(strategy: str, rnd, cls, cfg, failures: bool):
    """``cfg`` of a protocol with its own topology (drawn by its ``random_config``) with,
    under ``moments``, ``stress`` and ``backpressure``, in half the runs one or two more
    crashes at its situations (``_moments``, never at a random time: the protocol drew
    those), named by ``Protocol.task_names`` or ``self``; and, for a protocol with faults
    of the whole job that drew none, one at a situation of the whole job in
    ``JOB_FAULT_PROB`` of the runs (``_job_fault``). Its schedule and flow control
    stay the protocol's own (no straggler: a task slower than the protocol's own draws
    assume can overload a job for good, which no protocol survives)."""
    if not failures or strategy not in ("moments", "stress", "backpressure"):
        return cfg
    if cls.situations and rnd.random() < 0.5:
        cfg = replace(cfg, failures=tuple(cfg.failures) + _moments(rnd, cls, cls.task_names(cfg), 0, timed=0.0))
    if cls.job_faults and not any(f[0] in cls.job_faults for f in cfg.failures) and rnd.random() < JOB_FAULT_PROB:
        cfg = replace(cfg, failures=tuple(cfg.failures) + _job_fault(rnd, cls))
    return cfg


def _job_fault(rnd, cls) -> tuple:
    """One fault of the whole job (one of ``cls.job_faults``, e.g. a rescale) right after
    the first to third occurrence of a situation of the whole job ``cls`` lists
    (``OF_THE_JOB``: two rounds in flight, a round that just completed, regionally or
    with a region falling back after its tasks acknowledged) — a rescale restores the
    latest completed round, so the moments that decide which round that is are where
    it differs from one at a random time. None when ``cls`` lists no such situation."""
    from snapcheck.reference.sim.exploration import OF_THE_JOB

    situations = [s for s in cls.situations if s in OF_THE_JOB]
    if not situations:
        return ()
    return ((rnd.choice(cls.job_faults), rnd.choice(situations), rnd.randint(1, 3)),)


def _straggler(rnd, tasks: list) -> tuple:
    """One task three to ten times slower than the others: it keeps rounds pending while
    the rest of the dataflow moves on (and fails, and recovers)."""
    return ((rnd.choice(tasks), rnd.choice((3.0, 5.0, 10.0))),)


def _moments(rnd, cls, tasks: list, horizon: int, timed: float = 1 / 3) -> tuple:
    """One or two crashes: the first right after the k-th occurrence of a situation
    relevant to ``cls`` that needs no earlier crash (or, with probability ``timed``, at a
    random time); half the runs add a second crash, at a situation of the recovery it
    caused (during recovery, during replay, a crash in recovery, a stale message) when
    ``cls`` has any. Without ``tasks`` only situations at a task are chosen (the crash
    hits ``self``)."""
    from snapcheck.reference.sim.exploration import AFTER_A_CRASH

    situations = [s for s in cls.situations if tasks or _of_a_task(s)]
    first = [s for s in situations if s not in AFTER_A_CRASH]
    later = [s for s in situations if s in AFTER_A_CRASH] or first
    crashes = [_at(rnd, first, tasks, horizon, timed)]
    if rnd.random() < 0.5:
        crashes.append(_at(rnd, later, tasks, horizon, timed * 3 / 4))
    return tuple(crashes)


def _of_a_task(name: str) -> bool:
    """Does situation ``name`` occur at a task (so a crash there may hit ``self``)? The
    simulator's task situations, and every situation a protocol marks itself
    (``ctx.situation``, always at its task)."""
    from snapcheck.reference.sim.exploration import AT_A_TASK, SITUATIONS

    return name in AT_A_TASK or name not in SITUATIONS


def _at(rnd, situations: list, tasks: list, horizon: int, timed: float) -> tuple:
    """A crash after the k-th occurrence of one of ``situations`` (of the task where it
    occurs, when it occurs at a task, seven times in ten; always without ``tasks``), or
    at a random time. A situation a protocol marks itself (``ctx.situation``) occurs at a
    task. A situation of a task recurs about once per task and round, so its k ranges
    over three rounds' worth; one of the whole job (a round completing, a recovery) over
    three occurrences."""
    from snapcheck.reference.sim.exploration import SELF

    if not situations or (tasks and rnd.random() < timed):
        return rnd.choice(tasks), rnd.randrange(horizon)
    name = rnd.choice(situations)
    per_task = _of_a_task(name)
    target = SELF if per_task and (not tasks or rnd.random() < 0.7) else rnd.choice(tasks)
    return target, name, rnd.randint(1, 3 * len(tasks) if per_task and tasks else 3)


def land(rnd, cls, cfg, drawn: tuple):
    """``cfg`` with each fault of ``drawn`` (entries of ``cfg.failures`` the strategy drew)
    that waits for a situation needing no earlier crash — ``(target, situation, k)`` —
    moved to a moment the run reaches. A dry run of ``cfg`` without those faults (the
    same seed, so the same run up to the first of them) counts every situation's
    occurrences, and how many came before a round first completed. The fault keeps its
    situation when the dry run reached it, else takes one of the protocol's situations
    of the same sort that it reached (of a task for ``self``, of the whole job for a
    fault of the whole job). A fault naming a task that left the job (a rescale retired
    it) names, half the time or when its situation came only after it left, its
    successor in the job at the end (``_successor``); otherwise it counts only the
    occurrences before the task left (and a task a rescale started, only those after it
    joined). Its ``k`` is drawn uniformly among that situation's
    occurrences after the first completed round (``AFTER_COMPLETION`` of the time, when
    there are such occurrences: a crash before any round completed restarts from the
    initial state, where most recovery bugs cannot show), else among all of them. A
    fault whose situation the dry run never reached in any form stays as drawn (it may
    not fire: ``faults_not_fired``). A fault at a time moves to a time drawn uniformly
    between the first completion (``AFTER_COMPLETION`` of the time; else the start) and
    the dry run's end, or the time its task left the job if earlier (a rescale retired
    it). Then faults at situations that follow a crash (recovery, replay…) are landed the
    same way on a second dry run, with the crashes just landed and without them: on an
    occurrence the recovery those crashes cause reaches. The result is an ordinary
    configuration: its reproduction command carries the landed ``k`` and times.

    >>> from snapcheck.reference import SimConfig
    >>> from snapcheck.reference.catalogue import resolve
    >>> import random
    >>> cfg = SimConfig(protocol="abs-aligned", workload="q1", records=12, failures=(("self", "snapshot", 1),))
    >>> landed = land(random.Random(1), resolve("abs-aligned"), cfg, cfg.failures)
    >>> landed.failures[0][:2], 1 <= landed.failures[0][2] <= dry_run(cfg, [0]).counts["snapshot"]
    (('self', 'snapshot'), True)
    """
    from snapcheck.reference.sim.exploration import AFTER_A_CRASH

    movable = [i for i, f in enumerate(cfg.failures) if f in drawn and (len(f) == 2 or f[1] not in AFTER_A_CRASH)]
    after = [i for i, f in enumerate(cfg.failures) if f in drawn and len(f) == 3 and f[1] in AFTER_A_CRASH]
    failures = list(cfg.failures)
    if movable:
        dry = dry_run(cfg, movable)
        for i in movable:
            f = failures[i]
            failures[i] = _land_time(rnd, f, dry) if len(f) == 2 else _land_situation(rnd, cls, f, dry)
    if after:  # (on a dry run with the crashes just landed, which the recovery follows)
        dry = dry_run(replace(cfg, failures=tuple(failures)), after)
        for i in after:
            failures[i] = _land_situation(rnd, cls, failures[i], dry, after_completion=False)
    return replace(cfg, failures=tuple(failures))


def _land_time(rnd, fault: tuple, dry: DryRun) -> tuple:
    """``land`` for a crash at a time: within the run (before its task left the job),
    after its first completion mostly."""
    last = min(dry.end, dry.gone.get(fault[0], dry.end))
    start = dry.first_time if dry.first_time is not None and rnd.random() < AFTER_COMPLETION else 0
    return (fault[0], rnd.randint(min(start, last), last)) if last else fault


def _land_situation(rnd, cls, fault: tuple, dry: DryRun, after_completion: bool = True) -> tuple:
    """``land`` for a crash at a situation: an occurrence ``dry`` reached while its task
    was in the job (or its successor's), of its situation or of one of the same sort."""
    from snapcheck.reference.sim.exploration import AFTER_A_CRASH, OF_THE_JOB, SELF

    target, name, k = fault
    if target in dry.at_gone and (rnd.random() < 0.5 or not dry.at_gone[target].get(name)):
        target = _successor(rnd, target, dry.alive)  # (or it crashes only at what came before it left)
    seen, since = dry.at_gone.get(target, dry.counts), dry.at_join.get(target, {})  # (the occurrences in its time)
    if seen.get(name, 0) <= since.get(name, 0):
        if name in AFTER_A_CRASH:
            sort = [s for s in cls.situations if s in AFTER_A_CRASH and (target != SELF or _of_a_task(s))]
        elif name in OF_THE_JOB:
            sort = [s for s in cls.situations if s in OF_THE_JOB]
        elif target == SELF:
            sort = [s for s in cls.situations if _of_a_task(s)]
        else:
            sort = [s for s in cls.situations if s not in AFTER_A_CRASH]
        reached = [s for s in sort if seen.get(s, 0) > since.get(s, 0)]
        if not reached:
            return target, name, k
        name = rnd.choice(reached)
    first = dry.before.get(name, 0) if after_completion and dry.before and rnd.random() < AFTER_COMPLETION else 0
    lo = max(first, since.get(name, 0)) if first < seen[name] else since.get(name, 0)
    return target, name, rnd.randint(lo + 1, seen[name])


def _successor(rnd, task: str, alive: list) -> str:
    """The task of the job at the end of a run that took over from ``task``, which a
    rescale replaced: the one of the same operator and subtask (``g2.map[1]`` for
    ``map[1]`` or ``g1.map[1]``), else one of the same operator, else any (``task`` when
    none is left).

    >>> import random
    >>> _successor(random.Random(0), "map[1]", ["g1.src[0]", "g1.map[0]", "g1.map[1]"])
    'g1.map[1]'
    >>> _successor(random.Random(0), "g1.map[2]", ["g2.src[0]", "g2.map[0]"])
    'g2.map[0]'
    """

    def unprefixed(t: str) -> str:
        return t[m.end() :] if (m := GENERATION.match(t)) else t

    base = unprefixed(task)
    same = [t for t in alive if unprefixed(t) == base]
    kin = [t for t in alive if unprefixed(t).rpartition("[")[0] == base.rpartition("[")[0]]
    return same[0] if same else rnd.choice(kin or alive) if alive else task


def land_timeout(rnd, cfg, drawn: tuple):
    """``cfg`` with its checkpoint timeout, when it has one, landed on the run's own round
    durations. A timeout drawn blind for a dataflow and a protocol the strategy knows
    nothing of is mostly on one side of every round: longer than all of them (it never
    fires), or shorter than all of them (every round aborts, nothing completes, and the
    run tests one path and has no committed state to judge: *inconclusive*). A dry run
    of ``cfg`` without a timeout and without the faults the strategy drew (``drawn``)
    measures how long its completed rounds took; the timeout becomes a duration drawn
    uniformly between their mean and twice their longest (one tick more: a round that
    lasts exactly its timeout is aborted): in some runs the slowest rounds time out, in
    the others the timeout fires only where a crash or a recovery slows a round down.
    Not only the slowest rounds every time: a round is slow when something unusual
    happened in it (a long alignment, a barrier behind a full buffer), and a bug that
    shows in such a round shows only if the round can complete. Kept as drawn when the
    dry run completed no round, or did not measure their durations (a protocol's
    simulator of its own), or the simulator refused it (the run itself says why). The
    result is an ordinary configuration: its reproduction command carries the landed
    timeout.

    >>> import random
    >>> from snapcheck.reference import SimConfig
    >>> cfg = SimConfig(protocol="abs-aligned", workload="q3", records=12, interval=100, checkpoint_timeout=1)
    >>> m = _dry_metrics(replace(cfg, checkpoint_timeout=None))
    >>> landed = land_timeout(random.Random(0), cfg, ()).checkpoint_timeout
    >>> m["checkpoint_duration_mean"] < landed <= 2 * m["checkpoint_duration_max"] + 1
    True
    >>> land_timeout(random.Random(0), replace(cfg, checkpoint_timeout=None), ()) == replace(cfg, checkpoint_timeout=None)
    True
    """
    if cfg.checkpoint_timeout is None:
        return cfg
    m = _dry_metrics(replace(cfg, checkpoint_timeout=None, failures=tuple(f for f in cfg.failures if f not in drawn)))
    if not m.get("rounds_completed") or m.get("checkpoint_duration_max") is None:  # (a model of its own
        return cfg  # may not measure its rounds)
    longest = int(m["checkpoint_duration_max"])  # (a round as long as its timeout is aborted: one tick more)
    return replace(
        cfg, checkpoint_timeout=rnd.randint(min(int(m["checkpoint_duration_mean"]), longest), 2 * longest) + 1
    )


def _dry_metrics(cfg) -> dict:
    """The metrics of a run of ``cfg`` without a trace recorded (``SimResult.metrics``);
    empty when the simulator refuses ``cfg`` (the run itself reports why)."""
    from snapcheck.reference import simulate

    try:
        return simulate(cfg, record=False).metrics
    except Exception:  # a configuration the simulator refuses: the run itself will say so
        return {}


@dataclass(frozen=True)
class DryRun:
    """What a run reached without the faults being landed (``dry_run``)."""

    counts: dict  # situation -> how often it occurred
    before: dict  # ... before a round first completed (empty when none did)
    first_time: int | None  # when a round first completed
    end: int  # the run's end time
    gone: dict  # task -> when it left the job (a rescale replaced it, or it finished)
    at_gone: dict  # task -> the counts by then
    at_join: dict  # task a rescale started -> the counts when it joined
    alive: list  # the tasks in the job at the end


def dry_run(cfg, without) -> DryRun:
    """A run of ``cfg`` without its faults at the indices ``without``, no trace recorded;
    nothing reached when the simulator refuses ``cfg`` (the run itself reports why)."""
    rest = tuple(f for i, f in enumerate(cfg.failures) if i not in without)
    m = _dry_metrics(replace(cfg, failures=rest))
    return DryRun(
        m.get("situations", {}),
        m.get("situations_at_first_completion", {}),
        m.get("first_completion_time"),
        m.get("sim_time", 0),
        m.get("retired_at", {}),
        m.get("situations_at_retirement", {}),
        m.get("situations_at_joining", {}),
        m.get("tasks_at_end", []),
    )
