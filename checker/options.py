"""``CheckOptions``: what ``check_trace`` analyses (checker API contract)."""

from __future__ import annotations

from dataclasses import dataclass

PROPERTIES = (
    "consistency",        # orphans of explicit cuts and coordinated rounds
    "channel-state",      # dropped / phantom / order / duplicate-recorded / wrong-channel / aligned-in-flight
    "termination",        # every started round completes
    "z-cycles",           # useless checkpoints (violation where the protocol promises Z-cycle freedom)
    "recovery-line",      # recovery line for a failure set (RL-FIX, R-MARK, rollback propagation; z3)
    "observed-recovery",  # the restored line of each observed recovery is consistent
    "exactly-once",       # nothing lost, nothing processed twice in the effective history
    "rdt",                # rollback-dependency trackability (RDT protocols)
    "cic-conformance",    # BCS/HMNR re-simulated: no missing forced checkpoint, logged piggybacks/vars match
    "cic-efficiency",     # BCS/HMNR re-simulated: no spurious forced checkpoint
    "timestamps",         # BCS/HMNR: checkpoint timestamps strictly increase along Z-paths
    "log-retention",      # no sender log entry truncated while a recovery line needs it
    "output-commit",      # 2PC sinks: publish only after global completion, once, subsuming lost notifications
    "control-delivery",   # operator events on control channels are in the snapshot of completed rounds
    "recovery-lineage",   # recoveries restore the latest completed round (not an aborted or empty one)
    "changelog-restore",  # GIC: a checkpoint's snapshot + changelog ranges restore exactly its state
    "artifact-retention",  # GIC: no artifact deleted while a retained checkpoint references it
    "replica-agreement",  # active replication: replicas consume the same sequence and emit the same outputs
    "replica-delivery",   # active replication: after deduplication, every output picked exactly once
    "replica-liveness",   # active replication: no live process ends blocked with unconsumed input
    "regional-restore",   # regional checkpoints: a region restores the state the checkpoint's metadata names
    "regional-cut",       # regional checkpoints: fallbacks resolve, are not stale, never span an edge between regions
    "regional-commit",    # regional checkpoints: a sink publishes only what a completed checkpoint holds for it
    "split-assignment",   # source splits: coordinator and readers agree at every checkpoint; each record read once
    "agreement",          # values all subtasks must agree on are equal in every completed checkpoint
    "regional-drift",     # at most max_consecutive regional completions before a global checkpoint is forced
)
SEMANTICS = ("partial", "restart-all")


class CheckerUsageError(ValueError):
    """Options that do not fit the trace (unknown process, checkpoint never taken, ...)."""


@dataclass
class CheckOptions:
    properties: set[str] | None = None   # None = every property applicable to the trace
    cut: dict | None = None              # explicit global checkpoint {proc: ckpt number or "V"}
    failures: object = None              # None, a list of process ids, or "all"
    semantics: str = "partial"           # "partial" (survivors may keep V) | "restart-all" (CheckMate)
    z3: bool = False                     # z3 maximality certificates for the recovery lines
    z3_min_replay: bool = False          # also the z3 optimum "fewest messages to replay"
    crosscheck: bool = True              # cross-check RL-FIX with R-MARK and rollback propagation
    max_witnesses: int = 20              # Z-cycle witnesses computed (each is a graph search)
    max_per_result: int = 20             # violations listed per property result (all are counted)
    facts: dict | None = None            # protocol facts completing the header's params (header wins)

    def validate(self) -> None:
        if self.semantics not in SEMANTICS:
            raise CheckerUsageError(f"unknown semantics {self.semantics!r} (use {' or '.join(SEMANTICS)})")
        if self.properties is not None:
            unknown = set(self.properties) - set(PROPERTIES)
            if unknown:
                raise CheckerUsageError(f"unknown propert{'y' if len(unknown) == 1 else 'ies'} "
                                        f"{', '.join(sorted(unknown))} (known: {', '.join(PROPERTIES)})")
