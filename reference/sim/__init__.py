"""The shared deterministic dataflow simulator the protocols run on, split by
concern: messages and channels, the network, the coordinator, recovery, and the
fast trace recording; ``standalone`` runs the families that build their own
process topology (replication, changelog)."""
