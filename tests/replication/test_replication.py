"""Active replication (liverobin, kazoo): the models, their traces and the checker's
replica properties.

Oracles independent of the checker: the sink's published values equal an
unreplicated run of the same task over the agreed order (the surviving replica's
final state and the sink's last value agree), and the model's own count of inputs
left unconsumed."""

from dataclasses import replace

import pytest

from snapcheck.checker import CheckOptions, check_trace
from snapcheck.reference import MUTANTS, PROTOCOLS, SimConfig, simulate
from snapcheck.reference.catalogue import mutants_of
from snapcheck.reference.replication.model import MOD
from snapcheck.reference.replication.protocol import KaZoo, LiveRobin
from snapcheck.traces import TraceRecorder
from snapcheck.traces.jsonl import parse_trace

REPLICATION_MUTANTS = {m.name: m for m in mutants_of("liverobin")}

NEW_KINDS = {
    "replica-order-divergence",
    "replica-output-divergence",
    "dedup-lost",
    "dedup-duplicate",
    "replica-stalled",
}
PROPS = {"replica-agreement", "replica-delivery", "replica-liveness"}


def test_registered():
    assert PROTOCOLS["liverobin"] is LiveRobin and PROTOCOLS["kazoo"] is KaZoo
    for name in REPLICATION_MUTANTS:
        assert MUTANTS[name].mutant_of == "liverobin"


def _replay_sink(res) -> list[int]:
    """The order-sensitive task run once, unreplicated, over the order a replica consumed."""
    values = {e.mid: e.value for e in res.events if e.type == "send"}
    survivor = next(p for p in ("U[0]#0", "U[0]#1") if not any(e.type == "fail" and e.proc == p for e in res.events))
    state, out = 0, []
    for e in res.events:
        if e.proc == survivor and e.type == "recv" and e.ch.startswith("S") and values[e.mid] is not None:
            state = (state * 31 + values[e.mid]) % MOD
            out.append(state)
    return out


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(
    "protocol,failures",
    [
        ("liverobin", ()),
        ("liverobin", (("U[0]#0", 250),)),
        ("liverobin", (("U[0]#1", 120),)),
        ("kazoo", ()),
        ("kazoo", (("U[0]#0", 300),)),
        ("kazoo", (("U[0]#1", 200),)),  # leader #0, follower #1
        (LiveRobin(quiet=[1, 5]), ()),
    ],
)
def test_correct_clean_and_masks_failure(seed, protocol, failures):
    res = simulate(SimConfig(protocol=protocol, seed=seed, records=30, failures=failures))
    trace = parse_trace(res.dumps().decode())
    report = check_trace(trace)
    assert report.ok, [v.message for v in report.violations]
    assert PROPS <= {r.property for r in report.results}
    m = res.metrics
    assert not m["stuck"] and m["outputs"] == m["consumed"][max(m["consumed"], key=m["consumed"].get)]
    assert res.outputs == _replay_sink(res)  # published = the agreed order, once each
    assert m["discarded"] > 0  # duplicates really arrived and were dropped


def test_kazoo_leader_failure_elects_new_leader():
    res = simulate(SimConfig(protocol="kazoo", seed=1, records=30, failures=(("U[0]#0", 300),)))
    leaders = [e.attrs["leader"] for e in res.events if e.type == "send" and e.attrs and "leader" in e.attrs]
    assert leaders[0] == "U[0]#0" and leaders[-1] == "U[0]#1" and res.metrics["elections"] == 2
    follower_fail = simulate(SimConfig(protocol="kazoo", seed=1, records=30, failures=(("U[0]#1", 300),)))
    assert follower_fail.metrics["elections"] == 1
    # a leader failure delays the survivor (detection + election); a follower failure does not
    assert res.metrics["latency_p99"] > follower_fail.metrics["latency_p99"]


def test_deterministic():
    cfg = SimConfig(protocol="kazoo", seed=4, records=20, failures=(("U[0]#0", 200),))
    assert simulate(cfg).dumps() == simulate(cfg).dumps()


