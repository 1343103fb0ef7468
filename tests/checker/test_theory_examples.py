"""The worked examples A–D of docs/theory.md and its pitfalls, as unit tests."""

from __future__ import annotations

import pytest

from snapcheck.checker import CheckOptions, check_trace
from snapcheck.checker.cuts import CutAnalysis, is_consistent
from snapcheck.checker.durability import Durability
from snapcheck.checker.intervals import History
from snapcheck.checker.recovery_line import bound, r_mark, rl_fix
from snapcheck.checker.rgraph import Graph, scc_labels
from snapcheck.checker.rollback_propagation import rollback_propagation
from snapcheck.checker.zcycles import useless_positions, zcycle_witness
from snapcheck.reference.catalogue import header_facts
from snapcheck.traces import TraceRecorder


def two(protocol="none", logged=False, params=None):
    return TraceRecorder(
        ["P0", "P1"],
        [
            {"id": "a", "src": "P0", "dst": "P1", "logged": logged},
            {"id": "b", "src": "P1", "dst": "P0", "logged": logged},
        ],
        protocol=protocol,
        params=params,
    )


def example_a():
    """P0: C0,0 | r(m2) | C0,1 | s(m1) | C0,2 ;  P1: C1,0 | s(m2) | r(m1) | C1,1"""
    rec = two()
    m2 = rec.send("P1", "b")
    rec.recv("P0", m2)
    rec.checkpoint("P0")
    m1 = rec.send("P0", "a")
    rec.checkpoint("P0")
    rec.recv("P1", m1)
    rec.checkpoint("P1")
    return rec.trace(), m1, m2


def example_b():
    """P0: s(q) | r(a) | C0,1 ;  P1: r(q) | s(a) | C1,1"""
    rec = two()
    q = rec.send("P0", "a")
    rec.recv("P1", q)
    a = rec.send("P1", "b")
    rec.recv("P0", a)
    rec.checkpoint("P0")
    rec.checkpoint("P1")
    return rec.trace()


def example_c(protocol="none", params=None):
    """The domino staircase of docs/theory.md, "Worked example C: the domino effect"."""
    rec = two(protocol, params=params)
    rec.checkpoint("P0")
    a = rec.send("P0", "a")
    rec.recv("P1", a)
    rec.checkpoint("P1")
    b = rec.send("P1", "b")
    rec.recv("P0", b)
    rec.checkpoint("P0")
    c = rec.send("P0", "a")
    rec.recv("P1", c)
    rec.checkpoint("P1")
    d = rec.send("P1", "b")
    rec.recv("P0", d)
    rec.checkpoint("P0")
    e = rec.send("P0", "a")
    rec.recv("P1", e)
    return rec.trace(), dict(a=a, b=b, c=c, d=d, e=e)


def example_d(recorded):
    """P0: s(m1) | C0,1 | s(m2) ;  P1: C1,0 | C1,1 | r(m1) | r(m2), with CS = recorded."""
    rec = TraceRecorder(["P0", "P1"], [("c", "P0", "P1")])
    m1 = rec.send("P0", "c")
    rec.checkpoint("P0")
    m2 = rec.send("P0", "c")
    ck = rec.checkpoint("P1")
    names = {"m1": m1, "m2": m2}
    rec.record("P1", ck, "c", [names[x] for x in recorded])
    rec.recv("P1", m1)
    rec.recv("P1", m2)
    return rec.trace(), m1, m2


def test_example_a_zcycle_without_causal_cycle():
    t, m1, m2 = example_a()
    h = History(t)
    assert sorted((m.mid, m.src, m.s, m.dst, m.r) for m in h.msgs) == [("a:1", 0, 2, 1, 1), ("b:1", 1, 1, 0, 1)]
    g = Graph(h)
    assert useless_positions(g) == [(0, 1)]
    assert [m.mid for m in zcycle_witness(g, 0, 1)] == [m1, m2]
    rep = check_trace(t)
    assert rep.ok and rep.useless == [("P0", 1)]
    v = check_trace(t, CheckOptions(properties={"z-cycles"})).violations
    assert [x.kind for x in v] == ["useless-checkpoint"] and v[0].witness["messages"] == [m1, m2]
    assert "possibly BEFORE" not in v[0].message and "before that receipt" in v[0].message


