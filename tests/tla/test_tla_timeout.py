"""A TLC run that exceeds its time limit does not sink the traces it shares the run
with: the run is split (the largest traces apart from the small ones) and repeated,
so only a trace that exceeds the limit alone is an ERROR, naming the limit."""

import pytest

from snapcheck.checker.tla import conform as conformance
from snapcheck.checker.tla.conform import ACCEPT, ERROR, halves
from snapcheck.checker.tla.tlc import TlcResult
from snapcheck.reference.catalogue import tla_mappings
from snapcheck.reference.simulation import SimConfig, simulate
from snapcheck.traces import read_trace


def write(tmp_path, name: str, records: int, seed: int) -> str:
    path = tmp_path / f"{name}.jsonl"
    simulate(SimConfig(protocol="abs-aligned", workload="q1", seed=seed, records=records)).write(str(path))
    return str(path)


def test_halves_put_the_largest_elements_apart():
    assert halves([10, 10_000, 12, 9]) == ([1], [0, 2, 3])
    assert halves([3, 3]) == ([0], [1])
    big, rest = halves([7, 1, 7, 1, 7, 1])
    assert sorted(big + rest) == list(range(6)) and big and rest


def test_a_timed_out_run_is_split_until_the_slow_trace_is_alone(tmp_path, monkeypatch):
    """TLC itself stubbed: a run "times out" whenever the huge trace is in it; every
    other run matches all events. Only the huge trace is an ERROR, after one split."""
    paths = [write(tmp_path, f"small{i}", 5, i) for i in range(3)] + [write(tmp_path, "huge", 60, 9)]
    batch = [conformance.prepare(read_trace(p), tla_mappings()) for p in paths]
    huge = batch[-1]
    runs = []

    def fake_run(sub, members, report, timeout, refinement):
        runs.append([sub[k].path for k in members])
        if any(sub[k] is huge for k in members):
            return TlcResult(exit_code=None, result="timeout", seconds=timeout), {}
        return TlcResult(exit_code=0, result="pass"), {j + 1: len(sub[k].events) for j, k in enumerate(members)}

    monkeypatch.setattr(conformance, "_run_tlc", fake_run)
    verdicts = conformance.validate_batch(batch, timeout=7.0)
    assert [v.verdict for v in verdicts] == [ACCEPT, ACCEPT, ACCEPT, ERROR]
    assert "time limit of 7 s on this trace alone" in verdicts[-1].message
    assert verdicts[-1].path == paths[-1]
    assert runs == [paths, [paths[-1]], paths[:3]]


@pytest.mark.tlc
@pytest.mark.slow
def test_small_traces_are_judged_when_a_huge_one_times_out(tmp_path):
    """Real TLC, traces validated whole: the huge trace needs minutes, the small ones
    seconds; with a 20 s limit the small ones are ACCEPTed and the huge one alone is
    the ERROR (the whole run timing out used to make all four ERRORs)."""
    small = [write(tmp_path, f"small{i}", 20, i) for i in range(3)]
    huge = write(tmp_path, "huge", 2000, 3)
    verdicts = conformance.conform([*small, huge], tla_mappings(), timeout=20.0, segment=False)
    assert [v.verdict for v in verdicts] == [ACCEPT] * 3 + [ERROR], [v.render() for v in verdicts]
    assert verdicts[-1].path == huge and "time limit of 20 s on this trace alone" in verdicts[-1].message
