"""The GIC model as a ``reference.simulate`` protocol, and its mutants.

``SimConfig`` fields used: ``parallelism`` (tasks), ``records`` (records per task,
default 200), ``seed``, ``failures`` (``(process, step)``: the model's clock is one
record per task per step). Protocol parameters (``GicChangelog(checkpoint_every=...)``)
are ``reference.changelog.model.DEFAULTS``.
"""

from __future__ import annotations

from snapcheck.reference.changelog.model import GicModel
from snapcheck.reference.protocol import Protocol
from snapcheck.reference.sim.standalone import StandaloneSimulator

RECORDS = 200


class GicSimulator(StandaloneSimulator):
    def model(self, cfg):
        p = self.protocol
        params = dict(p.params)
        if p.mutant:
            params["mutant"] = p.mutant
        m = p.model_class(params, cfg.parallelism, cfg.records or RECORDS, cfg.seed, cfg.failures)
        rec = m.run()
        return rec, m.metrics(), m.final_states(), []


class GicChangelog(Protocol):
    name = "gic-changelog"
    situations = ()  # its own model: no simulator situations
    family = "changelog"
    topologies = "own"
    crash_targets = "task[i]: one of its parallel tasks, at a step (one record per task per step)"
    summary = (
        "generic log-based incremental checkpoints: dual writes, continuous changelog upload, "
        "periodic materialization, checkpoint = snapshot + changelog range, truncation"
    )
    aligned = False  # its checkpoints are snapshot + changelog ranges, judged by changelog-restore
    simulator = GicSimulator
    model_class = GicModel

    @classmethod
    def random_config(cls, rnd, failures: bool, hard: bool = False, seed: int = 0) -> dict:
        """1–3 tasks ``task[i]``, 20–200 records each (one record per task per step);
        half the runs crash one or two tasks (``hard``: nine in ten, two or three)."""
        parallelism, records = rnd.randint(1, 3), rnd.randint(20, 200)
        crashes = tuple(
            sorted(
                (f"task[{rnd.randrange(parallelism)}]", rnd.randrange(records))
                for _ in range(rnd.randint(2, 3) if hard else rnd.randint(1, 2))
            )
        )
        return {
            "parallelism": parallelism,
            "records": records,
            "failures": crashes if failures and rnd.random() < (0.9 if hard else 0.5) else (),
        }
