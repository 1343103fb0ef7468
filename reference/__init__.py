"""Reference implementations: a deterministic dataflow simulator (``sim``), the
protocols by family (``coordinated``, ``uncoordinated``, ``cic``, ``commit``,
``changelog``, ``replication``; each with its mutants), the protocol catalogue
(``catalogue``), workloads, and hypothesis strategies for testing a protocol
against the checker (``testing``). See docs/protocols.md.

Dependency direction: this package uses ``snapcheck.traces``; it never imports
the checker.
"""

from snapcheck.reference.catalogue import MUTANTS, PROTOCOLS
from snapcheck.reference.protocol import Protocol, TaskProtocol
from snapcheck.reference.simulation import SimConfig, SimResult, simulate
from snapcheck.reference.workloads import RANDOM_WORKLOADS, WORKLOADS, make_workload

__all__ = [
    "MUTANTS",
    "PROTOCOLS",
    "RANDOM_WORKLOADS",
    "WORKLOADS",
    "Protocol",
    "SimConfig",
    "SimResult",
    "TaskProtocol",
    "make_workload",
    "simulate",
]
