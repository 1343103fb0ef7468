"""UNC, HMNR (both forms) and BCS on random topologies, schedules and failure sets:
no violation, recovery lines equal to the checker's RL-FIX, exactly-once end to end,
no useless checkpoint under HMNR/BCS, and the two HMNR forms decide alike."""

from __future__ import annotations

import os
import random
from dataclasses import replace

import pytest
from cic_cases import MODES, NAMES, REACHABILITY_RECORDS, configs, protocol, run_and_check
from hypothesis import HealthCheck, given, settings

from snapcheck.checker import CheckOptions, check_trace
from snapcheck.checker.cic import Resimulation
from snapcheck.checker.intervals import History
from snapcheck.checker.rgraph import Graph
from snapcheck.checker.zcycles import useless_positions
from snapcheck.reference import SimConfig, simulate
from snapcheck.reference.testing import task_ids

EXAMPLES = int(os.environ.get("SNAPCHECK_CIC_EXAMPLES", "25"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@SETTINGS
@given(configs())
def test_correct_protocols_have_no_violation_and_recover_exactly_once(cfg):
    res, rep, problems = run_and_check(cfg)
    assert not problems, f"{cfg}\n" + "\n".join(problems)
    if cfg.protocol.name in ("hmnr", "bcs"):
        assert rep.useless == []


def sweep_config(seed: int) -> SimConfig:
    """Seed -> one of the 8 (protocol, recovery mode) pairs in turn, a random workload
    (NexMark, reachability, random DAG or cyclic graph), schedule and 0-3 failures."""
    rnd = random.Random(seed)
    name, mode = [(n, m) for n in NAMES for m in MODES][seed % 8]
    wl = rnd.choice(["q1", "q3", "q8", "q12", "reachability", "random-dag", "random-cyclic"])
    par = rnd.randint(1, 3)
    records = rnd.randint(2, REACHABILITY_RECORDS if wl == "reachability" else 12)
    gap, interval = rnd.choice([30, 80, 150]), rnd.choice([150, 300, 600])
    tasks = task_ids(wl, par, seed)
    horizon = records * gap + 4 * interval
    failures = tuple((rnd.choice(tasks), rnd.randrange(horizon)) for _ in range(rnd.randint(0, 3)))
    return SimConfig(
        protocol=protocol(name, mode),
        workload=wl,
        parallelism=par,
        seed=seed,
        records=records,
        gap=gap,
        interval=interval,
        latency=rnd.randint(1, 80),
        jitter=rnd.choice([1, 30, 60, 150]),
        buffer=rnd.randint(1, 6),
        out_buffer=rnd.randint(1, 4),
        failures=failures,
    )


@pytest.mark.parametrize("seed", range(48))
def test_seeded_sweep_of_protocols_modes_workloads_and_failure_sets(seed):
    cfg = sweep_config(seed)
    res, rep, problems = run_and_check(cfg)
    assert not problems, f"{cfg}\n" + "\n".join(problems)


@pytest.mark.slow
def test_seeded_sweep_soak():
    for seed in range(48, 1048):
        cfg = sweep_config(seed)
        assert not run_and_check(cfg)[2], cfg


def cyclic_run(seed: int) -> SimConfig:
    """A small cyclic run (where Z-cycles can form) with a random schedule."""
    rnd = random.Random(seed)
    wl = rnd.choice(["reachability", "random-cyclic"])
    small = wl == "reachability"  # its path count explodes with parallelism and input
    return SimConfig(
        workload=wl,
        parallelism=rnd.randint(1, 2 if small else 3),
        seed=seed,
        records=rnd.randint(2, REACHABILITY_RECORDS - 1 if small else 8),
        gap=rnd.choice([30, 80, 150]),
        interval=rnd.choice([100, 200, 400, 800]),
        latency=rnd.randint(1, 120),
        jitter=rnd.choice([1, 60, 300]),
        buffer=rnd.randint(1, 6),
    )


def useless_count(cfg: SimConfig) -> tuple[int, int]:
    h = History(simulate(cfg).trace())
    return sum(h.L), len(useless_positions(Graph(h)))


def zcf_runs(n: int, name: str) -> tuple[int, int, int]:
    """(checkpoints, useless) over n cyclic runs of protocol ``name``, and the useless
    checkpoints of UNC (no forced checkpoints) on every third of those runs, as a control."""
    total = useless = control = 0
    for seed in range(n):
        cfg = cyclic_run(seed)
        k, u = useless_count(replace(cfg, protocol=protocol(name, log_piggyback=False, log_vars=False)))
        total += k
        useless += u
        if seed % 3 == 0:
            control += useless_count(replace(cfg, protocol=protocol("unc")))[1]
    return total, useless, control


@pytest.mark.parametrize("name", ["hmnr", "bcs"])
def test_no_useless_checkpoint_over_hundreds_of_random_cyclic_runs(name):
    total, useless, control = zcf_runs(150, name)
    assert useless == 0, f"{name}: {useless} useless of {total} checkpoints"
    assert control > 0, "the control (UNC on the same runs) must have Z-cycles, or the test proves nothing"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["hmnr", "hmnr-clock", "bcs"])
def test_no_useless_checkpoint_over_thousands_of_random_cyclic_runs(name):
    total, useless, control = zcf_runs(2000, name)
    assert useless == 0 and control > 0


def decisions(trace, form):
    sim = Resimulation(trace, History(trace), form)
    return [(d.proc, d.recv.line, d.reason is not None, d.forced) for d in sim.decisions]


@pytest.mark.parametrize("seed", range(16))
def test_the_two_hmnr_forms_make_identical_decisions(seed):
    """Same config under both forms: the same trace up to piggybacks and variables (every
    checkpoint decision identical); and on that trace the checker's re-simulations of
    the two forms require a checkpoint at exactly the same receives."""
    cfg = (
        cyclic_run(seed)
        if seed % 2
        else SimConfig(workload="q3", parallelism=3, seed=seed, records=10, interval=150, jitter=200)
    )
    runs = {form: simulate(replace(cfg, protocol=protocol("hmnr", form=form))) for form in ("greater", "clock")}
    skeleton = {f: [(e.proc, e.idx, e.type, e.kind, e.mid, e.ckpt) for e in r.events] for f, r in runs.items()}
    assert skeleton["greater"] == skeleton["clock"]
    a = decisions(runs["greater"].trace(), "greater")
    assert a == decisions(runs["clock"].trace(), "clock")
    assert all(required == forced for _, _, required, forced in a)  # the reference forced exactly these
    bare = simulate(replace(cfg, protocol=protocol("hmnr", log_piggyback=False, log_vars=False))).trace()
    assert decisions(bare, "greater") == decisions(bare, "clock") == a  # both rule sets re-simulated alone


@pytest.mark.slow
def test_the_two_hmnr_forms_agree_on_a_thousand_runs():
    for seed in range(1000):
        cfg = cyclic_run(seed)
        skel = []
        for form in ("greater", "clock"):
            res = simulate(replace(cfg, protocol=protocol("hmnr", form=form, log_piggyback=False)))
            skel.append([(e.proc, e.type, e.kind, e.mid) for e in res.events])
        assert skel[0] == skel[1], seed


def test_hmnr_forces_fewer_checkpoints_than_bcs_and_both_keep_timestamps_increasing():
    """docs/theory.md, "ZCF and RDT": HMNR forces fewer checkpoints than BCS on the same runs; the
    timestamp certificate holds for both."""
    forced = {"hmnr": 0, "bcs": 0}
    for seed in range(12):
        cfg = cyclic_run(seed)
        for name in forced:
            res = simulate(replace(cfg, protocol=protocol(name)))
            forced[name] += res.metrics["checkpoints_forced"]
            rep = check_trace(res.trace(), CheckOptions(properties={"timestamps", "cic-conformance", "cic-efficiency"}))
            assert rep.ok, rep.render_text()
    assert 0 < forced["hmnr"] < forced["bcs"], forced


@pytest.mark.parametrize("name", ["hmnr", "bcs"])
def test_a_single_failed_task_restarts_from_its_last_checkpoint_under_zcf(name):
    """docs/theory.md, "Checking a CIC trace" (a consequence of ZCF): under partial recovery a single
    failed process never rolls back beyond its last checkpoint."""
    for seed in range(12):
        rnd = random.Random(seed)
        cfg = cyclic_run(seed)
        task = rnd.choice(task_ids(cfg.workload, cfg.parallelism, seed))
        res = simulate(replace(cfg, protocol=protocol(name, "partial"), failures=((task, rnd.randrange(100, 1500)),)))
        last = at_fail = None
        for e in res.events:
            if e.proc != task:
                continue
            if e.type == "checkpoint":
                last = e.ckpt
            elif e.type == "fail":
                at_fail = last or 0
            elif e.type == "restore":
                assert e.ckpt == at_fail, (seed, task)
