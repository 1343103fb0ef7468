"""The coordinated protocol family, one module per algorithm."""

from snapcheck.reference.protocols.abs_aligned import AlignedABS
from snapcheck.reference.protocols.abs_cyclic import CyclicABS
from snapcheck.reference.protocols.aligned_timeout import AlignedTimeout
from snapcheck.reference.protocols.chandy_lamport import ChandyLamport
from snapcheck.reference.protocols.unaligned import Unaligned
from snapcheck.reference.protocols.bcs import BCS
from snapcheck.reference.protocols.hmnr import HMNR, HMNRClock
from snapcheck.reference.protocols.unc import UNC, UncoordinatedProtocol
from snapcheck.reference.commit.protocol import TwoPhaseCommitABS  # noqa: E402  (issue 9)

PROTOCOLS = {p.name: p for p in (ChandyLamport, AlignedABS, CyclicABS, Unaligned, AlignedTimeout, UNC, HMNR, BCS)}
PROTOCOLS[TwoPhaseCommitABS.name] = TwoPhaseCommitABS
from snapcheck.reference.changelog.protocol import GicChangelog  # noqa: E402  (issue 9)

PROTOCOLS[GicChangelog.name] = GicChangelog
from snapcheck.reference.replication.protocol import KaZoo, LiveRobin  # noqa: E402  (issue 9)

PROTOCOLS[LiveRobin.name] = LiveRobin
PROTOCOLS[KaZoo.name] = KaZoo
PROTOCOLS["hmnr-clock"] = HMNRClock          # HMNR in the clock[]/min_to[] form (trace name "hmnr")

# Protocols with a choice of recovery (``SimConfig.recovery``): the uncoordinated family.
RECOVERY_CHOICE = tuple(name for name, cls in PROTOCOLS.items() if issubclass(cls, UncoordinatedProtocol))

__all__ = ["PROTOCOLS", "RECOVERY_CHOICE", "AlignedABS", "CyclicABS", "AlignedTimeout", "ChandyLamport", "Unaligned"]
