"""Deterministic discrete-event simulator of a streaming dataflow.

Time is an integer number of *ticks* (read: simulated microseconds). Pending
actions sit in one heap ordered by ``(time, insertion counter)``, so ties are
broken by the order in which they were scheduled and one seed gives one
history: every random choice comes from ``random.Random`` instances seeded from
the run's seed (network delays, snapshot declines); nothing iterates a set of
objects or reads the clock.

The model (what a trace produced here means):

* **Tasks** are single-threaded. A task takes the next record from its unblocked
  input channels in arrival order (ties: channel order), *processes* it (``recv``:
  the operator state changes and the outputs are sent, all at that instant) and is
  then busy for its processing cost. Handling a barrier costs ``barrier_cost``,
  a state snapshot ``snapshot_cost``.
* **Channels** are credit-based bounded buffers (Flink's network stack): a sent
  record waits in the sender's output buffer until the receiver's input buffer
  has room (``buffer`` records in flight or queued); a task whose output buffer
  holds ``out_buffer`` records stops processing (backpressure). Delivery takes
  ``latency + U[0, jitter)`` ticks; FIFO channels never reorder (a later message
  arrives no earlier than an earlier one), non-FIFO channels may. Barriers need
  no credit but keep their FIFO place unless sent with priority. Back-edges are
  unbounded, so a cycle cannot deadlock on credits.
* **Sources** read a replayable input partition: an ``external`` process (an
  input log such as a Kafka partition: never fails, every record durable, its
  channel ``logged``) sends each record at its availability time; the source's
  state is its offset. On recovery the external process *replays* the records
  after the restored offset (``replay``, ``from: "source"``).
* **Sinks** commit their output in two phases: staged until the round whose
  checkpoint sealed it completes, then published (``output`` events).
* **The coordinator** (role ``coordinator``, outside every global checkpoint)
  triggers rounds over control channels, collects acknowledgements and declines,
  completes or aborts rounds, notifies the sinks of completed rounds, detects
  failures and orchestrates recovery.
* **Failures and recovery**: ``fail`` loses the task's volatile state and buffers;
  after ``detect_delay`` the coordinator aborts the running rounds and after
  ``restart_delay`` every task restores its checkpoint of the last completed
  round (``restore``, one ``recovery`` id). Then each task replays the input
  channel state recorded with its checkpoint (``from: "channel_state"``, queued
  before anything else), each sender replays recorded output parts ahead of new
  output, sources re-read from their offsets, sinks commit what the restored
  checkpoint sealed. Messages of the previous epoch still in flight are
  discarded on arrival (``discard``, reason ``stale epoch``): that is the
  deduplication of this protocol family.
"""

from __future__ import annotations

import hashlib
import random
from collections import deque
from heapq import heappop, heappush

import orjson

from snapcheck.reference.protocol import Protocol
from snapcheck.reference.topology import ChannelSpec, Workload, expand, partition
from snapcheck.traces.model import Channel, Header, Process

DATA, BARRIER, CONTROL = 0, 1, 2
FORWARD, HASH, BROADCAST = 0, 1, 2
BARRIER_SIZE = 16
CONTROL_SIZE = 16
UNBOUNDED = 1 << 60
MAX_FINAL_ATTEMPTS = 10       # give up after this many aborted rounds on a quiescent dataflow


class Msg:
    """A message in flight (one incarnation; ``mid`` is its trace identity)."""

    __slots__ = ("mid", "ch", "seq", "kind", "value", "key", "size", "born", "epoch", "arr",
                 "round", "started", "unaligned", "recovered")

    def __init__(self, mid, ch, seq, kind, value, key, size, born, epoch):
        self.mid = mid
        self.ch = ch
        self.seq = seq
        self.kind = kind
        self.value = value
        self.key = key
        self.size = size
        self.born = born
        self.epoch = epoch
        self.arr = 0
        self.round = None
        self.started = None
        self.unaligned = False
        self.recovered = False

    def __repr__(self) -> str:
        return f"Msg({self.mid})"