def test_example_b_rgraph_cycle_is_not_a_zcycle():
    """Pitfall: "useless ⟺ on some R-graph cycle" is wrong (docs/theory.md, "Worked example
    B: an R-graph cycle that is not a Z-cycle")."""
    h = History(example_b())
    g = Graph(h)
    comp = scc_labels(g)
    assert comp[g.node(0, 1)] == comp[g.node(1, 1)]  # an R-graph cycle (0,1) <-> (1,1) ...
    assert useless_positions(g, comp) == []  # ... and nothing is useless
    on_cycle = {v for v in range(g.nodes) if any(comp[w] == comp[v] for w in g.adj[v])}
    assert on_cycle, "the wrong heuristic would flag these"


def test_example_c_domino_all_methods_and_chain():
    t, m = example_c()
    h = History(t)
    g = Graph(h)
    assert useless_positions(g) == [(0, 2), (0, 3), (1, 1), (1, 2)]
    for failed in ([0, 1], [0], [1]):
        U = bound(h, failed, "partial")
        line, steps, last = rl_fix(h, U)
        assert line == [1, 0] == r_mark(h, U) == rollback_propagation(h, U)
    assert rl_fix(h, bound(h, [], "partial"))[0] == [4, 3]
    rep = check_trace(t, CheckOptions(failures="all", z3=True))
    assert rep.recovery_lines["all"] == {"P0": 1, "P1": 0}
    d = rep.recovery["all"]
    assert d["domino"] and rep.stats["domino"]
    assert rep.certificates["all"]["maximality"] == "proved"
    chain_p1 = d["chain"]["P1"]
    # docs/theory.md, "Worked example C: the domino effect":
    # (3,2) orphan d -> P0 to 2; (2,2) orphan c -> P1 to 1; (2,1) orphan b -> P0 to 1; (1,1) orphan a -> P1 to 0
    assert [s.split(" because")[0] for s in chain_p1] == ["P0: 3 -> 2", "P1: 2 -> 1", "P0: 2 -> 1", "P1: 1 -> 0"]
    assert [m[k] in s for k, s in zip("dcba", chain_p1)] == [True] * 4


@pytest.mark.parametrize("params", [{"guarantees": ["z-cycles"]}, {"guarantees": ["rdt"]}, {"zcf": True}])
def test_useless_checkpoint_is_a_violation_where_zcf_is_promised(params):
    t, _ = example_c("my-cic", params)
    rep = check_trace(t)
    assert not rep.ok and rep.kinds - {"rdt"} == {"useless-checkpoint"}
    assert len([v for v in rep.violations if v.kind == "useless-checkpoint"]) == 4


@pytest.mark.parametrize("protocol", ["bcs", "hmnr"])
def test_a_protocol_known_by_name_gets_its_catalogue_guarantees_only_when_given(protocol):
    """The checker decides from declared facts, never from the name: the name alone promises
    nothing; the catalogue's facts for the name (what ``snapcheck check`` passes) do."""
    t, _ = example_c(protocol)
    assert check_trace(t).ok and len(check_trace(t).useless) == 4
    rep = check_trace(t, CheckOptions(facts=header_facts(t.header.protocol)))
    assert rep.kinds == {"useless-checkpoint"}


@pytest.mark.parametrize(
    "recorded,kinds",
    [([], {"dropped"}), (["m1"], set()), (["m1", "m2"], {"phantom"}), (["m1", "m1"], {"duplicate-recorded"})],
)
def test_example_d_channel_state(recorded, kinds):
    t, m1, m2 = example_d(recorded)
    rep = check_trace(t, CheckOptions(cut={"P0": 1, "P1": 1}))
    assert rep.kinds == kinds
    if kinds:
        v = rep.violations[0]
        assert v.witness["cut"] == {"P0": 1, "P1": 1}
        assert v.witness["messages"] == ([m1] if kinds != {"phantom"} else [m2])


