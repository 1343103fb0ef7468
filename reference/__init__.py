"""Reference implementations: a deterministic dataflow simulator and the coordinated
checkpointing protocols (Chandy-Lamport, aligned ABS, cyclic ABS, unaligned,
aligned-with-timeout), their mutants, and hypothesis strategies for testing
protocols against the checker. See docs/protocols.md.

Dependency direction: this package uses ``traces``; it never imports ``checker``.
"""

from snapcheck.reference.mutants import MUTANTS
from snapcheck.reference.protocol import Protocol, TaskProtocol
from snapcheck.reference.protocols import PROTOCOLS
from snapcheck.reference.simulation import SimConfig, SimResult, simulate
from snapcheck.reference.workloads import RANDOM_WORKLOADS, WORKLOADS, make_workload

__all__ = ["MUTANTS", "PROTOCOLS", "RANDOM_WORKLOADS", "WORKLOADS", "Protocol", "SimConfig", "SimResult",
           "TaskProtocol", "make_workload", "simulate"]
