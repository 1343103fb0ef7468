"""The protocol plug-in interface of the simulator.

A checkpointing protocol is a *per-task state machine*. Write one by subclassing
``TaskProtocol`` (the handlers) and ``Protocol`` (its name, trace parameters and
switches), then run it::

    from snapcheck.reference import simulate, SimConfig
    from snapcheck.reference.protocol import Protocol, TaskProtocol

    class MyTask(TaskProtocol):
        def on_trigger(self, round, barrier):           # coordinator asks a source
            self.ctx.checkpoint(round)
            self.ctx.send_barrier(round)
            self.ctx.complete(round)
        def on_barrier(self, ch, barrier, overtaking):
            ...

    class Mine(Protocol):
        name = "my-protocol"
        task_class = MyTask

    result = simulate(SimConfig(protocol=Mine(), workload="q3", seed=1))
    check_trace(result.trace())                           # the checker judges it

``reference.testing`` has hypothesis strategies to property-test such a protocol
against the checker from your own pytest suite.

What the simulator does for every protocol (so a protocol need not):

* runs the dataflow: FIFO (or non-FIFO) channels with seeded latency, credit-based
  bounded buffers, per-task processing cost; records ``send``/``recv`` (``recv`` is
  *processing*: docs/theory.md, "Receive means processing") and, if ``observe_arrivals``, ``arrive``;
* the coordinator: starts round ``n`` every ``interval`` ticks (at most
  ``max_concurrent`` in progress) by sending a trigger barrier to each source
  (``on_trigger``), completes it when every task called ``complete(n)``, aborts it
  on a decline, a timeout or a failure;
* recovery: after a failure every task restores its checkpoint of the last
  completed round (``restore``), then the recorded channel state is replayed
  (input parts by the receiver, output parts by the sender), then the sources
  re-read their input from the restored offsets; messages of the previous epoch
  still in flight are discarded (if ``dedup``). The handlers then start afresh:
  a new ``TaskProtocol`` is made and ``on_restore`` is called.

Which handler runs when:

* ``on_trigger(round, barrier)`` — a source received the coordinator's trigger (the
  "Nil" input of ABS Algorithm 1).
* ``barrier_priority(ch, barrier) -> bool`` — a barrier *arrived* on ``ch``. Return
  True to handle it at once, overtaking the records queued before it (unaligned
  checkpoints); False leaves it in the channel's FIFO queue. Any other answer (``None``,
  ``"no"``) is a protocol error, not a truth value.
* ``on_barrier(ch, barrier, overtaking)`` — the barrier is handled: at its FIFO
  position (``overtaking`` False), at arrival (True), or because the protocol took
  it out of the queue with ``ctx.take_barrier``.
* ``on_arrival(ch, msg)`` — a data record arrived in ``ch``'s input buffer (only if
  the protocol sets ``observe_arrivals``).
* ``on_process(ch, msg)`` — a data record is about to be processed (only if
  ``observe_processing``).
* ``on_timer(key)`` — a timer set with ``ctx.set_timer`` fired.
* ``on_cancel(ch, marker)`` — a cancellation marker of ``marker.round`` reached its
  FIFO position on ``ch`` (an upstream task declined or gave up that round).
* ``on_abort(round)`` — the coordinator aborted ``round`` after a decline or a
  timeout (only for protocols with ``abort_notices``).
* ``on_restore(ckpt, round)`` — called on the fresh handler after a restore: ``ckpt``
  the task's checkpoint restored (0: its initial state), ``round`` the round restored
  (0: the initial state, when no round had completed; always an ``int``).

The ``ctx`` (``TaskContext``) a handler gets is documented below.
"""

from __future__ import annotations

from typing import Any
from typing import Protocol as _Typing

from snapcheck.traces.protocol_facts import TlaMapping


