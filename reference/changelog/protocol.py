"""The GIC model as a ``reference.simulate`` protocol, and its mutants.

``SimConfig`` fields used: ``parallelism`` (tasks), ``records`` (records per task,
default 200), ``seed``, ``failures`` (``(process, step)``: the model's clock is one
record per task per step). Protocol parameters (``GicChangelog(checkpoint_every=...)``)
are ``reference.changelog.model.DEFAULTS``.
"""

from __future__ import annotations

from snapcheck.reference.changelog.model import GcRaceModel, GicModel, InclusiveBoundaryModel
from snapcheck.reference.changelog.standalone import StandaloneSimulator
from snapcheck.reference.protocol import Protocol

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
    summary = ("generic log-based incremental checkpoints: dual writes, continuous changelog upload, "
               "periodic materialization, checkpoint = snapshot + changelog range, truncation")
    aligned = True
    simulator = GicSimulator
    model_class = GicModel


class GicInclusiveBoundary(GicChangelog):
    model_class = InclusiveBoundaryModel


class GicGcRace(GicChangelog):
    model_class = GcRaceModel
