"""Every checker algorithm against the brute-force oracle on random small traces
(≤ 4 processes, few checkpoints; FIFO and non-FIFO; channel state; logs)."""

from __future__ import annotations

import os
import random

import pytest
from checker_oracle import Oracle, effective_events
from checker_random import random_failure_trace, random_trace
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from snapcheck.checker import CheckOptions, check_trace
from snapcheck.checker.cuts import CutAnalysis
from snapcheck.checker.durability import Durability
from snapcheck.checker.intervals import History
from snapcheck.checker.rdt import rdt_violations
from snapcheck.checker.recovery_line import bound, r_mark, rl_fix
from snapcheck.checker.recovery_report import never_recoverable
from snapcheck.checker.rgraph import Graph, scc_labels, scc_labels_networkx
from snapcheck.checker.rollback_propagation import rollback_propagation
from snapcheck.checker.z3cert import certify, min_replay_line
from snapcheck.checker.zcycles import is_zpath, stably_unusable_positions, useless_positions, zcycle_witness
from snapcheck.traces.jsonl import parse_trace
from snapcheck.traces.writer import dumps_trace

SEEDS = st.integers(0, 2**32 - 1)
# SNAPCHECK_CHECKER_EXAMPLES=2000 for a soak run (default 150 per property)
EXAMPLES = int(os.environ.get("SNAPCHECK_CHECKER_EXAMPLES", "150"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def valid_trace(seed, **kw):
    """A random trace, round-tripped through the validator (so generator slips fail loudly)."""
    t = random_trace(seed, **kw)
    return parse_trace(dumps_trace(t.header, t.events).decode(), f"random-{seed}")


def _same_partition(a, b):
    pairs = {}
    for x, y in zip(a, b):
        if pairs.setdefault(x, y) != y:
            return False
    return len(set(pairs.values())) == len(pairs)


@SETTINGS
@given(seed=SEEDS)
def test_useless_and_stably_unusable_match_enumeration(seed):
    t = valid_trace(seed)
    h, o = History(t), Oracle(t)
    assert h.L == o.L
    g = Graph(h)
    comp = scc_labels(g)
    assert _same_partition(comp, scc_labels_networkx(g))
    useless = useless_positions(g, comp)
    assert set(useless) == o.useless()
    assert set(stably_unusable_positions(g, useless)) == o.stably_unusable()


@SETTINGS
@given(seed=SEEDS)
def test_zpaths_are_rgraph_paths_and_witnesses_are_shortest(seed):
    t = valid_trace(seed)
    h, o = History(t), Oracle(t)
    g = Graph(h)
    ckpts = [(i, x) for i in range(h.n) for x in range(h.L[i] + 1)]
    rnd = random.Random(seed)
    for a in rnd.sample(ckpts, min(6, len(ckpts))):
        reach = g.reach([g.node(a[0], a[1] + 1)])
        for b in ckpts:
            if a[0] == b[0] and b[1] > a[1]:
                continue  # the lemma covers i != j or y <= x
            assert bool(reach[g.node(*b)]) == (o.zpath_len(a, b) is not None), (a, b)
    for i, x in useless_positions(g):
        w = zcycle_witness(g, i, x)
        assert is_zpath(w, (i, x), (i, x))
        assert len(w) == o.zpath_len((i, x), (i, x))


@SETTINGS
@given(seed=SEEDS, data=st.data())
def test_three_recovery_line_algorithms_agree_with_enumeration(seed, data):
    t = valid_trace(seed)
    h, o = History(t), Oracle(t)
    failed = data.draw(st.lists(st.integers(0, h.n - 1), unique=True, max_size=h.n))
    semantics = data.draw(st.sampled_from(["partial", "restart-all"]))
    U = bound(h, failed, semantics)
    g, steps, last = rl_fix(h, U)
    assert g == o.recovery_line(U)
    assert r_mark(h, U) == g
    assert rollback_propagation(h, U) == g
    for i in range(h.n):  # every process below its bound has a cause
        assert (last[i] >= 0) == (g[i] < U[i])


@SETTINGS
@given(seed=SEEDS, data=st.data())
def test_rl_fix_with_no_drop_constraints(seed, data):
    t = valid_trace(seed, records=False)
    h, o = History(t), Oracle(t)
    failed = data.draw(st.lists(st.integers(0, h.n - 1), unique=True, max_size=h.n))
    U = bound(h, failed, "partial")
    delivered = [m for m in h.msgs if m.r is not None and m.src >= 0]
    nodrop = data.draw(st.lists(st.sampled_from(delivered), unique_by=lambda m: m.mid)) if delivered else []
    g, _, _ = rl_fix(h, U, nodrop)
    assert g == o.recovery_line(U, nodrop=[m.mid for m in nodrop])


@SETTINGS
@given(seed=SEEDS, aligned=st.booleans(), data=st.data())
def test_cut_analysis_matches_channel_state_rules(seed, aligned, data):
    t = valid_trace(seed)
    h, o = History(t), Oracle(t)
    G = [data.draw(st.integers(0, L + 1)) for L in h.L]
    if data.draw(st.booleans()):  # one stable checkpoint, everyone else current: its records are in transit
        keep = data.draw(st.integers(0, h.n - 1))
        G = [x if i == keep else h.L[i] + 1 for i, x in enumerate(G)]
    ca = CutAnalysis(h, Durability(h), G, "cut", aligned=aligned)
    kinds = {v.kind for v in ca.consistency + ca.channel_state}
    assert kinds == o.cut_kinds(G, aligned)
    assert {m.mid for m in ca.orphans} == {m[0] for m in o.orphans(G)}
    assert {m.mid for m in ca.in_transit} == {m[0] for m in o.in_transit(G)}


@settings(max_examples=max(40, EXAMPLES // 4), deadline=None)
@given(seed=SEEDS, data=st.data())
def test_z3_certificate_and_fewest_replay_optimum(seed, data):
    t = valid_trace(seed, records=False)
    h, o = History(t), Oracle(t)
    failed = data.draw(st.lists(st.integers(0, h.n - 1), unique=True, max_size=h.n))
    U = bound(h, failed, "partial")
    g, _, _ = rl_fix(h, U)
    cert = certify(h, U, g)
    assert cert["maximality"] == "proved"
    lower = [0] * h.n  # consistent (initial checkpoints) but not maximal unless g is 0
    if g != lower:
        with pytest.raises(AssertionError, match="refutes"):
            certify(h, U, lower)
    assert min_replay_line(h, U)["messages"] == o.min_replay(U)


@settings(max_examples=max(60, EXAMPLES // 3), deadline=None)
@given(seed=SEEDS, nras=st.booleans())
def test_rdt_check_matches_pairwise_definition(seed, nras):
    t = valid_trace(seed, nras=nras, records=False, external=False, steps=random.Random(seed).randint(4, 18))
    h, o = History(t), Oracle(t)
    vs, omitted = rdt_violations(h, Graph(h), 50)
    assert (not vs and not omitted) == o.rdt_holds()
    if nras:
        assert not vs, "NRAS guarantees RDT"


@SETTINGS
@given(seed=SEEDS, data=st.data())
def test_check_trace_end_to_end_on_random_traces(seed, data):
    t = valid_trace(seed)
    h, o = History(t), Oracle(t)
    failures = data.draw(st.sampled_from([None, "all", [h.procs[0]]]))
    rep = check_trace(t, CheckOptions(failures=failures, properties=None))
    assert {(p, c) for p, c in rep.useless} == {(h.procs[i], h.label(i, x)) for i, x in o.useless()}
    line = rep.recovery_lines["all"]
    assert [h.position(i, line[p]) for i, p in enumerate(h.procs)] == o.recovery_line(list(h.L))


def test_never_recoverable_excludes_logged_recorded_and_external():
    for seed in range(40):
        t = valid_trace(seed)
        h = History(t)
        dur = Durability(h)
        o = Oracle(t)
        durable = o.durable_at_end()
        recorded = {mid for e in t.events if e.type == "record" for mid in e.mids}
        for m in never_recoverable(h, dur):
            assert m.mid not in durable and m.mid not in recorded and m.src >= 0


@pytest.mark.parametrize("seed", range(5))
def test_networkx_and_tarjan_give_the_same_components_on_larger_traces(seed):
    t = valid_trace(seed, n=4, steps=400)
    g = Graph(History(t))
    assert _same_partition(scc_labels(g), scc_labels_networkx(g))


@SETTINGS
@given(seed=SEEDS, data=st.data())
def test_useless_so_far_grows_only_within_may_become_useless(seed, data):
    """On a prefix of a trace, useless checkpoints stay useless in the whole trace, and the
    ones that become useless later were all flagged "may become useless" (docs/theory.md,
    "Useless, stably unusable and not yet usable checkpoints")."""
    full = valid_trace(seed, records=False, logs=False)
    k = data.draw(st.integers(0, len(full.events)))
    prefix = type(full)(full.header, full.events[:k], "prefix")
    before = check_trace(prefix, CheckOptions(crosscheck=False))
    after = set(check_trace(full, CheckOptions(crosscheck=False)).useless)
    existing = {(e.proc, e.ckpt) for e in prefix.events if e.type == "checkpoint"} | {
        (p.id, 0) for p in prefix.processes
    }
    assert set(before.useless) <= after
    assert {c for c in after if c in existing} <= set(before.useless) | set(before.may_become_useless)


def test_a_later_message_makes_an_old_checkpoint_useless():
    from snapcheck.traces import TraceRecorder

    rec = TraceRecorder(["Pi", "Pk"], [("ik", "Pi", "Pk"), ("ki", "Pk", "Pi")])
    m2 = rec.send("Pk", "ki")  # Pk sends in its current (open) interval
    rec.recv("Pi", m2)
    rec.checkpoint("Pi")  # C_{i,1} reflects m2
    before = check_trace(rec.trace())
    assert before.useless == [] and before.may_become_useless == [("Pi", 1)]
    m1 = rec.send("Pi", "ik")  # sent after C_{i,1} ...
    rec.recv("Pk", m1)  # ... received in the same open interval of Pk
    assert check_trace(rec.trace()).useless == [("Pi", 1)]


def valid_failure_trace(seed, **kw):
    t = random_failure_trace(seed, **kw)
    return parse_trace(dumps_trace(t.header, t.events).decode(), f"random-failures-{seed}")


@SETTINGS
@given(seed=SEEDS, data=st.data())
def test_effective_history_and_analyses_on_traces_with_failures(seed, data):
    """Effective history (rolled-back segments removed, replays mapped to originals) against
    an independent backward-removal construction; then useless checkpoints and recovery
    lines on it against enumeration."""
    t = valid_failure_trace(seed)
    h = History(t)
    o = Oracle(t, effective_events(t))
    assert h.L == o.L
    assert sorted((m.mid, m.src, m.s, m.dst, m.r) for m in h.msgs) == sorted(
        (mid, -1 if src is None else src, s if src is not None else 0, dst, r) for mid, src, s, dst, r in o.msgs
    )
    g = Graph(h)
    assert set(useless_positions(g)) == o.useless()
    failed = data.draw(st.lists(st.integers(0, h.n - 1), unique=True, max_size=h.n))
    U = bound(h, failed, data.draw(st.sampled_from(["partial", "restart-all"])))
    line = rl_fix(h, U)[0]
    assert line == o.recovery_line(U) == r_mark(h, U) == rollback_propagation(h, U)


@SETTINGS
@given(seed=SEEDS)
def test_observed_recoveries_and_duplicates_on_traces_with_failures(seed):
    """Each restored line's consistency, and processing of one (channel, seq) twice,
    against independent computations on the trace prefixes and the effective history."""
    t = valid_failure_trace(seed)
    rep = check_trace(t)
    groups: dict[int, list] = {}
    for e in t.events:
        if e.type == "restore":
            groups.setdefault(e.recovery, []).append(e)
    assert [o["subject"] for o in rep.observed] == [f"recovery {r}" for r in groups]
    for obs, (rid, restores) in zip(rep.observed, groups.items()):
        last = max(e.line for e in restores)
        own = {e.proc: e.line for e in restores}
        prefix_events = [e for e in t.events if e.line < own.get(e.proc, last)]
        pt = type(t)(t.header, prefix_events, "prefix")
        o = Oracle(pt, effective_events(pt))
        G = []
        for i, p in enumerate(o.procs):
            G.append(o.ckpt_numbers[i].index(own_ckpt(restores, p)) if p in own else o.L[i] + 1)
        assert obs["consistent"] == o.consistent(G), (rid, G)
    eff = effective_events(t)
    orig = {e.mid: e.replay_of for e in t.events if e.type == "replay"}
    sends = {e.mid: e for e in t.events if e.type == "send"}
    eff_keys = {(e.ch, e.seq) for e in eff if e.type == "send"}
    seen, dup = set(), False
    for e in eff:
        if e.type != "recv":
            continue
        mid = e.mid
        while mid in orig:
            mid = orig[mid]
        key = (sends[mid].ch, sends[mid].seq)
        if key not in eff_keys:
            continue
        dup |= key in seen
        seen.add(key)
    assert dup == ("duplicate-processing" in rep.kinds)


def own_ckpt(restores, p):
    return next(e.ckpt for e in restores if e.proc == p)