class TaskContext(_Typing):
    """What a task offers its protocol handler (implemented by ``reference.sim.engine.Task``).

    Channels (``Chan``) have ``id``, ``src`` and ``dst`` (the sending and receiving
    tasks), ``gate``, ``index`` (position in the gate), ``back_edge`` and ``fifo``; messages (``Msg``) have ``mid``, ``round``
    (barriers), ``started`` (trigger time of the barrier's round), ``unaligned``
    (a barrier sent overtaking) and ``recovered`` (a replayed record).
    """

    id: str  # the task's identity: "op[i]", "g1.op[i]" in a job restored at another parallelism
    inputs: list  # data input channels from other tasks (not the external input)
    outputs: list  # data output channels
    is_source: bool  # the task reads an external input (a source)

    @property
    def now(self) -> int: ...

    def checkpoint(self, round: int) -> int | None:
        """Snapshot the operator state as this task's checkpoint of ``round``; returns
        the checkpoint number, or None if the snapshot failed (the round is declined
        and the coordinator told; the protocol must not forward the barrier)."""

    def send_barrier(self, round: int, priority: bool = False, unaligned: bool = False) -> dict:
        """Send the barrier of ``round`` on every output. ``priority``: it overtakes the
        records in the output buffers (not a barrier or cancellation marker queued
        there: it goes right behind the last one); returns ``{chan: [overtaken records]}`` (the output part of an
        unaligned checkpoint). ``unaligned`` flags the barrier so that receivers
        handle it at once."""

    def record(self, ckpt: int, ch, msgs: list, part: str = "input") -> None:
        """Persist recorded channel state of ``ch`` with checkpoint ``ckpt`` (replayed
        on recovery; ``part`` "input" by the receiver, "output" by the sender). Every
        record of ``msgs`` travels on ``ch``: recovery re-injects them on it, so a
        record of another channel is a protocol error."""

    def queued(self, ch) -> list:
        """Records that arrived on ``ch`` and are not processed yet (in arrival order)."""

    def send_cancel(self, round: int) -> None:
        """Send a cancellation marker of ``round`` on every output (FIFO, like a barrier
        without priority): downstream tasks must not wait for this task's barrier of it."""

    def take_barrier(self, ch, round: int) -> list | None:
        """If the barrier of ``round`` is queued on ``ch``, remove it (it is received
        now) and return the records queued before it; else None."""

    def block(self, ch) -> None: ...

    def unblock_all(self) -> None: ...

    def complete(self, round: int) -> None:
        """This task's part of ``round`` is durable — its checkpoint and every record of
        channel state that belongs to it: acknowledge it to the coordinator."""

    def decline(self, round: int) -> None:
        """Give ``round`` up and tell the coordinator, which aborts it (and, with
        ``abort_notices``, tells every task): what a task does with a round it will never
        acknowledge — a newer round's barrier or cancellation marker made it obsolete
        here (Flink's ``declineCheckpoint``). A round given up without a word stays
        pending at the coordinator until a later round completes or a timeout aborts it;
        if neither comes, it hangs (``incomplete-round``)."""

    def situation(self, name: str) -> None:
        """Mark a moment of the protocol, at this task, for the campaigns' coverage and crash
        placement (``Protocol.situations``)."""

    def set_timer(self, at: int, key: Any) -> None:
        """Call ``on_timer(key)`` at tick ``at`` (now, if ``at`` has passed). A periodic timer
        does not keep a finished run alive: once only timers are left and, for ten ticks of
        the coordinator's clock, those that fired changed nothing, the run ends; a timer
        re-armed for the current tick over and over is a protocol error."""


class TaskProtocol:
    """Base class of a task's protocol handler; every handler defaults to doing nothing."""

    def __init__(self, ctx: TaskContext, protocol: Protocol) -> None:
        self.ctx = ctx
        self.protocol = protocol

    def on_trigger(self, round: int, barrier) -> None:
        pass

    def barrier_priority(self, ch, barrier) -> bool:
        return False

    def on_barrier(self, ch, barrier, overtaking: bool) -> None:
        pass

    def on_arrival(self, ch, msg) -> None:
        pass

    def on_process(self, ch, msg) -> None:
        pass

    def on_timer(self, key: Any) -> None:
        pass

    def on_cancel(self, ch, marker) -> None:
        pass

    def on_abort(self, round: int) -> None:
        pass

    def on_restore(self, ckpt: int, round: int) -> None:
        pass


