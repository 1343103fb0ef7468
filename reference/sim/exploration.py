"""Targeted exploration inside the simulator: situations, faults placed at them, and
bounded schedule perturbations. Every choice is a field of ``SimConfig``, so a run
and its reproduction command carry it.

**Situations** are protocol-relevant moments the simulator recognises while it runs
(the "sometimes" assertions of a campaign: what was reached at least once). The
simulator counts each one (``SimResult.metrics["situations"]``); protocols mark
their own with ``ctx.situation(name)`` (at the task of ``ctx``). The built-in ones:

=========================  ==============================================================
situation                  when
=========================  ==============================================================
``aligning``               a task blocks its first input for a round (alignment starts)
``snapshot``               a task took its checkpoint of a round (its ack is not sent yet)
``acknowledged``           the coordinator received a task's acknowledgement of a round that
                           is still pending (the task counts as done with it; others are not)
``decline``                a task's snapshot failed (the round is declined)
``decline-while-aligning`` a decline while some task has blocked inputs
``cancel``                 a task handles a cancellation marker
``rounds-overlap``         a round is triggered while another is in progress
``completed-unnotified``   a round completed; its notifications have not reached the sinks
``overtake``               a priority barrier overtakes buffered records
``backpressured-barrier``  a barrier is sent while an output buffer of its task is full
``recovery``               a failure was detected; tasks are about to restore
``replay``                 a restore left recorded or logged messages to replay
``crash-in-recovery``      a task crashes while a recovery is in progress
``stale``                  a message of a previous epoch is discarded
``forced-checkpoint``      a communication-induced protocol forces a checkpoint
``log-truncate``           a sender truncates its message log
``region-acknowledged``    regional checkpoints: every task of a region acknowledged a round
                           still pending (at the task whose acknowledgement completed it)
``regional-completion``    regional checkpoints: a round completed with regions falling back
``acknowledged-fallback``  regional checkpoints: a round completed with a region falling back
                           one of whose tasks had acknowledged it (that task's own state of the
                           round is not the state the round's metadata names for it)
=========================  ==============================================================

**Faults at situations**: a ``SimConfig.failures`` entry ``(task, situation, k)``
crashes ``task`` right after the ``k``-th occurrence of ``situation`` (``task`` may be
``"self"``: the task at which it occurred; a simulator may know other fault targets,
``extra_fault_targets``, e.g. the regional family's whole-job ``rescale``). It fires in the same tick, after the
handler that reached the situation returns — e.g. a task that checkpointed dies
before its acknowledgement is received. A fault whose situation never occurs
never fires: the run reports it as not exercised (``faults_not_fired``).

**Pauses** (``SimConfig.pauses``): ``(k, ticks)`` makes the task that performs the
``k``-th step of the run busy for ``ticks`` more — a bounded number of priority
changes in the spirit of PCT ("A Randomized Scheduler with Probabilistic Guarantees
of Finding Bugs", Burckhardt, Kothari, Musuvathi and Nagarakatte, ASPLOS 2010): with
``d`` change points placed uniformly among the run's steps, every bug of depth ``d``
is found with probability at least ``1 / (n k^(d-1))`` per run.
"""

from __future__ import annotations

from snapcheck.reference.sim.base import SimulatorBase
from snapcheck.traces.errors import UsageError

SITUATIONS = (
    "aligning",
    "snapshot",
    "acknowledged",
    "decline",
    "decline-while-aligning",
    "cancel",
    "rounds-overlap",
    "completed-unnotified",
    "overtake",
    "backpressured-barrier",
    "recovery",
    "replay",
    "crash-in-recovery",
    "stale",
    "forced-checkpoint",
    "log-truncate",
    "region-acknowledged",
    "regional-completion",
    "acknowledged-fallback",
)
# Situations that occur at a task (a fault there may crash "self": that task).
AT_A_TASK = frozenset(
    (
        "aligning",
        "snapshot",
        "acknowledged",
        "decline",
        "decline-while-aligning",
        "cancel",
        "overtake",
        "backpressured-barrier",
        "stale",
        "forced-checkpoint",
        "log-truncate",
        "region-acknowledged",
    )
)
# Situations that occur only once something crashed: a fault there is a second fault.
AFTER_A_CRASH = frozenset(("recovery", "replay", "crash-in-recovery", "stale"))
# Situations of the whole job that need no crash (two rounds in flight, a round that just
# completed, regionally or not): where a fault of the whole job (``Protocol.job_faults``,
# e.g. a rescale, which restores the latest completed round) is placed.
OF_THE_JOB = frozenset(SITUATIONS) - AT_A_TASK - AFTER_A_CRASH
SELF = "self"


class FaultError(UsageError):
    """A fault the run cannot place (no such task or situation): ``detail`` says why
    without naming the option, which the caller does (``SimConfig.failures`` for the API,
    ``--fail`` for ``snapcheck simulate``)."""

    def __init__(self, detail: str):
        super().__init__(f"SimConfig.failures: {detail}")
        self.detail = detail


def parse_fault(spec) -> tuple:
    """A failure entry: ``(task, time)`` or ``(task, situation, k)``; from a command line,
    ``TASK@TIME`` or ``TASK@SITUATION#K``.

    >>> parse_fault("join[0]@1500")
    ('join[0]', 1500)
    >>> parse_fault("self@snapshot#2")
    ('self', 'snapshot', 2)
    """
    if not isinstance(spec, str):
        return tuple(spec)
    task, sep, when = spec.rpartition("@")
    if not sep or not task:
        raise ValueError(f"fault {spec!r}: expected TASK@TIME or TASK@SITUATION#K, e.g. join[0]@1500")
    if when.isdigit():
        return task, int(when)
    name, sep, k = when.partition("#")
    if not name or (sep and not k.isdigit()) or (sep and int(k) < 1):
        raise ValueError(f"fault {spec!r}: expected TASK@TIME or TASK@SITUATION#K with K >= 1")
    return task, name, int(k) if sep else 1


