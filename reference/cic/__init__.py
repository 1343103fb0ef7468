"""Communication-induced checkpointing: uncoordinated checkpoints plus forced
checkpoints decided from piggybacked protocol data, so that no checkpoint is
useless (BCS, HMNR in two equivalent forms); ``mutants`` holds their known bugs."""
