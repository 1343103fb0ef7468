"""The verdict of one campaign run (``runner.run_one``, no Spark) when a run, or the
failure-free run the exactly-once oracle compares it with, gave up: every round
triggered at its end was aborted, so it has no committed end state."""

from __future__ import annotations

from dataclasses import replace

import pytest

from snapcheck.checker import check_trace
from snapcheck.reference import SimConfig, simulate
from snapcheck.reference.oracle import Inconclusive, baseline, exactly_once
from snapcheck.spark_validation.runner import run_one

# Every round times out long before it could complete: the simulator gives up after ten.
NEVER_COMPLETES = SimConfig(
    protocol="abs-aligned", workload="q3", seed=3, records=8, checkpoint_timeout=5, failures=(("sink[0]", 300),)
)


def test_a_run_gave_up_when_its_final_rounds_all_aborted_not_when_it_deadlocked():
    assert simulate(baseline(NEVER_COMPLETES), record=False).gave_up
    assert not simulate(replace(NEVER_COMPLETES, checkpoint_timeout=None, failures=()), record=False).gave_up
    deadlock = simulate(
        SimConfig(
            protocol="abs-aligned",
            mutant="abs-aligned-on-cyclic",
            workload="reachability",
            seed=0,
            parallelism=2,
            records=8,
            gap=80,
        ),
        record=False,
    )
    assert deadlock.metrics["stuck"] and not deadlock.gave_up  # a round is still in progress


def test_the_oracle_has_no_verdict_when_the_failure_free_run_gave_up():
    with pytest.raises(Inconclusive, match="failure-free run gave up"):
        exactly_once(NEVER_COMPLETES)


# A campaign run: under the FLIP's reading (region-restart) a region slowed by a straggler
# misses the checkpoint timeout in every round and restarts from its fallback state each
# time; failure-free, the run never finishes (the livelock guard cuts it after 82 regional
# completions), while the crashes of this run happen to let it finish. Compared with the
# cut run, it had "extra" output.
LIVELOCKED_TWIN = SimConfig(
    protocol="regional-aligned",
    workload="q1",
    parallelism=2,
    seed=1,
    records=7,
    gap=40,
    failures=(("op1[0]", 1210), ("sink[0]", 912)),
    interval=105,
    checkpoint_timeout=420,
    recovery="region-restart",
    latency=61,
    stragglers=(("op1[1]", 2.0),),
    decline_prob=0.025,
)


def test_the_oracle_has_no_verdict_when_the_failure_free_run_never_finished():
    assert simulate(baseline(LIVELOCKED_TWIN), record=False).metrics["truncated"]
    run = simulate(LIVELOCKED_TWIN, record=False)
    assert not run.metrics["truncated"] and not run.gave_up
    with pytest.raises(Inconclusive, match="livelock guard"):
        exactly_once(LIVELOCKED_TWIN, run)


# Campaign seed 1491: the checkpoint timeout (800) is shorter than most rounds of this
# configuration (1,026 ticks on average without it): the failure-free run completes 1 round of
# 43 and gives up with its last transactions staged, while the run with a crash happens to
# complete its last round and publish everything. Compared, the crashed run had "extra" output.
SEED_1491 = SimConfig(
    protocol="unaligned",
    workload="reachability",
    parallelism=3,
    seed=1491,
    records=8,
    gap=30,
    hot_ratio=0.8,
    failures=(("join[2]", 206),),
    interval=200,
    checkpoint_timeout=800,
    aligned_timeout=20,
    latency=8,
    jitter=400,
    buffer=1,
    out_buffer=1,
    decline_prob=0.05,
)


def test_a_run_whose_failure_free_twin_gave_up_is_inconclusive_not_failing():
    assert simulate(baseline(SEED_1491), record=False).gave_up
    row = run_one(1491, 1491, SEED_1491)
    assert row["verdict"] == "inconclusive" and row["violation_kinds"] == ""
    assert row["oracle"].startswith("inconclusive: the failure-free run gave up")


