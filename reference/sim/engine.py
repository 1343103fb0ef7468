"""Deterministic discrete-event simulator of a streaming dataflow.

Time is an integer number of *ticks* (read: simulated microseconds). Pending
actions sit in one heap ordered by ``(time, insertion counter)``, so ties are
broken by the order in which they were scheduled and one seed gives one
history: every random choice comes from ``random.Random`` instances seeded from
the run's seed (network delays, snapshot declines); nothing iterates a set of
objects or reads the clock.

``Simulator`` builds the dataflow (tasks, channels, external input logs, the
coordinator and its control channels, the trace header), runs the event loop
and offers the protocol services of ``TaskContext`` (checkpoints, barriers,
recorded channel state, acknowledgements, timers; a state snapshot costs
``snapshot_cost``). The rest is split by concern into mixins: the data path
(``network``), the coordinator and output commit (``coordinator``), failures and
recovery (``recovery``); record types are in ``messages``, the fast trace log in
``recording``. Simulators of other protocol families subclass it and override
only what their protocol changes.
"""

from __future__ import annotations

import hashlib
import random
import re
from heapq import heappop, heappush

import orjson

from snapcheck.reference.protocol import Protocol, TaskProtocol
from snapcheck.reference.sim.base import ProtocolBroke
from snapcheck.reference.sim.coordinator import Coordinator
from snapcheck.reference.sim.exploration import Exploration
from snapcheck.reference.sim.messages import (
    BARRIER,
    BARRIER_SIZE,
    BROADCAST,
    CANCEL,
    DATA,
    FORWARD,
    HASH,
    UNBOUNDED,
    Chan,
    Counts,
    External,
    Msg,
    Node,
    Stored,
)
from snapcheck.reference.sim.network import Network
from snapcheck.reference.sim.recovery import Recovery
from snapcheck.reference.sim.watchdog import HandlerTimeout, handler_watchdog
from snapcheck.reference.topology import ChannelSpec, Workload, expand
from snapcheck.reference.user_code import user_frame
from snapcheck.traces.model import Channel, Header, Process

# A default repr's memory address (``<object object at 0x7f…>``) differs from run to run:
# the trace of a protocol error keeps the same bytes when the run is reproduced.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _handler_frame(tb) -> tuple:
    """The task and the handler of the outermost protocol handler (a method of a
    ``TaskProtocol``) on the traceback, or ``(None, None)``."""
    while tb is not None:
        obj = tb.tb_frame.f_locals.get("self")
        if isinstance(obj, TaskProtocol):
            return obj.ctx, tb.tb_frame.f_code.co_name
        tb = tb.tb_next
    return None, None


def _raised_in_kit(tb) -> str:
    """Where the simulator itself raised, when the innermost frame of ``tb`` is the kit's
    simulation code (a protocol's call it could not serve, or a bug of the kit, which the
    user then can report); empty when the protocol's own code raised."""
    while tb.tb_next is not None:
        tb = tb.tb_next
    module = tb.tb_frame.f_globals.get("__name__", "")
    if not module.startswith(("snapcheck.reference.sim", "snapcheck.reference.simulation", "snapcheck.traces")):
        return ""
    return f" (raised in the simulator, {module}:{tb.tb_lineno}, {tb.tb_frame.f_code.co_name})"


MAX_IDLE_TICKS = 10  # coordinator ticks with only protocol timers left and nothing happening: the run is over
TIMER_STORM = 100_000  # timers fired at one tick beyond which the simulated clock is stuck (a protocol error)


