"""Streaming operators with real, deterministic state.

Every operator is *multiset-functional*: the multiset of records it emits, and
its final state, depend only on the multiset of records it processed, not on
their order. Recovery changes the interleaving of a task's inputs (replayed
channel state first, different network delays afterwards), so this is what
makes exactly-once checkable end to end: after failures and recovery, final
states and the committed sink output must equal the failure-free run's
(``reference.oracle``). Concretely: aggregates emit running *counts* (the
multiset {1..n} per key is order-free), joins emit each matching pair once (when
its second half arrives), windows are event-time windows taken from the record.

Interface (the simulator calls nothing else):

* ``process(port, value) -> list`` — process one record (``port`` says which
  input of a join it came from) and return the records it emits;
* ``snapshot()`` / ``restore(snap)`` — an immutable copy of the state and back;
* ``canonical()`` — an order-free, JSON-serialisable rendering of the state (the
  oracle compares these; checkpoint ``digest`` fields hash them).

The sink stages its output per checkpoint and publishes it when the checkpoint
completes (two-phase commit, as Flink's exactly-once sinks do): ``prepare``,
``commit``.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any


def _sorted(items) -> list:
    return sorted(items, key=repr)


class Operator:
    kind = "operator"

    def process(self, port: int, value: Any) -> list:
        raise TypeError(f"{type(self).__name__} must implement process()")

    def snapshot(self) -> Any:
        return None

    def restore(self, snap: Any) -> None:
        pass

    def canonical(self) -> Any:
        return None


class Source(Operator):
    """Reads one partition of a replayable input; its state is the consumed offset."""

    kind = "source"

    def __init__(self) -> None:
        self.offset = 0

    def process(self, port, value):
        self.offset += 1
        return [value]

    def snapshot(self):
        return self.offset

    def restore(self, snap):
        self.offset = snap

    def canonical(self):
        return {"offset": self.offset}

    def position(self, partition: int) -> int:
        """The consumed offset of input partition ``partition`` (its only one)."""
        return self.offset


class SplitSource(Operator):
    """Reads several partitions of a replayable input (a source restored at another
    parallelism takes the partitions of several old subtasks: Flink's list state of
    splits); ``port`` names the partition, the state is an offset per partition."""

    kind = "source"

    def __init__(self, offsets: dict[int, int]) -> None:
        self.offsets = dict(offsets)

    def process(self, port, value):
        self.offsets[port] += 1
        return [value]

    def snapshot(self):
        return dict(self.offsets)

    def restore(self, snap):
        self.offsets = dict(snap)

    def canonical(self):
        return {"offsets": {str(p): o for p, o in sorted(self.offsets.items())}}

    def position(self, partition: int) -> int:
        return self.offsets[partition]


class Map(Operator):
    kind = "map"

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def process(self, port, value):
        return [self.fn(value)]


class Filter(Operator):
    kind = "filter"

    def __init__(self, pred: Callable[[Any], bool]) -> None:
        self.pred = pred

    def process(self, port, value):
        return [value] if self.pred(value) else []


class KeyedAggregate(Operator):
    """Per key: count and sum of ``val(record)``; emits ``out(key, count, record)``
    (default ``(key, count)``)."""

    kind = "keyed-aggregate"

    def __init__(self, key: Callable, val: Callable, out: Callable | None = None) -> None:
        self.key, self.val, self.out = key, val, out
        self.state: dict = {}

    def process(self, port, value):
        k = self.key(value)
        c, s = self.state.get(k, (0, 0))
        c += 1
        self.state[k] = (c, s + self.val(value))
        return [self.out(k, c, value) if self.out else (k, c)]

    def snapshot(self):
        return dict(self.state)

    def restore(self, snap):
        self.state = dict(snap)

    def canonical(self):
        return [[k, list(v)] for k, v in _sorted(self.state.items())]


class WindowedCount(Operator):
    """Running tumbling event-time window count (CheckMate's Q12 "running window":
    processing is triggered on every arrival). Emits ``(window, key, count)``."""

    kind = "windowed-count"

    def __init__(self, key: Callable, ts: Callable, size: int, out: Callable | None = None) -> None:
        self.key, self.ts, self.size, self.out = key, ts, size, out
        self.state: dict = {}

    def process(self, port, value):
        wk = (self.ts(value) // self.size, self.key(value))
        c = self.state.get(wk, 0) + 1
        self.state[wk] = c
        return [self.out(wk[0], wk[1], c, value) if self.out else (wk[0], wk[1], c)]

    def snapshot(self):
        return dict(self.state)

    def restore(self, snap):
        self.state = dict(snap)

    def canonical(self):
        return [[list(k), v] for k, v in _sorted(self.state.items())]


class IncrementalJoin(Operator):
    """Symmetric hash join of two unbounded inputs (port 0 left, port 1 right):
    each record is stored and joined with every stored record of the other side
    with the same key; emits ``out(left, right)`` (default the pair)."""

    kind = "incremental-join"

    def __init__(self, left_key: Callable, right_key: Callable, out: Callable | None = None) -> None:
        self.keys = (left_key, right_key)
        self.out = out
        self.sides: tuple[dict, dict] = ({}, {})
        self.entries: tuple[dict, dict] = ({}, {})  # canonical() per side and key, until the key changes

    def process(self, port, value):
        k = self.keys[port](value)
        mine, other = self.sides[port], self.sides[1 - port]
        mine[k] = mine.get(k, ()) + (value,)
        self.entries[port].pop(k, None)
        matches = other.get(k, ())
        if not matches:
            return []
        out = self.out
        if port == 0:
            return [out(value, r) if out else (value, r) for r in matches]
        return [out(left, value) if out else (left, value) for left in matches]

    def snapshot(self):
        return (dict(self.sides[0]), dict(self.sides[1]))

    def restore(self, snap):
        self.sides = (dict(snap[0]), dict(snap[1]))
        self.entries = ({}, {})

    def canonical(self):
        return [_canonical_side(side, entries) for side, entries in zip(self.sides, self.entries)]


def _canonical_side(side: dict, entries: dict) -> list:
    """``[[k, _sorted(v)] for k, v in _sorted(side.items())]`` for a join side whose
    values are tuples of records, computed from per-key entries that ``entries``
    keeps until the key's records change (checkpoints digest the state again and
    again). The repr of an item ``(k, v)`` is assembled from the reprs of its parts
    exactly as ``tuple.__repr__`` does, so the order is the same."""
    items = []
    for k, v in side.items():
        e = entries.get(k)
        if e is None:
            reprs = [repr(r) for r in v]
            order = sorted(range(len(v)), key=reprs.__getitem__)
            e = entries[k] = (
                f"({k!r}, ({', '.join(reprs)}{',' if len(v) == 1 else ''}))",
                k,
                tuple(v[i] for i in order),
            )
        items.append(e)
    items.sort(key=itemgetter(0))
    return [[k, list(records)] for _, k, records in items]


class WindowedJoin(IncrementalJoin):
    """Tumbling event-time window join (NexMark Q8): records join only within the
    same window (``ts(record) // size``)."""

    kind = "windowed-join"

    def __init__(
        self, left_key: Callable, right_key: Callable, ts: Callable, size: int, out: Callable | None = None
    ) -> None:
        super().__init__(left_key, right_key, out)
        lk, rk = left_key, right_key
        self.keys = (lambda v: (ts(v) // size, lk(v)), lambda v: (ts(v) // size, rk(v)))


class Sink(Operator):
    """Exactly-once sink with two-phase commit: records are staged, ``prepare(round)``
    (at the checkpoint, before the snapshot) seals them into the round's transaction,
    ``commit(round, committed)`` publishes every sealed transaction up to ``round``
    that the external system has not committed yet (``committed`` is the external
    system's durable set of transaction ids; it survives failures) and returns them as
    ``[(txn, records), ...]`` in transaction order. Subsumption (Flink's
    ``TwoPhaseCommitSinkFunction`` after FLINK-10377): a notification of round ``n``
    commits every sealed transaction ``<= n``, so late, reordered or lost notifications
    are harmless as long as a later one arrives."""

    kind = "sink"

    def __init__(self) -> None:
        self.pending: list = []
        self.staged: dict[int, tuple] = {}

    def process(self, port, value):
        self.pending.append(value)
        return []

    def prepare(self, round: int) -> None:
        if self.pending:
            self.staged[round] = tuple(self.pending)
            self.pending = []

    def commit(self, round: int, committed: set) -> list:
        out: list = []
        for r in sorted(self.staged):
            if r > round:
                break
            if r not in committed:
                committed.add(r)
                out.append((r, self.staged[r]))
            del self.staged[r]
        return out

    def snapshot(self):
        return (tuple(self.pending), dict(self.staged))

    def restore(self, snap):
        self.pending = list(snap[0])
        self.staged = dict(snap[1])

    def canonical(self):
        return {"pending": _sorted(self.pending), "staged": _sorted(v for batch in self.staged.values() for v in batch)}
