"""Coordinated checkpointing: a coordinator triggers rounds; barriers or markers
flowing with the data decide each task's checkpoint (Chandy-Lamport, aligned and
cyclic asynchronous barrier snapshots, unaligned checkpoints, aligned checkpoints
with a timeout). One module per algorithm; ``mutants`` holds their known bugs."""

from snapcheck.reference.coordinated.abs_aligned import AlignedABS
from snapcheck.reference.coordinated.abs_cyclic import CyclicABS
from snapcheck.reference.coordinated.aligned_timeout import AlignedTimeout
from snapcheck.reference.coordinated.chandy_lamport import ChandyLamport
from snapcheck.reference.coordinated.unaligned import Unaligned

__all__ = ["AlignedABS", "AlignedTimeout", "ChandyLamport", "CyclicABS", "Unaligned"]