class Task:
    """A task: one parallel instance of an operator. Implements ``reference.protocol.TaskContext``."""

    # set by some simulators only (absent otherwise)
    restart_epoch: int  # regional: the epoch of the task's last restart
    processed: dict[Chan, int]  # uncoordinated: records processed per channel read
    ckpts: list[Stored]  # uncoordinated: its local checkpoints
    ckpt_interval: int  # uncoordinated: ticks between its checkpoints
    ckpt_rng: random.Random  # uncoordinated: the jitter of its checkpoint times

    def __init__(self, sim: Simulator, pid: int, ident: str, spec, subtask: int, cost: int):
        self.sim = sim
        self.pid = pid
        self.id = ident
        self.spec = spec
        self.subtask = subtask
        self.op = spec.make(subtask)
        self.is_source = spec.source
        self.is_sink = spec.sink
        self.cost = cost
        self.inputs: list[Chan] = []  # data inputs from tasks (the protocol's inputs)
        self.reads: list[Chan] = []  # everything the task reads data from (+ external)
        self.outputs: list[Chan] = []  # data outputs
        self.routes: list = []
        self.ack: Chan | None = None  # control channel to the coordinator
        self.proto: TaskProtocol | None = None  # set by Simulator._start_tasks
        self.alive = True
        self.busy_until = 0
        self.wake = False
        self.waiting = False
        self.incarnation = 0
        self.restores = 0
        self.ckpt_no = 0
        self.round_ckpt: dict[int, int] = {}
        self.answered: dict[int, tuple[int, str, int]] = {}  # round -> (incarnation, "ack" | "decline", tick)
        self.first_barrier: dict[int, int] = {}
        self.initial: Stored | None = None

    def __repr__(self) -> str:
        return f"Task({self.id})"

    # -- TaskContext ---------------------------------------------------------------
    @property
    def now(self) -> int:
        return self.sim.now

    def _round(self, call: str, round) -> None:
        """A protocol passes a round number where the trace needs one (else it broke)."""
        if type(round) is not int:
            raise ProtocolBroke(self, call, f"a round is an int, not {type(round).__name__} {round!r}")

    def _channel(self, call: str, ch, chans: list, which: str = "input") -> None:
        """A protocol names one of this task's own ``which`` channels (``chans``) (else it broke)."""
        if not any(ch is c for c in chans):
            have = ", ".join(c.id for c in chans) or "none"
            other = self.outputs if which == "input" else self.inputs
            why = (
                f" (it is one of its {'outputs' if which == 'input' else 'inputs'})"
                if any(ch is c for c in other)
                else ""
            )
            raise ProtocolBroke(self, call, f"{ch!r} is not one of the {which} channels it may name here{why}: {have}")

    def checkpoint(self, round: int) -> int | None:
        self._round("checkpoint", round)
        if not 1 <= round < self.sim.next_round:
            raise ProtocolBroke(
                self,
                "checkpoint",
                f"round {round} was never started by the coordinator (started so far: "
                f"{'1..' + str(self.sim.next_round - 1) if self.sim.next_round > 1 else 'none'}); "
                "a task checkpoints the rounds it is triggered for or receives barriers of",
            )
        if round in self.round_ckpt and (round in self.sim.rounds or round in self.sim.completed_rounds):
            raise ProtocolBroke(  # the round would complete with, or a recovery to it restore, either one
                self,
                "checkpoint",
                f"round {round} already has this task's checkpoint {self.round_ckpt[round]} and is "
                f"{'in flight' if round in self.sim.rounds else 'complete'}; a task checkpoints a round once (after a "
                "restore of the round, its restored checkpoint is that round's)",
            )
        return self.sim.take_checkpoint(self, round)

    def send_barrier(self, round: int, priority: bool = False, unaligned: bool = False) -> dict:
        self._round("send_barrier", round)
        return self.sim.send_barrier(self, round, priority, unaligned)

    def record(self, ckpt: int, ch: Chan, msgs: list, part: str = "input") -> None:
        if part not in ("input", "output"):
            raise ProtocolBroke(self, "record", f"part is 'input' or 'output', not {part!r}")
        self._channel("record", ch, self.inputs if part == "input" else self.outputs, part)
        if not isinstance(msgs, (list, tuple)) or not all(isinstance(m, Msg) and m.kind == DATA for m in msgs):
            raise ProtocolBroke(
                self, "record", f"msgs is a list of data records (ctx.queued, on_process), not {msgs!r}"
            )
        if stray := next((m for m in msgs if m.ch is not ch), None):
            raise ProtocolBroke(
                self,
                "record",
                f"record {stray.mid} travels on {stray.ch.id}, not on {ch.id}: a channel's recorded state holds "
                "records of that channel (recovery re-injects them on it)",
            )
        self.sim.record(self, ckpt, ch, msgs, part)

    def queued(self, ch: Chan) -> list:
        if not isinstance(ch, Chan):
            raise ProtocolBroke(self, "queued", f"ch is one of the task's input channels, not {ch!r}")
        return [m for m in ch.inq if m.kind == DATA]

    def send_cancel(self, round: int) -> None:
        self._round("send_cancel", round)
        self.sim.send_barrier(self, round, False, False, CANCEL)

    def take_barrier(self, ch: Chan, round: int) -> list | None:
        self._channel("take_barrier", ch, self.inputs)
        q = ch.inq
        for i, m in enumerate(q):
            if m.kind == BARRIER and m.round == round:
                pre = [x for x in list(q)[:i] if x.kind == DATA]
                del q[i]
                self.sim.barrier_received(self, ch, m)
                return pre
        return None

    def block(self, ch: Chan) -> None:
        if not ch.blocked:
            self._channel("block", ch, self.inputs)
            if not any(c.blocked for c in self.inputs):
                self.sim.situation("aligning", self)
            ch.blocked = True
            ch.blocked_since = self.sim.now

    def unblock_all(self) -> None:
        now = self.sim.now
        for ch in self.inputs:
            if ch.blocked:
                ch.blocked = False
                self.sim.m_blocked += now - ch.blocked_since

    def complete(self, round: int) -> None:
        self._round("complete", round)
        self.sim.acknowledge(self, round, "ack")

    def decline(self, round: int) -> None:
        self._round("decline", round)
        self.sim.acknowledge(self, round, "decline")

    def situation(self, name: str) -> None:
        if type(name) is not str:  # the campaigns count, sort and report situations by name
            raise ProtocolBroke(self, "situation", f"a situation's name is a str, not {type(name).__name__} {name!r}")
        self.sim.situation(name, self)

    def set_timer(self, at: int, key) -> None:
        self.sim.timers += 1
        self.sim.at(max(at, self.sim.now), self.sim.fire_timer, self, self.incarnation, key)


