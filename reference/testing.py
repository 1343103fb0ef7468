"""Hypothesis strategies for property-testing checkpointing protocols.

Use them from your own pytest suite to test a protocol you plugged into the
simulator (``reference.protocol``) against the checker and the end-to-end
oracle::

    from hypothesis import given, settings
    from snapcheck.checker import check_trace
    from snapcheck.reference import simulate
    from snapcheck.reference.oracle import exactly_once
    from snapcheck.reference.testing import sim_configs

    @settings(max_examples=50, deadline=None)
    @given(sim_configs(protocols=[MyProtocol()], cyclic=False))
    def test_my_protocol(cfg):
        res = simulate(cfg)
        assert check_trace(res.trace()).clean
        assert exactly_once(cfg, res) == []

Strategies:

* ``topologies(cyclic)`` — random dataflow graphs (``Workload``): sources, maps,
  filters, keyed aggregates, windowed counts and a sink, with forward, hash and
  broadcast edges and random parallelism; ``cyclic=True`` adds back-edges.
* ``workloads(cyclic)`` — a named NexMark/reachability workload or a random graph.
* ``schedules(protocol)`` — timing and flow-control parameters (seed, network
  delay, buffer sizes, checkpoint interval, concurrency, input rate, skew) and
  round aborts (declined snapshots, checkpoint timeouts).
* ``failures(tasks, horizon)`` — crash schedules: which tasks fail when.
* ``sim_configs(...)`` — complete ``SimConfig`` values combining the above; with
  ``rescales=True``, half of those of a protocol that declares it can be restored at
  another parallelism (``Protocol.rescalable``, on the shared simulator) on an acyclic
  workload restore at another parallelism once (``SimConfig.rescale``).
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from snapcheck.reference.catalogue import PROTOCOLS, as_list, resolve
from snapcheck.reference.protocol import Protocol
from snapcheck.reference.simulation import SimConfig, is_cyclic
from snapcheck.reference.topology import Workload, expand
from snapcheck.reference.workloads import CYCLIC, WORKLOADS, random_graph

COORDINATED = tuple(name for name, cls in PROTOCOLS.items() if cls.family == "coordinated")
ACYCLIC_WORKLOADS = ("q1", "q3", "q8", "q12", "diamond")
CYCLIC_WORKLOADS = ("reachability",)


@st.composite
def topologies(draw, cyclic: bool = False, max_ops: int = 4, max_parallelism: int = 3, records: int = 6) -> Workload:
    """A random graph; the structure is drawn through hypothesis (so it shrinks)."""
    rng = draw(st.randoms(use_true_random=False))
    return random_graph(
        rng,
        cyclic=cyclic,
        max_ops=max_ops,
        max_parallelism=max_parallelism,
        records=records,
        hot_ratio=draw(st.sampled_from([0.0, 0.0, 0.5])),
    )


def workloads(cyclic: bool | None = False, max_parallelism: int = 3):
    """A workload name (NexMark or reachability) or a random topology. ``cyclic``:
    False only acyclic, True only cyclic, None both."""
    names = {False: ACYCLIC_WORKLOADS, True: CYCLIC_WORKLOADS, None: ACYCLIC_WORKLOADS + CYCLIC_WORKLOADS}[cyclic]
    graphs = [
        topologies(cyclic=c, max_parallelism=max_parallelism)
        for c in ((False,) if cyclic is False else (True,) if cyclic else (False, True))
    ]
    return st.one_of(st.sampled_from(names), *graphs)


@st.composite
def schedules(draw, protocol: str | Protocol = "abs-aligned") -> dict:
    """Timing and flow-control fields of a ``SimConfig`` (and, for the uncoordinated family
    named by ``protocol``, its recovery mode)."""
    cls = resolve(protocol)
    concurrent = draw(st.integers(1, min(2, cls.max_rounds_in_flight or 2)))
    recovery = draw(st.sampled_from(cls.recovery_modes)) if not isinstance(protocol, Protocol) else "restart-all"
    return {
        "seed": draw(st.integers(0, 2**31 - 1)),
        "latency": draw(st.integers(1, 80)),
        "jitter": draw(st.sampled_from([1, 30, 60, 150])),
        "buffer": draw(st.integers(1, 6)),
        "out_buffer": draw(st.integers(1, 4)),
        "interval": draw(st.sampled_from([150, 300, 600])),
        "max_concurrent": concurrent,
        "records": draw(st.integers(2, 12)),
        "gap": draw(st.sampled_from([30, 80, 150])),
        "hot_ratio": draw(st.sampled_from([0.0, 0.0, 0.8])),
        "aligned_timeout": draw(st.sampled_from([50, 200, 400])),
        "decline_prob": draw(st.sampled_from([0.0, 0.0, 0.03])),
        "checkpoint_timeout": draw(st.sampled_from([None, None, 1500])),
        "recovery": recovery,
    }


def failures(tasks: list[str], horizon: int, max_failures: int = 2):
    """Up to ``max_failures`` crashes of the given tasks in [0, horizon) (``horizon`` ≥ 1,
    ``tasks`` not empty: else a ``ValueError`` saying so).

    >>> failures([], 100)
    Traceback (most recent call last):
    ValueError: failures: tasks is empty: there is no task to crash
    """
    if not tasks:
        raise ValueError("failures: tasks is empty: there is no task to crash")
    if type(horizon) is not int or horizon < 1:
        raise ValueError(f"failures: horizon is a number of ticks of at least 1, not {horizon!r}")
    if type(max_failures) is not int or max_failures < 0:
        raise ValueError(f"failures: max_failures is a count of at least 0, not {max_failures!r}")
    return st.lists(st.tuples(st.sampled_from(tasks), st.integers(0, horizon - 1)), max_size=max_failures).map(tuple)


def task_ids(workload: str | Workload, parallelism: int, seed: int) -> list[str]:
    """The task ids a workload expands to (named workloads use ``parallelism``)."""
    from snapcheck.reference.workloads import make_workload

    wl = make_workload(workload, parallelism, seed) if isinstance(workload, str) else workload
    return [tid for tid, _, _ in expand(wl).tasks]


def sim_configs(
    protocols=None,
    cyclic: bool | None = None,
    with_failures: bool = True,
    max_parallelism: int = 3,
    rescales: bool = False,
) -> st.SearchStrategy[SimConfig]:
    """Complete simulation configs. ``protocols``: names, ``MODULE:CLASS`` specs,
    ``Protocol`` classes or instances, or one of them (one string may list names with
    commas, as ``run_validation`` takes them); default: the coordinated family
    ``COORDINATED``; a protocol whose ``topologies`` is ``"acyclic"`` only gets acyclic
    workloads. Each protocol is resolved and its declarations checked here, as
    ``snapcheck simulate`` does (an unknown name or a declaration the simulator cannot
    use is a ``UsageError``), not at the first draw. ``rescales``: half the configs of a
    ``rescalable`` protocol of the shared simulator on an acyclic workload get a restore
    at another parallelism (``rescale_of``); a protocol declaring ``rescalable = False``
    never does."""
    chosen = list(COORDINATED) if protocols is None else as_list(protocols) or []
    for p in chosen:
        resolve(p)
    return _sim_configs(chosen, cyclic, with_failures, max_parallelism, rescales)


@st.composite
def _sim_configs(draw, protocols, cyclic, with_failures, max_parallelism, rescales) -> SimConfig:
    protocol = draw(st.sampled_from(protocols))
    cls = resolve(protocol)
    only = cls.topologies
    workload = draw(workloads(False if only == "acyclic" else True if only == "cyclic" else cyclic, max_parallelism))
    fields = draw(schedules(protocol))
    parallelism = draw(st.integers(1, max_parallelism))
    if isinstance(workload, str) and workload in WORKLOADS:
        fields["records"] = min(fields["records"], 8 if workload == "reachability" else 12)
    cfg = SimConfig(protocol=protocol, workload=workload, parallelism=parallelism, **fields)
    if with_failures:
        horizon = fields["records"] * fields["gap"] + 4 * fields["interval"]
        tasks = task_ids(workload, parallelism, fields["seed"])
        cfg = replace(cfg, failures=draw(failures(tasks, horizon)))
    if (
        rescales
        and cls.rescalable
        and not (workload in CYCLIC if isinstance(workload, str) else is_cyclic(workload))
        and draw(st.booleans())
    ):
        cfg = replace(cfg, **draw(rescale_of(cfg, max_parallelism)))
    return cfg


@st.composite
def rescale_of(draw, cfg: SimConfig, max_parallelism: int = 3) -> dict:
    """The ``SimConfig`` fields of one restore of ``cfg``'s job at another parallelism (at
    most ``max_parallelism``, at least 2): after a stop-with-savepoint or a failure, some
    time after the first checkpoint interval, with a drawn number of key groups."""
    horizon = (cfg.records or 6) * (cfg.gap or 80) + 2 * cfg.interval
    others = [p for p in range(1, max(2, max_parallelism) + 1) if p != cfg.parallelism]
    return {
        "rescale": (
            (
                draw(st.sampled_from(("savepoint", "failure"))),
                cfg.interval + draw(st.integers(0, horizon)),
                draw(st.sampled_from(others)),
            ),
        ),
        "max_parallelism": draw(st.sampled_from((4, 16, 128))),
    }
