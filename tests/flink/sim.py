"""A tiny randomized model of a Flink job (sources → keyed or rebalance shuffle → sinks) that
writes what the traced wrappers would write (a ``FakeRun``): FIFO channels, checkpoints that
snapshot the source offsets and — for unaligned checkpoints — the records in flight, failures
after which every subtask restores the latest completed checkpoint, sources rewind and the
in-flight records of the checkpoint come back with their old envelopes.

``mutate`` breaks recovery on purpose, the way a buggy engine would: ``"lose"`` drops one
recovered in-flight record, ``"duplicate"`` recovers one twice, ``"rewind"`` restores a source one
record before its checkpointed offset. ``Sim.mutated`` says whether the mutation happened.
"""

from __future__ import annotations

import random
from collections import deque

from tests.flink.fake_run import FakeRun


class Sim:
    def __init__(self, seed: int, mode: str, mutate: str | None = None):
        rng = self.rng = random.Random(seed)
        self.mode = mode
        self.mutate = mutate
        self.mutated = False
        self.ps, self.pd = rng.randint(1, 2), rng.randint(1, 3)
        self.partition = rng.choice(["keyed", "rebalance"])
        topo = [
            {
                "op": "src",
                "parallelism": self.ps,
                "role": "source",
                "inputs": ["@input"],
                "out": {"to": "sink", "mode": self.partition, "parallelism": self.pd, "max_parallelism": 128},
            },
            {"op": "sink", "parallelism": self.pd, "role": "sink", "inputs": ["src"], "out": None},
        ]
        self.run = FakeRun(topology=topo, mode=mode)
        self.records = rng.randint(3, 10)
        self.att = 0
        self.offsets = [0] * self.ps
        self.sent = [0] * self.ps
        self.start = [rng.randrange(self.pd) for _ in range(self.ps)]
        self.queues = {(s, d): deque() for s in range(self.ps) for d in range(self.pd)}
        self.completed = None  # (checkpoint id, offsets, in-flight records per channel)
        self.next_id = 1
        self.fails = rng.randint(0, 2)

    def play(self) -> FakeRun:
        rng = self.rng
        while True:
            readable = [s for s in range(self.ps) if self.offsets[s] < self.records]
            busy = [c for c, q in self.queues.items() if q]
            if not readable and not busy:
                if self.fails and rng.random() < 0.5:
                    self._fail()
                    continue
                return self.run
            action = rng.choices(["read", "deliver", "ckpt", "fail"], weights=[4, 4, 1, 0.3 if self.fails else 0])[0]
            if action == "read" and readable:
                self._read(rng.choice(readable))
            elif action == "deliver" and busy:
                s, d = rng.choice(busy)
                src, att, n = self.queues[(s, d)].popleft()
                self.run.recv("sink", d, self.att, "src", src, att, n)
            elif action == "ckpt" and (self.mode == "unaligned" or not busy):
                cid = self.next_id
                self.next_id += 1
                self.run.ckpt(cid, self.att)
                self.run.notify(cid, self.att)
                self.completed = (cid, list(self.offsets), {c: list(q) for c, q in self.queues.items()})
            elif action == "fail" and self.fails:
                self._fail()

    def _read(self, s: int) -> None:
        off = self.offsets[s]
        self.run.read(s, off, att=self.att)
        n = self.sent[s]
        if self.partition == "keyed":
            d = (off * 7 + s * 3) % self.pd
            self.run.send("src", s, self.att, n, d)
        else:
            d = (self.start[s] + n) % self.pd
            self.run.send("src", s, self.att, n)
        self.queues[(s, d)].append((s, self.att, n))
        self.sent[s] += 1
        self.offsets[s] += 1

    def _fail(self) -> None:
        rng = self.rng
        op, sub = rng.choice([("src", s) for s in range(self.ps)] + [("sink", d) for d in range(self.pd)])
        self.run.ev(op, sub, self.att, "fail", reason="injected")
        self.fails -= 1
        self.att += 1
        cid, offsets, inflight = self.completed or (0, [0] * self.ps, {c: [] for c in self.queues})
        offsets = list(offsets)
        inflight = {c: list(q) for c, q in inflight.items()}
        full = [c for c, q in inflight.items() if q]
        if self.mutate == "lose" and full:
            inflight[full[0]].pop(0)
            self.mutated = True
        elif self.mutate == "duplicate" and full:
            inflight[full[0]].insert(0, inflight[full[0]][0])
            self.mutated = True
        elif self.mutate == "rewind" and any(offsets):
            offsets[next(i for i, o in enumerate(offsets) if o)] -= 1
            self.mutated = True
        self.run.restore(cid, self.att)
        self.offsets = offsets
        self.sent = [0] * self.ps
        self.start = [rng.randrange(self.pd) for _ in range(self.ps)]
        self.queues = {c: deque(inflight[c]) for c in self.queues}
