"""Every mutant is caught by the checker with the violation kind (and property) it
breaks, while the correct protocol is clean on the same configuration."""

from dataclasses import replace

import pytest

from snapcheck.checker import check_trace
from snapcheck.reference import SimConfig, simulate
from snapcheck.reference.catalogue import MUTANTS as ALL_MUTANTS
from snapcheck.reference.oracle import exactly_once

MUTANTS = {n: m for n, m in ALL_MUTANTS.items() if m.family == "coordinated"}


def _config(name, seed):
    m = MUTANTS[name]
    return SimConfig(**{**m.demo, "protocol": m.mutant_of, "seed": seed, "mutant": name})


def _kinds(cfg):
    rep = check_trace(simulate(cfg).trace())
    return {(v.kind, v.property) for v in rep.violations}


@pytest.mark.parametrize("name", list(MUTANTS))
def test_mutant_is_caught_with_its_property(name):
    m = MUTANTS[name]
    caught = 0
    for seed in range(3):
        cfg = _config(name, seed)
        found = _kinds(cfg)
        if any(k in m.expect for k, _ in found):
            caught += 1
            assert (m.expect[0], m.prop) in found or any(k in m.expect and p == m.prop for k, p in found)
        correct = replace(cfg, mutant=None, protocol="abs-cyclic" if name == "abs-aligned-on-cyclic" else m.mutant_of)
        if name == "abs-aligned-on-cyclic":
            correct = replace(correct, workload="reachability")
        assert _kinds(correct) == set(), f"the correct protocol is not clean on {name}'s demo (seed {seed})"
    assert caught >= 2, f"{name} caught on {caught}/3 seeds"


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MUTANTS))
def test_mutant_detection_rate(name):
    m = MUTANTS[name]
    caught = sum(any(k in m.expect for k, _ in _kinds(_config(name, seed))) for seed in range(20))
    assert caught >= 12, f"{name}: caught on {caught}/20 seeds"


def test_mutants_that_lose_or_duplicate_records_also_break_the_end_to_end_oracle():
    cfg = _config("unaligned-no-dedup", 0)
    assert exactly_once(cfg) != []
    cfg = _config("abs-aligned-on-cyclic", 0)
    assert exactly_once(cfg) != []


def test_mutant_header_names_the_base_protocol_and_the_mutant():
    res = simulate(_config("unaligned-channel-alias", 0))
    assert res.header.protocol["name"] == "unaligned"
    assert res.header.protocol["params"]["mutant"] == "unaligned-channel-alias"


def test_a_mutant_with_another_protocol_is_refused():
    with pytest.raises(ValueError, match="mutates protocol 'unaligned'"):
        simulate(SimConfig(protocol="chandy-lamport", mutant="unaligned-no-dedup"))
    with pytest.raises(ValueError, match="unknown mutant"):
        simulate(SimConfig(mutant="no-such-mutant"))
