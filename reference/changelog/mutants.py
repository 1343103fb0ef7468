"""Mutants of ``gic-changelog`` (declared to the protocol catalogue, ``reference.catalogue``).

==========================  =====================================================  ============================
mutant                      what is broken                                         checker reports
==========================  =====================================================  ============================
gic-inclusive-boundary      FLINK-25492: the materialization boundary is taken     changelog-gap
                            as inclusive; the change at ``upTo`` is in neither
                            the snapshot nor the changelog range
gic-gc-race                 FLINK-7268: a subsumed checkpoint's discard pending    artifact-deleted-referenced,
                            across a restart decrements the re-created registry    restore-missing-artifact
                            and deletes shared artifacts still referenced
==========================  =====================================================  ============================
"""

from __future__ import annotations

from snapcheck.reference.changelog.model import GcRaceModel, InclusiveBoundaryModel
from snapcheck.reference.changelog.protocol import GicChangelog


class GicInclusiveBoundary(GicChangelog):
    name = "gic-inclusive-boundary"
    mutant_of = "gic-changelog"
    summary = "the changelog tail starts after the materialization boundary instead of at it"
    bug = "FLINK-25492 (apache/flink#18555)"
    expect = ("changelog-gap",)
    prop = "changelog-restore"
    demo = {"parallelism": 2, "records": 120}
    model_class = InclusiveBoundaryModel


class GicGcRace(GicChangelog):
    name = "gic-gc-race"
    mutant_of = "gic-changelog"
    summary = "asynchronous discard of a subsumed checkpoint decrements the registry re-created by recovery"
    bug = "FLINK-7268 (apache/flink#4410)"
    expect = ("artifact-deleted-referenced", "restore-missing-artifact")
    prop = "artifact-retention"
    demo = {"parallelism": 2, "records": 120, "failures": (("task[0]", 51), ("task[1]", 58))}
    model_class = GcRaceModel