def format_fault(entry: tuple) -> str:
    """The command-line form of a failure entry (``parse_fault``'s inverse)."""
    if len(entry) == 2:
        return f"{entry[0]}@{entry[1]}"
    return f"{entry[0]}@{entry[1]}#{entry[2]}"


class Exploration(SimulatorBase):
    """Mixin of ``Simulator``: situation counters, fault triggers and pauses."""

    extra_fault_targets: tuple[str, ...] = ()  # fault targets that are not tasks (``fire_fault`` handles them)

    def init_exploration(self, cfg) -> None:
        self.situations: dict[str, int] = {}
        self.at_first_completion: dict[str, int] | None = None  # the counts when a round first completed
        self.first_completion_time: int | None = None
        self.at_retirement: dict[str, dict[str, int]] = {}  # task id -> the counts when it left the job
        self.at_joining: dict[str, dict[str, int]] = {}  # task id -> the counts when a rescale started it
        self.fault_triggers: dict[str, list] = {}  # situation -> [[task, k, fired]]
        self.timed_faults: list[tuple[str, int]] = []
        for entry in cfg.failures:
            entry = parse_fault(entry)
            if len(entry) == 2:
                self.timed_faults.append(entry)
            else:
                task, name, k = entry
                self.fault_triggers.setdefault(name, []).append([task, k, False])
        self.pauses = dict(cfg.pauses)
        self.steps = 0

    def check_fault_targets(self, known: dict, later: frozenset = frozenset()) -> None:
        """Every fault names a task of this dataflow, one that may join it at a rescale
        (``later``), or ``self`` for a situation, and a situation the simulator or the
        protocol (``Protocol.situations``) knows."""
        situations = set(SITUATIONS) | set(self.protocol.situations)
        bad = sorted(set(self.fault_triggers) - situations)
        if bad:
            raise FaultError(
                f"unknown situation(s) {', '.join(map(repr, bad))} (known: "
                f"{', '.join(sorted(situations))}; a time is an integer number of ticks)"
            )
        names = [tid for tid, _ in self.timed_faults]
        names += [t for ts in self.fault_triggers.values() for t, _, _ in ts if t != SELF]
        names = [n for n in names if n not in self.extra_fault_targets]
        unknown = [n for n in names if n not in known and n not in later]
        if unknown:
            joining = f"; after a rescale: {', '.join(sorted(later))}" if later else ""
            raise FaultError(f"names no task: {', '.join(map(repr, unknown))} (tasks: {', '.join(known)}{joining})")

    def situation(self, name: str, v=None) -> None:
        """Situation ``name`` occurred (at task ``v``, if any): count it, fire its faults."""
        n = self.situations.get(name, 0) + 1
        self.situations[name] = n
        if name == "completed-unnotified" and self.at_first_completion is None:
            self.at_first_completion = dict(self.situations)
            self.first_completion_time = self.now
        triggers = self.fault_triggers.get(name)
        if triggers:
            for t in triggers:
                task, k, fired = t
                if not fired and k == n:
                    t[2] = self.fire_fault(task, v, f"injected crash at {name}#{k}")

    def left_job(self, v) -> None:
        """Task ``v`` left the job now (a rescale replaced it, or it finished): a crash
        naming it can only fire at a situation that occurred before."""
        self.retired_at[v.id] = self.now
        self.at_retirement[v.id] = dict(self.situations)

    def joined_job(self, v) -> None:
        """Task ``v`` joined the job now (a rescale started it): a crash naming it can only
        fire at a situation that occurs after."""
        self.at_joining[v.id] = dict(self.situations)

    def fire_fault(self, task: str, v, reason: str) -> bool:
        """Inject the fault of a trigger whose situation just occurred (at task ``v``, if
        any): crash ``task`` (``self``: ``v``) in this tick. False when there is no such task."""
        target = v if task == SELF else self.by_id.get(task)
        if target is None:
            return False
        self.at(self.now, self.fail, target, reason)
        return True

    def pause(self, v) -> None:
        """Count a step; at a pause point the stepping task is held back."""
        self.steps += 1
        extra = self.pauses.get(self.steps)
        if extra:
            v.busy_until += extra

    def exploration_metrics(self) -> dict:
        """Situations reached (and how many of them, and the time, when a round first
        completed; how many when each task that joined or left the job did), the tasks in
        the job at the end, faults requested and faults that crashed no task (their
        situation never occurred, or their task was already down)."""
        requested = len(self.timed_faults) + sum(
            1 for ts in self.fault_triggers.values() for t in ts if t[0] not in self.extra_fault_targets
        )
        return {
            "situations": dict(sorted(self.situations.items())),
            "situations_at_first_completion": self.at_first_completion or {},
            "first_completion_time": self.first_completion_time,
            "faults_requested": requested,
            "faults_not_fired": max(0, requested - self.crashes),
            "retired_at": dict(self.retired_at),
            "situations_at_retirement": dict(self.at_retirement),
            "situations_at_joining": dict(self.at_joining),
            "tasks_at_end": [t.id for t in self.tasks],
        }
