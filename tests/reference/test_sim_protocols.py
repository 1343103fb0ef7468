"""Every protocol × workload family × seeds: the checker finds nothing and the
end-to-end exactly-once oracle holds, with and without failures."""

import random

import pytest

from snapcheck.checker import check_trace
from snapcheck.reference import SimConfig, simulate
from snapcheck.reference.oracle import exactly_once
from snapcheck.reference.testing import COORDINATED

WORKLOADS = ("q1", "q3", "q8", "q12", "reachability", "random-dag", "random-cyclic")
CYCLIC = ("reachability", "random-cyclic")


def _cases(seeds):
    for protocol in COORDINATED:
        for wl in WORKLOADS:
            if protocol == "abs-aligned" and wl in CYCLIC:
                continue
            for seed in seeds:
                yield protocol, wl, seed


def _failures(protocol, wl, seed, n):
    base = simulate(SimConfig(protocol=protocol, workload=wl, seed=seed), record=False)
    rng = random.Random(f"{protocol}/{wl}/{seed}")
    tasks = sorted(base.final_states)
    return tuple((rng.choice(tasks), rng.randrange(50, base.metrics["sim_time"])) for _ in range(n))


def _verify(protocol, wl, seed, n_failures, **kw):
    fails = _failures(protocol, wl, seed, n_failures) if n_failures else ()
    cfg = SimConfig(protocol=protocol, workload=wl, seed=seed, failures=fails, **kw)
    res = simulate(cfg)
    rep = check_trace(res.trace())
    assert rep.ok, [(v.kind, v.message[:300]) for v in rep.violations[:3]]
    assert exactly_once(cfg, res) == []
    assert not res.metrics["stuck"] and res.metrics["rounds_completed"] > 0
    return res


@pytest.mark.parametrize("protocol, wl, seed", list(_cases([11])))
def test_protocol_is_clean_and_exactly_once_with_a_failure(protocol, wl, seed):
    _verify(protocol, wl, seed, 1)


@pytest.mark.slow
@pytest.mark.parametrize("protocol, wl, seed", list(_cases(range(20))))
def test_protocol_sweep_many_seeds_and_failures(protocol, wl, seed):
    _verify(protocol, wl, seed, seed % 3)


@pytest.mark.parametrize("protocol", ["chandy-lamport", "abs-aligned", "abs-cyclic"])
def test_concurrent_rounds(protocol):
    res = _verify(protocol, "q12", 4, 1, max_concurrent=2, interval=150, records=20, gap=40)
    starts = [e.line for e in res.events if e.type == "round_start"]
    ends = [e.line for e in res.events if e.type in ("round_complete", "round_abort")]
    assert any(sum(s < x for s in starts) - sum(e < x for e in ends) >= 1 for x in starts)  # rounds overlapped


@pytest.mark.parametrize("protocol", COORDINATED)
def test_declined_and_timed_out_rounds_are_survived(protocol):
    wl = "q12" if protocol == "abs-aligned" else "reachability"
    timeout = 400 if wl == "q12" else 1000  # rounds take ~250 / ~550 ticks here
    res = _verify(protocol, wl, 2, 1, decline_prob=0.05, checkpoint_timeout=timeout, records=12, gap=60)
    aborts = [e.reason for e in res.events if e.type == "round_abort"]
    assert any(r.startswith(("declined", "timeout")) for r in aborts)


def test_channel_state_is_empty_for_aligned_only_on_back_edges_for_cyclic_and_split_for_unaligned():
    def recorded(protocol, wl):
        res = simulate(
            SimConfig(
                protocol=protocol,
                workload=wl,
                seed=1,
                records=20,
                gap=40,
                stragglers=(("join[0]", 3),) if wl != "q12" else (),
            )
        )
        chans = {c.id: c for c in res.header.channels}
        return [(chans[e.ch], e.part) for e in res.events if e.type == "record"]

    assert recorded("abs-aligned", "q3") == []
    cyc = recorded("abs-cyclic", "reachability")
    assert cyc and all(c.back_edge and part == "input" for c, part in cyc)
    parts = {part for _, part in recorded("unaligned", "q3")}
    assert parts == {"input", "output"}
    assert {part for _, part in recorded("chandy-lamport", "reachability")} == {"input"}


def test_aligned_timeout_switches_some_tasks_and_stays_aligned_without_pressure():
    slow = simulate(
        SimConfig(
            protocol="aligned-timeout",
            workload="q3",
            seed=3,
            records=25,
            gap=30,
            aligned_timeout=60,
            stragglers=(("join[0]", 4), ("join[1]", 4)),
        )
    )
    assert slow.metrics["persisted_messages"] > 0
    relaxed = simulate(
        SimConfig(protocol="aligned-timeout", workload="q3", seed=3, records=10, gap=300, aligned_timeout=100_000)
    )
    assert relaxed.metrics["persisted_messages"] == 0
    assert check_trace(slow.trace()).ok and check_trace(relaxed.trace()).ok