@pytest.mark.parametrize("name", sorted(REPLICATION_MUTANTS))
def test_mutant_caught_and_base_clean(name):
    mut = REPLICATION_MUTANTS[name]
    for seed in range(4):
        cfg = SimConfig(protocol="liverobin", mutant=name, seed=seed, **mut.demo)
        mres = simulate(cfg)
        report = check_trace(mres.trace())
        assert report.kinds & set(mut.expect), (name, seed, report.kinds)
        assert report.kinds <= NEW_KINDS
        base_protocol = LiveRobin(**{k: v for k, v in mut().params.items()})
        assert check_trace(simulate(replace(cfg, mutant=None, protocol=base_protocol)).trace()).ok
    if "stalled" in mut.expect[0]:
        assert mres.metrics["stuck"]


# -- hand-built traces -------------------------------------------------------------------------
def _trace(sink_picks, second_order=("a", "b"), second_values=(None, None), fail_sink=False):
    """S -> R#0, R#1 -> K. Both replicas consume a then b (R#1: ``second_order``) and
    emit 2 outputs; the sink picks the listed (replica, seq) copies and discards the rest."""
    rec = TraceRecorder(
        [{"id": "S", "role": "source"}, "R#0", "R#1", {"id": "K", "role": "sink"}],
        [("S->R#0", "S", "R#0"), ("S->R#1", "S", "R#1"), ("R#0->K", "R#0", "K"), ("R#1->K", "R#1", "K")],
        protocol="liverobin",
        params={"replicas": {"R": ["R#0", "R#1"]}},
    )
    msgs = {}
    for x, v in (("a", 1), ("b", 2)):
        for r in ("R#0", "R#1"):
            msgs[(r, x)] = rec.send("S", f"S->{r}", value=v)
    out = {}
    for r, order, vals in (("R#0", ("a", "b"), (None, None)), ("R#1", second_order, second_values)):
        for k, x in enumerate(order):
            rec.arrive(r, msgs[(r, x)])
            rec.recv(r, msgs[(r, x)])
            out[(r, k + 1)] = rec.send(r, f"{r}->K", value=vals[k] if vals[k] is not None else 10 + k)
    for r in ("R#0", "R#1"):
        for s in (1, 2):
            if (r, s) in sink_picks:
                rec.recv("K", out[(r, s)])
            else:
                rec.discard("K", out[(r, s)])
    if fail_sink:
        rec.fail("K")
    return parse_trace(rec.dumps().decode())


def _kinds(t):
    return check_trace(t, CheckOptions(properties=PROPS)).kinds


def test_checker_clean():
    assert _kinds(_trace({("R#0", 1), ("R#1", 2)})) == set()


def test_checker_divergence():
    assert _kinds(_trace({("R#0", 1), ("R#0", 2)}, second_order=("b", "a"))) == {"replica-order-divergence"}
    assert _kinds(_trace({("R#0", 1), ("R#0", 2)}, second_values=(10, 99))) == {"replica-output-divergence"}


def test_checker_delivery():
    assert _kinds(_trace({("R#0", 1), ("R#1", 1), ("R#0", 2)})) == {"dedup-duplicate"}
    assert _kinds(_trace({("R#0", 1)})) == {"dedup-lost"}
    assert _kinds(_trace({("R#0", 1)}, fail_sink=True)) == set()  # a failed receiver owes nothing


def test_checker_stalled():
    rec = TraceRecorder(
        [{"id": "S", "role": "source"}, "R#0", "R#1"],
        [("S->R#0", "S", "R#0"), ("S->R#1", "S", "R#1")],
        protocol="liverobin",
        params={"replicas": {"R": ["R#0", "R#1"]}},
    )
    for r in ("R#0", "R#1"):
        m = rec.send("S", f"S->{r}", value=1)
        rec.arrive(r, m)
        if r == "R#1":
            rec.recv(r, m)
    t = parse_trace(rec.dumps().decode())
    report = check_trace(t, CheckOptions(properties=PROPS))
    assert report.kinds == {"replica-stalled"} and report.violations[0].subject == "process R#0"


