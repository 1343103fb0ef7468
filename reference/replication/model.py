"""Active replication of a stream task: KaZoo and LiveRobin.

After "Active Replication for Latency-Sensitive Stream Processing in Apache Flink"
(Rosinosky et al.): every task partition runs as two replicas on
different workers; each upstream sends every event to both downstream replicas
(*duplicate sending*); a receiver deduplicates by sequence number, *first come,
first picked* ("selects the first event received with a sequence number higher than
the last selected event", §III); the two replicas must consume their merged inputs
in the same order, by one of:

* **LiveRobin** (§V, Algorithm 1), leaderless deterministic merge: a heartbeat
  generator ``HG`` sends heartbeats with increasing sequence numbers to the mergers
  (here, as the paper's implementation does, the sources act as mergers and insert
  the heartbeats into their streams); a replica polls its input queues round-robin
  over the *active* set ``A``; a heartbeat seen for the first time is propagated
  downstream; the queue it came on leaves ``A`` for the rest of the cycle; when
  ``A`` is empty a new cycle starts. (Algorithm 1 as printed indents lines 15–17
  under ``if e.seq > gen``; read literally, the second queue's copy of a cycle's
  heartbeat would never deactivate that queue and no cycle after the first would
  end. The model deactivates the queue on every heartbeat and propagates only on
  first reception, which is what the text describes.)
* **KaZoo** (§IV), leader-based ordering: a ZooKeeper-like service ``zk`` elects
  the leader among the two replicas' orderers (and a new one when the leader's
  session expires, ``session_timeout`` after its crash); the leader's orderer
  decides a consumption order from its own input queues, in batches (at most
  ``batch`` entries every ``order_period``), and appends it to a Kafka-like ordered
  log ``log``, which delivers every order to both orderers in log order; a replica
  consumes exactly in that order, blocking until the ordered event arrived. A newly
  elected leader first syncs with the log (reads every order appended before its
  election) and then orders what nobody ordered yet.

The task ``U[0]`` (replicas ``U[0]#0`` on worker ``w0`` and ``U[0]#1`` on ``w1``)
merges the streams of sources ``S0`` and ``S1`` and is order-sensitive: its state is
``state * 31 + value mod 1000003`` and it emits the state for every event. Both
replicas send their outputs (and propagated heartbeats) to the ``sink``, which
deduplicates them by sequence number and publishes the picked values (``output``).
A crash of one replica (``failures``) is masked: the other continues.

Trace vocabulary: header ``protocol.params.replicas = {"U[0]": ["U[0]#0",
"U[0]#1"]}`` and ``merge_config`` (per replica); heartbeats are data messages with
``attrs {"heartbeat": k}``; orders are ``send``s on control channels with ``attrs
{"order": [[queue, seq], ...]}``; leader notifications ``attrs {"leader": id,
"epoch": e}``; the replicas record ``arrive`` (placed in the input queue) and
``recv`` (consumed); the sink records ``recv`` (picked), ``discard`` (duplicate) and
``output``.
"""

from __future__ import annotations

import heapq
import random

from snapcheck.traces.recorder import TraceRecorder

DEFAULTS = {
    "merge": "liverobin",
    "records": 40,
    "gap": 20,
    "latency": 5,
    "jitter": 30,
    "hb_period": 25,
    "session_timeout": 60,
    "order_period": 10,
    "batch": 8,
    "quiet": None,
}
MOD = 1_000_003
TASK = "U[0]"
SOURCES = ("S0", "S1")


class Replica:
    def __init__(self, rid: str, order: tuple[int, ...]) -> None:
        self.id = rid
        self.queues: list[list] = [[] for _ in SOURCES]  # arrived, not consumed: (mid, seq, hb)
        self.state = 0
        self.alive = True
        self.consumed = 0
        self.outputs: list = []
        # LiveRobin (Algorithm 1): ``order`` is the replica's queue order (its merge configuration)
        self.rr = order
        self.next = order[0]
        self.gen = 0
        self.active = set(order)
        # KaZoo
        self.orders: list[tuple[int, int]] = []  # consumption order received from the log
        self.pos = 0  # next order entry to consume
        self.ordered: set[tuple[int, int]] = set()  # proposed by this orderer or read from the log
        self.logged: set[tuple[int, int]] = set()  # read from the log
        self.leader_epoch = 0
        self.synced = False


