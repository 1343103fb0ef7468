"""Generic log-based incremental (changelog) checkpoints, GIC (issue 9, bug-zoo.md
P8, pattern 5). See docs/protocols.md ("Changelog checkpoints (GIC)")."""

from snapcheck.reference.changelog.model import GicModel
from snapcheck.reference.changelog.protocol import GicChangelog

__all__ = ["GicChangelog", "GicModel"]
