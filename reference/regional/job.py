"""The jobs regional checkpoints are meant for: embarrassingly parallel pipelines.

A job has ``R`` parallel slices ``src[i] -> op[i] -> ... -> sink[i]`` joined by
forward edges only, so every slice is a pipeline region with no edge to any
other (FLIP-600's scope: "each parallelism maps to an independent region"). Its
shape is drawn from the run's seed: one or two operators between the source
and the sink, each a map, a filter or a per-key running count (all
deterministic functions of the records they consume, the proposal's safety
condition; a count is kept per split and key and emits ``("c", split, 0, key,
n)``, so every record keeps the shape of the input, its multiset does not depend
on the order, and a split's state can move with it when the job is rescaled). The sink is a two-phase-commit sink (``reference.operators.Sink``).

Input comes in *splits* (FLIP-27): split ``s`` is a bounded, replayable log of
``records`` records whose availability times are spread ``gap`` ticks apart;
splits are owned statically by reader ``s mod R`` (like a Kafka partition's
owner) and handed out one at a time by the split enumerator of the source
coordinator (``reference.regional.splits``). A record is
``("r", split, index, key, value)``.

Variants that break the safety condition (the mutants of ``mutants.py``):

* ``cross_edge``: a hash edge from ``src`` to ``sink`` carries every fourth
  record across slices, so all slices form one pipeline region;
* ``agreed = "config-epoch"``: every reader keeps the job's configuration epoch
  (announced by the coordinator before a round's barrier, so all readers switch
  at the same global checkpoint) in union list state and tags what it emits
  with it; ``agreed = "checkpoint-id"``: every reader writes the id of the
  checkpoint it snapshots into that state *in* ``snapshotState``. On restore a
  reader takes the largest value of the union.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from snapcheck.reference.operators import Filter, KeyedAggregate, Map, Operator, Sink
from snapcheck.reference.topology import EdgeSpec, OperatorSpec, Workload

KEYS = 4
RECORD_SIZE = 32
MIDDLE_KINDS = ("map", "filter", "count")


@dataclass(frozen=True)
class Split:
    """One input split: its index, owning reader subtask and records ``(available_at, value, size)``."""

    index: int
    owner: int
    records: tuple


@dataclass(frozen=True)
class JobShape:
    """What the seed draws: the operators between source and sink and the splits per reader."""

    middle: tuple[str, ...]
    splits_per_reader: int

    @classmethod
    def draw(cls, seed: int) -> JobShape:
        """>>> JobShape.draw(3) == JobShape.draw(3)
        True"""
        rng = random.Random(f"{seed}/regional-job")
        middle = tuple(MIDDLE_KINDS[int(rng.random() * 3)] for _ in range(1 + int(rng.random() * 2)))
        return cls(middle, 2 + int(rng.random() * 3))

    def operator_names(self) -> list[str]:
        """Operator names in pipeline order: ``src``, ``op0``…, ``sink``."""
        return ["src", *(f"op{k}" for k in range(len(self.middle))), "sink"]


class SplitReader(Operator):
    """A source subtask reading the splits assigned to it: per split, how many of its
    records were read (operator list state, one element per split). With an agreed
    value (``agreed``: its key) it also keeps that value in union list state and
    appends it to every record it emits."""

    kind = "split-reader"

    def __init__(self, agreed: str | None = None) -> None:
        self.pos: dict[int, int] = {}
        self.agreed_key = agreed
        self.agreed = 0

    def assign(self, split: int) -> None:
        """Start reading ``split`` from its first record (a split handed out again is read again)."""
        self.pos[split] = 0

    def process(self, port, value):
        self.pos[port] = self.pos.get(port, 0) + 1
        return [value + (self.agreed,)] if self.agreed_key else [value]

    def snapshot(self):
        return (dict(self.pos), self.agreed)

    def restore(self, snap):
        self.pos = dict(snap[0])
        self.agreed = snap[1]

    def canonical(self):
        out: dict[str, object] = {"splits": sorted([s, p] for s, p in self.pos.items())}
        if self.agreed_key:
            out[self.agreed_key] = self.agreed
        return out


def _middle(kind: str, name: str) -> OperatorSpec:
    if kind == "map":
        return OperatorSpec(name, "map", 0, lambda i: Map(lambda r: r[:4] + ((r[4] * 7 + 3) % 100,) + r[5:]), cost=40)
    if kind == "filter":
        return OperatorSpec(name, "filter", 0, lambda i: Filter(lambda r: r[4] % 3 != 0), cost=40)
    return OperatorSpec(
        name,
        "keyed-aggregate",
        0,
        lambda i: KeyedAggregate(
            lambda r: (r[1], r[3]), lambda r: r[4], lambda k, c, r: ("c", k[0], 0, k[1], c) + r[5:]
        ),
        cost=80,
    )


def build_workload(shape: JobShape, regions: int, cross_edge: bool = False, agreed: str | None = None) -> Workload:
    """The logical graph of ``regions`` slices (every operator has parallelism ``regions``)."""
    ops = [OperatorSpec("src", "split-reader", regions, lambda i: SplitReader(agreed), source=True, cost=20)]
    for k, kind in enumerate(shape.middle):
        ops.append(_middle(kind, f"op{k}"))
    ops.append(OperatorSpec("sink", "sink", regions, lambda i: Sink(), sink=True, cost=30))
    for op in ops:
        op.parallelism = regions
    edges = [EdgeSpec(a.name, b.name) for a, b in zip(ops, ops[1:])]
    if cross_edge:
        edges.append(
            EdgeSpec(
                "src",
                "sink",
                "hash",
                key=lambda r: r[3],
                select=lambda r: r if r[0] == "r" and r[2] % 4 == 0 else None,
                port=1,
            )
        )
    desc = " -> ".join(op.name for op in ops) + (" (+ src -> sink hash edge)" if cross_edge else "")
    return Workload(
        "regional",
        ops,
        edges,
        lambda rng, source, subtask: [],
        f"{regions} parallel slices {desc}",
        {"regions": regions, "middle": list(shape.middle), "cross_edge": cross_edge, "agreed": agreed},
    )


def draw_splits(seed: int, regions: int, splits_per_reader: int, records: int, gap: int) -> list[Split]:
    """``regions * splits_per_reader`` splits of ``records`` records each (seeded)."""
    out = []
    for s in range(regions * splits_per_reader):
        rng = random.Random(f"{seed}/split/{s}")
        t = int(rng.random() * gap)
        recs = []
        for j in range(records):
            t += int(gap * (0.5 + rng.random()))
            recs.append((t, ("r", s, j, int(rng.random() * KEYS), int(rng.random() * 100)), RECORD_SIZE))
        out.append(Split(s, s % regions, tuple(recs)))
    return out
