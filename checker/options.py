"""``CheckOptions``: what ``check_trace`` analyses (checker API contract)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

PROPERTIES = (
    "consistency",  # orphans of explicit cuts and coordinated rounds
    "channel-state",  # dropped / phantom / order / duplicate-recorded / wrong-channel / aligned-in-flight
    "termination",  # every started round completes
    "completion",  # a round is declared complete only after every participant's checkpoint of it
    "protocol-error",  # the protocol raised in a handler or broke an invariant of the simulator (trace event)
    "z-cycles",  # useless checkpoints (violation where the protocol promises Z-cycle freedom)
    "recovery-line",  # recovery line for a failure set (RL-FIX, R-MARK, rollback propagation; z3)
    "observed-recovery",  # the restored line of each observed recovery is consistent
    "exactly-once",  # nothing lost, nothing processed twice in the effective history
    "rdt",  # rollback-dependency trackability (RDT protocols)
    "cic-conformance",  # BCS/HMNR re-simulated: no missing forced checkpoint, logged piggybacks/vars match
    "cic-efficiency",  # BCS/HMNR re-simulated: no spurious forced checkpoint
    "timestamps",  # BCS/HMNR: checkpoint timestamps strictly increase along Z-paths
    "log-retention",  # no sender log entry truncated while a recovery line needs it
    "output-commit",  # 2PC sinks: publish only after global completion, once, subsuming lost notifications
    "control-delivery",  # operator events on control channels are in the snapshot of completed rounds
    "recovery-lineage",  # recoveries restore the latest completed round (not an aborted or empty one)
    "changelog-restore",  # GIC: a checkpoint's snapshot + changelog ranges restore exactly its state
    "artifact-retention",  # GIC: no artifact deleted while a retained checkpoint references it
    "replica-agreement",  # active replication: replicas consume the same sequence and emit the same outputs
    "replica-delivery",  # active replication: after deduplication, every output picked exactly once
    "replica-liveness",  # active replication: no live process ends blocked with unconsumed input
    "regional-restore",  # regional checkpoints: a region restores the state the checkpoint's metadata names
    "regional-cut",  # regional checkpoints: fallbacks resolve, are not stale, never span an edge between regions
    "regional-commit",  # regional checkpoints: a sink publishes only what a completed checkpoint holds for it
    "split-assignment",  # source splits: coordinator and readers agree at every checkpoint; each record read once
    "agreement",  # values all subtasks must agree on are equal in every completed checkpoint
    "regional-drift",  # at most max_consecutive regional completions before a global checkpoint is forced
    "rescale-state",  # rescaling: every key group / partition restored once, from its owner, of the round
    "rescale-in-flight",  # rescaling: recovered in-flight records reach their new owner once, before live data
    "finished-tasks",  # FLIP-147: finished tasks send nothing, get their final checkpoint and its notification
)
# The properties that judge coordinated snapshot rounds (a trace without rounds has nothing for them)
ROUND_PROPERTIES = ("consistency", "channel-state", "termination", "completion", "recovery-lineage")
SEMANTICS = ("partial", "restart-all")
# What a protocol promises (Z-cycle freedom, RDT, its CIC rules): named with --property, such
# a property is judged on the trace also where the protocol does not promise it (a CIC one
# needs CIC rules declared: else naming it is a usage error). Naming any other property does
# not make it apply: where it does not, it is not judged, with the reason (checker.coverage).
PROMISED = ("z-cycles", "rdt", "cic-conformance", "cic-efficiency", "timestamps")

NOT_SELECTED = "not selected (only the properties named with --property were checked)"
# Properties that judge a vocabulary most traces do not use (shown on one line unless verbose).
UNKNOWN_RESCALE_ROUND = (
    "no restore at another parallelism has a known restored round (its restores name no round, and the checkpoints "
    "they take belong to none)"
)
# A round no process takes part in: judging it would pass vacuously.
NO_PARTICIPANTS = "no process takes part in it: at its start the trace has no task, only coordinators and input logs"
PRESENT_UNJUDGED = frozenset(
    {UNKNOWN_RESCALE_ROUND}
)  # not-judged reasons of a property whose vocabulary the trace uses

VOCABULARY = {  # property -> what of a trace it judges, named for a reader
    "protocol-error": "protocol errors",
    "log-retention": "sender-log truncation",
    "output-commit": "two-phase-commit outputs",
    "control-delivery": "operator events",
    "changelog-restore": "changelogs",
    "artifact-retention": "changelogs",
    "replica-agreement": "replicas",
    "replica-delivery": "replicas",
    "replica-liveness": "replicas",
    "rescale-state": "rescales",
    "rescale-in-flight": "rescales",
    "finished-tasks": "finished tasks",
    "regional-restore": "regional completions",
    "regional-cut": "regional completions",
    "regional-commit": "regional completions",
    "split-assignment": "input splits",
    "agreement": "agreed values",
    "regional-drift": "regional completions",
}


class CheckerUsageError(ValueError):
    """Options that do not fit the trace (unknown process, checkpoint never taken, ...) or
    that name no known property or semantics. The command line reports it as a usage
    error (exit 2).

    >>> CheckOptions(semantics="eager").validate()
    Traceback (most recent call last):
    snapcheck.checker.options.CheckerUsageError: unknown semantics 'eager' (use partial or restart-all)
    """


@dataclass
class CheckOptions:
    """What ``check_trace`` analyses and how (docs/checker.md): the properties to check
    (None: every property that applies to the trace, see ``checker.api``), an explicit
    cut to judge, the failure set whose recovery line to compute (``None``, ``"all"``, a
    list of process ids or ``"P0,P1"``) under ``partial`` semantics (survivors may keep
    their current state) or ``restart-all`` (every process restarts from a stable
    checkpoint, as in CheckMate), z3 certificates, the cross-checks of the recovery line
    and the caps on witnesses and listed violations.

    ``properties`` and ``cut`` may also be written as on the command line: one string
    naming properties with commas (``"consistency,channel-state"``), a cut as
    ``"P0=1,P1=V"`` (``checker.notation.parse_cut``).

    >>> CheckOptions(properties="consistency", cut="P0=1,P1=V").properties
    {'consistency'}
    >>> CheckOptions(cut="P0=1,P1=V").cut
    {'P0': 1, 'P1': 'V'}

    The domino effect of docs/theory.md, worked example C, after the failure of both
    processes:

    >>> from snapcheck.checker import check_trace
    >>> from snapcheck.traces.golden import golden
    >>> check_trace(golden("theory_c_domino"), CheckOptions(failures="all")).recovery_lines["all"]
    {'P0': 1, 'P1': 0}
    >>> check_trace(golden("checkmate_fig2b_orphan"), CheckOptions(cut={"O1": 1, "O2": 1, "O3": 1})).kinds
    {'orphan'}
    """

    properties: set[str] | None = None  # None = every property applicable to the trace
    cut: dict | None = None  # explicit global checkpoint {proc: ckpt number or "V"}
    failures: object = None  # None, a list of process ids, or "all"
    semantics: str = "partial"  # "partial" (survivors may keep V) | "restart-all" (CheckMate)
    z3: bool = False  # z3 maximality certificates for the recovery lines
    z3_min_replay: bool = False  # also the z3 optimum "fewest messages to replay"
    crosscheck: bool = True  # cross-check RL-FIX with R-MARK and rollback propagation
    max_witnesses: int = 20  # Z-cycle witnesses computed (each is a graph search)
    max_per_result: int | None = 20  # violations listed per property result (all are counted; None: all listed)
    facts: dict | None = None  # protocol facts completing the header's params (header wins)

    def __post_init__(self) -> None:
        if isinstance(self.properties, str):  # "consistency,channel-state", as --property takes them
            self.properties = {p.strip() for p in self.properties.split(",") if p.strip()}
        if isinstance(self.cut, str):
            from snapcheck.checker.notation import parse_cut
            from snapcheck.traces.errors import UsageError

            try:
                self.cut = parse_cut(self.cut)
            except UsageError as exc:
                raise CheckerUsageError(str(exc)) from None

    def validate(self) -> None:
        """Raise ``CheckerUsageError`` for an unknown semantics or property name, or an
        option of a type or value it cannot be (``properties``, ``cut``, ``failures``, the
        flags, caps below 1, ``facts``).

        >>> CheckOptions(max_per_result=0).validate()
        Traceback (most recent call last):
        snapcheck.checker.options.CheckerUsageError: max_per_result: expected a whole number of at least 1 (or None: no cap), not 0

        >>> opts = CheckOptions()
        >>> opts.cut = [("P0", 1)]
        >>> opts.validate()
        Traceback (most recent call last):
        snapcheck.checker.options.CheckerUsageError: cut: expected a dict {process: checkpoint number or "V"} or a string like "P0=1,P1=V", not list
        """
        if self.properties is not None and (
            isinstance(self.properties, str)
            or not isinstance(self.properties, Iterable)
            or not all(isinstance(p, str) for p in self.properties)
        ):
            raise CheckerUsageError(
                f"properties: expected a set of property names (or one string naming them with commas), "
                f"not {self.properties!r}"
            )
        if self.cut is not None and not isinstance(self.cut, dict):
            raise CheckerUsageError(
                'cut: expected a dict {process: checkpoint number or "V"} or a string like "P0=1,P1=V", '
                f"not {type(self.cut).__name__}"
            )
        if not (
            self.failures is None
            or isinstance(self.failures, str)
            or (isinstance(self.failures, Iterable) and all(isinstance(p, str) for p in self.failures))
        ):
            raise CheckerUsageError(
                f'failures: expected None, "all", a list of process ids or a string like "P0,P1", not {self.failures!r}'
            )
        if self.semantics not in SEMANTICS:
            raise CheckerUsageError(f"unknown semantics {self.semantics!r} (use {' or '.join(SEMANTICS)})")
        for name in ("z3", "z3_min_replay", "crosscheck"):  # "no" would be true
            if type(getattr(self, name)) is not bool:
                raise CheckerUsageError(f"{name}: expected True or False, not {getattr(self, name)!r}")
        for name in ("max_witnesses", "max_per_result"):  # 0 or less listed no violation of a failed result
            v = getattr(self, name)
            if (type(v) is not int or v < 1) and not (v is None and name == "max_per_result"):
                more = " (or None: no cap)" if name == "max_per_result" else ""
                raise CheckerUsageError(f"{name}: expected a whole number of at least 1{more}, not {v!r}")
        if self.facts is not None and not isinstance(self.facts, dict):
            raise CheckerUsageError(
                f"facts: expected a dict of protocol facts (e.g. {{'aligned': True}}), not {self.facts!r}"
            )
        if self.properties is not None:
            unknown = set(self.properties) - set(PROPERTIES)
            if unknown:
                raise CheckerUsageError(
                    f"unknown propert{'y' if len(unknown) == 1 else 'ies'} "
                    f"{', '.join(sorted(unknown))} (known: {', '.join(PROPERTIES)})"
                )
