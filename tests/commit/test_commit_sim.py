"""abs-aligned-2pc: clean, exactly-once and valid traces; every mutant caught, no false alarm.

The seeds sweep the lossy, reordering control channels (notify and event loss 0.3)."""

from dataclasses import replace

import pytest

from snapcheck.checker import check_trace
from snapcheck.reference import MUTANTS, PROTOCOLS, SimConfig, simulate
from snapcheck.reference.catalogue import mutants_of
from snapcheck.reference.commit.protocol import TwoPhaseCommitABS
from snapcheck.reference.oracle import exactly_once
from snapcheck.traces.jsonl import parse_trace

COMMIT_MUTANTS = {m.name: m for m in mutants_of("abs-aligned-2pc")}

NEW_KINDS = {
    "premature-commit",
    "duplicate-commit",
    "rolled-back-commit",
    "uncommitted",
    "eos-before-commit",
    "control-dropped",
    "restore-aborted",
    "restore-stale",
    "restore-mixed",
}


def test_registered():
    assert PROTOCOLS["abs-aligned-2pc"] is TwoPhaseCommitABS
    for name in COMMIT_MUTANTS:
        assert MUTANTS[name].mutant_of == "abs-aligned-2pc"


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    "workload,failures", [("q1", ()), ("q3", (("join[0]", 1800),)), ("q1", (("sink[1]", 2200), ("map[0]", 3900)))]
)
def test_correct_protocol_clean_and_exactly_once(seed, workload, failures):
    cfg = SimConfig(protocol=TwoPhaseCommitABS(), workload=workload, seed=seed, records=16, failures=failures)
    res = simulate(cfg)
    trace = parse_trace(res.dumps().decode())  # the trace validates (schema, causality)
    report = check_trace(trace)
    assert report.ok, [v.message for v in report.violations]
    assert {r.property for r in report.results} >= {"output-commit", "control-delivery"}
    assert exactly_once(cfg, res) == []
    m = res.metrics
    assert m["uncommitted_txns"] == 0 and not m["stuck"] and not m["truncated"]


def test_lossy_channels_really_lose_and_are_recovered():
    seen_lost_notify = seen_resent_event = 0
    for seed in range(6):
        res = simulate(SimConfig(protocol=TwoPhaseCommitABS(), workload="q1", seed=seed, records=20))
        sends = [e for e in res.events if e.type == "send" and e.attrs and "notify" in e.attrs]
        received = {e.mid for e in res.events if e.type == "recv"}
        seen_lost_notify += any(e.mid not in received for e in sends)  # a lost notification ...
        seen_resent_event += res.metrics["events_resent"] > 0
        assert check_trace(res.trace()).ok  # ... subsumed by a later one
    assert seen_lost_notify >= 3 and seen_resent_event >= 3


def test_deterministic():
    cfg = SimConfig(protocol=TwoPhaseCommitABS(), workload="q1", seed=5, records=12, failures=(("sink[0]", 2000),))
    assert simulate(cfg).dumps() == simulate(cfg).dumps()


@pytest.mark.parametrize("name", sorted(COMMIT_MUTANTS))
def test_mutant_caught_and_base_clean(name):
    mut = COMMIT_MUTANTS[name]
    caught = 0
    for seed in range(6):
        cfg = SimConfig(protocol="abs-aligned-2pc", mutant=name, seed=seed, **mut.demo)
        report = check_trace(simulate(cfg).trace())
        caught += bool(report.kinds & set(mut.expect))
        assert report.kinds <= NEW_KINDS, report.kinds  # the data-channel properties see nothing
        base = check_trace(simulate(replace(cfg, mutant=None)).trace())
        assert base.ok, (name, seed, [v.message for v in base.violations])
    assert caught >= 4, f"{name} caught in {caught} of 6 seeds"
