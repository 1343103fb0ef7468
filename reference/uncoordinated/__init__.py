"""Uncoordinated checkpointing with sender-side message logging: every task
checkpoints on its own timer; recovery finds the recovery line by rollback
propagation and replays the logged in-transit messages (``protocol``: the
protocol, ``simulator``: its simulator, ``recovery``: recovery lines, ``mutants``)."""