class Protocol:
    """A protocol: its catalogue facts and the switches the simulator needs.

    Everything the kit knows about a protocol is declared here, once, as class
    attributes; the catalogue (``snapcheck.reference.catalogue``), the campaigns,
    the CLI listings and the checker (through the trace header) read them.
    A protocol written in the user's own module declares the same attributes.

    Identity:

    * ``name``: the catalogue name (``--protocol NAME``); ``trace_name`` the name
      written into the trace header (default: ``name``; a mutant writes its
      base's name, with ``params.mutant``). ``family``, ``summary``: for listings.

    What the simulator does with it:

    * ``aligned``: snapshots promise empty channel state except on back-edges
      (the header says ``params.aligned``; the checker reports any in-flight message).
    * ``observe_arrivals`` / ``observe_processing``: call ``on_arrival`` / ``on_process``
      (``observe_arrivals`` also records ``arrive`` events).
    * ``dedup``: discard records of a previous epoch that arrive after a restore.
    * ``fifo``: False makes every data channel non-FIFO (to show what breaks).
    * ``abort_notices``: the coordinator tells every task of a round aborted by a
      decline or a timeout (``on_abort``; a ``coordinator->TASK/notices`` channel each).
    * ``simulator``: the simulator class (None: the shared dataflow simulator).

    Where it can run (campaigns and hypothesis strategies read these):

    * ``topologies``: ``"any"`` (cyclic dataflows too), ``"acyclic"``, ``"cyclic"`` (cyclic
      dataflows only, e.g. a mutant that shows only on a cycle), or ``"own"``
      (the protocol builds its own processes and ignores the workload; its crash
      schedules name its own processes: ``crash_targets``).
    * ``max_rounds_in_flight``: at most this many rounds at once (None: any).
    * ``recovery_modes``: the recoveries it implements (``SimConfig.recovery``).
    * ``failure_free_oracle``: the end-to-end exactly-once oracle applies: final
      states and outputs of a run with failures or declines equal the failure-free
      run's (False where results legitimately depend on timing a failure changes).
    * ``situations``: the protocol-relevant moments (``reference.sim.exploration``) a
      campaign should reach and place crashes at; its coverage report lists those no
      run reached. A protocol marks its own with ``ctx.situation(name)``.
    * ``job_faults``: faults of the whole job, beside a task's crash, that its simulator
      injects at a time or at a situation (``--fail NAME@SITUATION#K``; the
      simulator's ``extra_fault_targets``), e.g. the regional family's ``rescale``; a
      targeted campaign places them at the situations of the whole job it lists.

    What the checker holds it to (written into the header, ``traces.protocol_facts``):

    * ``guarantees``: promised properties beyond the universal ones
      (``"z-cycles"``, ``"rdt"``); ``cic``: ``"bcs"`` or ``"hmnr"`` when the trace's
      piggybacks follow that protocol's rules.
    * ``barriers_delimit_channel_state``: True (Chandy-Lamport, Flink) when a round's
      barrier on a channel ends the channel state its receiver records for the round,
      so a round is complete only once every barrier of it arrived; False when
      barriers (markers) only make tasks checkpoint and the protocol ends each
      channel's recording by other means (message counters, colours: Lai-Yang,
      Mattern), so a round is complete once every task checkpointed it.
    * ``tla``: its TLA+ trace specification (a ``TlaMapping``), or None.
    * ``demo``: ``SimConfig`` fields of a configuration that shows it well.
    * ``finished_inputs``: its task state machines read their inputs anew for each
      round, so an input whose sender finished can leave (runs with finishing
      sources, FLIP-147, need it). The shared simulator models finishing sources: a
      protocol with its own ``simulator`` has it False unless it declares it, and may
      not declare it True (as ``rescalable``).
    * ``rescalable``: its tasks can be restored at another parallelism by a
      ``SimConfig.rescale`` (``--rescale``), which the shared simulator models (what
      the new tasks ``g1.*`` receive: docs/protocols.md, "A protocol under a
      rescale"). True (the default on the shared simulator): campaigns draw rescales
      for it; False: no run draws one, and ``simulate`` refuses a ``rescale`` (exit 2).
      A protocol with its own ``simulator`` is not rescalable unless it declares so
      itself (``__init_subclass__``), and may not declare so (``catalogue``'s
      ``declaration_problems``): its simulator may rescale by a fault of its own
      (``job_faults``, e.g. the regional family's ``rescale``).

    A mutant (a protocol with a known bug) is a subclass that also sets
    ``mutant_of`` (the correct protocol: its catalogue name, ``MODULE:CLASS``, or the
    class itself), ``bug`` (the real bug
    or printed algorithm it reproduces), ``expect`` (violation kinds the checker
    must report, any of them) and ``prop`` (the property of the main kind); it may
    override ``adjust`` to force a configuration change (e.g. a cyclic workload).
    """

    name = "custom"
    trace_name: str | None = None
    family = "user"
    summary = "a user-defined protocol"
    task_class: type[TaskProtocol] = TaskProtocol
    simulator: Any = None
    aligned = False
    observe_arrivals = False
    observe_processing = False
    dedup = True
    fifo = True
    abort_notices = False
    topologies = "any"
    max_rounds_in_flight: int | None = None
    recovery_modes: tuple[str, ...] = ("restart-all",)
    failure_free_oracle = True
    barriers_delimit_channel_state = True
    guarantees: tuple[str, ...] = ()
    situations: tuple[str, ...] = (
        "snapshot",
        "acknowledged",
        "decline",
        "completed-unnotified",
        "recovery",
        "replay",
        "crash-in-recovery",
        "stale",
    )
    job_faults: tuple[str, ...] = ()
    cic: str | None = None
    tla: TlaMapping | None = None
    demo: dict = {}
    crash_targets: str | None = None
    finished_inputs = True
    rescalable = True
    mutant_of: type[Protocol] | str | None = None
    bug = ""
    expect: tuple[str, ...] = ()
    prop = ""

    def __init__(self, **params: Any) -> None:
        self.params = params

    def __init_subclass__(cls, **kw: Any) -> None:
        """A class with its own ``simulator`` that does not declare ``rescalable`` (or
        ``finished_inputs``) is not rescalable (does not let finished inputs leave):
        ``SimConfig.rescale`` and ``SimConfig.finish_sources`` are modelled by the shared
        simulator only."""
        super().__init_subclass__(**kw)
        for fact in ("rescalable", "finished_inputs"):
            if cls.simulator is not None and fact not in vars(cls):
                setattr(cls, fact, False)

    @property
    def mutant(self) -> str | None:
        """This protocol's name if it is a mutant, else None."""
        return self.name if self.mutant_of else None

    @classmethod
    def is_users(cls) -> bool:
        """Is this class the user's own, not one of the kit's (defined outside the kit's
        package, a subclass of a kit protocol too)? A user's protocol is held to checks
        the kit's own need not pay for (the values it hands the trace) and its failures
        are its errors, never the kit's.

        >>> Protocol.is_users(), type("Mine", (Protocol,), {"__module__": "mine"}).is_users()
        (False, True)
        """
        return not cls.__module__.startswith("snapcheck.")

    @classmethod
    def header_name(cls) -> str:
        """The protocol name written into the trace header."""
        if cls.trace_name:
            return cls.trace_name
        base = cls.mutant_of
        if isinstance(base, type):
            return base.header_name()
        if base:
            for parent in cls.__mro__[1:]:  # the correct protocol it subclasses, if it does
                if (
                    issubclass(parent, Protocol)
                    and not parent.mutant_of
                    and (parent.name == base or base.endswith(":" + parent.__qualname__))
                ):
                    return parent.header_name()
            return base
        return cls.name

    @classmethod
    def adjust(cls, cfg):
        """A mutant's forced configuration change (default: none)."""
        return cfg

    @classmethod
    def random_config(cls, rnd, failures: bool, hard: bool = False, seed: int = 0) -> dict:
        """``SimConfig`` fields drawn from ``rnd`` for a protocol with its own topology
        (``topologies = "own"``), whose processes the campaign cannot name: the default
        draws nothing; protocols with crash targets override it (``failures``: the
        campaign wants crashes; ``hard``: the stress strategy wants more of them;
        ``seed``: the run's seed, for protocols whose dataflow the seed shapes)."""
        return {}

    @classmethod
    def task_names(cls, cfg) -> list[str]:
        """The ids of the tasks a run of ``cfg`` has: the names its crashes may give. A
        protocol with its own topology knows them only if it says so (default: none; a
        campaign then places its crashes at situations of ``self``, the task where the
        situation occurred).

        >>> from snapcheck.reference import SimConfig
        >>> Protocol.task_names(SimConfig(workload="q1", parallelism=2))
        ['bids[0]', 'bids[1]', 'map[0]', 'map[1]', 'sink[0]', 'sink[1]']
        """
        from snapcheck.reference.topology import expand
        from snapcheck.reference.workloads import make_workload

        if cls.topologies == "own":
            return []
        return [tid for tid, _, _ in expand(make_workload(cfg.workload, cfg.parallelism, cfg.seed)).tasks]

    @classmethod
    def from_config(cls, cfg) -> Protocol:
        """The protocol object for a ``SimConfig``: checks ``cfg.recovery`` against
        ``recovery_modes`` and passes it on when there is a choice; protocols with
        parameters taken from the config override this."""
        if cfg.recovery not in cls.recovery_modes:
            raise ValueError(
                f"recovery {cfg.recovery!r} is not implemented by {cls.name} "
                f"(it implements {', '.join(cls.recovery_modes)})"
            )
        return cls(recovery=cfg.recovery) if len(cls.recovery_modes) > 1 else cls()

    def header_params(self) -> dict:
        out = dict(self.params)
        out["aligned"] = self.aligned
        if self.barriers_delimit_channel_state is False:
            out["barriers_delimit_channel_state"] = False
        if self.guarantees:
            out["guarantees"] = list(self.guarantees)
        if self.cic:
            out["cic"] = self.cic
        if self.mutant:
            out["mutant"] = self.mutant
        return out

    def make(self, ctx: TaskContext) -> TaskProtocol:
        return self.task_class(ctx, self)

    # -- restoring at another parallelism and finished tasks (reference/sim/rescale.py) ----
    def rescale_channel_state(self, has_state: bool) -> bool:
        """Whether the recorded channel state on the inputs of an operator is redistributed
        when the job is restored at another parallelism (``has_state``: the operator has
        state of its own). Always, in a correct protocol."""
        return True

    def rescale_deliver(self, groups: list, parallelism: int) -> tuple[list, list]:
        """The recovered records a new task re-injects on one new channel, from ``groups``
        (``(old channel, records)`` in recorded order): ``(first, late)``, ``first`` ahead of
        any live record, ``late`` after a delay (dropped if live data of the channel was
        processed meanwhile); records in neither are never delivered. Correct: all first."""
        return [m for _, msgs in groups for m in msgs], []

    def final_notification(self, task, round: int) -> str:
        """What becomes of the completion notification of ``round`` to a finished task
        waiting for its final checkpoint: ``"deliver"``, ``"lose"`` (sent, never
        received) or ``"skip"`` (not sent). Correct: delivered, for every such round."""
        return "deliver"
