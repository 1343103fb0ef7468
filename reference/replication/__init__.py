"""Active replication (class P7 of docs/bug-zoo.md, "Property classes"): duplicate
sending, deduplication by sequence number, LiveRobin deterministic merge and KaZoo
leader-based ordering. See
docs/protocols.md ("Active replication")."""

from snapcheck.reference.replication.model import ReplicationModel

__all__ = ["ReplicationModel"]
