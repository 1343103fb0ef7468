"""The checker's CIC additions on hand-built traces with known answers: conformance by
re-simulation (missing / spurious forced checkpoints, piggyback and variable
mismatches), timestamps along Z-paths, log retention; and cross-checks of the
incremental prefix recovery lines and of the causal-order re-simulation."""

from __future__ import annotations

import random

import pytest

from snapcheck.checker import CheckOptions, check_trace
from snapcheck.checker.cic import Resimulation
from snapcheck.checker.durability import Durability
from snapcheck.checker.intervals import History
from snapcheck.checker.log_retention import PrefixLines
from snapcheck.checker.recovery_line import rl_fix
from snapcheck.checker.zcycles import is_zpath
from snapcheck.reference import SimConfig, simulate
from snapcheck.traces import TraceRecorder
from snapcheck.traces.model import Trace

TWO = [{"id": "c01", "src": "P0", "dst": "P1"}, {"id": "c10", "src": "P1", "dst": "P0"}]
# What a BCS / HMNR trace header declares (the catalogue writes the same facts into simulated traces).
BCS_FACTS = {"cic": "bcs", "guarantees": ["z-cycles"]}
HMNR_FACTS = {"cic": "hmnr", "guarantees": ["z-cycles"]}


def bcs_example_c(forced: bool = True, spurious: bool = False, wrong_sn: bool = False, wrong_vars: bool = False):
    """Worked example C of docs/theory.md (the domino pattern) under BCS: a forced
    checkpoint before the receipt of a, b, c, d and e."""
    rec = TraceRecorder(["P0", "P1"], TWO, protocol="bcs", params=BCS_FACTS)
    sn = {"P0": 0, "P1": 0}

    def basic(p):
        sn[p] += 1
        rec.checkpoint(p, vars={"sn": sn[p] + (1 if wrong_vars and p == "P1" else 0)})

    def send(p, ch):
        return rec.send(p, ch, piggyback={"sn": sn[p] + (7 if wrong_sn else 0)})

    def recv(p, mid, msn):
        if forced and msn > sn[p]:
            sn[p] = msn
            rec.checkpoint(p, kind="forced", vars={"sn": msn})
        rec.recv(p, mid)

    basic("P0")
    a = send("P0", "c01")
    recv("P1", a, 1)
    basic("P1")
    b = send("P1", "c10")
    recv("P0", b, 2)
    basic("P0")
    c = send("P0", "c01")
    recv("P1", c, 3)
    basic("P1")
    d = send("P1", "c10")
    recv("P0", d, 4)
    basic("P0")
    e = send("P0", "c01")
    recv("P1", e, 5)
    if spurious:  # g carries sn 5 = P1's sn: nothing to force
        g = send("P0", "c01")
        rec.checkpoint("P1", kind="forced", vars={"sn": 6})
        rec.recv("P1", g)
    return rec.trace()


def test_bcs_example_c_with_forced_checkpoints_is_clean():
    rep = check_trace(bcs_example_c())
    assert rep.ok, rep.render_text()
    assert rep.useless == []
    assert {r.property for r in rep.results} >= {"cic-conformance", "cic-efficiency", "timestamps", "z-cycles"}
    assert rep.stats["cic"]["forced"] == rep.stats["cic"]["required"] == 5


def test_bcs_without_forced_checkpoints_is_a_safety_violation_with_its_consequences():
    rep = check_trace(bcs_example_c(forced=False))
    missing = [v for v in rep.violations if v.kind == "missing-forced-checkpoint"]
    # without forced checkpoints: a (sn 1 > 0), c (2 > 1) and e (3 > 2) must force; b and d not
    assert [v.witness["messages"] for v in missing] == [["c01:1"], ["c01:2"], ["c01:3"]]
    assert all(v.property == "cic-conformance" and "m.sn" in v.message for v in missing)
    assert {"useless-checkpoint", "timestamp-order"} <= rep.kinds
    for v in rep.violations:
        if v.kind == "timestamp-order" and len(v.witness["checkpoints"]) == 2:
            assert "Z-precedes" in v.message and v.witness["messages"]


def test_spurious_forced_checkpoint_is_an_efficiency_violation():
    rep = check_trace(bcs_example_c(spurious=True))
    assert rep.kinds == {"spurious-forced-checkpoint"}
    v = rep.violations[0]
    assert v.property == "cic-efficiency" and "not needed" in v.message
    assert v.witness["checkpoints"] == [["P1", 6]] and v.witness["messages"] == ["c01:4"]


def test_logged_piggyback_and_variables_must_match_the_resimulation():
    rep = check_trace(bcs_example_c(wrong_sn=True), CheckOptions(properties={"cic-conformance"}))
    assert "piggyback-mismatch" in rep.kinds
    rep = check_trace(bcs_example_c(wrong_vars=True), CheckOptions(properties={"cic-conformance"}))
    assert rep.kinds == {"vars-mismatch"}


