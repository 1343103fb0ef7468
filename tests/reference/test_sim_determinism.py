"""One seed, one trace: byte-identical across runs and interpreter hash seeds."""

import hashlib
import os
import subprocess
import sys

import pytest

from snapcheck.reference import SimConfig, simulate
from snapcheck.reference.testing import COORDINATED

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("protocol", COORDINATED)
def test_same_config_gives_identical_bytes(protocol):
    wl = "random-dag" if protocol == "abs-aligned" else "random-cyclic"
    cfg = SimConfig(
        protocol=protocol, workload=wl, seed=9, decline_prob=0.05, failures=(("sink[0]", 700), ("src0[0]", 1900))
    )
    assert simulate(cfg).dumps() == simulate(cfg).dumps()


def test_different_seeds_give_different_traces():
    a = simulate(SimConfig(protocol="unaligned", workload="q3", seed=1)).dumps()
    b = simulate(SimConfig(protocol="unaligned", workload="q3", seed=2)).dumps()
    assert a != b


def test_bytes_do_not_depend_on_the_interpreter_hash_seed(tmp_path):
    args = [
        "simulate",
        "-p",
        "aligned-timeout",
        "-w",
        "q8",
        "-s",
        "4",
        "--records",
        "12",
        "--fail",
        "window_join[1]@900",
        "--aligned-timeout",
        "60",
    ]
    digests = set()
    for hash_seed in ("1", "2"):
        out = tmp_path / f"t{hash_seed}.jsonl"
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        subprocess.run(
            [sys.executable, "-m", "snapcheck", *args, "-o", str(out)],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
        )
        digests.add(hashlib.sha256(out.read_bytes()).hexdigest())
    here = simulate(
        SimConfig(
            protocol="aligned-timeout",
            workload="q8",
            seed=4,
            records=12,
            failures=(("window_join[1]", 900),),
            aligned_timeout=60,
        )
    ).dumps()
    digests.add(hashlib.sha256(here).hexdigest())
    assert len(digests) == 1


def test_recording_does_not_change_the_run():
    cfg = SimConfig(protocol="chandy-lamport", workload="reachability", seed=3, failures=(("join[1]", 800),))
    with_trace, without = simulate(cfg), simulate(cfg, record=False)
    assert without.events == []
    assert with_trace.final_states == without.final_states
    assert with_trace.outputs == without.outputs
    m1, m2 = dict(with_trace.metrics), dict(without.metrics)
    m1.pop("events"), m2.pop("events")
    assert m1 == m2
