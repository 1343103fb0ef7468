"""Mutants of ``gic-changelog`` (registered in ``reference.mutants.MUTANTS``).

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

from snapcheck.reference.changelog.protocol import GicGcRace, GicInclusiveBoundary
from snapcheck.reference.mutants import Mutant

BASE = "gic-changelog"

CHANGELOG_MUTANTS: dict[str, Mutant] = {m.name: m for m in (
    Mutant("gic-inclusive-boundary", GicInclusiveBoundary, BASE,
           "the changelog tail starts after the materialization boundary instead of at it",
           "FLINK-25492 (apache/flink#18555)", ("changelog-gap",), "changelog-restore",
           {"parallelism": 2, "records": 120}),
    Mutant("gic-gc-race", GicGcRace, BASE,
           "asynchronous discard of a subsumed checkpoint decrements the registry re-created by recovery",
           "FLINK-7268 (apache/flink#4410)", ("artifact-deleted-referenced", "restore-missing-artifact"),
           "artifact-retention",
           {"parallelism": 2, "records": 120, "failures": (("task[0]", 51), ("task[1]", 58))}),
)}