class Chan:
    """A channel at run time: the sender's output buffer, the receiver's input queue."""

    __slots__ = ("id", "src", "dst", "gate", "index", "port", "back_edge", "fifo", "inq", "outbuf",
                 "occupancy", "capacity", "last_arrival", "seq", "blocked", "blocked_since", "handler")

    def __init__(self, cid, src, dst, gate=0, index=0, port=0, back_edge=False, fifo=True, capacity=UNBOUNDED):
        self.id = cid
        self.src = src
        self.dst = dst
        self.gate = gate
        self.index = index
        self.port = port
        self.back_edge = back_edge
        self.fifo = fifo
        self.inq: deque = deque()
        self.outbuf: deque = deque()
        self.occupancy = 0
        self.capacity = capacity
        self.last_arrival = 0
        self.seq = 0
        self.blocked = False
        self.blocked_since = 0
        self.handler = None

    def __repr__(self) -> str:
        return f"Chan({self.id})"


class Stored:
    """A persisted local checkpoint: operator state, output sequence numbers, channel state."""

    __slots__ = ("round", "state", "seq_at", "inputs", "outputs")

    def __init__(self, round, state, seq_at):
        self.round = round
        self.state = state
        self.seq_at = seq_at
        self.inputs: dict = {}
        self.outputs: dict = {}


class Node:
    """A process that is not a task (external input log, coordinator)."""

    def __init__(self, pid: int, ident: str):
        self.pid = pid
        self.id = ident
        self.alive = True
        self.restores = 0


class External(Node):
    def __init__(self, pid, ident, records):
        super().__init__(pid, ident)
        self.records = records
        self.sent: list[Msg] = []
        self.chan: Chan | None = None


class Task:
    """A task: one parallel instance of an operator. Implements ``reference.protocol.TaskContext``."""

    def __init__(self, sim: "Simulator", pid: int, ident: str, spec, subtask: int, cost: int):
        self.sim = sim
        self.pid = pid
        self.id = ident
        self.spec = spec
        self.subtask = subtask
        self.op = spec.make(subtask)
        self.is_source = spec.source
        self.is_sink = spec.sink
        self.cost = cost
        self.inputs: list[Chan] = []            # data inputs from tasks (the protocol's inputs)
        self.reads: list[Chan] = []             # everything the task reads data from (+ external)
        self.outputs: list[Chan] = []           # data outputs
        self.routes: list = []
        self.ack: Chan | None = None            # control channel to the coordinator
        self.proto = None
        self.alive = True
        self.busy_until = 0
        self.wake = False
        self.waiting = False
        self.incarnation = 0
        self.restores = 0
        self.ckpt_no = 0
        self.round_ckpt: dict[int, int] = {}
        self.first_barrier: dict[int, int] = {}
        self.initial: Stored | None = None

    def __repr__(self) -> str:
        return f"Task({self.id})"

    # -- TaskContext ---------------------------------------------------------------
    @property
    def now(self) -> int:
        return self.sim.now

    def checkpoint(self, round: int) -> int | None:
        return self.sim.take_checkpoint(self, round)

    def send_barrier(self, round: int, priority: bool = False, unaligned: bool = False) -> dict:
        return self.sim.send_barrier(self, round, priority, unaligned)

    def record(self, ckpt: int, ch: Chan, msgs: list, part: str = "input") -> None:
        self.sim.record(self, ckpt, ch, msgs, part)

    def queued(self, ch: Chan) -> list:
        return [m for m in ch.inq if m.kind == DATA]

    def take_barrier(self, ch: Chan, round: int) -> list | None:
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
            ch.blocked = True
            ch.blocked_since = self.sim.now

    def unblock_all(self) -> None:
        now = self.sim.now
        for ch in self.inputs:
            if ch.blocked:
                ch.blocked = False
                self.sim.m_blocked += now - ch.blocked_since

    def complete(self, round: int) -> None:
        self.sim.acknowledge(self, round, "ack")

    def set_timer(self, at: int, key) -> None:
        self.sim.at(max(at, self.sim.now), self.sim.fire_timer, self, self.incarnation, key)


