"""Checkpoint interval policies: the formulas, Ca-Stream's Algorithms 1, 2, 4, and the
policies driving the reference simulator."""

import importlib.util
import math
from pathlib import Path

import pytest

from snapcheck.checker import check_trace
from snapcheck.reference import SimConfig, simulate
from snapcheck.reference.intervals import (
    CaStream,
    CaStreamOptimal,
    Daly,
    FaultAware,
    Fixed,
    IntervalABS,
    Observation,
    ResourceAware,
    SlowTaskAware,
    Young,
)
from snapcheck.reference.intervals.policies import (
    ca_stream_optimum,
    daly,
    efficiency,
    predict_fault_rate,
    slow_tasks,
    young,
)

ROOT = Path(__file__).resolve().parents[2]


# -- formulas ----------------------------------------------------------------------------------
def test_young_and_daly():
    assert young(50, 10000) == pytest.approx(1000)
    assert daly(50, 10000) == pytest.approx(1000 * (1 + math.sqrt(50 / 20000) / 3 + 50 / 180000) - 50)
    assert daly(30000, 10000) == 10000  # t_chpt >= 2 MTBF: checkpoint every MTBF
    assert daly(1, 1e6) == pytest.approx(young(1, 1e6), rel=0.01)


@pytest.mark.parametrize(
    "t_chpt,mtbf,t_rs,v_bar,v_m", [(155, 20000, 300, 0.013, 0.02), (10, 5000, 50, 1.0, 1.0), (100, 1e5, 1000, 0.5, 2.0)]
)
def test_eq11_maximizes_eq5(t_chpt, mtbf, t_rs, v_bar, v_m):
    """Eq. 11 against a brute-force search of the efficiency u_k (eq. 5 with eqs. 3, 9)."""
    closed = ca_stream_optimum(t_chpt, mtbf, t_rs, v_bar, v_m)
    grid = [closed * (0.2 + 0.01 * i) for i in range(400)]
    best = max(grid, key=lambda ci: efficiency(ci, t_chpt, mtbf, t_rs, v_bar, v_m))
    assert best == pytest.approx(closed, rel=0.02)


def test_fault_rate_prediction():
    assert predict_fault_rate([], 1000, 100) == 0.25  # fr_min
    rising = predict_fault_rate([910, 920, 930, 950, 960, 970, 980, 990, 850, 860], 1000, 100)
    falling = predict_fault_rate([510, 520, 530, 540, 550, 610, 620, 710], 1000, 100)
    assert rising > falling >= 0.25 and rising <= 1.0


# -- Algorithms 1, 2, 3, 4 ------------------------------------------------------------------------
def test_fault_aware_grows_then_shrinks():
    p = FaultAware(600, ci_min=100, ci_max=5000, window=1000)
    seen = [p.next_interval(Observation(now=t)) for t in (600, 1650, 3500)]
    assert seen == pytest.approx([600 * 1.75, 600 * 1.75**2, 600 * 1.75**3])  # fr = fr_min = 0.25
    after = p.next_interval(Observation(now=4000, failures=[3900]))
    assert after < seen[-1]
    for t in range(5000, 20000, 1000):  # a failure at every trigger: down to ci_min
        p.next_interval(Observation(now=t, failures=list(range(3900, t, 1000))))
    assert p.ci == 100
    for t in range(20000, 40000, 1000):
        p.next_interval(Observation(now=t, failures=list(range(3900, 20000, 1000))))
    assert p.ci == 5000  # capped


def test_resource_aware_eq12_eq15_and_reset():
    p = ResourceAware(600, c_const=0.5, m_const=0.8)
    assert p.next_interval(Observation(now=1, cpu=0.75)) == pytest.approx(900)  # eq. 12: × U/Cconst
    assert p.next_interval(Observation(now=2, cpu=0.6, mem=0.96)) == pytest.approx(900 * 1.2)  # eq. 15
    assert p.next_interval(Observation(now=3, cpu=0.1, mem=0.1)) == 600  # back to ci_0


def test_slow_task_detector_and_algorithm_4():
    assert slow_tasks([("m", 10, 10), ("m", 10, 10), ("m", 50, 10), ("m", 60, 10)]) == 2
    assert slow_tasks([("m", 10, 10), ("m", 100, 100), ("m", 11, 10)]) == 0  # data skew alone is not slowness
    assert slow_tasks([("map", 100, 1), ("map", 100, 1), ("sink", 30, 1), ("sink", 30, 1)]) == 0  # per operator
    p = SlowTaskAware(600, threshold=1)
    assert p.next_interval(Observation(now=1, slow=3)) == pytest.approx(600 + 600 * 2)
    assert p.next_interval(Observation(now=2, slow=1)) == 600


# -- in the simulator ------------------------------------------------------------------------------
BASE = dict(workload="q1", parallelism=2, records=60, snapshot_cost=150)


def test_fixed_policy_reproduces_the_engine():
    """The policy hook changes nothing else: a fixed policy = the engine's interval."""
    plain = simulate(SimConfig(protocol="abs-aligned", interval=600, seed=3, failures=(("map[0]", 4000),), **BASE))
    hooked = simulate(SimConfig(protocol=IntervalABS(Fixed(600)), seed=3, failures=(("map[0]", 4000),), **BASE))
    assert plain.events == hooked.events


@pytest.mark.parametrize(
    "policy",
    [
        Fixed(300),
        Young(155, 5000),
        Daly(155, 5000),
        CaStreamOptimal(155, 5000, 300, 0.02, 0.013),
        FaultAware(300, 155, 2400, 1500),
        CaStream(155, 5000, 300, 0.02, 0.013, 1500),
    ],
    ids=lambda p: p.name,
)
def test_policies_give_correct_runs(policy):
    res = simulate(
        SimConfig(protocol=IntervalABS(policy), seed=1, failures=(("map[1]", 3000), ("sink[0]", 7000)), **BASE)
    )
    report = check_trace(res.trace())
    assert report.ok, [v.message for v in report.violations]
    assert res.metrics["policy"] == policy.name and res.metrics["failures"] == 2


def test_policy_reacts_in_the_simulator():
    """Algorithm 1 shrinks after the crashes; Algorithm 4 grows with stragglers."""
    res = simulate(
        SimConfig(protocol=IntervalABS(FaultAware(600, 155, 4800, 3000)), seed=1, failures=(("map[0]", 5000),), **BASE)
    )
    sim_intervals = res.metrics["intervals_mean"]
    assert 600 < sim_intervals <= 4800
    slow = simulate(
        SimConfig(
            protocol=IntervalABS(SlowTaskAware(600, threshold=1)),
            seed=1,
            workload="q1",
            parallelism=4,
            records=30,
            stragglers=(("map[0]", 5), ("map[1]", 5)),
        )
    )
    assert slow.metrics["intervals_mean"] > 600


def test_results_section_is_replaced_in_place(tmp_path):
    spec = importlib.util.spec_from_file_location("mir", ROOT / "scripts" / "make_interval_results.py")
    mir = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mir)
    doc = tmp_path / "results.md"
    doc.write_text("# Results\n\n<!-- results:other -->\nkeep me\n<!-- /results:other -->\n")
    mir.write(f"{mir.START}\nfirst\n{mir.END}", doc)
    mir.write(f"{mir.START}\nsecond\n{mir.END}", doc)
    text = doc.read_text()
    assert "keep me" in text and "second" in text and "first" not in text and text.count(mir.START) == 1
