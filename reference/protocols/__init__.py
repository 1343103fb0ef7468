"""The coordinated protocol family, one module per algorithm."""

from reference.protocols.abs_aligned import AlignedABS
from reference.protocols.abs_cyclic import CyclicABS
from reference.protocols.aligned_timeout import AlignedTimeout
from reference.protocols.chandy_lamport import ChandyLamport
from reference.protocols.unaligned import Unaligned

PROTOCOLS = {p.name: p for p in (ChandyLamport, AlignedABS, CyclicABS, Unaligned, AlignedTimeout)}

__all__ = ["PROTOCOLS", "AlignedABS", "CyclicABS", "AlignedTimeout", "ChandyLamport", "Unaligned"]
