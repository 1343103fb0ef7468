"""Every mutant's demonstration configuration (``Protocol.demo``, what ``snapcheck
simulate --mutant NAME --demo`` runs, as ``simulate --list`` suggests) shows its bug:
the checker reports one of the kinds the mutant declares (``expect``). Three demos
had drifted to runs that never reached their bug (the simulator's draws change as the
kit grows) while the catalogue went on promising the kind."""

from __future__ import annotations

import pytest

from snapcheck.checker import CheckOptions, check_trace
from snapcheck.reference import SimConfig, simulate
from snapcheck.reference.catalogue import MUTANTS, header_facts


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_the_demo_of_every_mutant_shows_its_bug(name):
    m = MUTANTS[name]
    trace = simulate(SimConfig(**{**m.demo, "protocol": m.mutant_of, "mutant": name})).trace()
    report = check_trace(trace, CheckOptions(facts=header_facts(trace.header.protocol)))
    assert set(report.kinds) & set(m.expect), f"{name}'s demo: {sorted(report.kinds)}, expected one of {m.expect}"
