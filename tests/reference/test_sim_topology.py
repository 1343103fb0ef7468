"""Logical graphs expand into the right tasks and channels; back-edges are DFS back-edges."""

import random

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from snapcheck.reference.operators import Map, Sink, Source
from snapcheck.reference.topology import EdgeSpec, OperatorSpec, Workload, expand, partition
from snapcheck.reference.workloads import make_workload, random_graph


def _wl(edges, pars=(2, 3, 3)):
    ops = [
        OperatorSpec("a", "source", pars[0], lambda i: Source(), source=True),
        OperatorSpec("b", "map", pars[1], lambda i: Map(lambda x: x)),
        OperatorSpec("c", "sink", pars[2], lambda i: Sink(), sink=True),
    ]
    return Workload("t", ops, edges, lambda rng, s, i: [])


def test_hash_and_broadcast_connect_every_pair_forward_connects_equal_subtasks():
    g = expand(_wl([EdgeSpec("a", "b", "hash", key=lambda r: r), EdgeSpec("b", "c", "forward")]))
    assert [t for t, _, _ in g.tasks] == ["a[0]", "a[1]", "b[0]", "b[1]", "b[2]", "c[0]", "c[1]", "c[2]"]
    ab = [c.id for c in g.edge_channels[0]]
    assert ab == [f"a[{i}]->b[{j}]" for i in range(2) for j in range(3)]
    assert [c.id for c in g.edge_channels[1]] == ["b[0]->c[0]", "b[1]->c[1]", "b[2]->c[2]"]
    g2 = expand(_wl([EdgeSpec("a", "b", "broadcast"), EdgeSpec("b", "c", "broadcast")]))
    assert len(g2.channels) == 2 * 3 + 3 * 3


def test_gate_and_index_identify_a_channel_of_a_multi_input_task():
    g = expand(make_workload("q8", parallelism=2))
    into = [c for c in g.channels if c.dst == "window_join[1]"]
    assert {(c.src, c.gate, c.index) for c in into} == {
        ("persons[0]", 0, 0),
        ("persons[1]", 0, 1),
        ("auctions[0]", 1, 0),
        ("auctions[1]", 1, 1),
    }


@pytest.mark.parametrize(
    "edges, message",
    [
        ([EdgeSpec("a", "b", "forward"), EdgeSpec("b", "c", "forward")], "equal parallelism"),
        ([EdgeSpec("a", "b", "hash"), EdgeSpec("b", "c", "forward")], "key function"),
        ([EdgeSpec("a", "b", "shuffle"), EdgeSpec("b", "c", "forward")], "unknown partitioning"),
        ([EdgeSpec("a", "c", "broadcast")], "unreachable"),
        (
            [EdgeSpec("a", "b", "broadcast"), EdgeSpec("b", "c", "forward"), EdgeSpec("b", "a", "broadcast")],
            "source reads only",
        ),
    ],
)
def test_bad_graphs_are_rejected(edges, message):
    with pytest.raises(ValueError, match=message):
        expand(_wl(edges))


def test_reachability_has_exactly_the_project_to_join_back_edge():
    g = expand(make_workload("reachability", parallelism=2))
    back = sorted(c.id for c in g.channels if c.back_edge)
    assert back == [f"project[{i}]->join[{j}]" for i in range(2) for j in range(2)]


@settings(max_examples=60, deadline=None)
@given(st.randoms(use_true_random=False), st.booleans())
def test_removing_back_edges_leaves_a_dag_and_back_edges_close_cycles(rng, cyclic):
    wl = random_graph(rng, cyclic=cyclic)
    g = expand(wl)
    for level in ("logical", "tasks"):
        dag = nx.DiGraph()
        if level == "logical":
            dag.add_nodes_from(op.name for op in wl.operators)
            dag.add_edges_from((e.src, e.dst) for e in wl.edges if not e.back_edge)
        else:
            dag.add_nodes_from(t for t, _, _ in g.tasks)
            dag.add_edges_from((c.src, c.dst) for c in g.channels if not c.back_edge)
        assert nx.is_directed_acyclic_graph(dag)
    for e in wl.edges:  # a back-edge points to a DFS ancestor: it closes a cycle
        if e.back_edge:
            assert nx.has_path(dag_of(wl), e.dst, e.src)
    assert {c.id for c in g.channels if c.back_edge} == {
        c.id for c, e in ((c, wl.edges[c.edge]) for c in g.channels) if e.back_edge
    }
    # a cyclic graph has a cycle (one in about eight drawn none: its later-to-earlier edges closed
    # no path, and no chained loop was drawn), an acyclic one none
    full = nx.DiGraph((e.src, e.dst) for e in wl.edges)
    assert nx.is_directed_acyclic_graph(full) is not cyclic


def dag_of(wl):
    d = nx.DiGraph()
    d.add_edges_from((e.src, e.dst) for e in wl.edges if not e.back_edge)
    return d


def test_partition_is_deterministic_and_in_range():
    assert [partition(k, 3) for k in range(6)] == [0, 1, 2, 0, 1, 2]
    assert partition("bidder-7", 5) == partition("bidder-7", 5)
    keys = [("w", i) for i in range(50)]
    assert {partition(k, 4) for k in keys} <= set(range(4))
    assert len({partition(k, 4) for k in keys}) > 1
    assert partition(random.Random(1).random(), 1) == 0


def _round_can_come_back_early(wl) -> bool:
    """Some back-edge's sender does not depend, over regular channels, on the subtask the
    back-edge enters, though it depends on another subtask of that operator: the sender
    can take its snapshot and send a round's barrier round the loop to a subtask still
    aligning its regular inputs (docs/theory.md, the early back-edge barrier)."""
    g = expand(wl)
    dag = nx.DiGraph((c.src, c.dst) for c in g.channels if not c.back_edge)
    for c in g.channels:
        if c.back_edge and c.src in dag:
            up = nx.ancestors(dag, c.src)
            if c.dst not in up and any(t.split("[")[0] == c.dst.split("[")[0] for t in up):
                return True
    return False


def test_random_cyclic_graphs_draw_loops_a_round_can_come_back_round_early():
    """Loops whose body is chained to their head (``_chained_loop``): 13 of these 200
    graphs had such a loop before the generator drew them, 92 since."""
    assert _round_can_come_back_early(make_workload("reachability", parallelism=2))
    graphs = [random_graph(random.Random(seed), cyclic=True) for seed in range(200)]
    assert sum(map(_round_can_come_back_early, graphs)) >= 60
