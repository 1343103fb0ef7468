"""Regional checkpoints (FLIP-600, "Independent Checkpoint Based On Pipeline
Region"): a checkpoint completes although some pipeline regions failed it,
those regions keeping the state of an older checkpoint (``protocol``: on aligned
and unaligned barriers, in the FLIP's and the pull requests' readings;
``simulator``: the coordinator, region failover, split enumerator, 2PC sinks;
``job``: the embarrassingly parallel jobs it targets; ``splits``: the split
enumerator and its corrected state; ``mutants``: the pitfalls). See
docs/protocols.md ("Regional checkpoints") and docs/flip-600.md."""
