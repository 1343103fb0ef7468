"""Workloads: NexMark-shaped queries, the cyclic reachability query, random graphs.

The queries follow CheckMate ("CheckMate: Evaluating Checkpointing Protocols for
Streaming Dataflows", §VI):

* ``q1``  — bids → map (currency conversion) → sink; stateless, no shuffle.
* ``q3``  — persons → filter(state ∈ {OR, ID, CA}) and auctions → filter(category
  = 10), shuffled by person id / seller into an incremental join → sink.
* ``q8``  — persons and auctions shuffled into a tumbling-window join on
  person id = seller → sink.
* ``q12`` — bids shuffled by bidder into a running tumbling-window count → sink.
* ``reachability`` — the cyclic query of CheckMate Figure 6 (after FFP): links
  and source-node records are joined, the select step drops pairs whose link end
  is already on the path, the project step builds the extended path, which goes
  to the sink and back into the join (the back-edge).
* ``random-dag`` / ``random-cyclic`` — random graphs of maps, filters, keyed
  aggregates and windowed counts (cyclic ones have back-edges whose records
  carry a hop count and stop after ``max_hops`` trips round the loop).

Skew: ``hot_ratio`` is the fraction of bids/auctions whose bidder/auction/
seller is drawn from a small set of hot keys (NexMark's hot items).

Records are tuples (JSON arrays in the trace); ``ts`` is the record's event time,
its availability time in the input log.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from snapcheck.reference.operators import (
    Filter,
    IncrementalJoin,
    KeyedAggregate,
    Map,
    Operator,
    Sink,
    Source,
    WindowedCount,
    WindowedJoin,
)
from snapcheck.reference.topology import EdgeSpec, OperatorSpec, Workload, find_back_edges

STATES = ("OR", "ID", "CA", "NY", "WA", "TX")
WINDOW = 2000  # tumbling window size, ticks
HOT_KEYS = 2

# Nominal record sizes in bytes (for the message-overhead metric).
SIZE = {"P": 64, "A": 48, "B": 32, "L": 24, "S": 40}


def _arrivals(rng: random.Random, n: int, gap: int, start: int = 0):
    """n availability times with mean inter-arrival ``gap`` (uniform 0.5..1.5 gap)."""
    t = start
    for _ in range(n):
        t += int(gap * (0.5 + rng.random()))
        yield t


def _pick(rng: random.Random, n: int, hot_ratio: float) -> int:
    if hot_ratio and rng.random() < hot_ratio:
        return int(rng.random() * min(HOT_KEYS, n))
    return int(rng.random() * n)


def _src(name: str, p: int) -> OperatorSpec:
    return OperatorSpec(name, "source", p, lambda i: Source(), source=True, cost=20)


def _sink(p: int, name: str = "sink") -> OperatorSpec:
    return OperatorSpec(name, "sink", p, lambda i: Sink(), sink=True, cost=30)


# -- NexMark generator -------------------------------------------------------------
def nexmark_inputs(records: int, gap: int, hot_ratio: float, parallelism: int) -> Callable:
    """Input generator for the NexMark sources ``persons``, ``auctions`` and ``bids``:
    ``records`` records per source partition. Person ids are ``k * p + subtask``;
    auction sellers and bid auctions/bidders refer to ids that exist."""
    n_people = max(1, records * parallelism)

    def inputs(rng: random.Random, source: str, subtask: int):
        out: list[tuple[int, tuple, int]] = []  # (time, record, size)
        times = _arrivals(rng, records, gap)
        for k, ts in enumerate(times):
            ident = k * parallelism + subtask
            if source == "persons":
                out.append((ts, ("P", ident, STATES[int(rng.random() * len(STATES))], ts), SIZE["P"]))
            elif source == "auctions":
                seller = _pick(rng, n_people, hot_ratio)
                out.append((ts, ("A", ident, seller, 10 + int(rng.random() * 2), ts), SIZE["A"]))
            else:
                auction = _pick(rng, n_people, hot_ratio)
                bidder = _pick(rng, n_people, hot_ratio)
                out.append((ts, ("B", auction, bidder, 1 + int(rng.random() * 1000), ts), SIZE["B"]))
        return out

    return inputs


def q1(parallelism: int = 2, records: int = 10, gap: int = 150, hot_ratio: float = 0.0) -> Workload:
    p = parallelism
    return Workload(
        "q1",
        [
            _src("bids", p),
            OperatorSpec("map", "map", p, lambda i: Map(lambda b: ("B", b[1], b[2], b[3] * 908 // 1000, b[4]))),
            _sink(p),
        ],
        [EdgeSpec("bids", "map"), EdgeSpec("map", "sink")],
        nexmark_inputs(records, gap, hot_ratio, p),
        "NexMark Q1: stateless currency conversion of bids, no shuffle",
        {"parallelism": p, "records": records, "hot_ratio": hot_ratio},
    )


def q3(parallelism: int = 2, records: int = 10, gap: int = 150, hot_ratio: float = 0.0) -> Workload:
    p = parallelism
    return Workload(
        "q3",
        [
            _src("persons", p),
            _src("auctions", p),
            OperatorSpec(
                "filter_persons", "filter", p, lambda i: Filter(lambda r: r[2] in ("OR", "ID", "CA")), cost=40
            ),
            OperatorSpec("filter_auctions", "filter", p, lambda i: Filter(lambda r: r[3] == 10), cost=40),
            OperatorSpec(
                "join",
                "incremental-join",
                p,
                lambda i: IncrementalJoin(
                    lambda r: r[1], lambda r: r[2], lambda person, a: (person[1], person[2], a[1])
                ),
                cost=120,
            ),
            _sink(p),
        ],
        [
            EdgeSpec("persons", "filter_persons"),
            EdgeSpec("auctions", "filter_auctions"),
            EdgeSpec("filter_persons", "join", "hash", key=lambda r: r[1], port=0),
            EdgeSpec("filter_auctions", "join", "hash", key=lambda r: r[2], port=1),
            EdgeSpec("join", "sink"),
        ],
        nexmark_inputs(records, gap, hot_ratio, p),
        "NexMark Q3: filtered persons and auctions, shuffled into an incremental join",
        {"parallelism": p, "records": records, "hot_ratio": hot_ratio},
    )


def q8(parallelism: int = 2, records: int = 10, gap: int = 150, hot_ratio: float = 0.0) -> Workload:
    p = parallelism
    return Workload(
        "q8",
        [
            _src("persons", p),
            _src("auctions", p),
            OperatorSpec(
                "window_join",
                "windowed-join",
                p,
                lambda i: WindowedJoin(
                    lambda r: r[1],
                    lambda r: r[2],
                    lambda r: r[-1],
                    WINDOW,
                    lambda person, a: (person[1], a[1], person[-1] // WINDOW),
                ),
                cost=120,
            ),
            _sink(p),
        ],
        [
            EdgeSpec("persons", "window_join", "hash", key=lambda r: r[1], port=0),
            EdgeSpec("auctions", "window_join", "hash", key=lambda r: r[2], port=1),
            EdgeSpec("window_join", "sink"),
        ],
        nexmark_inputs(records, gap, hot_ratio, p),
        "NexMark Q8: persons and auctions joined in tumbling event-time windows",
        {"parallelism": p, "records": records, "hot_ratio": hot_ratio},
    )


def q12(parallelism: int = 2, records: int = 10, gap: int = 150, hot_ratio: float = 0.0) -> Workload:
    p = parallelism
    return Workload(
        "q12",
        [
            _src("bids", p),
            OperatorSpec(
                "window_count",
                "windowed-count",
                p,
                lambda i: WindowedCount(lambda b: b[2], lambda b: b[4], WINDOW),
                cost=80,
            ),
            _sink(p),
        ],
        [EdgeSpec("bids", "window_count", "hash", key=lambda b: b[2]), EdgeSpec("window_count", "sink")],
        nexmark_inputs(records, gap, hot_ratio, p),
        "NexMark Q12: running tumbling-window count of bids per bidder",
        {"parallelism": p, "records": records, "hot_ratio": hot_ratio},
    )


# -- the diamond: a task reading a source directly and through a sibling -------------------
def diamond(parallelism: int = 2, records: int = 6, gap: int = 150, hot_ratio: float = 0.0) -> Workload:
    """``src0 -> op0, op1, op2 -> sink; op1 -> op0``: op0 reads the source both directly
    and through its sibling op1, at different parallelisms (``p + 1``, ``p``, 1) over hash
    edges. Under aligned barriers op0 waits for barriers from both paths; if op1 gives a
    round up and op0 is not told, op0 keeps its source inputs blocked, backpressure stops
    the source, and no newer barrier ever reaches op1 (the ``aligned-no-cancel`` mutant)."""
    p = parallelism
    m = lambda i: Map(lambda r: (r[0], (r[1] * 7 + 3) % 100, r[2], r[3]))
    key = lambda r: r[0]
    ops = [
        _src("src0", p + 1),
        OperatorSpec("op0", "map", p + 1, m, cost=40),
        OperatorSpec("op1", "map", p, m, cost=40),
        OperatorSpec("op2", "map", 1, m, cost=40),
        _sink(1),
    ]
    edges = [
        EdgeSpec("src0", "op0", "hash", key=key),
        EdgeSpec("src0", "op1", "hash", key=key),
        EdgeSpec("src0", "op2", "hash", key=key),
        EdgeSpec("op0", "sink", "hash", key=key),
        EdgeSpec("op1", "sink", "hash", key=key),
        EdgeSpec("op2", "sink", "hash", key=key),
        EdgeSpec("op1", "op0", "hash", key=key, select=_hop(1)),
    ]
    return Workload(
        "diamond",
        ops,
        edges,
        _random_inputs(records, gap, hot_ratio),
        "src0 -> op0, op1, op2 -> sink; op1 -> op0: a task reading a source and a sibling of it",
        {"parallelism": p, "records": records, "hot_ratio": hot_ratio},
    )


# -- the cyclic reachability query (CheckMate Figure 6) --------------------------------
def reachability(
    parallelism: int = 2, records: int = 6, gap: int = 150, nodes: int = 5, hot_ratio: float = 0.0
) -> Workload:
    """The graph has ``nodes`` nodes and the links ``a → a+1`` and ``a → a+2`` (mod
    ``nodes``), each delivered once: partition i of the links source gets every
    p-th of them, at most ``records``. The sources source delivers ``records // 4 + 1``
    start nodes per partition. A path record is ``("S", origin, node, path)``; a link
    is ``("L", a, b)``. Every simple path from a start node is discovered exactly
    once, whatever the order of arrival (at most 2^(nodes-1) per start node)."""
    p = parallelism
    links = [("L", a, (a + d) % nodes) for d in (1, 2) for a in range(nodes)]

    def inputs(rng: random.Random, source: str, subtask: int):
        if source == "links":
            mine = links[subtask::p][:records]
            return [(ts, link, SIZE["L"]) for ts, link in zip(_arrivals(rng, len(mine), gap), mine)]
        out = []
        for ts in _arrivals(rng, records // 4 + 1, gap * 2):
            s = _pick(rng, nodes, hot_ratio)
            out.append((ts, ("S", s, s, (s,)), SIZE["S"]))
        return out

    def project(pair):
        link, path = pair
        return ("S", path[1], link[2], path[3] + (link[2],))

    return Workload(
        "reachability",
        [
            _src("links", p),
            _src("sources", p),
            OperatorSpec(
                "join",
                "incremental-join",
                p,
                lambda i: IncrementalJoin(lambda link: link[1], lambda path: path[2]),
                cost=120,
            ),
            OperatorSpec("select", "filter", p, lambda i: Filter(lambda pair: pair[0][2] not in pair[1][3]), cost=40),
            OperatorSpec("project", "map", p, lambda i: Map(project), cost=40),
            _sink(p),
        ],
        [
            EdgeSpec("links", "join", "hash", key=lambda link: link[1], port=0),
            EdgeSpec("sources", "join", "hash", key=lambda path: path[2], port=1),
            EdgeSpec("join", "select"),
            EdgeSpec("select", "project"),
            EdgeSpec("project", "sink"),
            EdgeSpec("project", "join", "hash", key=lambda path: path[2], port=1),
        ],
        inputs,
        "CheckMate Figure 6: cyclic reachability (join ⇄ select → project, project → sink)",
        {"parallelism": p, "records": records, "nodes": nodes, "hot_ratio": hot_ratio},
    )


# -- random graphs -----------------------------------------------------------------
KEYS = 5


def _random_inputs(records: int, gap: int, hot_ratio: float) -> Callable:
    def inputs(rng: random.Random, source: str, subtask: int):
        return [
            (ts, (_pick(rng, KEYS, hot_ratio), int(rng.random() * 100), ts, 0), 32)
            for ts in _arrivals(rng, records, gap)
        ]

    return inputs


def _random_op(rng: random.Random, name: str, p: int) -> OperatorSpec:
    """A map, filter, keyed aggregate or windowed count over ``(key, val, ts, hops)``.
    Aggregates count per (key, hops) and emit values computed from the count alone,
    so that their output multiset does not depend on the arrival order."""
    kind = ("map", "filter", "keyed-aggregate", "windowed-count")[int(rng.random() * 4)]
    make: Callable[[int], Operator]
    if kind == "map":
        make = lambda i: Map(lambda r: (r[0], (r[1] * 7 + 3) % 100, r[2], r[3]))
    elif kind == "filter":
        make = lambda i: Filter(lambda r: r[1] % 3 != 0)
    elif kind == "keyed-aggregate":  # per (key, hops); the output is a function of the count
        make = lambda i: KeyedAggregate(lambda r: (r[0], r[3]), lambda r: r[1], lambda k, c, r: (k[0], c, c * 97, k[1]))
    else:  # per (window, (key, hops)); event time = window start
        make = lambda i: WindowedCount(
            lambda r: (r[0], r[3]), lambda r: r[2], WINDOW, lambda w, k, c, r: (k[0], c, w * WINDOW, k[1])
        )
    return OperatorSpec(name, kind, p, make, cost=40 + int(rng.random() * 80))


def _hop(max_hops: int) -> Callable:
    return lambda r: (r[0], r[1], r[2], r[3] + 1) if r[3] < max_hops else None


def random_graph(
    rng: random.Random,
    cyclic: bool = False,
    max_ops: int = 4,
    max_parallelism: int = 3,
    records: int = 6,
    gap: int = 150,
    hot_ratio: float = 0.0,
    max_hops: int = 1,
) -> Workload:
    """A random connected graph: 1–2 sources, 1..max_ops inner operators, one sink;
    every inner operator reads from 1–2 earlier operators; half the graphs add an
    edge between two consumers of one source (``_sibling_edge``); operators without a
    consumer feed the sink. ``cyclic`` adds 1–2 edges from a later inner operator to
    an earlier one (hash-partitioned by key); such an edge is a back-edge only if it
    closes a cycle (``topology.expand``), otherwise the graph gains a cross edge; half
    the cyclic graphs also get a loop whose body is chained to its head
    (``_chained_loop``), and so does every cyclic graph none of whose edges closed a
    cycle: a cyclic graph has one (the other graphs are drawn as before)."""
    ops: list[OperatorSpec] = []
    edges: list[EdgeSpec] = []
    n_src = 1 + int(rng.random() * 2)
    for s in range(n_src):
        ops.append(_src(f"src{s}", 1 + int(rng.random() * max_parallelism)))
    n_inner = 1 + int(rng.random() * max_ops)
    if cyclic:
        n_inner = max(n_inner, 2)
    consumed: dict[str, bool] = {op.name: False for op in ops}
    for k in range(n_inner):
        op = _random_op(rng, f"op{k}", 1 + int(rng.random() * max_parallelism))
        earlier = [o for o in ops]
        n_in = 1 + int(rng.random() * min(2, len(earlier)))
        chosen: list[OperatorSpec] = []
        for _ in range(n_in):
            cand = earlier[int(rng.random() * len(earlier))]
            if cand not in chosen:
                chosen.append(cand)
        for src in chosen:
            edges.append(_random_edge(rng, src, op))
            consumed[src.name] = True
        ops.append(op)
        consumed[op.name] = False
    for src in ops:  # every source must be read
        if src.source and not consumed[src.name]:
            inner = [o for o in ops if not o.source]
            edges.append(_random_edge(rng, src, inner[int(rng.random() * len(inner))]))
            consumed[src.name] = True
    _sibling_edge(rng, ops, edges, consumed)
    sink = _sink(1 + int(rng.random() * max_parallelism))
    for op in ops:
        if not consumed[op.name]:
            edges.append(_random_edge(rng, op, sink))
    ops.append(sink)
    if cyclic:
        inner = [o for o in ops if not o.source and not o.sink]
        for _ in range(1 + int(rng.random() * 2)):
            a = inner[1 + int(rng.random() * (len(inner) - 1))]
            b = inner[int(rng.random() * inner.index(a))]
            if any(e.src == a.name and e.dst == b.name for e in edges):
                continue
            edges.append(EdgeSpec(a.name, b.name, "hash", key=lambda r: r[0], select=_hop(max_hops)))
        _chained_loop(rng, ops, edges, max_hops)
        find_back_edges(ops, edges)
        if not any(e.back_edge for e in edges):  # no edge drawn closed a cycle: a cyclic graph has one
            _chained_loop(rng, ops, edges, max_hops, always=True)
    name = "random-cyclic" if cyclic else "random-dag"
    wl = Workload(
        name,
        ops,
        edges,
        _random_inputs(records, gap, hot_ratio),
        f"random {'cyclic graph' if cyclic else 'DAG'} of {len(ops)} operators",
        {"records": records, "hot_ratio": hot_ratio, "max_hops": max_hops},
    )
    return wl


def _sibling_edge(rng: random.Random, ops: list[OperatorSpec], edges: list[EdgeSpec], consumed: dict) -> None:
    """With probability 1/2, a hash edge between two consumers of the same source: the
    later one then reads the source directly and through its sibling (the "diamond"). With
    blocking alignment, a task there waits for barriers from both paths, so a round given
    up on one path must be cancelled on the other, or the blocked inputs and backpressure
    stop the dataflow. Without this step such a shape arises only by chance."""
    if rng.random() >= 0.5:
        return
    inner = [o for o in ops if not o.source]
    sources = {o.name for o in ops if o.source}
    pairs = [
        (a, b)
        for i, a in enumerate(inner)
        for b in inner[i + 1 :]
        if any(
            e.dst == a.name and e2.dst == b.name and e.src == e2.src and e.src in sources for e in edges for e2 in edges
        )
        and not any(e.src == a.name and e.dst == b.name for e in edges)
    ]
    if pairs:
        a, b = pairs[int(rng.random() * len(pairs))]
        edges.append(EdgeSpec(a.name, b.name, "hash", key=lambda r: r[0]))
        consumed[a.name] = True


def _chained_loop(
    rng: random.Random, ops: list[OperatorSpec], edges: list[EdgeSpec], max_hops: int, always: bool = False
) -> None:
    """With probability 1/2 (or ``always``), an iteration whose body is chained to its head: a new
    operator with the parallelism of an inner operator ``head``, fed by it over a forward
    edge, feeds ``head`` back by key (a back-edge). Each subtask of the body then hears of
    a round from its own subtask of ``head`` alone, while each subtask of ``head`` reads
    every subtask of the body: one body subtask can take its snapshot and send the round
    back round the loop to a subtask of ``head`` that is still aligning its other inputs.
    Iterative jobs are commonly built this way (``reachability`` is); the other loops of
    a random graph close over an arbitrary path, which usually crosses a shuffle, and
    there every subtask of the loop hears of a round from every subtask of its head.
    Drawn after the rest of the graph, so a graph without the loop is unchanged."""
    if not always and rng.random() >= 0.5:
        return
    inner = [o for o in ops if not o.source and not o.sink]
    parallel = [o for o in inner if o.parallelism > 1] or inner  # a loop of one subtask has no other to race
    head = parallel[int(rng.random() * len(parallel))]
    body = _random_op(rng, f"op{len(inner)}", head.parallelism)
    ops.insert(len(ops) - 1, body)  # before the sink
    edges.append(EdgeSpec(head.name, body.name, "forward"))
    edges.append(EdgeSpec(body.name, head.name, "hash", key=lambda r: r[0], select=_hop(max_hops)))


def _random_edge(rng: random.Random, a: OperatorSpec, b: OperatorSpec) -> EdgeSpec:
    choices = ["hash", "hash", "broadcast"] + (["forward", "forward"] if a.parallelism == b.parallelism else [])
    part = choices[int(rng.random() * len(choices))]
    return EdgeSpec(a.name, b.name, part, key=(lambda r: r[0]) if part == "hash" else None)


WORKLOADS: dict[str, Callable[..., Workload]] = {
    "q1": q1,
    "q3": q3,
    "q8": q8,
    "q12": q12,
    "diamond": diamond,
    "reachability": reachability,
}
RANDOM_WORKLOADS = ("random-dag", "random-cyclic")
ACYCLIC = ("q1", "q3", "q8", "q12", "diamond", "random-dag")  # every workload, by whether it has cycles
CYCLIC = ("reachability", "random-cyclic")


def make_workload(
    name: str,
    parallelism: int = 2,
    seed: int = 0,
    records: int | None = None,
    gap: int | None = None,
    hot_ratio: float = 0.0,
) -> Workload:
    """Build a named workload. Random graphs draw their structure from ``seed``."""
    kw: dict[str, Any] = {"hot_ratio": hot_ratio}
    if records is not None:
        kw["records"] = records
    if gap is not None:
        kw["gap"] = gap
    if name in WORKLOADS:
        return WORKLOADS[name](parallelism, **kw)
    if name in RANDOM_WORKLOADS:
        rng = random.Random(f"{seed}/graph")
        return random_graph(rng, cyclic=name == "random-cyclic", max_parallelism=max(1, parallelism), **kw)
    raise KeyError(name)
