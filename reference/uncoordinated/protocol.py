"""Uncoordinated checkpointing with sender-side message logging (UNC): CheckMate
("CheckMate: Evaluating Checkpointing Protocols for Streaming Dataflows", §III-B);
docs/theory.md, "Recovery lines".

Every task checkpoints on its own timer, without markers; every message between
tasks is logged by its sender when sent (upstream backup), and the logs are
truncated only below the recovery line for the failure of every task (no
possible recovery line needs those entries). After a failure the coordinator finds
the recovery line by rollback propagation, the tasks restore it and the senders
replay exactly the in-transit window of each affected channel; messages of the
failed epoch still in flight are discarded (deduplication). The machinery is in
``reference.uncoordinated.simulator`` and ``reference.uncoordinated.recovery``
(recovery line); CIC protocols (``hmnr``, ``bcs``) are UNC plus piggybacks and
forced checkpoints.

Parameters (``UNC(recovery=..., jitter=..., intervals=...)``):

* ``recovery``: ``"restart-all"`` (CheckMate: every task restarts from a stable
  checkpoint) or ``"partial"`` (only the failed tasks and those rollback
  propagation reaches);
* ``jitter``: each timer period is the interval times ``1 ± jitter``;
* ``intervals``: ``{operator: ticks}``, a checkpoint interval per operator
  (default ``SimConfig.interval``);
* ``log_piggyback`` / ``log_vars``: write piggybacks / protocol variables into the
  trace (the conformance checker compares them; large runs turn them off).
"""

from __future__ import annotations

from snapcheck.reference.protocol import Protocol, TaskProtocol
from snapcheck.reference.uncoordinated.recovery import LineDefects
from snapcheck.reference.uncoordinated.simulator import UncoordinatedSimulator
from snapcheck.traces.protocol_facts import TlaMapping

RECOVERY_MODES = ("restart-all", "partial")


class UncoordinatedTask(TaskProtocol):
    """The protocol variables of one task (UNC has none). The simulator calls:

    * ``piggyback(ch)`` at every send to another task: the piggyback (None: none);
    * ``must_force(ch, pb)`` before processing a message with piggyback ``pb``: a
      reason (a non-empty ``str``) or ``True`` takes a forced checkpoint first, ``None``,
      ``False`` or ``""`` does not; any other answer (a number) is a protocol error;
    * ``checkpoint_taken(kind, pb)`` at every checkpoint (``pb``: the message that
      forced it);
    * ``delivered(ch, pb)`` when the message is processed;
    * ``vars()`` / ``restore_vars(vars)``: the variables saved with a checkpoint.
    """

    piggyback_size = 0

    def piggyback(self, ch) -> dict | None:
        return None

    def must_force(self, ch, pb: dict) -> str | None:
        return None

    def checkpoint_taken(self, kind: str, pb: dict | None) -> None:
        pass

    def delivered(self, ch, pb: dict) -> None:
        pass

    def vars(self) -> dict | None:
        return None

    def restore_vars(self, vars: dict | None) -> None:
        pass


class UncoordinatedProtocol(Protocol):
    """Base of UNC, HMNR and BCS: switches of the uncoordinated simulator."""

    situations: tuple[str, ...] = ("snapshot", "log-truncate", "recovery", "replay", "crash-in-recovery", "stale")
    family = "uncoordinated"
    recovery_modes = RECOVERY_MODES

    simulator = UncoordinatedSimulator
    task_class = UncoordinatedTask
    logging = True  # sender-side message logging
    truncation = "recovery-line"  # what a log truncation waits for
    skip_single_replay = False  # replay defect (mutant)
    defects = LineDefects()  # recovery-graph defects (mutants)

    def __init__(
        self,
        recovery: str = "restart-all",
        jitter: float = 0.2,
        intervals: dict | None = None,
        log_piggyback: bool = True,
        log_vars: bool = True,
        **params,
    ) -> None:
        if recovery not in RECOVERY_MODES:
            raise ValueError(f"{self.name}: recovery must be one of {', '.join(RECOVERY_MODES)}, not {recovery!r}")
        if not 0 <= jitter < 1:
            raise ValueError(f"{self.name}: jitter must be in [0, 1)")
        self.recovery = recovery
        self.log_piggyback = log_piggyback
        self.log_vars = log_vars
        if intervals:
            params["intervals"] = dict(intervals)
        super().__init__(recovery=recovery, jitter=jitter, **params)


class UNC(UncoordinatedProtocol):
    name = "unc"
    tla = TlaMapping("UncoordinatedTrace", kind="unc", invariants=("RecoveryLineConsistent",), refinement=None)
    summary = "uncoordinated: per-task timers, sender-side logging, rollback-propagation recovery"
