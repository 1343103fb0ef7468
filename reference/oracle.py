"""End-to-end exactly-once oracle.

Exactly-once processing means that failures and recovery are invisible in the
results: after the run, every operator's state and the multiset of committed
sink outputs equal those of the failure-free run with the same seed. (Operators
are multiset-functional, see ``reference.operators``, so a different
interleaving after recovery does not change the results; a lost or
twice-processed record does.) This is the differential oracle of Flink's
``SemanticsCheckMapper`` and Kafka's ``EosTestDriver``, applied to the whole
state.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from snapcheck.reference.simulation import SimConfig, SimResult, simulate


def compare(reference: SimResult, run: SimResult) -> list[str]:
    """Differences between a run and the reference run (empty list: identical results).

    A run restored at another parallelism has other tasks than the reference: its
    sink output is compared when the workload's output does not depend on the
    parallelism (``partition_invariant``), its final states are not (``snapcheck
    check``'s rescale properties judge how state was redistributed)."""
    problems: list[str] = []
    want, got = Counter(reference.outputs), Counter(run.outputs)
    rescaled = bool(run.config.rescale)
    if rescaled and not partition_invariant(run.config):
        want = got
    if want != got:
        missing = list((want - got).elements())
        extra = list((got - want).elements())
        problems.append(f"sink output differs: {len(missing)} missing (e.g. {missing[:3]}), "
                        f"{len(extra)} extra (e.g. {extra[:3]})")
    for task, state in ({} if rescaled else reference.final_states).items():
        other = run.final_states.get(task)
        if other != state:
            problems.append(f"final state of {task} differs: {_short(state)} vs {_short(other)}")
    if run.metrics["stuck"] or run.metrics["truncated"]:
        problems.append("the run did not finish (stuck or truncated)")
    return problems


def exactly_once(cfg: SimConfig, run: SimResult | None = None) -> list[str]:
    """Run ``cfg`` (unless ``run`` is given) and compare it with the same config
    without failures, declines or mutant.

    A run without failures or mutant that reports no declined snapshot (metric
    ``declines`` = 0) is its own failure-free run: declines draw from their own
    random stream, which nothing else reads, so the same config with
    ``decline_prob = 0`` takes exactly the same steps. It is then compared with
    itself instead of being simulated again."""
    if run is None:
        run = simulate(cfg, record=False)
    if not cfg.failures and not cfg.rescale and cfg.mutant is None and run.metrics.get("declines") == 0:
        return compare(run, run)
    base = simulate(replace(cfg, failures=(), decline_prob=0.0, mutant=None, rescale=()), record=False)
    return compare(base, run)


def partition_invariant(cfg: SimConfig) -> bool:
    """Whether the workload's sink output is the same at every parallelism: no edge
    broadcasts (a broadcast copies each record once per receiving task) and every
    operator with state of its own (other than sources and sinks) reads hash edges
    only, so a key's records meet in one task whatever the parallelism."""
    from snapcheck.reference.simulation import resolve

    _, wl, _ = resolve(cfg)
    if any(e.partitioning == "broadcast" for e in wl.edges):
        return False
    for op in wl.operators:
        if op.source or op.sink or op.make(0).snapshot() is None:
            continue
        if any(e.partitioning != "hash" for e in wl.edges if e.dst == op.name):
            return False
    return True


def _short(x, n: int = 160) -> str:
    s = repr(x)
    return s if len(s) <= n else s[:n] + "…"