def test_a_boolean_where_the_protocol_has_a_number_is_no_match():
    """JSON ``true`` is not the number 1 (Python's ``True == 1`` hid it): a piggyback of
    ``sn: true`` where BCS has ``sn = 1`` is a piggyback-mismatch naming both values."""
    rec = TraceRecorder(["P0", "P1"], TWO, protocol="bcs", params=BCS_FACTS)
    rec.checkpoint("P0")
    m = rec.send("P0", "c01", piggyback={"sn": True})
    rec.checkpoint("P1", kind="forced")
    rec.recv("P1", m)
    rep = check_trace(rec.trace(), CheckOptions(properties={"cic-conformance"}))
    (v,) = [v for v in rep.violations if v.kind == "piggyback-mismatch"]
    assert v.witness["differs"] == {"sn": [True, 1]} and "sn = True where re-simulation gives 1" in v.message


def hmnr_pb(lc, ckpt, taken, greater):
    return {"lc": lc, "ckpt": ckpt, "taken": taken, "greater": greater}


def test_hmnr_c2_breaks_the_z_cycle_of_example_a():
    """Worked example A of docs/theory.md: P1 sends m2, P0 processes it, checkpoints and sends m1,
    which P1 processes in the interval where it sent m2: C2 holds (m1's causal past
    starts in P1's current interval and crossed C0,1); without the forced checkpoint
    C0,1 is useless."""
    for forced in (True, False):
        rec = TraceRecorder(["P0", "P1"], TWO, protocol="hmnr", params=HMNR_FACTS)
        m2 = rec.send("P1", "c10", piggyback=hmnr_pb(0, [0, 0], [False, False], [False, False]))
        rec.recv("P0", m2)
        rec.checkpoint("P0", vars=hmnr_pb(1, [1, 0], [False, True], [False, True]))
        m1 = rec.send("P0", "c01", piggyback=hmnr_pb(1, [1, 0], [False, True], [False, True]))
        if forced:
            rec.checkpoint("P1", kind="forced")
        rec.recv("P1", m1)
        rep = check_trace(rec.trace())
        if forced:
            assert rep.ok and rep.useless == [], rep.render_text()
        else:
            assert {"missing-forced-checkpoint", "useless-checkpoint", "timestamp-order"} <= rep.kinds
            miss = next(v for v in rep.violations if v.kind == "missing-forced-checkpoint")
            assert miss.message.count("C2:") == 1 and miss.witness["messages"] == [m1]


def test_hmnr_c1_keeps_timestamps_increasing_along_a_non_causal_z_path():
    """P0 sends m' to P2, then processes m from P1, sent after P1's checkpoint with a larger
    clock that does not know P2's: C1 holds. Without the forced checkpoint the Z-path
    m, m' goes from C1,1 (timestamp 1) to P2's checkpoint (timestamp 1)."""
    procs = ["P0", "P1", "P2"]
    chans = [{"id": "c02", "src": "P0", "dst": "P2"}, {"id": "c10", "src": "P1", "dst": "P0"}]
    for forced in (True, False):
        rec = TraceRecorder(procs, chans, protocol="hmnr", params=HMNR_FACTS)
        m_ = rec.send("P0", "c02")
        rec.checkpoint("P1")
        m = rec.send("P1", "c10")
        if forced:
            rec.checkpoint("P0", kind="forced")
        rec.recv("P0", m)
        rec.recv("P2", m_)
        rec.checkpoint("P2")
        rep = check_trace(rec.trace(), CheckOptions(properties={"cic-conformance", "timestamps", "z-cycles"}))
        if forced:
            assert rep.ok, rep.render_text()
            continue
        assert rep.kinds == {"missing-forced-checkpoint", "timestamp-order"}
        assert "C1:" in next(v for v in rep.violations if v.kind == "missing-forced-checkpoint").message
        ts = next(v for v in rep.violations if v.kind == "timestamp-order")
        assert ts.witness["messages"] == [m, m_] and ts.witness["checkpoints"] == [["P1", 1], ["P2", 1]]
        h = History(rec.trace())
        assert is_zpath([h.by_mid[x] for x in ts.witness["messages"]], (1, 1), (2, 1))


def test_cic_properties_need_a_cic_protocol():
    rec = TraceRecorder(["P0", "P1"], TWO, protocol="unc")
    rec.recv("P1", rec.send("P0", "c01"))
    report = check_trace(rec.trace(), CheckOptions(properties={"cic-conformance"}))  # nothing to judge it by
    assert not report.judged and "declares no communication-induced rules" in report.not_judged["cic-conformance"]
    # a BCS trace that carries no protocol data is only checked for Z-cycles by default
    rec = TraceRecorder(["P0", "P1"], TWO, protocol="bcs", params=BCS_FACTS)
    rec.recv("P1", rec.send("P0", "c01"))
    assert {r.property for r in check_trace(rec.trace()).results} == {"z-cycles"}