class Simulator:
    def __init__(self, cfg, workload: Workload, protocol: Protocol, log_class):
        self.cfg = cfg
        self.wl = workload
        self.protocol = protocol
        seed = cfg.seed
        self.net_rng = random.Random(f"{seed}/net")
        self.net_random = self.net_rng.random
        self.decline_rng = random.Random(f"{seed}/decline")
        self.now = 0
        self.heap: list = []
        self.counter = 0
        self.pending = 0                 # scheduled work (everything but the coordinator's clock)
        self.epoch = 0                   # number of recoveries so far
        self.progress = 0                # data records processed so far
        self.dedup = protocol.dedup
        self.observe_arrivals = protocol.observe_arrivals
        self.observe_processing = protocol.observe_processing
        self.latency = cfg.latency
        self.jitter = cfg.jitter
        self.out_cap = cfg.out_buffer
        self.values = cfg.values
        self.digests = cfg.digests and log_class.records
        self.store: dict[tuple[int, int], Stored] = {}
        self.round_started: dict[int, int] = {}
        self.committed: dict[int, set] = {}      # sink pid -> transaction ids committed (external system)
        self.outputs: list = []
        self.replays: dict[str, int] = {}        # mid -> number of replays so far
        self._build(log_class)
        self.log_recv = self.log.recv
        self.log_send = self.log.send
        self.log_arrive = self.log.arrive
        # metrics
        self.m = {"data_messages": 0, "data_bytes": 0, "barrier_messages": 0, "control_messages": 0,
                  "protocol_bytes": 0, "checkpoints": 0, "persisted_messages": 0, "persisted_bytes": 0,
                  "replayed_channel_state": 0, "replayed_source": 0, "discarded": 0, "declines": 0}
        self.m_blocked = 0
        self.latencies: list[int] = []
        self.alignment: list[int] = []
        self.task_ckpt_time: list[int] = []
        self.round_durations: list[int] = []
        self.recoveries: list[dict] = []
        self.outstanding = 0
        self.stuck = False
        self.truncated = False

    # -- construction ------------------------------------------------------------------
    def _build(self, log_class) -> None:
        cfg, wl = self.cfg, self.wl
        graph = expand(wl)
        fifo = cfg.fifo and self.protocol.fifo
        stragglers = dict(cfg.stragglers)
        procs: list[Process] = []
        self.tasks: list[Task] = []
        by_id: dict[str, Task] = {}
        for tid, spec, i in graph.tasks:
            role = "source" if spec.source else "sink" if spec.sink else "task"
            procs.append(Process(tid, role, spec.name, i, f"w{i}"))
            cost = int(spec.cost * stragglers.get(tid, 1))
            t = Task(self, len(self.tasks), tid, spec, i, cost)
            self.tasks.append(t)
            by_id[tid] = t
        unknown = [t for t in stragglers if t not in by_id]
        if unknown:
            raise ValueError(f"straggler names no task: {', '.join(unknown)}")
        self.by_id = by_id
        channels: list[Channel] = []
        self.chans: list[Chan] = []
        edges = wl.edges
        for spec in graph.channels:
            e = edges[spec.edge]
            a, b = by_id[spec.src], by_id[spec.dst]
            c = Chan(spec.id, a, b, spec.gate, spec.index, e.port, spec.back_edge, fifo,
                     UNBOUNDED if spec.back_edge else cfg.buffer)
            c.handler = self.arrive
            a.outputs.append(c)
            b.inputs.append(c)
            self.chans.append(c)
            channels.append(self._header_channel(spec, fifo))
        for t in self.tasks:               # inputs in gate order, then subtask order
            t.inputs.sort(key=lambda c: (c.gate, c.index))
            t.reads = list(t.inputs)
        chan_of = {c.id: c for c in self.chans}
        for ei, e in enumerate(edges):
            kind = {"forward": FORWARD, "hash": HASH, "broadcast": BROADCAST}[e.partitioning]
            size = wl.operator(e.src).out_size
            per_src: dict[str, list[Chan]] = {}
            for spec in graph.edge_channels[ei]:
                per_src.setdefault(spec.src, []).append(chan_of[spec.id])
            for src_id, chans in per_src.items():
                chans.sort(key=lambda c: c.dst.subtask)
                by_id[src_id].routes.append((e.select, kind, e.key, chans, size))
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
        self.triggers: list[Chan] = []
        self.commits: list[Chan] = []
        for t in self.tasks:
            if t.is_source:
                c = Chan(f"coordinator->{t.id}", coord, t)
                c.handler = self.on_trigger
                self.triggers.append(c)
                channels.append(Channel(c.id, coord.id, t.id, kind="control"))
        for t in self.tasks:
            c = Chan(f"{t.id}->coordinator", t, coord)
            c.handler = self.on_ack
            t.ack = c
            channels.append(Channel(c.id, t.id, coord.id, kind="control"))
        for t in self.tasks:
            if t.is_sink:
                c = Chan(f"coordinator->{t.id}", coord, t)
                c.handler = self.on_commit
                self.commits.append(c)
                self.committed[t.pid] = set()
                channels.append(Channel(c.id, coord.id, t.id, kind="control"))
        proto = self.protocol
        params = proto.header_params()
        params.update(interval=cfg.interval, max_concurrent=cfg.max_concurrent)
        header = Header(procs, channels, {"name": proto.header_name(), "params": params}, cfg.seed,
                        {"simulator": {"workload": wl.name, "workload_params": wl.params,
                                       "config": cfg.describe()}})
        self.header = header
        self.log = log_class(header)
        for t in self.tasks:
            t.proto = proto.make(t)
            t.initial = Stored(None, t.op.snapshot(), {c: 0 for c in t.outputs + [t.ack]})
        self.next_round = 1
        self.rounds: dict[int, list] = {}         # round -> [start, acks, progress at start]
        self.last_completed = 0
        self.last_completed_progress = -1
        self.last_trigger_progress = -1
        self.final_attempts = 0                   # rounds triggered at quiescence since the last completion
        self.finished = False
        self.recovering = False
        self.n_recoveries = 0

    @staticmethod
    def _header_channel(spec: ChannelSpec, fifo: bool) -> Channel:
        return Channel(spec.id, spec.src, spec.dst, fifo=fifo, back_edge=spec.back_edge,
                       attrs={"gate": spec.gate, "index": spec.index})

    # -- scheduling --------------------------------------------------------------------
    def at(self, t: int, fn, *args) -> None:
        """Schedule work (keeps the run alive)."""
        self.counter += 1
        self.pending += 1
        heappush(self.heap, (t, self.counter, True, fn, args))

    def clock(self, t: int, fn, *args) -> None:
        """Schedule a coordinator clock action (does not keep the run alive)."""
        self.counter += 1
        heappush(self.heap, (t, self.counter, False, fn, args))

    def run(self) -> None:
        cfg = self.cfg
        for ext in self.externals:
            if ext.records:
                self.at(ext.records[0][0], self.ext_send, ext, 0)
        for tid, when in cfg.failures:
            if tid not in self.by_id:
                raise ValueError(f"--fail names no task: {tid!r} (tasks: {', '.join(t.id for t in self.tasks)})")
            self.at(when, self.fail, self.by_id[tid])
        self.clock(cfg.interval, self.tick)
        heap = self.heap
        max_time = cfg.max_time
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

    # -- the data path -------------------------------------------------------------------
    def ext_send(self, ext: External, i: int) -> None:
        records = ext.records
        t, value, size = records[i]
        ch = ext.chan
        seq = i + 1
        mid = f"{ch.id}:{seq}"
        m = Msg(mid, ch, seq, DATA, value, None, size, t, self.epoch)
        self.log_send(ext.pid, t, ch.id, mid, seq, size, None, value if self.values else None)
        ext.sent.append(m)
        v = ch.dst
        if v.alive:
            m.arr = t
            ch.inq.append(m)
            if not v.wake:
                self.step(v)
        if seq < len(records):
            self.at(records[seq][0], self.ext_send, ext, seq)

    def send_data(self, v: Task, ch: Chan, value, key, born: int, size: int) -> None:
        ch.seq = seq = ch.seq + 1
        mid = f"{ch.id}:{seq}" if not v.restores else f"{ch.id}:{seq}@{v.restores}"
        m = Msg(mid, ch, seq, DATA, value, key, size, born, self.epoch)
        self.log_send(v.pid, self.now, ch.id, mid, seq, size, key, value if self.values else None)
        mm = self.m
        mm["data_messages"] += 1
        mm["data_bytes"] += size
        if ch.outbuf or ch.occupancy >= ch.capacity:
            ch.outbuf.append(m)
        else:
            self.transmit(m)

    def transmit(self, m: Msg) -> None:
        ch = m.ch
        if m.kind == DATA:
            ch.occupancy += 1
        t = self.now + self.latency + int(self.net_random() * self.jitter)
        if ch.fifo:
            last = ch.last_arrival
            if t < last:
                t = last
            ch.last_arrival = t
        self.counter = n = self.counter + 1    # self.at(t, self.arrive, m), inlined: the hottest path
        self.pending += 1
        heappush(self.heap, (t, n, True, self.arrive, (m,)))

    def pump(self, ch: Chan) -> None:
        """Move output-buffered messages of ``ch`` into the network as credit allows."""
        q = ch.outbuf
        while q:
            m = q[0]
            if m.kind == DATA and ch.occupancy >= ch.capacity:
                break
            q.popleft()
            self.transmit(m)
        u = ch.src
        if u.waiting and not self.out_full(u):
            u.waiting = False
            self.at(self.now, self.wakeup, u, u.incarnation)

    def out_full(self, v: Task) -> bool:
        cap = self.out_cap
        for c in v.outputs:
            if len(c.outbuf) >= cap:
                return True
        return False

    def arrive(self, m: Msg) -> None:
        ch = m.ch
        v = ch.dst
        if not v.alive:
            return
        now = self.now
        if m.epoch != self.epoch and (self.dedup or m.kind != DATA):
            self.log.discard(v.pid, now, ch.id, m.mid, "stale epoch")
            self.m["discarded"] += 1
            return
        m.arr = now
        if m.kind == DATA:
            if self.observe_arrivals:
                self.log_arrive(v.pid, now, ch.id, m.mid)
                ch.inq.append(m)
                v.proto.on_arrival(ch, m)
            else:
                ch.inq.append(m)
        elif v.proto.barrier_priority(ch, m):
            self.barrier_received(v, ch, m)
            v.proto.on_barrier(ch, m, True)
        else:
            ch.inq.append(m)
        if not v.wake:
            self.step(v)

    def wakeup(self, v: Task, inc: int) -> None:
        if inc != v.incarnation:
            return
        v.wake = False
        self.step(v)

    def next_input(self, v: Task):
        """The unblocked input channel of an alive, idle task whose head message arrived
        first (ties: read order), or None. A busy task is woken when its work is done."""
        if not v.alive:
            return None
        bu = v.busy_until
        if bu > self.now:
            if not v.wake:
                v.wake = True
                self.at(bu, self.wakeup, v, v.incarnation)
            return None
        best = None
        best_arr = 0
        for ch in v.reads:
            q = ch.inq
            if q and not ch.blocked:
                arr = q[0].arr
                if best is None or arr < best_arr:
                    best = ch
                    best_arr = arr
        return best

    def step(self, v: Task) -> None:
        """Let an idle task handle its next input (one record or barrier)."""
        best = self.next_input(v)
        if best is None:
            return
        now = self.now
        q = best.inq
        m = q[0]
        if m.kind == BARRIER:
            q.popleft()
            self.barrier_received(v, best, m)
            v.proto.on_barrier(best, m, False)
            cost = self.cfg.barrier_cost
        else:
            cap = self.out_cap
            for c in v.outputs:
                if len(c.outbuf) >= cap:
                    v.waiting = True           # backpressure: resumed by pump()
                    return
            q.popleft()
            if m.epoch == self.epoch:
                best.occupancy -= 1
                if best.outbuf:
                    self.pump(best)
            self.log_recv(v.pid, now, best.id, m.mid)
            if self.observe_processing:
                v.proto.on_process(best, m)
            self.progress += 1
            outs = v.op.process(best.port, m.value)
            if outs:
                self.route(v, outs, m.born, m.size)
            if v.is_sink:
                self.latencies.append(now - m.born)
            if m.recovered:
                self.outstanding -= 1
                if not self.outstanding and self.recoveries:
                    self.recoveries[-1]["caught_up"] = now
            cost = v.cost
        bu = v.busy_until                      # (the handlers may have added snapshot time)
        v.busy_until = bu = (bu if bu > now else now) + cost
        # Wake up when done only if input is waiting; a later arrival wakes the task itself.
        for ch in v.reads:
            if ch.inq and not ch.blocked:
                v.wake = True
                self.at(bu, self.wakeup, v, v.incarnation)
                break

    def route(self, v: Task, outs: list, born: int, in_size: int) -> None:
        send = self.send_data
        for select, kind, keyf, chans, size in v.routes:
            size = size or in_size
            for val in outs:
                if select is not None:
                    val = select(val)
                    if val is None:
                        continue
                if kind == FORWARD:
                    send(v, chans[0], val, None, born, size)
                elif kind == HASH:
                    k = keyf(val)
                    send(v, chans[partition(k, len(chans))], val, k, born, size)
                else:
                    for c in chans:
                        send(v, c, val, None, born, size)

    # -- protocol services -------------------------------------------------------------
    def barrier_received(self, v: Task, ch: Chan, m: Msg) -> None:
        self.log_recv(v.pid, self.now, ch.id, m.mid)
        v.first_barrier.setdefault(m.round, self.now)

    def take_checkpoint(self, v: Task, round: int) -> int | None:
        now = self.now
        cfg = self.cfg
        if cfg.decline_prob and self.decline_rng.random() < cfg.decline_prob:
            self.m["declines"] += 1
            self.acknowledge(v, round, "decline")
            return None
        op = v.op
        if v.is_sink:
            op.prepare(round)
        state = op.snapshot()
        v.ckpt_no += 1
        n = v.ckpt_no
        seq_at = {c: c.seq for c in v.outputs}
        seq_at[v.ack] = v.ack.seq
        self.store[(v.pid, n)] = Stored(round, state, seq_at)
        v.round_ckpt[round] = n
        digest, size = self.state_digest(op)
        self.log.checkpoint(v.pid, now, n, round, digest, size)
        self.m["checkpoints"] += 1
        self.alignment.append(now - v.first_barrier.get(round, now))
        bu = v.busy_until
        v.busy_until = (bu if bu > now else now) + cfg.snapshot_cost
        return n

    def state_digest(self, op) -> tuple:
        """``(digest, size)`` of the operator's canonical state for a checkpoint event;
        ``(None, None)`` without digests or when the run records no trace."""
        if not self.digests:
            return None, None
        blob = orjson.dumps(op.canonical(), option=orjson.OPT_SORT_KEYS)
        return hashlib.blake2b(blob, digest_size=8).hexdigest(), len(blob)

    def send_barrier(self, v: Task, round: int, priority: bool, unaligned: bool) -> dict:
        now = self.now
        started = self.round_started.get(round, now)
        overtaken: dict = {}
        mm = self.m
        for c in v.outputs:
            mid = f"{c.id}:b{round}" if not v.restores else f"{c.id}:b{round}@{v.restores}"
            b = Msg(mid, c, None, BARRIER, None, None, BARRIER_SIZE, now, self.epoch)
            b.round = round
            b.started = started
            b.unaligned = unaligned
            self.log.barrier(v.pid, now, c.id, mid, round, BARRIER_SIZE)
            mm["barrier_messages"] += 1
            mm["protocol_bytes"] += BARRIER_SIZE
            q = c.outbuf
            if not priority:
                if q:
                    q.append(b)
                else:
                    self.transmit(b)
                continue
            # Priority: overtake the buffered records behind the last buffered barrier.
            last = -1
            for i in range(len(q) - 1, -1, -1):
                if q[i].kind == BARRIER:
                    last = i
                    break
            if last < 0:
                overtaken[c] = list(q)
                self.transmit(b)
            else:
                overtaken[c] = list(q)[last + 1:]
                q.insert(last + 1, b)
        return overtaken

    def record(self, v: Task, ckpt: int, ch: Chan, msgs: list, part: str) -> None:
        st = self.store[(v.pid, ckpt)]
        (st.inputs if part == "input" else st.outputs).setdefault(ch, []).extend(msgs)
        self.log.record(v.pid, self.now, ckpt, ch.id, part, [m.mid for m in msgs])
        mm = self.m
        mm["persisted_messages"] += len(msgs)
        mm["persisted_bytes"] += sum(m.size for m in msgs)

    def acknowledge(self, v: Task, round: int, what: str) -> None:
        """Send an acknowledgement (or a decline) of ``round`` to the coordinator."""
        if what == "ack":
            self.task_ckpt_time.append(self.now - v.first_barrier.get(round, self.now))
        self.send_control(v, v.ack, [what, round])

    def fire_timer(self, v: Task, inc: int, key) -> None:
        if inc != v.incarnation or not v.alive:
            return
        v.proto.on_timer(key)
        if not v.wake:
            self.step(v)

    # -- control messages --------------------------------------------------------------
    def send_control(self, node, ch: Chan, value) -> None:
        ch.seq += 1
        mid = f"{ch.id}:{ch.seq}" if not node.restores else f"{ch.id}:{ch.seq}@{node.restores}"
        m = Msg(mid, ch, ch.seq, CONTROL, value, None, CONTROL_SIZE, self.now, self.epoch)
        self.log_send(node.pid, self.now, ch.id, mid, ch.seq, CONTROL_SIZE, None, value)
        self._deliver_control(m)

    def _deliver_control(self, m: Msg) -> None:
        ch = m.ch
        mm = self.m
        mm["control_messages"] += 1
        mm["protocol_bytes"] += m.size
        t = self.now + self.cfg.control_latency
        if t < ch.last_arrival:
            t = ch.last_arrival
        ch.last_arrival = t
        self.at(t, ch.handler, m)

    def _stale_control(self, v: Task, m: Msg) -> bool:
        if not v.alive:
            return True
        if m.epoch != self.epoch:
            self.log.discard(v.pid, self.now, m.ch.id, m.mid, "stale epoch")
            self.m["discarded"] += 1
            return True
        return False

    def on_trigger(self, m: Msg) -> None:
        v = m.ch.dst
        if self._stale_control(v, m):
            return
        self.barrier_received(v, m.ch, m)
        v.proto.on_trigger(m.round, m)
        if not v.wake:
            self.step(v)

    def on_commit(self, m: Msg) -> None:
        v = m.ch.dst
        if self._stale_control(v, m):
            return
        self.log_recv(v.pid, self.now, m.ch.id, m.mid)
        self._publish(v, v.op.commit(m.value[1], self.committed[v.pid]))

    def _publish(self, v: Task, values: list) -> None:
        out = self.log.output
        for val in values:
            out(v.pid, self.now, val)
        self.outputs.extend(values)

    # -- the coordinator ---------------------------------------------------------------
    def tick(self) -> None:
        if self.finished:
            return
        if not self.recovering:
            if self.pending == 0:
                if self.rounds:
                    self.stuck = True          # nothing can move and a round never completes
                    self.finished = True
                    return
                if self.last_completed_progress == self.progress:
                    self.finished = True       # everything processed, checkpointed and committed
                    return
                if self.final_attempts >= MAX_FINAL_ATTEMPTS:
                    self.stuck = True          # every final round aborted (declines, timeouts)
                    self.finished = True
                    return
                self.final_attempts += 1
                self.trigger()
            elif len(self.rounds) < self.cfg.max_concurrent and self.progress != self.last_trigger_progress:
                self.trigger()             # (an idle dataflow is not checkpointed again)
        self.clock(self.now + self.cfg.interval, self.tick)

    def trigger(self) -> None:
        r = self.next_round
        self.next_round += 1
        now = self.now
        self.rounds[r] = [now, {}, self.progress]
        self.last_trigger_progress = self.progress
        self.round_started[r] = now
        coord = self.coord
        self.log.round_event("round_start", coord.pid, now, r)
        for ch in self.triggers:
            mid = f"{ch.id}:b{r}"
            b = Msg(mid, ch, None, BARRIER, None, None, BARRIER_SIZE, now, self.epoch)
            b.round = r
            b.started = now
            self.log.barrier(coord.pid, now, ch.id, mid, r, BARRIER_SIZE)
            self._deliver_control(b)
        if self.cfg.checkpoint_timeout:
            self.clock(now + self.cfg.checkpoint_timeout, self.round_timeout, r)

    def on_ack(self, m: Msg) -> None:
        coord = self.coord
        self.log_recv(coord.pid, self.now, m.ch.id, m.mid)
        what, r = m.value
        st = self.rounds.get(r)
        if st is None:
            return                             # aborted or subsumed round
        if what == "decline":
            self.abort(r, f"declined by {m.ch.src.id}")
            return
        st[1][m.ch.src.pid] = True
        if len(st[1]) == len(self.tasks):
            self.complete_round(r)

    def complete_round(self, r: int) -> None:
        now = self.now
        start, _, progress = self.rounds.pop(r)
        self.log.round_event("round_complete", self.coord.pid, now, r)
        self.round_durations.append(now - start)
        self.last_completed = r
        self.last_completed_progress = progress
        self.final_attempts = 0
        for old in [o for o in self.rounds if o < r]:
            self.abort(old, f"subsumed by round {r}")
        for ch in self.commits:
            self.send_control(self.coord, ch, ["commit", r])

    def abort(self, r: int, reason: str) -> None:
        del self.rounds[r]
        self.log.round_event("round_abort", self.coord.pid, self.now, r, reason)

    def round_timeout(self, r: int) -> None:
        if r in self.rounds:
            self.abort(r, "timeout")

    # -- failures and recovery ----------------------------------------------------------
    def fail(self, v: Task) -> None:
        if not v.alive:
            return
        now = self.now
        self.log.fail(v.pid, now, "injected crash")
        v.alive = False
        v.incarnation += 1
        v.wake = False
        v.waiting = False
        for c in v.reads:
            c.inq.clear()
        for c in v.outputs:
            c.outbuf.clear()
        if self.recovering:
            self.recoveries[-1]["tasks"].append(v.id)
        else:
            self.recoveries.append({"tasks": [v.id], "failed": now})
            self.recovering = True
            self.at(now + self.cfg.detect_delay, self.detect)

    def detect(self) -> None:
        self.recoveries[-1]["detected"] = self.now
        for r in list(self.rounds):
            self.abort(r, "failure")
        self.at(self.now + self.cfg.restart_delay, self.restore_all)

    def restore_all(self) -> None:
        """Global rollback to the last completed round, then replay (module docstring)."""
        now = self.now
        self.recovering = False
        self.n_recoveries += 1
        k = self.n_recoveries
        line = self.last_completed
        self.epoch += 1
        for c in self.chans:
            if c.blocked:
                self.m_blocked += now - c.blocked_since
            c.inq.clear()
            c.outbuf.clear()
            c.occupancy = 0
            c.blocked = False
            c.last_arrival = now
        for ext in self.externals:
            ext.chan.inq.clear()
        stored: list[Stored] = []
        log = self.log
        proto = self.protocol
        for v in self.tasks:
            ckpt = v.round_ckpt[line] if line else 0
            st = self.store[(v.pid, ckpt)] if ckpt else v.initial
            stored.append(st)
            log.restore(v.pid, now, ckpt, k, line or None)
            v.op.restore(st.state)
            for c, s in st.seq_at.items():
                c.seq = s
            v.restores += 1
            v.alive = True
            v.incarnation += 1
            v.busy_until = now
            v.wake = False
            v.waiting = False
            v.first_barrier = {}
            v.proto = proto.make(v)
            v.proto.on_restore(ckpt, line or None)
        self.outstanding = 0
        for v, st in zip(self.tasks, stored):          # input parts, by the receiver
            for ch, msgs in st.inputs.items():
                for m in msgs:
                    nm = self._replay(v, m, "channel_state")
                    nm.arr = now
                    ch.inq.append(nm)
                    ch.occupancy += 1
        for v, st in zip(self.tasks, stored):          # output parts, by the sender
            for ch, msgs in st.outputs.items():
                for m in msgs:
                    ch.outbuf.append(self._replay(v, m, "channel_state"))
                self.pump(ch)
        for ext in self.externals:                     # sources re-read from their offsets
            src = ext.chan.dst
            for m in ext.sent[src.op.offset:]:
                nm = self._replay(ext, m, "source")
                nm.arr = now
                ext.chan.inq.append(nm)
        rec = self.recoveries[-1]
        rec["restored"] = now
        rec["line"] = line
        if not self.outstanding:
            rec["caught_up"] = now
        for v in self.tasks:                           # recoverAndCommit
            if v.is_sink:
                self._publish(v, v.op.commit(line, self.committed[v.pid]))
        for v in self.tasks:
            self.step(v)

    def _replay(self, node, m: Msg, source: str) -> Msg:
        k = self.replays.get(m.mid, 0) + 1
        self.replays[m.mid] = k
        mid = f"{m.mid}/r{k}"
        nm = Msg(mid, m.ch, m.seq, DATA, m.value, m.key, m.size, m.born, self.epoch)
        nm.recovered = True
        self.log.replay(node.pid, self.now, m.ch.id, mid, m.mid, source)
        self.m["replayed_" + source] += 1
        self.outstanding += 1
        return nm

    # -- results -----------------------------------------------------------------------
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
        }
        out.update(mm)
        out["replayed_messages"] = mm["replayed_channel_state"] + mm["replayed_source"]
        out["rounds_aborted"] = out["rounds_started"] - out["rounds_completed"] - len(self.rounds)
        return out

    def final_states(self) -> dict:
        return {t.id: t.op.canonical() for t in self.tasks}

