"""Every mutant of the uncoordinated protocols is caught, by the property its test names."""

from __future__ import annotations

import pytest

from snapcheck.checker import CheckOptions, check_trace
from snapcheck.reference import MUTANTS, SimConfig, simulate
from snapcheck.reference.catalogue import mutants_of

UNCOORDINATED_MUTANTS = {m.name: m for b in ("hmnr", "unc") for m in mutants_of(b)}

# mutant -> the property whose violation catches it (and the kinds it reports)
CAUGHT_BY = {
    "hmnr-no-c1": ("cic-conformance", {"missing-forced-checkpoint"}),
    "hmnr-no-c2": ("cic-conformance", {"missing-forced-checkpoint"}),
    "hmnr-min-to-every-send": ("cic-efficiency", {"spurious-forced-checkpoint"}),
    "unc-no-logging": ("exactly-once", {"lost"}),
    "unc-no-rollback-propagation": ("observed-recovery", {"inconsistent-restore"}),
    "unc-replay-skip-single": ("exactly-once", {"lost"}),
    "unc-early-log-truncation": ("log-retention", {"premature-truncation"}),
    "unc-colocated-channels": ("observed-recovery", {"inconsistent-restore"}),
    "unc-open-interval-edges": ("observed-recovery", {"inconsistent-restore"}),
}
SEEDS = range(4)


def test_every_uncoordinated_mutant_is_registered_and_has_a_test():
    assert set(CAUGHT_BY) == set(UNCOORDINATED_MUTANTS)
    for name, m in UNCOORDINATED_MUTANTS.items():
        assert MUTANTS[name] is m
        prop, kinds = CAUGHT_BY[name]
        assert m.prop == prop and kinds <= set(m.expect)


def caught(name: str, prop: str, kinds: set, seeds=SEEDS):
    """(seed, violation) of the first demo run where ``prop`` reports one of ``kinds``."""
    m = MUTANTS[name]
    for seed in seeds:
        res = simulate(SimConfig(protocol=m.mutant_of, mutant=name, seed=seed, **m.demo))
        assert res.header.protocol["params"]["mutant"] == name
        rep = check_trace(res.trace(), CheckOptions(properties={prop}))
        hits = [v for v in rep.violations if v.kind in kinds]
        if hits:
            assert all(v.property == prop for v in hits)
            return seed, hits[0]
    return None


@pytest.mark.parametrize("name", sorted(CAUGHT_BY))
def test_mutant_is_caught_by_its_property(name):
    prop, kinds = CAUGHT_BY[name]
    got = caught(name, prop, kinds)
    assert got is not None, f"{name}: no {prop} violation ({', '.join(sorted(kinds))}) on seeds {list(SEEDS)}"
    _, v = got
    assert v.lines and v.message


@pytest.mark.parametrize("name", ["hmnr-no-c1", "hmnr-no-c2"])
def test_hmnr_without_a_condition_also_leaves_useless_checkpoints(name):
    """The missing forced checkpoints are not cosmetic: Z-cycles form (z-cycles, a
    violation because HMNR promises Z-cycle freedom) and timestamps decrease along Z-paths."""
    assert caught(name, "z-cycles", {"useless-checkpoint"}, range(8)) is not None
    assert caught(name, "timestamps", {"timestamp-order"}, range(8)) is not None


def test_min_to_on_every_send_stays_zcf_but_forces_more():
    """BlackSP's variant (docs/theory.md, "The clock form of HMNR"): still no useless
    checkpoint, more forced ones."""
    m = MUTANTS["hmnr-min-to-every-send"]
    forced = {"mutant": 0, "correct": 0}
    for seed in SEEDS:
        for key, cfg in (
            ("mutant", SimConfig(protocol=m.mutant_of, mutant=m.name, seed=seed, **m.demo)),
            ("correct", SimConfig(protocol="hmnr-clock", seed=seed, **m.demo)),
        ):
            res = simulate(cfg)
            forced[key] += res.metrics["checkpoints_forced"]
            rep = check_trace(res.trace(), CheckOptions(properties={"z-cycles", "cic-conformance"}))
            assert rep.ok, rep.render_text()
    assert forced["mutant"] > forced["correct"], forced


def test_early_truncation_loses_messages_at_recovery():
    """SPARK-6222 in action: after the failure the truncated entries are missing."""
    assert caught("unc-early-log-truncation", "exactly-once", {"lost"}, range(10)) is not None


def test_correct_protocols_pass_the_mutants_demo_configurations():
    """No false alarm: the base protocols are clean on every demo configuration."""
    for name, m in UNCOORDINATED_MUTANTS.items():
        base = "hmnr-clock" if name == "hmnr-min-to-every-send" else m.mutant_of
        rep = check_trace(simulate(SimConfig(protocol=base, seed=0, **m.demo)).trace())
        assert rep.ok, f"{base} on the demo of {name}:\n{rep.render_text()}"
