"""Active replication (issue 9, bug-zoo.md P7): duplicate sending, deduplication by
sequence number, LiveRobin deterministic merge and KaZoo leader-based ordering. See
docs/protocols.md ("Active replication")."""

from snapcheck.reference.replication.model import ReplicationModel

__all__ = ["ReplicationModel"]
