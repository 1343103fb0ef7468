"""Interval policies in the reference simulator.

``IntervalSimulator`` is the engine (``reference.sim.engine.Simulator``) whose
coordinator asks a policy (``reference.intervals.policies``) for the time to its
next trigger instead of using the fixed ``SimConfig.interval``; everything else —
the protocol (aligned ABS), failures, recovery, the trace — is the engine's. It is
selected through the protocol's ``simulator`` attribute: ``IntervalABS(policy)``.

What the policy observes at each trigger (``Observation``): the failure times so
far; the input rate ``v̄`` of the last segment (records read by the sources per tick);
``v_m`` = the parallel processing capacity of the slowest operator (records per
tick); ``t_chpt`` = ``snapshot_cost + barrier_cost``; ``t_rs`` = ``detect_delay +
restart_delay``; ``U_cpu`` = processing time spent in the last segment over the
tasks' time (eq. 13); ``U_mem`` = 0 (the engine has no memory model); ``N_slow`` =
Algorithm 3 over the tasks' per-record execution times (``stragglers``), each
compared with its operator's other subtasks.
"""

from __future__ import annotations

from snapcheck.reference.coordinated.abs_aligned import AlignedABS
from snapcheck.reference.intervals.policies import Observation, Policy, slow_tasks
from snapcheck.reference.sim.engine import Simulator


class IntervalSimulator(Simulator):
    def __init__(self, cfg, workload, protocol, log_class):
        super().__init__(cfg, workload, protocol, log_class)
        self.policy: Policy = protocol.policy
        self.intervals: list[float] = []
        self._seg = (0, 0)  # (time, progress) at the previous trigger
        self._read = 0

    def clock(self, t: int, fn, *args) -> None:
        if fn == self.tick:  # the coordinator's next trigger: the policy decides
            t = self.now + max(1, round(self.next_interval()))
        super().clock(t, fn, *args)

    def observe(self) -> Observation:
        cfg = self.cfg
        t0, p0 = self._seg
        dt = max(1, self.now - t0)
        read = sum(min(len(e.sent), len(e.records)) for e in self.externals)
        work = [t for t in self.tasks if not t.is_source]
        cost = sum(t.cost for t in work) / max(1, len(work))
        obs = Observation(
            now=self.now,
            failures=[r["failed"] for r in self.recoveries],
            input_rate=(read - self._read) / dt,
            max_rate=self.capacity(),
            ckpt_cost=cfg.snapshot_cost + cfg.barrier_cost,
            restart=cfg.detect_delay + cfg.restart_delay,
            cpu=min(1.0, (self.progress - p0) * cost / (dt * max(1, len(self.tasks)))),
            mem=0.0,
            slow=slow_tasks([(t.spec.name, t.cost, 1) for t in work]),
        )
        self._seg = (self.now, self.progress)
        self._read = read
        return obs

    def capacity(self) -> float:
        """Records per tick the slowest operator can process (all its subtasks)."""
        per_op: dict[str, float] = {}
        for t in self.tasks:
            if t.cost > 0:
                per_op[t.spec.name] = per_op.get(t.spec.name, 0.0) + 1.0 / t.cost
        return min(per_op.values(), default=1.0)

    def next_interval(self) -> float:
        ci = self.policy.initial() if not self.intervals else self.policy.next_interval(self.observe())
        self.intervals.append(ci)
        return ci

    def metrics(self) -> dict:
        m = super().metrics()
        m["policy"] = self.policy.name
        m["intervals_mean"] = round(sum(self.intervals) / len(self.intervals), 1) if self.intervals else None
        m["checkpoint_overhead"] = m["rounds_started"] * (self.cfg.snapshot_cost + self.cfg.barrier_cost)
        m["capacity"] = round(self.capacity(), 5)
        m["input_rate"] = round(m["input_records"] / self.now, 5) if self.now else 0.0
        return m


class IntervalABS(AlignedABS):
    """Aligned ABS (trace name ``abs-aligned``) triggered by an interval policy."""

    simulator = IntervalSimulator

    def __init__(self, policy: Policy, **params) -> None:
        super().__init__(**params, **policy.describe())
        self.policy = policy