class ReplicationModel:
    def __init__(self, params: dict, seed: int, failures=(), name: str | None = None) -> None:
        self.p = {**DEFAULTS, **params}
        self.seed = seed
        self.rng = random.Random(f"{seed}/replication")
        self.merge = self.p["merge"]
        self.reps = [Replica(f"{TASK}#{r}", order) for r, order in enumerate(self.queue_orders())]
        procs: list[dict] = [{"id": s, "role": "source"} for s in SOURCES]
        procs += [{"id": r.id, "operator": "U", "subtask": 0, "worker": f"w{i}"} for i, r in enumerate(self.reps)]
        procs.append({"id": "sink", "role": "sink"})
        chans: list[tuple | dict] = [(self.ch(s, r.id), s, r.id) for s in SOURCES for r in self.reps]
        chans += [(self.ch(r.id, "sink"), r.id, "sink") for r in self.reps]
        if self.merge == "liverobin":
            procs.append({"id": "HG", "role": "source"})
            chans += [(self.ch("HG", s), "HG", s) for s in SOURCES]
        if self.merge == "kazoo":
            procs += [{"id": "zk", "role": "coordinator"}, {"id": "log", "role": "external"}]
            chans += [{"id": self.ch("zk", r.id), "src": "zk", "dst": r.id, "kind": "control"} for r in self.reps]
            chans += [{"id": self.ch(r.id, "log"), "src": r.id, "dst": "log", "kind": "control"} for r in self.reps]
            chans += [{"id": self.ch("log", r.id), "src": "log", "dst": r.id, "kind": "control"} for r in self.reps]
        params_out = {
            **self.p,
            "replicas": {TASK: [r.id for r in self.reps]},
            "merge_config": {r.id: list(r.rr) for r in self.reps},
        }
        self.rec = TraceRecorder(procs, chans, protocol=name or self.merge, params=params_out, seed=seed)
        self.q: list = []
        self.n = 0
        self.now = 0
        self.last_arrival: dict[str, int] = {}
        self.seqs: dict[str, int] = {}
        self.arrival_idx: dict = {}
        self.failures = [(int(t), str(who)) for who, t in failures]
        unknown = sorted({who for _, who in self.failures} - {r.id for r in self.reps})
        if unknown:
            raise ValueError(
                f"failure names no replica: {', '.join(unknown)} (replicas: {', '.join(r.id for r in self.reps)})"
            )
        self.sent = {s: 0 for s in SOURCES}
        self.hb = 0
        self.picked = 0
        self.sink_out: list = []
        self.log_orders: list = []
        self.leader: str | None = None
        self.m = {"heartbeats": 0, "orders": 0, "elections": 0, "discarded": 0, "blocked_at_end": 0}
        self.latencies: list[int] = []

    # -- configuration (mutants override) ------------------------------------------------
    def queue_orders(self) -> list[tuple[int, ...]]:
        """Each replica's round-robin queue order: the same for both (deterministic merge)."""
        return [tuple(range(len(SOURCES)))] * 2

    def records_of(self, j: int) -> int:
        quiet = self.p["quiet"]
        return int(quiet[1]) if quiet and int(quiet[0]) == j else self.p["records"]

    # -- plumbing --------------------------------------------------------------------------
    @staticmethod
    def ch(a: str, b: str) -> str:
        return f"{a}->{b}"

    def at(self, t: int, fn, *args) -> None:
        self.n += 1
        heapq.heappush(self.q, (t, self.n, fn, args))

    def transmit(self, src: str, dst: str, handler, *, value=None, attrs=None, key=None) -> None:
        """Send on the FIFO channel src->dst; ``handler(mid, seq)`` runs at arrival."""
        ch = self.ch(src, dst)
        mid = self.rec.send(src, ch, value=value, key=key, attrs=attrs, t=self.now)
        seq = self.seqs[ch] = self.seqs.get(ch, 0) + 1
        arrive = max(self.last_arrival.get(ch, 0), self.now + self.p["latency"] + self.rng.randrange(self.p["jitter"]))
        self.last_arrival[ch] = arrive
        self.at(arrive, handler, mid, seq, value, attrs)

    # -- sources and the heartbeat generator ------------------------------------------------
    def source_emit(self, j: int) -> None:
        s = SOURCES[j]
        if self.sent[s] >= self.records_of(j):
            return
        self.sent[s] += 1
        value = random.Random(f"{self.seed}/{s}/{self.sent[s]}").randrange(1000)
        for r in self.reps:
            self.transmit(s, r.id, self.make_arrival(r, j), value=value, attrs={"born": self.now})
        self.at(self.now + 1 + self.rng.randrange(2 * self.p["gap"]), self.source_emit, j)

    def heartbeat(self) -> None:
        if not self.busy():
            return
        self.hb += 1
        self.m["heartbeats"] += 1
        for j, s in enumerate(SOURCES):
            self.transmit("HG", s, self.make_merger(j), attrs={"heartbeat": self.hb})
        self.at(self.now + self.p["hb_period"], self.heartbeat)

    def make_merger(self, j: int):
        """The source as merger M: a heartbeat joins its stream where it is consumed."""

        def merge(mid, seq, value, attrs):
            s = SOURCES[j]
            self.rec.recv(s, mid, t=self.now)
            for r in self.reps:
                self.transmit(s, r.id, self.make_arrival(r, j), attrs={"heartbeat": attrs["heartbeat"]})

        return merge

    def busy(self) -> bool:
        """Input data left to consume by a live replica (sent, in flight or queued)."""
        total = sum(self.records_of(j) for j in range(len(SOURCES)))
        return any(r.alive and r.consumed < total for r in self.reps)

    # -- replicas ----------------------------------------------------------------------------
    def make_arrival(self, r: Replica, j: int):
        def arrival(mid, seq, value, attrs):
            if not r.alive:
                return
            self.rec.arrive(r.id, mid, t=self.now)
            self.arrival_idx[(r.id, mid)] = len(self.arrival_idx)
            r.queues[j].append((mid, seq, value, (attrs or {}).get("heartbeat"), (attrs or {}).get("born")))
            self.drain(r)

        return arrival

    def consume(self, r: Replica, j: int) -> tuple:
        mid, seq, value, hb, born = r.queues[j].pop(0)
        self.rec.recv(r.id, mid, t=self.now)
        if hb is None:
            r.state = (r.state * 31 + value) % MOD
            r.consumed += 1
            self.transmit(r.id, "sink", self.sink_arrival, value=r.state, attrs={"born": born})
        return mid, seq, hb

    def drain(self, r: Replica) -> None:
        """Consume what the merge strategy allows now (the blocking dequeue loop)."""
        if not r.alive:
            return
        if self.merge == "kazoo":
            self.drain_ordered(r)
        elif self.merge == "none":
            while True:  # no ordering: whatever arrived first, from any queue
                heads = [(q[0][0], j) for j, q in enumerate(r.queues) if q]
                if not heads:
                    return
                j = min(heads, key=lambda h: self.arrival_idx[(r.id, h[0])])[1]
                self.consume(r, j)
        else:
            self.drain_round_robin(r)

    def drain_round_robin(self, r: Replica) -> None:
        """LiveRobin, Algorithm 1 (with heartbeats); plain round-robin without them."""
        while r.queues[r.next]:
            _, _, hb = self.consume(r, r.next)
            if hb is not None and self.merge == "liverobin":
                if hb > r.gen:  # first reception: propagate
                    r.gen = hb
                    self.transmit(r.id, "sink", self.sink_arrival, attrs={"heartbeat": hb})
                r.active.discard(r.next)  # ignore this queue until the next cycle
                if not r.active:
                    r.active = set(r.rr)
            act = [c for c in r.rr if c in r.active]
            pos = {c: i for i, c in enumerate(r.rr)}
            later = [c for c in act if pos[c] > pos[r.next]]
            r.next = later[0] if later else act[0]

    # -- KaZoo ----------------------------------------------------------------------------------
    def zk_elect(self) -> None:
        live = [r for r in self.reps if r.alive]
        if not live:
            return
        self.leader = live[0].id
        self.m["elections"] += 1
        epoch = self.m["elections"]
        for r in live:
            self.transmit("zk", r.id, self.make_leader_notice(r), attrs={"leader": self.leader, "epoch": epoch})

    def make_leader_notice(self, r: Replica):
        def notice(mid, seq, value, attrs):
            if not r.alive:
                return
            self.rec.recv(r.id, mid, t=self.now)
            r.leader_epoch = attrs["epoch"]
            if attrs["leader"] == r.id:
                r.synced = False
                self.transmit(r.id, "log", self.make_log_sync(r), attrs={"sync": attrs["epoch"]})

        return notice

    def make_log_sync(self, r: Replica):
        def sync(mid, seq, value, attrs):
            self.rec.recv("log", mid, t=self.now)
            self.transmit("log", r.id, self.make_synced(r), attrs={"synced": len(self.log_orders)})

        return sync

    def make_synced(self, r: Replica):
        def synced(mid, seq, value, attrs):
            if not r.alive:
                return
            self.rec.recv(r.id, mid, t=self.now)
            r.synced = True  # FIFO: every order appended before the sync was read
            self.at(self.now, self.order_tick, r, r.leader_epoch)

        return synced

    def order_tick(self, r: Replica, epoch: int) -> None:
        if not r.alive or r.leader_epoch != epoch or not r.synced:
            return
        pending = [(j, e[1]) for j, q in enumerate(r.queues) for e in q if (j, e[1]) not in r.ordered]
        pending.sort(key=lambda x: self.arrival_rank(r, x))
        batch = pending[: self.p["batch"]]
        if batch:
            r.ordered.update(batch)
            self.m["orders"] += 1
            self.transmit(r.id, "log", self.log_append, attrs={"order": [list(b) for b in batch]})
        if self.busy():
            self.at(self.now + self.p["order_period"], self.order_tick, r, epoch)

    def arrival_rank(self, r: Replica, entry) -> int:
        j, seq = entry
        mid = next(e[0] for e in r.queues[j] if e[1] == seq)
        return self.arrival_idx[(r.id, mid)]

    def log_append(self, mid, seq, value, attrs) -> None:
        self.rec.recv("log", mid, t=self.now)
        self.log_orders.append(attrs["order"])
        for r in self.reps:
            self.transmit("log", r.id, self.make_order(r), attrs={"order": attrs["order"]})

    def make_order(self, r: Replica):
        def order(mid, seq, value, attrs):
            if not r.alive:
                return
            self.rec.recv(r.id, mid, t=self.now)
            for j, s in attrs["order"]:
                if (j, s) not in r.logged:  # orders are idempotent (the paper's version numbers)
                    r.logged.add((j, s))
                    r.orders.append((j, s))
                    r.ordered.add((j, s))
            self.drain(r)

        return order

    def drain_ordered(self, r: Replica) -> None:
        while r.pos < len(r.orders):
            j, s = r.orders[r.pos]
            if not r.queues[j] or r.queues[j][0][1] != s:
                return  # the ordered event has not arrived yet: wait
            self.consume(r, j)
            r.pos += 1

    # -- the sink ---------------------------------------------------------------------------------
    def sink_arrival(self, mid, seq, value, attrs) -> None:
        if seq > self.picked:  # first come, first picked
            self.picked = seq
            self.rec.recv("sink", mid, t=self.now)
            if not (attrs or {}).get("heartbeat"):
                self.sink_out.append(value)
                self.latencies.append(self.now - attrs["born"])
                self.rec.output("sink", value, t=self.now)
        else:
            self.m["discarded"] += 1
            self.rec.discard("sink", mid, reason="duplicate", t=self.now)

    # -- failures and the run -----------------------------------------------------------------------
    def crash(self, who: str) -> None:
        r = next(r for r in self.reps if r.id == who)
        if not r.alive:
            return
        r.alive = False
        self.rec.fail(r.id, reason="injected", t=self.now)
        if self.merge == "kazoo" and self.leader == r.id:
            self.at(self.now + self.p["session_timeout"], self.zk_elect)

    def run(self) -> TraceRecorder:
        for j in range(len(SOURCES)):
            self.at(1 + j, self.source_emit, j)
        if self.merge == "liverobin":
            self.at(self.p["hb_period"], self.heartbeat)
        if self.merge == "kazoo":
            self.at(0, self.zk_elect)
        for t, who in self.failures:
            self.at(t, self.crash, who)
        horizon = 100 * self.p["gap"] * self.p["records"]
        while self.q:
            t, _, fn, args = heapq.heappop(self.q)
            if t > horizon:
                break
            self.now = t
            fn(*args)
        self.m["blocked_at_end"] = sum(e[3] is None for r in self.reps if r.alive for q in r.queues for e in q)
        return self.rec

    def metrics(self) -> dict:
        lat = sorted(self.latencies)
        return {
            "protocol": self.rec.header.protocol["name"],
            "sim_time": self.now,
            "outputs": len(self.sink_out),
            "consumed": {r.id: r.consumed for r in self.reps},
            "latency_p50": lat[len(lat) // 2] if lat else None,
            "latency_p99": lat[min(len(lat) - 1, int(0.99 * len(lat)))] if lat else None,
            "stuck": self.m["blocked_at_end"] > 0,
            **self.m,
        }

    def final_states(self) -> dict:
        return {r.id: r.state for r in self.reps} | {"sink": list(self.sink_out)}


class NoOrderingModel(ReplicationModel):
    """The seed's incorrect "No ordering" baseline (§VII): each replica consumes its
    deduplicated events in arrival order."""

    def __init__(self, params: dict, seed: int, failures=(), name: str | None = None) -> None:
        super().__init__({**params, "merge": "none"}, seed, failures, name)


class PlainRoundRobinModel(ReplicationModel):
    """Round-robin deterministic merge without heartbeats (§V.A): no liveness — a
    replica blocks on the queue of a source that went quiet."""

    def __init__(self, params: dict, seed: int, failures=(), name: str | None = None) -> None:
        super().__init__({**params, "merge": "round-robin"}, seed, failures, name)


class MixedMergeConfigModel(ReplicationModel):
    """Materialize #38196: the replicas were rendered with different merge
    configurations (here: opposite round-robin queue orders), so they process the
    same inputs in different orders and emit different outputs."""

    def queue_orders(self) -> list[tuple[int, ...]]:
        first = tuple(range(len(SOURCES)))
        return [first, tuple(reversed(first))]