def _restarted(restart: bool) -> TraceRecorder:
    """``S`` feeds the replicas of ``U``, whose outputs ``K`` deduplicates (the first copy
    picked, the other discarded); with ``restart`` a replica fails, every process restores
    its initial state and the run happens again (new incarnations, the same sequence numbers)."""
    rec = TraceRecorder(
        ["S", "U#0", "U#1", "K"],
        [("s0", "S", "U#0"), ("s1", "S", "U#1"), ("u0", "U#0", "K"), ("u1", "U#1", "K")],
        params={"replicas": {"U": ["U#0", "U#1"]}},
        protocol="liverobin",
    )
    for run in range(2 if restart else 1):
        if run:
            rec.fail("U#0")
            for p in ("S", "U#0", "U#1", "K"):
                rec.restore(p, 0, recovery=1)
        a0, a1 = rec.send("S", "s0", value=1), rec.send("S", "s1", value=1)
        rec.recv("U#0", a0)
        rec.recv("U#1", a1)
        o0, o1 = rec.send("U#0", "u0", value=10), rec.send("U#1", "u1", value=10)
        rec.recv("K", o0)
        rec.discard("K", o1)
    return rec


def test_a_restart_all_recovery_is_judged_on_the_effective_history():
    """What the restore rolled back was never picked: the second run's pick of seq 1 is
    not a ``dedup-duplicate`` (it was, as was a rolled-back send against a live one)."""
    assert check_trace(_restarted(True).trace()).kinds == set()


@pytest.mark.parametrize("swap", [False, True])
def test_a_rejoining_replica_consuming_replays_in_another_order_diverges(swap):
    """A replayed incarnation is its original message: a replica that fails, restores and
    consumes the replays in another order than its peer diverges (the replays were not
    counted, so it passed)."""
    rec = TraceRecorder(
        ["A", "B", "U#0", "U#1"],
        [("a0", "A", "U#0"), ("a1", "A", "U#1"), ("b0", "B", "U#0"), ("b1", "B", "U#1")],
        params={"replicas": {"U": ["U#0", "U#1"]}},
        protocol="liverobin",
    )
    a0, a1 = rec.send("A", "a0", value=1), rec.send("A", "a1", value=1)
    b0, b1 = rec.send("B", "b0", value=2), rec.send("B", "b1", value=2)
    rec.log("A", "a1", [a1])
    rec.log("B", "b1", [b1])
    rec.recv("U#0", a0)
    rec.recv("U#0", b0)
    rec.fail("U#1")
    rec.restore("U#1", 0, recovery=1)
    ra, rb = rec.replay("A", a1), rec.replay("B", b1)
    for m in (rb, ra) if swap else (ra, rb):
        rec.recv("U#1", m)
    assert check_trace(rec.trace()).kinds == ({"replica-order-divergence"} if swap else set())


def test_a_requested_crash_that_never_happened_is_said_and_the_config_is_in_the_header(tmp_path, snapcheck_cli):
    """The replication, changelog and KaZoo models wrote ``metadata: {}``: a crash asked for
    after the model's run ended was neither declared nor counted (``--require-faults`` passed),
    and ``-P``/``-w``, which they do not use, were dropped without a word."""
    out = tmp_path / "t.jsonl"
    code, text = snapcheck_cli("simulate", "-p", "liverobin", "-P", "5", "--fail", "U[0]#0@99999", "-o", str(out))
    assert code == 0 and "NOT EXERCISED: crash of U[0]#0" in text and "--parallelism not used" in text
    header = parse_trace(out.read_text()).header
    assert header.metadata["simulator"]["config"]["failures"] == [["U[0]#0", 99999]]
    code, text = snapcheck_cli("check", str(out), "--require-faults")
    assert code == 1 and "never happened" in text


@pytest.mark.parametrize("consumed", [3, 1])
def test_a_replica_that_never_catches_up_is_stalled(consumed):
    """Messages sent to a replica that did not fail and never arrived: the trace ends
    quiescent, so the replica fell behind (it passed: only arrived messages counted)."""
    rec = TraceRecorder(
        ["S", "U#0", "U#1"], [("s0", "S", "U#0"), ("s1", "S", "U#1")], params={"replicas": {"U": ["U#0", "U#1"]}}
    )
    for k in range(3):
        a0, a1 = rec.send("S", "s0", value=k), rec.send("S", "s1", value=k)
        rec.recv("U#0", a0)
        if k < consumed:
            rec.recv("U#1", a1)
    report = check_trace(rec.trace(), CheckOptions(properties=PROPS))
    assert report.kinds == (set() if consumed == 3 else {"replica-stalled"})
    if consumed == 1:
        [v] = report.violations
        assert v.subject == "process U#1" and "2 data message(s) sent to it that never arrived" in v.message