class Simulator(Network, Coordinator, Recovery, Exploration):
    def __init__(self, cfg, workload: Workload, protocol: Protocol, log_class):
        self.cfg = cfg
        self.wl = workload
        self.protocol = protocol
        seed = cfg.seed
        self.net_rng = random.Random(f"{seed}/net")
        self.net_random = self.net_rng.random
        self.decline_rng = random.Random(f"{seed}/decline")
        self.control_rng = random.Random(f"{seed}/control")
        self.now = 0
        self.heap: list = []
        self.counter = 0
        self.pending = 0  # scheduled work (everything but the coordinator's clock)
        self.timers = 0  # protocol timers scheduled and not fired yet (part of pending)
        self.idle_mark: tuple | None = None  # what the run had done when only timers were left
        self.idle_ticks = 0  # coordinator ticks since then with only timers left and nothing done
        self.timer_storm = (-1, 0)  # (tick, timers fired at it)
        self.quiet_at = (-1, False)  # (tick, quiescent() at it)
        self.retired_at: dict[str, int] = {}  # task id -> when it left the job (a rescale, a finished source)
        self.timers_fired = 0  # protocol timers fired so far
        self.fired_at_tick = 0  # timers_fired at the coordinator's last tick
        self.epoch = 0  # number of recoveries so far
        self.marker_mids: set[str] = set()  # the ids of every barrier and cancellation marker sent
        self.progress = 0  # data records processed so far
        self.dedup = protocol.dedup
        self.observe_arrivals = protocol.observe_arrivals
        self.observe_processing = protocol.observe_processing
        self.latency = cfg.latency
        self.jitter = cfg.jitter
        self.out_cap = cfg.out_buffer
        self.values = cfg.values
        self.digests = cfg.digests and log_class.records
        self.txn_outputs = True  # sink transactions are rounds: outputs carry txn/phase attrs
        self.store: dict[tuple[int, int], Stored] = {}
        self.round_started: dict[int, int] = {}
        self.outputs: list = []
        self.replays: dict[str, int] = {}  # mid -> number of replays so far
        self._build(log_class)
        self.log_recv = self.log.recv
        self.log_send = self.log.send
        self.log_arrive = self.log.arrive
        # metrics
        self.m = {
            "data_messages": 0,
            "data_bytes": 0,
            "barrier_messages": 0,
            "cancel_messages": 0,
            "control_messages": 0,
            "protocol_bytes": 0,
            "checkpoints": 0,
            "persisted_messages": 0,
            "persisted_bytes": 0,
            "replayed_channel_state": 0,
            "replayed_source": 0,
            "discarded": 0,
            "declines": 0,
        }
        self.m_blocked = 0
        self.latencies: list[int] = []
        self.alignment: list[int] = []
        self.task_ckpt_time: list[int] = []
        self.round_durations: list[int] = []
        self.recoveries: list[dict] = []
        self.outstanding = 0
        self.stuck = False
        self.truncated = False
        self.crashes = 0
        self.broken: str | None = None  # a protocol error ended the run
        self.init_exploration(cfg)

    def _build(self, log_class) -> None:
        cfg, wl = self.cfg, self.wl
        graph = expand(wl)
        procs, self.tasks = self._make_tasks(graph, "", 0)
        self.by_id = {t.id: t for t in self.tasks}
        unknown = [t for t in dict(cfg.stragglers) if t not in self.by_id]
        if unknown:
            raise ValueError(f"straggler names no task: {', '.join(unknown)}")
        self.chans, channels = self._make_data_channels(graph, self.by_id, "")
        # external input logs, one per source task
        self.externals: list[External] = []
        for t in self.tasks:
            if not t.is_source:
                continue
            rng = random.Random(f"{cfg.seed}/input/{t.id}")
            recs = wl.inputs(rng, t.spec.name, t.subtask)
            ext = External(len(self.tasks) + len(self.externals), f"ext:{t.id}", recs)
            procs.append(Process(ext.id, "external", t.spec.name))
            c = Chan(f"{ext.id}->{t.id}", ext, t)
            ext.chan = c
            t.reads.insert(0, c)
            self.externals.append(ext)
            channels.append(Channel(c.id, ext.id, t.id, logged=True))
        coord = Node(len(procs), "coordinator")
        procs.append(Process(coord.id, "coordinator"))
        self.coord = coord
        self.committed: dict[int, set] = {}  # sink pid -> transaction ids committed (external system)
        channels += self._make_control_channels(self.tasks)
        proto = self.protocol
        params = proto.header_params()
        params.update(interval=cfg.interval, max_concurrent=cfg.max_concurrent)
        header = Header(
            procs,
            channels,
            {"name": proto.header_name(), "params": params},
            cfg.seed,
            {"simulator": cfg.header_metadata(wl.name, wl.params)},
        )
        self.header = header
        self.log = log_class(header)
        self.failed_to_start: tuple | None = None
        self._start_tasks(self.tasks)
        self.next_round = 1
        self.rounds: dict[int, list] = {}  # round -> [start, acks, progress at start]
        self.last_completed = 0
        self.completed_rounds: set[int] = set()
        self.last_completed_progress = -1
        self.last_trigger_progress = -1
        self.final_attempts = 0  # rounds triggered at quiescence since the last completion
        self.finished = False
        self.recovering = False
        self.n_recoveries = 0

    def _make_tasks(self, graph, prefix: str, pid0: int) -> tuple[list[Process], list[Task]]:
        """The tasks of a physical graph (ids ``prefix + op[i]``, pids from ``pid0``) and
        their header processes."""
        stragglers = dict(self.cfg.stragglers)
        procs: list[Process] = []
        tasks: list[Task] = []
        for tid, spec, i in graph.tasks:
            tid = prefix + tid
            role = "source" if spec.source else "sink" if spec.sink else "task"
            procs.append(Process(tid, role, spec.name, i, f"w{i}"))
            cost = int(spec.cost * stragglers.get(tid, 1))
            tasks.append(Task(self, pid0 + len(tasks), tid, spec, i, cost))
        return procs, tasks

    def _make_data_channels(self, graph, by_id: dict, prefix: str) -> tuple[list[Chan], list[Channel]]:
        """The data channels of a physical graph between ``by_id``'s tasks, with each
        sender's routes and each receiver's inputs (gate order, then subtask order)."""
        fifo = self.cfg.fifo and self.protocol.fifo
        chans: list[Chan] = []
        channels: list[Channel] = []
        edges = self.wl.edges
        tasks = []
        for spec in graph.channels:
            e = edges[spec.edge]
            a, b = by_id[prefix + spec.src], by_id[prefix + spec.dst]
            c = Chan(
                f"{prefix}{spec.src}->{prefix}{spec.dst}",
                a,
                b,
                spec.gate,
                spec.index,
                e.port,
                spec.back_edge,
                fifo,
                UNBOUNDED if spec.back_edge else self.cfg.buffer,
            )
            c.handler = self.arrive
            a.outputs.append(c)
            b.inputs.append(c)
            chans.append(c)
            channels.append(self._header_channel(c, spec, fifo))
        for tid, _, _ in graph.tasks:  # inputs in gate order, then subtask order
            t = by_id[prefix + tid]
            t.inputs.sort(key=lambda c: (c.gate, c.index))
            t.reads = list(t.inputs)
            tasks.append(t)
        chan_of = {c.id: c for c in chans}
        for ei, e in enumerate(edges):
            kind = {"forward": FORWARD, "hash": HASH, "broadcast": BROADCAST}[e.partitioning]
            size = self.wl.operator(e.src).out_size
            per_src: dict[str, list[Chan]] = {}
            for spec in graph.edge_channels[ei]:
                per_src.setdefault(prefix + spec.src, []).append(chan_of[f"{prefix}{spec.src}->{prefix}{spec.dst}"])
            for src_id, cs in per_src.items():
                cs.sort(key=lambda c: c.dst.subtask)
                by_id[src_id].routes.append((e.select, kind, e.key, cs, size))
        return chans, channels

    def _make_control_channels(self, tasks: list[Task]) -> list[Channel]:
        """Trigger channels to the sources, acknowledgement channels from every task,
        commit channels to the sinks and, for protocols with ``abort_notices``, a notice
        channel to every task (``self.triggers``, ``self.commits``, ``self.notices``)."""
        coord = self.coord
        channels: list[Channel] = []
        self.triggers: list[Chan] = []
        self.commits: list[Chan] = []
        for t in tasks:
            if t.is_source:
                c = Chan(f"coordinator->{t.id}", coord, t)
                c.handler = self.on_trigger
                self.triggers.append(c)
                channels.append(Channel(c.id, coord.id, t.id, kind="control"))
        for t in tasks:
            c = Chan(f"{t.id}->coordinator", t, coord)
            c.handler = self.on_ack
            t.ack = c
            channels.append(Channel(c.id, t.id, coord.id, kind="control"))
        for t in tasks:
            if t.is_sink:
                c = Chan(f"coordinator->{t.id}", coord, t)
                c.handler = self.on_commit
                self.commits.append(c)
                self.committed[t.pid] = set()
                channels.append(Channel(c.id, coord.id, t.id, kind="control"))
        self.notices: list[Chan] = []
        if self.protocol.abort_notices:
            for t in tasks:
                c = Chan(f"coordinator->{t.id}/notices", coord, t)
                c.handler = self.on_notice
                self.notices.append(c)
                channels.append(Channel(c.id, coord.id, t.id, kind="control"))
        return channels

    def _start_tasks(self, tasks: list[Task]) -> None:
        """Protocol state machines and initial checkpoints ``C_{i,0}``. A protocol whose
        constructor raises gets an inert state machine, and the first failure is kept in
        ``self.failed_to_start`` (task, handler, reason) to end the run with a protocol error."""
        proto = self.protocol
        for t in tasks:
            try:
                t.proto = proto.make(t)
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - a protocol's constructor may raise anything
                reason = f"{type(exc).__name__}: {exc}{user_frame(exc.__traceback__)}"
                self.failed_to_start = self.failed_to_start or (t, "__init__", reason)
                t.proto = TaskProtocol(t, proto)
            t.initial = Stored(0, "initial", None, t.op.snapshot(), None, Counts({c: 0 for c in t.outputs + [t.ack]}))

    @staticmethod
    def _header_channel(c: Chan, spec: ChannelSpec, fifo: bool) -> Channel:
        return Channel(
            c.id,
            c.src.id,
            c.dst.id,
            fifo=fifo,
            back_edge=spec.back_edge,
            attrs={"gate": spec.gate, "index": spec.index},
        )

    def at(self, t: int, fn, *args) -> None:
        """Schedule work (keeps the run alive)."""
        self.counter += 1
        self.pending += 1
        heappush(self.heap, (t, self.counter, True, fn, args))

    def later_task_ids(self) -> frozenset[str]:
        """Ids of the tasks that may join the job later (a rescale's new generation): a
        requested fault may name one."""
        return frozenset()

    def clock(self, t: int, fn, *args) -> None:
        """Schedule a coordinator clock action (does not keep the run alive)."""
        self.counter += 1
        heappush(self.heap, (t, self.counter, False, fn, args))

    def run(self) -> None:
        cfg = self.cfg
        if self.failed_to_start:
            self.protocol_error(*self.failed_to_start)
            return
        for ext in self.externals:
            if ext.records:
                self.at(ext.records[0][0], self.ext_send, ext, 0)
        self.check_fault_targets(self.by_id, self.later_task_ids())
        for tid, when in self.timed_faults:
            self.at(when, self.fail_by_id, tid)
        self.clock(cfg.interval, self.tick)
        watch = None
        try:
            with handler_watchdog() as watch:
                self._loop()
        except ProtocolBroke as exc:
            self.protocol_error(exc.task, exc.handler, exc.reason + user_frame(exc.__traceback__))
        except BaseException as exc:  # noqa: BLE001 - a protocol may raise anything (sys.exit, GeneratorExit too)
            if isinstance(exc, KeyboardInterrupt) and (watch is None or watch.interrupted):
                raise  # Ctrl-C: the user stops the kit (a protocol's own raise is its error)
            task, handler = _handler_frame(exc.__traceback__)
            if task is None and not self.protocol.is_users():
                raise  # the kit's own code failed outside a protocol handler: a bug of ours
            tb = exc.__traceback__
            kit = "" if isinstance(exc, HandlerTimeout) else _raised_in_kit(tb)  # stopped wherever it was
            self.protocol_error(task, handler, f"{type(exc).__name__}: {exc}{user_frame(tb)}{kit}")

    def _loop(self) -> None:
        heap = self.heap
        max_time = self.cfg.max_time
        pop = heappop
        while heap:
            t, _, work, fn, args = pop(heap)
            if work:
                self.pending -= 1
            if t > max_time:
                self.truncated = True
                break
            self.now = t
            fn(*args)

    def quiescent(self) -> bool:
        """Is the run out of work (the coordinator's clock decides then how it ends)? Yes with
        nothing scheduled; also when only protocol timers are left and, over ``MAX_IDLE_TICKS``
        ticks of the coordinator's clock, timers fired at each and none processed a record or
        started, ended or completed a round: a protocol that re-arms a periodic timer would
        otherwise keep a finished run alive until ``max_time``. (A timer still to fire, with
        none firing meanwhile, is waited for.) The same answer all through one tick."""
        if self.quiet_at[0] == self.now:
            return self.quiet_at[1]
        if self.pending == 0 or self.pending > self.timers:
            self.idle_mark, self.idle_ticks = None, 0
            quiet = self.pending == 0
        else:
            mark = (self.progress, self.next_round, tuple(self.rounds), self.last_completed, self.epoch)
            if mark != self.idle_mark:
                self.idle_mark, self.idle_ticks = mark, 0
            elif self.timers_fired != self.fired_at_tick:
                self.idle_ticks += 1
            quiet = self.idle_ticks >= MAX_IDLE_TICKS
        self.fired_at_tick = self.timers_fired
        self.quiet_at = (self.now, quiet)
        return quiet

    def protocol_error(self, task, handler: str | None, reason: str) -> None:
        """End the run: the protocol raised in ``handler`` of ``task`` (or broke an invariant
        of the simulator). The trace keeps every event so far and ends with a
        ``protocol_error`` event, which the checker reports as a violation."""
        where = f"{handler} of {task.id}" if task is not None and handler else task.id if task is not None else None
        text = _ADDRESS.sub(" at 0x…", f"{'in ' + where + ': ' if where else ''}{reason}")
        pid = task.pid if task is not None else self.coord.pid
        self.log.protocol_error(pid, self.now, text[:1000], {"handler": handler} if handler else None)
        self.broken = text[:1000]
        self.finished = True

    def barrier_received(self, v: Task, ch: Chan, m: Msg) -> None:
        self.log_recv(v.pid, self.now, ch.id, m.mid)
        assert m.round is not None  # a barrier carries its round
        v.first_barrier.setdefault(m.round, self.now)

    def take_checkpoint(self, v: Task, round: int) -> int | None:
        now = self.now
        cfg = self.cfg
        if cfg.decline_prob and self.decline_rng.random() < cfg.decline_prob:
            self.m["declines"] += 1
            self.acknowledge(v, round, "decline")
            self.situation("decline", v)
            if any(c.blocked for c in self.chans):
                self.situation("decline-while-aligning", v)
            return None
        op = v.op
        if v.is_sink:
            op.prepare(round)
        state = op.snapshot()
        v.ckpt_no += 1
        n = v.ckpt_no
        sent = {c: c.seq for c in v.outputs}
        assert v.ack is not None  # set when the dataflow is built
        sent[v.ack] = v.ack.seq
        self.store[(v.pid, n)] = Stored(n, "coordinated", round, state, None, Counts(sent))
        v.round_ckpt[round] = n
        digest, size = self.state_digest(op)
        self.log.checkpoint(v.pid, now, n, round, digest, size)
        if v.is_sink and round in op.staged:  # the transaction this checkpoint seals
            self.log.output(v.pid, now, len(op.staged[round]), {"txn": round, "phase": "pre-commit"})
        self.m["checkpoints"] += 1
        self.alignment.append(now - v.first_barrier.get(round, now))
        bu = v.busy_until
        v.busy_until = (bu if bu > now else now) + cfg.snapshot_cost
        self.situation("snapshot", v)
        return n

    def state_digest(self, op) -> tuple:
        """``(digest, size)`` of the operator's canonical state for a checkpoint event;
        ``(None, None)`` without digests or when the run records no trace."""
        if not self.digests:
            return None, None
        blob = orjson.dumps(op.canonical(), option=orjson.OPT_SORT_KEYS)
        return hashlib.blake2b(blob, digest_size=8).hexdigest(), len(blob)

    def send_barrier(self, v: Task, round: int, priority: bool, unaligned: bool, kind: int = BARRIER) -> dict:
        """Send a marker of ``round`` on every output of ``v``: a barrier, or with ``kind``
        CANCEL a cancellation marker (FIFO, like a barrier sent without priority)."""
        now = self.now
        started = self.round_started.get(round, now)
        overtaken: dict = {}
        mm = self.m
        tag, name, metric = (
            ("b", "barrier", "barrier_messages") if kind == BARRIER else ("c", "cancel", "cancel_messages")
        )
        for c in v.outputs:
            mid = f"{c.id}:{tag}{round}" if not v.restores else f"{c.id}:{tag}{round}@{v.restores}"
            if mid in self.marker_mids:
                raise ProtocolBroke(
                    v,
                    f"send_{name}",  # the context's call: send_barrier or send_cancel
                    f"task {v.id} sent a second {name} of round {round} on {c.id} (a task sends one {name} of "
                    "a round on each output)",
                )
            self.marker_mids.add(mid)
            b = Msg(mid, c, None, kind, None, None, BARRIER_SIZE, now, c.epoch)
            b.round = round
            b.started = started
            b.unaligned = unaligned
            self.log.marker(v.pid, now, c.id, mid, name, round, BARRIER_SIZE)
            mm[metric] += 1
            mm["protocol_bytes"] += BARRIER_SIZE
            q = c.outbuf
            if len(q) >= self.out_cap:
                self.situation("backpressured-barrier", v)
            if not priority:
                if q:
                    q.append(b)
                else:
                    self.transmit(b)
                continue
            # Priority: overtake the buffered records behind the last buffered marker (a
            # barrier or a cancellation marker keeps its FIFO place, as in Unaligned.tla).
            last = -1
            for i in range(len(q) - 1, -1, -1):
                if q[i].kind != DATA:
                    last = i
                    break
            if last < 0:
                overtaken[c] = [x for x in q if x.kind == DATA]
                self.transmit(b)
            else:
                overtaken[c] = [x for x in list(q)[last + 1 :] if x.kind == DATA]
                q.insert(last + 1, b)
            if overtaken[c]:
                self.situation("overtake", v)
        return overtaken

    def record(self, v: Task, ckpt: int, ch: Chan, msgs: list, part: str) -> None:
        st = self.store.get((v.pid, ckpt))
        if st is None:
            raise ProtocolBroke(
                v,
                "record",
                f"task {v.id} recorded channel state of {ch.id} with checkpoint {ckpt}, which it never took",
            )
        (st.inputs if part == "input" else st.outputs).setdefault(ch, []).extend(msgs)
        self.log.record(v.pid, self.now, ckpt, ch.id, part, [m.mid for m in msgs])
        mm = self.m
        mm["persisted_messages"] += len(msgs)
        mm["persisted_bytes"] += sum(m.size for m in msgs)

    def acknowledge(self, v: Task, round: int, what: str) -> None:
        """Send an acknowledgement (or a decline) of ``round`` to the coordinator. A task
        acknowledges only a round it took its checkpoint of: recovery restores it."""
        if what == "ack" and round not in v.round_ckpt:
            raise ProtocolBroke(
                v,
                "complete",
                f"task {v.id} acknowledged round {round} without taking its checkpoint of that round (ctx.checkpoint)",
            )
        done = v.answered.get(round)
        if done is not None and done[0] == v.incarnation:
            said = {"ack": "acknowledged (ctx.complete)", "decline": "declined (ctx.decline)"}
            raise ProtocolBroke(
                v,
                "complete" if what == "ack" else "decline",
                f"task {v.id} {said[what].split()[0]} round {round}, which it already {said[done[1]]} at tick "
                f"{done[2]}: a task answers each round once, with an acknowledgement or a decline",
            )
        v.answered[round] = (v.incarnation, what, self.now)
        if what == "ack":
            self.task_ckpt_time.append(self.now - v.first_barrier.get(round, self.now))
        assert v.ack is not None  # set when the dataflow is built
        self.send_control(v, v.ack, [what, round])

    def fire_timer(self, v: Task, inc: int, key) -> None:
        self.timers -= 1
        if inc != v.incarnation or not v.alive or self.finished:
            return
        self.timers_fired += 1
        tick, fired = self.timer_storm
        fired = fired + 1 if tick == self.now else 1
        self.timer_storm = (self.now, fired)
        if fired > TIMER_STORM:
            raise ProtocolBroke(
                v,
                "on_timer",
                f"{fired} timers fired at tick {self.now} ({self.timers} more pending): on_timer sets timers "
                "faster than they expire (one re-armed for the current tick never lets the simulated clock "
                "advance; more than one set per firing multiply), so the run cannot end",
            )
        assert v.proto is not None  # set by _start_tasks
        v.proto.on_timer(key)
        if not v.wake:
            self.step(v)

    def metrics(self) -> dict:
        mm = dict(self.m)
        lat = sorted(self.latencies)

        def pct(p: float):
            return lat[min(len(lat) - 1, int(p * len(lat)))] if lat else None

        def mean(xs):
            return round(sum(xs) / len(xs), 2) if xs else None

        data_bytes = mm["data_bytes"]
        recs = self.recoveries
        out = {
            "protocol": self.protocol.header_name(),
            "workload": self.wl.name,
            "seed": self.cfg.seed,
            "tasks": len(self.tasks),
            "channels": len(self.chans),
            "events": len(self.log.events),
            "sim_time": self.now,
            "input_records": sum(len(e.records) for e in self.externals),
            "rounds_started": self.next_round - 1,
            "rounds_completed": len(self.round_durations),
            "checkpoint_duration_mean": mean(self.round_durations),
            "checkpoint_duration_max": max(self.round_durations) if self.round_durations else None,
            "task_checkpoint_time_mean": mean(self.task_ckpt_time),
            "alignment_time_total": sum(self.alignment),
            "alignment_time_mean": mean(self.alignment),
            "blocked_channel_time": self.m_blocked,
            "overhead_ratio": round((data_bytes + mm["protocol_bytes"]) / data_bytes, 4) if data_bytes else None,
            "latency_p50": pct(0.5),
            "latency_p99": pct(0.99),
            "outputs": len(self.outputs),
            "failures": len(recs),
            "restart_time_mean": mean([r["restored"] - r["detected"] for r in recs if "restored" in r]),
            "recovery_time_mean": mean([r["caught_up"] - r["failed"] for r in recs if "caught_up" in r]),
            "stuck": self.stuck,
            "truncated": self.truncated,
            "protocol_error": self.broken,
        }
        out.update(self.exploration_metrics())
        out.update(mm)
        out["replayed_messages"] = mm["replayed_channel_state"] + mm["replayed_source"]
        out["rounds_aborted"] = out["rounds_started"] - out["rounds_completed"] - len(self.rounds)
        return out

    def final_states(self) -> dict:
        return {t.id: t.op.canonical() for t in self.tasks}