def retention_trace(truncate_after_p2_checkpoint: bool, sent_after_checkpoint: bool = False):
    """P1 processes m (from P0) and x (from P2, sent after P2's last checkpoint), then
    checkpoints. If every process failed now, x would be an orphan: P1 rolls back to
    C1,0 and m is in transit — P0 must keep m in its log until P2 checkpoints.

    ``sent_after_checkpoint``: P0 checkpoints just before sending m, so m is not in
    transit w.r.t. that line; P0 truncates m and checkpoints again (or, after P2's
    checkpoint, checkpoints first, so that the line reflects m's receipt)."""
    chans = [{"id": "a", "src": "P0", "dst": "P1"}, {"id": "b", "src": "P2", "dst": "P1"}]
    rec = TraceRecorder(["P0", "P1", "P2"], chans, protocol="unc")
    if sent_after_checkpoint:
        rec.checkpoint("P0")
    m = rec.send("P0", "a", logged=True)
    if not sent_after_checkpoint:
        rec.checkpoint("P0")
    x = rec.send("P2", "b", logged=True)
    rec.recv("P1", m)
    rec.recv("P1", x)
    rec.checkpoint("P1")
    if truncate_after_p2_checkpoint:
        rec.checkpoint("P2")
        if sent_after_checkpoint:
            rec.checkpoint("P0")
    rec.log_truncate("P0", "a", 1)
    if sent_after_checkpoint and not truncate_after_p2_checkpoint:
        rec.checkpoint("P0")  # the sender's next checkpoint: a line with it has m in transit
    return rec.trace(), m


def test_premature_log_truncation():
    t, m1 = retention_trace(False)
    rep = check_trace(t)
    assert rep.kinds == {"premature-truncation"}
    v = rep.violations[0]
    assert v.property == "log-retention" and v.witness["messages"] == [m1]
    assert v.witness["cut"] == {"P0": 1, "P1": 0, "P2": 0}
    t, _ = retention_trace(True)
    assert check_trace(t).ok


def test_truncation_that_a_later_recovery_line_needs():
    """A message sent after the sender's checkpoint on R and processed after the
    receiver's: not in transit w.r.t. R, but once the sender checkpoints again the
    recovery line (RL-FIX on the whole trace) has it in transit -- its truncation
    was premature. Truncating it once R reflects its receipt is safe."""
    t, m2 = retention_trace(False, sent_after_checkpoint=True)
    h = History(t)
    line = rl_fix(h, list(h.L))[0]
    m = h.by_mid[m2]
    assert m.s <= line[m.src] and m.r > line[m.dst]  # in transit w.r.t. the final line
    rep = check_trace(t)
    assert rep.kinds == {"premature-truncation"}
    v = rep.violations[0]
    assert v.witness == {"messages": [m2], "cut": {"P0": 1, "P1": 0, "P2": 0}}
    assert "after P0's checkpoint on R" in v.message
    t, _ = retention_trace(True, sent_after_checkpoint=True)
    assert check_trace(t).ok


@pytest.mark.parametrize("seed", range(6))
def test_prefix_lines_equal_rl_fix_on_every_prefix(seed):
    """The incremental all-failed lines of log retention = RL-FIX on each prefix history."""
    rnd = random.Random(seed)
    res = simulate(
        SimConfig(
            protocol="unc",
            workload=rnd.choice(["q3", "random-dag", "random-cyclic"]),
            parallelism=2,
            seed=seed,
            records=8,
            interval=150,
            failures=(("sink[0]", 700 + 50 * seed),),
        )
    )
    t = res.trace()
    restores = [e.line for e in t.events if e.type == "restore"] + [len(t.events) + 2]
    start = 2
    for end in restores:
        seg = PrefixLines(History(t, limit=end))
        for ell in sorted(rnd.sample(range(start, end), min(15, end - start))):
            hp = History(t, limit=ell)
            assert seg.line(ell) == rl_fix(hp, list(hp.L))[0], (seed, ell)
        start = end + 1


def test_resimulation_follows_causal_order_not_file_order():
    """The same execution written process by process (a receive may come before its send
    in the file): the re-simulation decides exactly as on the original."""
    res = simulate(SimConfig(protocol="hmnr", workload="reachability", parallelism=2, seed=4, records=4, interval=300))
    t = res.trace()
    order = {p.id: k for k, p in enumerate(t.header.processes)}
    events = sorted(t.events, key=lambda e: (order[e.proc], e.idx))
    grouped = Trace(t.header, events, "grouped")
    got = {}
    for tr in (t, grouped):
        sim = Resimulation(tr, History(tr), "greater")
        assert not sim.stuck and not sim.conformance and not sim.efficiency
        got[tr.path] = sorted((d.proc, d.recv.mid, d.reason is not None, d.forced) for d in sim.decisions)
    assert got["<simulation>"] == got["grouped"]
    assert any(forced for *_, forced in got["grouped"])


def test_durability_sees_the_reference_logs():
    """Every data message between tasks is logged at its send in the reference traces."""
    res = simulate(SimConfig(protocol="unc", workload="q8", parallelism=2, seed=1, records=6))
    t = res.trace()
    dur = Durability(History(t))
    tasks = {p.id for p in t.header.processes if p.role in ("task", "source", "sink")}
    sends = [e for e in t.events if e.type == "send" and e.proc in tasks and not e.ch.endswith("coordinator")]
    assert sends and all(e.logged and e.mid in dur.start for e in sends)
