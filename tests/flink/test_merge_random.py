"""Property tests of the merge + checker on randomized Flink-like histories (tests/flink/sim.py):
a correct engine always gives a valid trace and a clean verdict; an engine that loses,
duplicates or rewinds past recovered data is always caught."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from snapcheck.checker import CheckOptions, check_trace
from snapcheck.flink.expectations import latest_checkpoint_findings
from snapcheck.flink.merge import merge_run
from snapcheck.traces.jsonl import parse_trace
from tests.flink.sim import Sim

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def judged(sim: Sim):
    with tempfile.TemporaryDirectory() as tmp:
        res = merge_run(str(sim.play().write(Path(tmp) / "run")))
    trace = parse_trace(res.dumps().decode(), "sim.jsonl")  # validates the trace
    report = check_trace(trace, CheckOptions(max_per_result=10**6))
    kinds = {v.kind for v in report.violations}
    return res, trace, kinds


@SETTINGS
@given(seed=st.integers(0, 10**9), mode=st.sampled_from(["aligned", "unaligned"]))
def test_correct_recovery_is_clean(seed, mode):
    res, trace, kinds = judged(Sim(seed, mode))
    assert res.anomalies == []
    assert kinds == set()
    assert latest_checkpoint_findings(trace) == []


@SETTINGS
@given(seed=st.integers(0, 10**9), mutate=st.sampled_from(["lose", "duplicate", "rewind"]))
def test_broken_recovery_is_caught(seed, mutate):
    sim = Sim(seed, "unaligned", mutate)
    res, trace, kinds = judged(sim)
    if not sim.mutated:
        assert kinds == set()
        return
    expected = {
        "lose": {"dropped", "lost"},
        "duplicate": {"duplicate-recorded", "duplicate-processing"},
        "rewind": {"duplicate-processing"},
    }[mutate]
    assert kinds & expected, (mutate, kinds)