# Campaign seed 351: round 11 completes, its notification to sink[2] is lost (notifications
# are lossy), and every later round is declined until the simulator gives up: nothing ever
# subsumes the lost notification, and the orderly end of the run that re-sends it never comes.
SEED_351 = SimConfig(
    protocol="abs-aligned-2pc",
    workload="q8",
    parallelism=3,
    seed=351,
    records=14,
    gap=30,
    failures=(("auctions[1]", 546),),
    interval=250,
    aligned_timeout=200,
    latency=4,
    jitter=1,
    buffer=1,
    out_buffer=1,
    decline_prob=0.1,
)


def test_a_lost_notification_in_a_run_that_gave_up_is_a_consequence_of_giving_up():
    res = simulate(SEED_351)
    assert res.gave_up
    trace = res.trace()
    assert "uncommitted" in check_trace(trace).kinds
    notices = [e for e in trace.events if e.type == "send" and e.ch == "coordinator->sink[2]"]
    received = {e.mid for e in trace.events if e.type == "recv" and e.ch == "coordinator->sink[2]"}
    assert notices and all(e.mid not in received for e in notices)  # lost, never re-sent
    row = run_one(351, 351, SEED_351)
    assert row["verdict"] == "inconclusive" and row["violation_kinds"] == "every final round aborted"
    assert row["violations"] == 0  # nor counted as a violation in the summary's column
    assert row["oracle"].startswith("inconclusive: the run gave up (every final round aborted; ")  # was "skipped: None"


# Declines abort 11 of its 12 rounds, then the coordinator gives up; its failure-free
# twin completes them.
RUN_GAVE_UP = SimConfig(
    protocol="chandy-lamport", workload="diamond", parallelism=1, seed=2, buffer=1, out_buffer=1, decline_prob=0.2
)


def test_the_oracle_has_no_verdict_on_a_run_that_gave_up(tmp_path):
    """A run that gave up has no committed end state either: its missing final
    transactions are not a loss, and ``simulate --oracle`` says so without failing."""
    from click.testing import CliRunner

    from snapcheck.cli import cli

    assert not simulate(baseline(RUN_GAVE_UP), record=False).gave_up
    with pytest.raises(Inconclusive, match="the run gave up"):
        exactly_once(RUN_GAVE_UP)
    assert run_one(0, 2, RUN_GAVE_UP)["verdict"] == "inconclusive"
    c = RUN_GAVE_UP
    args = ["simulate", "-p", c.protocol, "-w", c.workload, "-P", "1", "-s", "2", "--buffer", "1", "--out-buffer", "1"]
    done = CliRunner().invoke(cli, [*args, "--decline-prob", "0.2", "-o", str(tmp_path / "t.jsonl"), "--oracle"])
    assert done.exit_code == 0, done.output
    assert "GAVE UP" in done.output and "STUCK" not in done.output
    assert "oracle: inconclusive: the run gave up" in done.output


def test_the_command_of_a_run_the_oracle_failed_runs_the_oracle():
    """The result table's ``command`` is the run's exact reproduction: for a run the oracle
    failed, with ``--oracle`` (what showed the failure); without it otherwise."""
    no_dedup = SimConfig(
        protocol="unaligned", workload="q12", parallelism=2, seed=109, records=9, gap=150, interval=150,
        failures=(("sink[1]", 342), ("window_count[1]", 1718)), mutant="unaligned-no-dedup",
        aligned_timeout=400, latency=64, buffer=5, out_buffer=1,
    )  # fmt: skip
    row = run_one(9, 109, no_dedup)
    assert row["oracle"].startswith("differs") and row["command"].endswith(" --oracle")
    clean = run_one(9, 109, replace(no_dedup, mutant=None))
    assert clean["oracle"] == "ok" and "--oracle" not in clean["command"]
