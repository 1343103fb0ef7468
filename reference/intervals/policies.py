"""Checkpoint interval policies: fixed, Young, Daly, and Ca-Stream.

A policy decides the time to the next checkpoint trigger from an ``Observation``
of the running job (``next_interval``). Formulas:

* **Young** (1974): ``ci = sqrt(2 · t_chpt · MTBF)``.
* **Daly** (2006, "A higher order estimate of the optimum checkpoint interval for
  restart dumps"): for ``t_chpt < 2·MTBF``,
  ``ci = sqrt(2·t_chpt·M) · (1 + sqrt(t_chpt/(2M))/3 + t_chpt/(18M)) − t_chpt``, else ``M``.
* **Ca-Stream** (Sun et al., "Towards high availability distributed stream computing
  systems via checkpoint adaptation"; docs/protocols.md, "Checkpoint interval policies"):
  - the optimum of eq. 11 for the next segment with mean input rate ``v̄`` and maximum
    processing rate ``v_m``: ``ci_opt = sqrt(2·v_m·t_chpt·(MTBF + t_rs)/v̄ + t_chpt²)``
    (it maximizes the operator efficiency ``u_k`` of eq. 5 with the recovery time of
    eq. 9 and the failure count of eq. 3);
  - Algorithm 1 (fault-aware): the fault rate ``fr`` is predicted by linear regression
    over the failure counts of recent windows (``fr = 1 − exp(−forecast)``, at least
    ``fr_min`` = 0.25); while no failure occurs the interval grows,
    ``ci_n = ci_{n−1} + ci_{n−1}·(1 − fr)``; after a failure it shrinks,
    ``ci_n = ci_{n−1} − ci_{n−1}·fr``, down to ``ci_min``;
  - Algorithm 2 (resource-aware): while CPU or memory utilization exceeds its
    threshold, ``ci_n = ci_{n−1} · U/const`` (eqs. 12, 15; the larger factor); when both
    are below, back to ``ci_0``;
  - Algorithm 4 (slow-task-aware, with Algorithm 3's detector ``slow_tasks``): while
    the number of slow tasks ``N_slow`` exceeds ``M``,
    ``ci_n = ci_{n−1} + ci_{n−1}·(N_slow − M)/M``; otherwise back to ``ci_0``.

Reading of the paper where it is silent or ambiguous (documented in docs/results.md):
"triggering time ``t_n = ci_n + ci_{n−1}``" is read as "the next trigger comes
``ci_n`` after the previous one"; Algorithm 1's growth is capped at ``ci_max`` (the
paper bounds only its rate, through ``fr_min``); the combined ``CaStream`` policy uses
the eq. 11 optimum as ``ci_0`` of Algorithm 1 and applies Algorithms 2 and 4 to its
result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class Observation:
    now: float
    failures: list[float] = field(default_factory=list)  # failure times so far
    input_rate: float = 0.0  # v̄: records per tick over the last segment
    max_rate: float = 1.0  # v_m: records per tick the job can process
    ckpt_cost: float = 1.0  # t_chpt
    restart: float = 0.0  # t_rs: detection + restart
    cpu: float = 0.0  # U_cpu (eq. 13)
    mem: float = 0.0  # U_mem (eq. 14)
    slow: int = 0  # N_slow (Algorithm 3)


def young(t_chpt: float, mtbf: float) -> float:
    return math.sqrt(2 * t_chpt * mtbf)


def daly(t_chpt: float, mtbf: float) -> float:
    if t_chpt >= 2 * mtbf:
        return mtbf
    return math.sqrt(2 * t_chpt * mtbf) * (1 + math.sqrt(t_chpt / (2 * mtbf)) / 3 + t_chpt / (18 * mtbf)) - t_chpt


def ca_stream_optimum(t_chpt: float, mtbf: float, t_rs: float, v_bar: float, v_m: float) -> float:
    """Eq. 11 of the Ca-Stream paper."""
    return math.sqrt(2 * v_m * t_chpt * (mtbf + t_rs) / max(v_bar, 1e-9) + t_chpt**2)


def efficiency(ci: float, t_chpt: float, mtbf: float, t_rs: float, v_bar: float, v_m: float) -> float:
    """Eq. 5 with eq. 3 (failures per cycle) and eq. 9 (reprocessing time)."""
    n = (ci + t_chpt) / mtbf
    t_r = v_bar * (ci + t_chpt) / (2 * v_m)
    return ci / (ci + t_chpt + n * (t_r + t_rs))


def predict_fault_rate(failures: list[float], now: float, window: float, k: int = 5, fr_min: float = 0.25) -> float:
    """Algorithm 1's input: least-squares line through the failure counts of the last
    ``k`` windows, extrapolated one window; ``fr = 1 − exp(−forecast)`` clipped to
    ``[fr_min, 1]``."""
    counts = [sum(1 for f in failures if now - (k - i) * window <= f < now - (k - i - 1) * window) for i in range(k)]
    xs = range(k)
    mx, my = (k - 1) / 2, sum(counts) / k
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (c - my) for x, c in zip(xs, counts)) / sxx if sxx else 0.0
    forecast = max(0.0, my + slope * (k - mx))
    return min(1.0, max(fr_min, 1 - math.exp(-forecast)))


def slow_tasks(tasks: list[tuple[str, float, float]], ratio: float = 2.0) -> int:
    """Algorithm 3 over ``(operator, execution time, input volume)``: a task is slow
    when its execution time per unit of input exceeds ``ratio`` times the lower median
    of its operator's subtasks — long execution *and* little data, so data skew alone
    is not slowness, and operators of different cost are not compared."""
    by_op: dict[str, list[float]] = {}
    for op, t, v in tasks:
        if v > 0:
            by_op.setdefault(op, []).append(t / v)
    n = 0
    for per in by_op.values():
        per.sort()
        median = per[(len(per) - 1) // 2]
        n += sum(1 for p in per if p > ratio * median)
    return n


class Policy:
    name = "policy"

    def __init__(self, ci0: float) -> None:
        self.ci0 = float(ci0)

    def initial(self) -> float:
        return self.ci0

    def next_interval(self, obs: Observation) -> float:
        return self.ci0

    def describe(self) -> dict:
        return {"policy": self.name, "ci0": round(self.ci0, 2)}


class Fixed(Policy):
    name = "fixed"


class Young(Policy):
    name = "young"

    def __init__(self, t_chpt: float, mtbf: float) -> None:
        super().__init__(young(t_chpt, mtbf))


class Daly(Policy):
    name = "daly"

    def __init__(self, t_chpt: float, mtbf: float) -> None:
        super().__init__(daly(t_chpt, mtbf))


class CaStreamOptimal(Policy):
    """Eq. 11 re-evaluated at every trigger with the observed input rate of the last
    segment (the MTBF is the a-priori estimate)."""

    name = "ca-stream-eq11"

    def __init__(self, t_chpt: float, mtbf: float, t_rs: float, v_m: float, v_bar: float) -> None:
        self.t_chpt, self.mtbf, self.t_rs, self.v_m = t_chpt, mtbf, t_rs, v_m
        super().__init__(ca_stream_optimum(t_chpt, mtbf, t_rs, v_bar, v_m))

    def next_interval(self, obs: Observation) -> float:
        if obs.input_rate <= 0:
            return self.ci0
        return ca_stream_optimum(self.t_chpt, self.mtbf, self.t_rs, obs.input_rate, self.v_m)


class FaultAware(Policy):
    """Algorithm 1."""

    name = "ca-stream-fault-aware"

    def __init__(self, ci0: float, ci_min: float, ci_max: float, window: float, fr_min: float = 0.25) -> None:
        super().__init__(ci0)
        self.ci = float(ci0)
        self.ci_min, self.ci_max, self.window, self.fr_min = ci_min, ci_max, window, fr_min
        self.seen = 0

    def next_interval(self, obs: Observation) -> float:
        fr = predict_fault_rate(obs.failures, obs.now, self.window, fr_min=self.fr_min)
        if len(obs.failures) > self.seen:  # a failure since the last trigger
            self.seen = len(obs.failures)
            self.ci = max(self.ci_min, self.ci - self.ci * fr)
        else:
            self.ci = min(self.ci_max, self.ci + self.ci * (1 - fr))
        return self.ci


class ResourceAware(Policy):
    """Algorithm 2."""

    name = "ca-stream-resource-aware"

    def __init__(self, ci0: float, c_const: float = 0.8, m_const: float = 0.8, ci_max: float | None = None) -> None:
        super().__init__(ci0)
        self.ci = float(ci0)
        self.c_const, self.m_const = c_const, m_const
        self.ci_max = ci_max if ci_max is not None else 8 * ci0

    def adjust(self, ci: float, obs: Observation) -> float | None:
        if obs.cpu > self.c_const or obs.mem > self.m_const:
            return min(self.ci_max, ci * max(obs.cpu / self.c_const, obs.mem / self.m_const))
        return None

    def next_interval(self, obs: Observation) -> float:
        grown = self.adjust(self.ci, obs)
        self.ci = grown if grown is not None else self.ci0
        return self.ci


class SlowTaskAware(Policy):
    """Algorithm 4 (``M`` = ``threshold``)."""

    name = "ca-stream-slow-task"

    def __init__(self, ci0: float, threshold: int = 1, ci_max: float | None = None) -> None:
        super().__init__(ci0)
        self.ci = float(ci0)
        self.m = max(1, int(threshold))
        self.ci_max = ci_max if ci_max is not None else 8 * ci0

    def adjust(self, ci: float, obs: Observation) -> float | None:
        if obs.slow > self.m:
            return min(self.ci_max, ci + ci * (obs.slow - self.m) / self.m)
        return None

    def next_interval(self, obs: Observation) -> float:
        grown = self.adjust(self.ci, obs)
        self.ci = grown if grown is not None else self.ci0
        return self.ci


class CaStream(Policy):
    """The three Ca-Stream mechanisms together: Algorithm 1 starting from the eq. 11
    optimum, then Algorithms 2 and 4 on its result."""

    name = "ca-stream"

    def __init__(
        self,
        t_chpt: float,
        mtbf: float,
        t_rs: float,
        v_m: float,
        v_bar: float,
        window: float,
        c_const: float = 0.8,
        m_const: float = 0.8,
        slow_threshold: int = 1,
    ) -> None:
        ci0 = ca_stream_optimum(t_chpt, mtbf, t_rs, v_bar, v_m)
        super().__init__(ci0)
        self.fault = FaultAware(ci0, ci_min=max(t_chpt, ci0 / 4), ci_max=4 * ci0, window=window)
        self.resource = ResourceAware(ci0, c_const, m_const, ci_max=8 * ci0)
        self.slow = SlowTaskAware(ci0, slow_threshold, ci_max=8 * ci0)

    def next_interval(self, obs: Observation) -> float:
        ci = self.fault.next_interval(obs)
        for mech in (self.resource, self.slow):
            grown = mech.adjust(ci, obs)
            ci = grown if grown is not None else ci
        return ci