def test_mixed_edge_conventions_give_wrong_lines():
    """Pitfall "Mixing the two edge conventions" of docs/theory.md: R-MARK on
    checkpoint-graph edges misses messages sent in the failed process's open interval
    (inconsistent line); rollback propagation on R-graph edges over-rolls back."""
    rec = two()
    rec.checkpoint("P0")
    m = rec.send("P0", "a")  # sent in P0's open interval
    rec.recv("P1", m)
    h = History(rec.trace())
    U = bound(h, [0], "partial")
    assert rl_fix(h, U)[0] == [1, 0]
    wrong = r_mark(h, U, Graph(h, "ckpt"))
    assert wrong == [1, 1] and not is_consistent(h, wrong)  # keeps P1's V, which processed m

    hb = History(example_b())
    U = bound(hb, [0, 1], "partial")
    assert rollback_propagation(hb, U) == [1, 1] == rl_fix(hb, U)[0]
    over = rollback_propagation(hb, U, Graph(hb, "r"))
    assert over == [0, 0]


def test_checkmate_root_set_over_rolls_back_partial_failures():
    """Pitfall "Survivors may keep their state" of docs/theory.md: using every process's
    latest stable checkpoint as the bound for a single failure rolls survivors back for
    nothing."""
    rec = two()
    rec.checkpoint("P1")
    m = rec.send("P1", "b")  # P1 (survivor) sends after its last checkpoint ...
    rec.recv("P0", m)
    rec.checkpoint("P0")  # ... and the failed P0 processed it before its checkpoint
    h = History(rec.trace())
    partial = rl_fix(h, bound(h, [0], "partial"))[0]
    restart = rl_fix(h, bound(h, [0], "restart-all"))[0]
    assert partial == [1, 2] and restart == [0, 1]


def test_initial_checkpoint_is_inserted():
    rec = two()
    m = rec.send("P0", "a")
    rec.recv("P1", m)
    h = History(rec.trace())
    assert h.L == [0, 0] and h.ckpt_num == [[0], [0]]
    assert [(x.s, x.r) for x in h.msgs] == [(1, 1)]
    assert rl_fix(h, [0, 0])[0] == [0, 0]


def test_undelivered_messages_make_no_rgraph_edge():
    rec = two()
    rec.checkpoint("P0")
    rec.send("P0", "a")
    h = History(rec.trace())
    g = Graph(h)
    assert sum(len(a) for a in g.adj) == sum(L + 1 for L in h.L)  # successor edges only


def test_stably_unusable_is_not_useless():
    rec = TraceRecorder(["P0", "P1"], [("c", "P1", "P0")])
    m = rec.send("P1", "c")
    rec.recv("P0", m)
    rec.checkpoint("P0")
    rep = check_trace(rec.trace())
    assert rep.useless == [] and rep.stably_unusable == [("P0", 1)]


def test_order_of_recorded_state_on_fifo_channel():
    rec = TraceRecorder(["P0", "P1"], [("c", "P0", "P1")])
    m1 = rec.send("P0", "c")
    m2 = rec.send("P0", "c")
    ck = rec.checkpoint("P1")
    rec.record("P1", ck, "c", [m2, m1])
    rec.recv("P1", m1)
    rec.recv("P1", m2)
    t = rec.trace()
    rep = check_trace(t, CheckOptions(cut={"P0": "V", "P1": 1}))
    assert rep.kinds == {"order"}
    # the same on a non-FIFO channel is fine
    t.header.channels[0] = type(t.header.channels[0])("c", "P0", "P1", fifo=False)
    assert check_trace(t, CheckOptions(cut={"P0": "V", "P1": 1})).ok


def test_unaligned_input_and_output_parts():
    """Input ∪ output part = in-transit set, disjoint (docs/theory.md, "Unaligned checkpoints")."""

    def run(inp, out):
        rec = TraceRecorder(["U", "D"], [("c", "U", "D")], protocol="unaligned")
        a = rec.send("U", "c")
        b = rec.send("U", "c")
        cu = rec.checkpoint("U", kind="coordinated", round=1)
        cd = rec.checkpoint("D", kind="coordinated", round=1)
        names = {"a": a, "b": b}
        rec.record("D", cd, "c", [names[x] for x in inp], part="input")
        rec.record("U", cu, "c", [names[x] for x in out], part="output")
        rec.recv("D", a)
        rec.recv("D", b)
        return check_trace(rec.trace()).kinds

    assert run("a", "b") == set()
    assert run("ab", "") == set()
    assert run("a", "") == {"dropped"}
    assert run("ab", "b") == {"duplicate-recorded"}
    assert run("b", "a") == {"order"}


