"""Logical dataflow graphs and their expansion into tasks and channels.

A *logical* graph has operators (each with a parallelism) and edges between
them. Expanding it gives the *physical* graph the simulator runs and the trace
records: one task (trace process) per parallel instance, ``"op[i]"``, and one
channel per connected task pair, ``"op[i]->op2[j]"``, according to the edge's
partitioning:

* ``forward``   — instance i feeds instance i (equal parallelism required);
* ``hash``      — every instance feeds every instance, a record goes to
  ``partition(key(record))``;
* ``broadcast`` — every instance feeds every instance, a record goes to all.

Channels of one logical edge form the *input gate* of the receiving task
(Flink's InputGate); a channel's position in its gate is the sending subtask.
Both are carried in the channel's ``attrs`` (``gate``, ``index``) because
in-flight recording keyed by index alone is a real bug (FLINK-18139).

*Back-edges* are found as in the ABS paper ("Lightweight Asynchronous Snapshots
for Distributed Dataflows", §4.3): a depth-first search from the sources marks
every edge that points to an operator still on the DFS stack. Removing them
leaves a DAG.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

PARTITIONINGS = ("forward", "hash", "broadcast")


def partition(key: Any, n: int) -> int:
    """Deterministic key partitioning (never Python's salted ``hash`` of strings)."""
    if n == 1:
        return 0
    if isinstance(key, int):
        return key % n
    return zlib.crc32(repr(key).encode()) % n


@dataclass
class OperatorSpec:
    """A logical operator. ``make(subtask)`` builds the operator instance of one task
    (see ``reference.operators``); ``kind`` names it for people."""

    name: str
    kind: str
    parallelism: int
    make: Callable[[int], Any]
    source: bool = False
    sink: bool = False
    cost: int = 100  # processing cost per record, in ticks
    out_size: int | None = None  # bytes per emitted record (None: as the input record)


@dataclass
class EdgeSpec:
    """A logical edge. ``key`` extracts the partitioning key (hash edges);
    ``select`` maps a record to what travels on this edge (None: not sent);
    ``port`` tells the receiving operator which of its inputs this is."""

    src: str
    dst: str
    partitioning: str = "forward"
    key: Callable[[Any], Any] | None = None
    select: Callable[[Any], Any] | None = None
    port: int = 0
    back_edge: bool = False  # set by LogicalGraph.find_back_edges()


@dataclass
class Workload:
    """A logical graph plus the input it consumes.

    ``inputs(rng, source_name, subtask)`` returns the records of one source
    partition as ``(available_at, value, size)`` tuples in availability order.
    """

    name: str
    operators: list[OperatorSpec]
    edges: list[EdgeSpec]
    inputs: Callable
    description: str = ""
    params: dict = field(default_factory=dict)

    def operator(self, name: str) -> OperatorSpec:
        for op in self.operators:
            if op.name == name:
                return op
        raise KeyError(name)

    @property
    def cyclic(self) -> bool:
        return any(e.back_edge for e in self.edges)

    @property
    def reconvergent(self) -> bool:
        """Whether two distinct paths of forward edges lead from one operator to another:
        a fan-out whose branches meet again (a diamond), where a blocked input of the
        meeting operator can hold back the barriers of its own other input.

        >>> from snapcheck.reference.workloads import make_workload
        >>> make_workload("diamond").reconvergent, make_workload("q1").reconvergent
        (True, False)
        """
        succ: dict[str, list[str]] = {}
        for e in self.edges:
            if not e.back_edge:
                succ.setdefault(e.src, []).append(e.dst)
        for start in succ:
            ways: dict[str, int] = {}
            stack = [start]
            while stack:  # every path from ``start`` (forward edges form a DAG)
                for nxt in succ.get(stack.pop(), ()):
                    ways[nxt] = ways.get(nxt, 0) + 1
                    if ways[nxt] > 1:
                        return True
                    stack.append(nxt)
        return False


def find_back_edges(operators: list[OperatorSpec], edges: list[EdgeSpec]) -> None:
    """Mark back-edges (DFS from the sources, in declaration order; ABS §4.3).
    Raises ValueError if an operator is unreachable from every source."""
    out: dict[str, list[EdgeSpec]] = {op.name: [] for op in operators}
    for e in edges:
        if e.src not in out or e.dst not in out:
            raise ValueError(f"edge {e.src}->{e.dst} names an unknown operator")
        out[e.src].append(e)
        e.back_edge = False
    state: dict[str, int] = {}  # 1 on stack, 2 done
    for root in (op.name for op in operators if op.source):
        if root in state:
            continue
        stack = [(root, iter(out[root]))]
        state[root] = 1
        while stack:
            node, it = stack[-1]
            edge = next(it, None)
            if edge is None:
                state[node] = 2
                stack.pop()
                continue
            s = state.get(edge.dst)
            if s == 1:
                edge.back_edge = True
            elif s is None:
                state[edge.dst] = 1
                stack.append((edge.dst, iter(out[edge.dst])))
    unreachable = [op.name for op in operators if op.name not in state]
    if unreachable:
        raise ValueError(f"operators unreachable from every source: {', '.join(unreachable)}")


@dataclass(frozen=True)
class ChannelSpec:
    """One physical channel (a trace channel)."""

    id: str
    src: str
    dst: str
    edge: int  # index into Workload.edges; -1 for external/control channels
    gate: int  # position of the logical edge among the receiver's inputs
    index: int  # sending subtask = position in the gate
    kind: str = "data"  # "data" or "control"
    back_edge: bool = False
    external: bool = False


@dataclass
class PhysicalGraph:
    tasks: list[tuple[str, OperatorSpec, int]]  # (task id, operator, subtask)
    channels: list[ChannelSpec]
    edge_channels: list[list[ChannelSpec]]  # per logical edge: by (src subtask, dst subtask)


def task_id(op: str, i: int) -> str:
    return f"{op}[{i}]"


def expand(workload: Workload) -> PhysicalGraph:
    """Tasks and data channels of a workload (external and control channels are
    added by the simulator)."""
    find_back_edges(workload.operators, workload.edges)
    ops = {op.name: op for op in workload.operators}
    tasks = [(task_id(op.name, i), op, i) for op in workload.operators for i in range(op.parallelism)]
    gates: dict[str, int] = {op.name: 0 for op in workload.operators}
    channels: list[ChannelSpec] = []
    per_edge: list[list[ChannelSpec]] = []
    seen: set[str] = set()
    for ei, e in enumerate(workload.edges):
        a, b = ops[e.src], ops[e.dst]
        if e.partitioning not in PARTITIONINGS:
            raise ValueError(f"edge {e.src}->{e.dst}: unknown partitioning {e.partitioning!r}")
        if a.sink:
            raise ValueError(f"edge {e.src}->{e.dst}: a sink has no outputs")
        if b.source:
            raise ValueError(f"edge {e.src}->{e.dst}: a source reads only its external input")
        gate = gates[e.dst]
        gates[e.dst] += 1
        chans = []
        if e.partitioning == "forward":
            if a.parallelism != b.parallelism:
                raise ValueError(
                    f"forward edge {e.src}->{e.dst} needs equal parallelism ({a.parallelism} vs {b.parallelism})"
                )
            pairs = [(i, i) for i in range(a.parallelism)]
        else:
            if e.partitioning == "hash" and e.key is None:
                raise ValueError(f"hash edge {e.src}->{e.dst} needs a key function")
            pairs = [(i, j) for i in range(a.parallelism) for j in range(b.parallelism)]
        for i, j in pairs:
            cid = f"{task_id(e.src, i)}->{task_id(e.dst, j)}"
            if cid in seen:
                raise ValueError(f"two logical edges connect {e.src} and {e.dst}: channel {cid} would repeat")
            seen.add(cid)
            c = ChannelSpec(cid, task_id(e.src, i), task_id(e.dst, j), ei, gate, i, back_edge=e.back_edge)
            chans.append(c)
            channels.append(c)
        per_edge.append(chans)
    return PhysicalGraph(tasks, channels, per_edge)
