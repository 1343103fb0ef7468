"""End-to-end exactly-once oracle.

Exactly-once processing means that failures and recovery are invisible in the
results: after the run, every operator's state and the multiset of committed
sink outputs equal those of the failure-free run with the same seed. (Operators
are multiset-functional, see ``reference.operators``, so a different
interleaving after recovery does not change the results; a lost or
twice-processed record does.) This is the differential oracle of Flink's
``SemanticsCheckMapper`` and Kafka's ``EosTestDriver``, applied to the whole
state.

The failure-free run must itself reach a committed end state: when it gave up
(every round triggered at its end was aborted, so its last transactions were never
published; ``SimResult.gave_up``), there is nothing to compare with and
``exactly_once`` raises ``Inconclusive`` instead of reporting the missing
transactions as differences of the run under test.
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
        problems.append(
            f"sink output differs: {len(missing)} missing (e.g. {missing[:3]}), {len(extra)} extra (e.g. {extra[:3]})"
        )
    for task, state in ({} if rescaled else reference.final_states).items():
        other = run.final_states.get(task)
        if other != state:
            problems.append(f"final state of {task} differs: {_short(state)} vs {_short(other)}")
    if run.metrics["stuck"] or run.metrics["truncated"]:
        problems.append("the run did not finish (stuck or truncated)")
    return problems


REFERENCE_PROTOCOL = "chandy-lamport"  # the dataflow's results, for protocols the kit does not know


def baseline(cfg: SimConfig) -> SimConfig | None:
    """The configuration whose results ``cfg``'s run must equal, or None when the run is
    its own baseline.

    * A run of a catalogue protocol with failures, declines or a rescale: the same
      configuration without them; a mutant's run: its base protocol's (``mutant_of``) run.
    * A protocol from outside the catalogue that runs on the shared simulator: the same
      dataflow under ``chandy-lamport`` without failures, declines or mutant — even a
      failure-free run of it must publish exactly the dataflow's results (a lost or
      duplicated final transaction shows here).

    A run without failures or mutant that reports no declined snapshot is its own
    failure-free run (declines draw from their own random stream, which nothing else
    reads, so the same config with ``decline_prob = 0`` takes exactly the same steps)."""
    from snapcheck.reference.catalogue import is_builtin, resolve

    cls = resolve(cfg.protocol)
    clean = replace(cfg, failures=(), decline_prob=0.0, mutant=None, rescale=())
    if not is_builtin(cls) and cls.simulator is None and cls.topologies != "own":
        return replace(clean, protocol=REFERENCE_PROTOCOL, recovery="restart-all")
    if not cfg.failures and cfg.mutant is None and not cfg.decline_prob and not cfg.rescale:
        return None
    return clean


OPTED_OUT = "the protocol declares failure_free_oracle = False"
MUTANT_OPTED_OUT = "the mutant declares failure_free_oracle = False"


def not_judged(cfg: SimConfig) -> str | None:
    """Why the oracle does not judge a run of ``cfg`` (None: it does): its protocol opts
    out (``Protocol.failure_free_oracle``), or the run is its own baseline (``baseline``).

    >>> not_judged(SimConfig(protocol="unaligned", workload="q1"))
    'the run is its own failure-free run (no failure, decline, rescale or mutant)'
    >>> not_judged(SimConfig(protocol="liverobin"))
    'the protocol declares failure_free_oracle = False'

    A mutant's run is judged against its base protocol's failure-free run, unless the
    mutant opts out itself (e.g. one that changes the job's dataflow, whose results then
    differ from the base's whatever its bug does):

    >>> not_judged(SimConfig(protocol="regional-aligned", mutant="regional-dependent-regions"))
    'the mutant declares failure_free_oracle = False'
    """
    from snapcheck.reference.catalogue import resolve

    if not resolve(cfg.protocol).failure_free_oracle:
        return OPTED_OUT
    if cfg.mutant and not resolve(cfg.mutant, "mutant").failure_free_oracle:
        return MUTANT_OPTED_OUT
    if baseline(cfg) is None:
        return "the run is its own failure-free run (no failure, decline, rescale or mutant)"
    return None


class Inconclusive(Exception):
    """The oracle cannot judge a run: the failure-free run it compares with has no
    committed end state (``SimResult.gave_up``) or never finished (cut by a livelock
    guard, ``metrics["truncated"]``)."""


class NotApplicable(Inconclusive):
    """The oracle does not apply to the run: its protocol, or its mutant, declares
    ``failure_free_oracle = False`` (its results may differ from the failure-free run's
    whatever it does right). Comparing anyway would read such differences as a bug, or an
    empty comparison as a pass."""


def exactly_once(cfg: SimConfig, run: SimResult | None = None) -> list[str]:
    """Run ``cfg`` (unless ``run`` is given) and compare its results with those of its
    ``baseline``. Raises ``Inconclusive`` when the run itself or that baseline run gave
    up (neither has a committed end state), or the baseline never finished; and
    ``NotApplicable`` (an ``Inconclusive``) when its protocol or mutant declares the
    oracle does not apply.

    >>> exactly_once(SimConfig(protocol="liverobin"))
    Traceback (most recent call last):
    snapcheck.reference.oracle.NotApplicable: the protocol declares failure_free_oracle = False
    """
    why = not_judged(cfg)
    if why in (OPTED_OUT, MUTANT_OPTED_OUT):
        raise NotApplicable(why)
    if run is None:
        run = simulate(cfg, record=False)
    base = baseline(cfg)
    if base is None or (base == replace(cfg, decline_prob=0.0) and run.metrics.get("declines") == 0):
        _judgeable(run)
        return compare(run, run)
    reference = simulate(base, record=False)
    m = reference.metrics
    if reference.gave_up:
        raise Inconclusive(
            f"the failure-free run gave up (every final round aborted; {m['rounds_completed']} of "
            f"{m['rounds_started']} rounds completed): no committed end state to compare with"
        )
    if m.get("truncated"):
        raise Inconclusive(
            "the failure-free run was cut by the livelock guard (it never finished: "
            f"{m['rounds_completed']} rounds completed): no end state to compare with"
        )
    _judgeable(run)
    return compare(reference, run)


def _judgeable(run: SimResult) -> None:
    """Raise ``Inconclusive`` when ``run`` gave up: it has no committed end state, and its
    missing final transactions are no loss (nor is a round that never completed: none hangs)."""
    if run.gave_up:
        m = run.metrics
        raise Inconclusive(
            f"the run gave up (every final round aborted; {m['rounds_completed']} of {m['rounds_started']} "
            "rounds completed, none hangs): no committed end state to judge"
        )


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
