"""Two-phase-commit sinks over control channels: output commit, operator events
on a lossy coordinator channel, end of stream, and the lineage of recovery
lines (``protocol``: aligned ABS with 2PC sinks, ``simulator``: its model,
``sink``: the transactional sinks, ``mutants``: one real bug each). See
docs/protocols.md ("Control channels, output commit and lineage")."""
