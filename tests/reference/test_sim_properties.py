"""Property tests with the public strategies of reference.testing: random
topologies, schedules, failures, declines and timeouts; the checker finds
nothing and results equal the failure-free run."""

import pytest
from hypothesis import HealthCheck, given, settings

from snapcheck.checker import check_trace
from snapcheck.reference import simulate
from snapcheck.reference.oracle import exactly_once
from snapcheck.reference.testing import sim_configs

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _verify(cfg):
    res = simulate(cfg)
    rep = check_trace(res.trace())
    assert rep.ok, [(v.kind, v.message[:300]) for v in rep.violations[:3]]
    assert exactly_once(cfg, res) == []


@settings(max_examples=30, **SETTINGS)
@given(sim_configs())
def test_coordinated_protocols_on_random_configurations(cfg):
    _verify(cfg)


@pytest.mark.slow
@settings(max_examples=1000, **SETTINGS)
@given(sim_configs())
def test_coordinated_protocols_on_many_random_configurations(cfg):
    _verify(cfg)