@pytest.mark.parametrize("params,catalogue", [({"aligned": True}, False), ({}, True)])
def test_aligned_protocol_promises_empty_channel_state(params, catalogue):
    rec = TraceRecorder(["U", "D"], [("c", "U", "D")], protocol="abs-aligned", params=params)
    a = rec.send("U", "c")
    rec.checkpoint("U", kind="coordinated", round=1)
    rec.checkpoint("D", kind="coordinated", round=1)
    rec.recv("D", a)
    t = rec.trace()
    rep = check_trace(t, CheckOptions(facts=header_facts(t.header.protocol) if catalogue else None))
    assert rep.kinds == {"aligned-in-flight"}
    assert rep.violations[0].subject == "round 1"


def test_wrong_channel_and_phantom_of_rolled_back_send():
    rec = TraceRecorder(["A", "B", "C"], [("ab", "A", "B"), ("cb", "C", "B")])
    x = rec.send("A", "ab")
    y = rec.send("C", "cb")
    ck = rec.checkpoint("B")
    rec.record("B", ck, "ab", [x, y])
    rec.recv("B", x)
    rec.recv("B", y)
    rep = check_trace(rec.trace(), CheckOptions(cut={"A": "V", "B": 1, "C": "V"}))
    assert rep.kinds == {"wrong-channel", "dropped"}  # y is filed under ab, so cb's state misses it


@pytest.mark.parametrize("q_first", [True, False])
def test_a_record_on_the_wrong_channel_is_judged_alike_in_any_merge_of_the_processes_logs(q_first):
    """Q files q1 (sent on qp) under pq; P records q1 and q2 as qp's state, rightly. The
    processes' records may be merged in either order: either way it is one wrong-channel,
    and q1, recorded on its own channel, is not dropped (one order also said dropped,
    the other lost the wrong-channel)."""
    rec = TraceRecorder(["P", "Q"], [("pq", "P", "Q"), ("qp", "Q", "P")], protocol="chandy-lamport")
    rec.checkpoint("P", kind="coordinated", round=1)
    mk_pq = rec.barrier("P", "pq", round=1)
    q1, q2 = rec.send("Q", "qp"), rec.send("Q", "qp")
    rec.recv("Q", mk_pq)
    rec.checkpoint("Q", kind="coordinated", round=1)
    if q_first:
        rec.record("Q", 1, "pq", [q1])
        mk_qp = rec.barrier("Q", "qp", round=1)
        rec.recv("P", q1)
        rec.recv("P", q2)
        rec.recv("P", mk_qp)
        rec.record("P", 1, "qp", [q1, q2])
    else:
        rec.recv("P", q1)
        rec.recv("P", q2)
        mk_qp = rec.barrier("Q", "qp", round=1)
        rec.recv("P", mk_qp)
        rec.record("P", 1, "qp", [q1, q2])
        rec.record("Q", 1, "pq", [q1])
    rep = check_trace(rec.trace())
    assert rep.kinds == {"wrong-channel"}, rep.render_text()
    assert rep.violations[0].witness["messages"] == [q1]


def test_durable_logs_and_truncation():
    rec = TraceRecorder(["P0", "P1"], [("c", "P0", "P1")])
    m1 = rec.send("P0", "c")
    m2 = rec.send("P0", "c")
    rec.log("P0", "c", [m1, m2])
    rec.log_truncate("P0", "c", 1)
    rec.checkpoint("P0")
    rec.checkpoint("P1")
    rec.recv("P1", m1)
    rec.recv("P1", m2)
    h = History(rec.trace())
    dur = Durability(h)
    assert not dur.durable(m1) and dur.durable(m2)
    ca = CutAnalysis(h, dur, [1, 1], "cut")
    assert [v.kind for v in ca.channel_state] == ["dropped"] and m1 in ca.channel_state[0].message
    assert "truncated at line" in ca.channel_state[0].message


def test_external_input_is_durable_and_not_in_cuts():
    rec = TraceRecorder([{"id": "K", "role": "external"}, "S"], [("k", "K", "S")], protocol="abs-aligned")
    r1 = rec.send("K", "k")
    rec.checkpoint("S", kind="coordinated", round=1)
    rec.recv("S", r1)
    rep = check_trace(rec.trace())
    assert rep.ok and rep.recovery_lines["all"] == {"S": 1}
