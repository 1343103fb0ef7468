"""Recovery of the uncoordinated protocols: the recovery-line algorithm, restart-all and
partial recovery, single and multiple failures, a failure during a recovery, replay of
exactly the in-transit window, deduplication, and the CLI."""

from __future__ import annotations

import pytest
from cic_cases import protocol, run_and_check

from snapcheck.checker import check_trace
from snapcheck.reference import SimConfig, simulate
from snapcheck.reference.sim.messages import Counts
from snapcheck.reference.uncoordinated.recovery import LineDefects, recovery_line, rollback_steps
from snapcheck.traces import read_trace


def example_c():
    """Worked example C of docs/theory.md (the domino effect) as per-checkpoint counters:
    channel x = P0→P1 carries a, c, e; channel y = P1→P0 carries b, d."""
    p0 = [
        Counts({"x": 0}, {"y": 0}),
        Counts({"x": 0}, {"y": 0}),
        Counts({"x": 1}, {"y": 1}),
        Counts({"x": 2}, {"y": 2}),
    ]
    p1 = [Counts({"y": 0}, {"x": 0}), Counts({"y": 0}, {"x": 1}), Counts({"y": 1}, {"x": 2})]
    current = [Counts({"x": 3}, {"y": 2}), Counts({"y": 2}, {"x": 3})]
    channels = [("x", 0, 1, False), ("y", 1, 0, True)]
    return channels, [p0, p1], current


def test_recovery_line_on_the_domino_example():
    channels, stable, current = example_c()
    for U in ([3, 2], [3, 3], [4, 2]):  # all failed; P0 failed (P1 keeps V); P1 failed
        assert recovery_line(channels, stable, current, U) == [1, 0]
    assert rollback_steps(stable, [3, 2], [1, 0]) == 4
    assert recovery_line(channels, stable, current, [4, 3]) == [4, 3]  # no failure: current states
    assert recovery_line(channels, stable, current, [3, 2], LineDefects(no_propagation=True)) == [3, 2]
    # y is "co-located": ignoring it keeps the orphan d (sent by P1 after C1,2, processed before C0,3)
    assert recovery_line(channels, stable, current, [3, 2], LineDefects(skip_colocated=True)) == [3, 2]
    # without the edges of messages sent after the sender's last checkpoint, d is missed as well
    assert recovery_line(channels, stable, current, [3, 2], LineDefects(skip_open_interval=True)) == [3, 2]


def restores_by_recovery(res):
    out: dict[int, dict] = {}
    for e in res.events:
        if e.type == "restore":
            out.setdefault(e.recovery, {})[e.proc] = e.ckpt
    return out


def test_restart_all_restores_every_task_and_partial_only_those_propagation_reaches():
    base = dict(workload="q3", parallelism=2, seed=5, records=12, interval=300, failures=(("sink[0]", 900),))
    tasks = None
    for mode in ("restart-all", "partial"):
        res, rep, problems = run_and_check(SimConfig(protocol=protocol("unc", mode), **base))
        assert not problems, problems
        (restored,) = restores_by_recovery(res).values()
        tasks = [p.id for p in res.header.processes if p.role in ("task", "source", "sink")]
        if mode == "restart-all":
            assert sorted(restored) == sorted(tasks)
        else:
            assert "sink[0]" in restored and len(restored) < len(tasks)
            assert not any(p.startswith(("persons", "auctions", "filter")) for p in restored)


def test_every_in_transit_message_of_a_restored_channel_is_replayed_once_and_only_those():
    res, rep, problems = run_and_check(
        SimConfig(
            protocol=protocol("hmnr", "partial"),
            workload="reachability",
            parallelism=2,
            seed=3,
            records=5,
            interval=200,
            failures=(("select[1]", 700),),
        )
    )
    assert not problems, problems
    (obs,) = rep.observed
    rolled = set(restores_by_recovery(res)[1])
    chans = {c.id: c for c in res.header.channels}
    replayed = [e.replay_of for e in res.events if e.type == "replay" and e.source == "log"]
    assert replayed and len(replayed) == len(set(replayed))
    channel_of = {e.mid: chans[e.ch] for e in res.events if e.type == "send"}
    expected = {mid for mid in obs["in_transit"] if (c := channel_of[mid]).src in rolled or c.dst in rolled}
    expected -= {mid for mid in expected if channel_of[mid].src.startswith("ext:")}  # re-read by offset
    assert set(replayed) == expected


def test_multiple_failures_and_a_failure_during_recovery():
    """Two tasks fail at once; a third fails before the restore (it joins the recovery);
    a fourth fails right after the restore, while the replayed messages are still being
    processed (a second recovery)."""
    detect, restart = 100, 200
    failures = (
        ("join[0]", 900),
        ("sink[1]", 900),
        ("select[0]", 900 + detect + 50),
        ("project[1]", 900 + detect + restart + 5),
    )
    for name in ("unc", "hmnr", "bcs"):
        for mode in ("restart-all", "partial"):
            cfg = SimConfig(
                protocol=protocol(name, mode),
                workload="reachability",
                parallelism=2,
                seed=7,
                records=5,
                interval=200,
                failures=failures,
                detect_delay=detect,
                restart_delay=restart,
            )
            res, rep, problems = run_and_check(cfg)
            assert not problems, (name, mode, problems)
            recs = res.metrics["recovery_details"]
            assert len(recs) == 2, recs
            assert sorted(recs[0]["tasks"]) == ["join[0]", "select[0]", "sink[1]"]
            assert recs[1]["tasks"] == ["project[1]"]
            assert len(rep.observed) == 2


def test_messages_of_the_failed_epoch_are_discarded():
    res, rep, problems = run_and_check(
        SimConfig(
            protocol=protocol("unc", "partial"),
            workload="q12",
            parallelism=3,
            seed=2,
            records=30,
            gap=40,
            interval=300,
            latency=250,
            jitter=200,
            failures=(("window_count[1]", 700),),
        )
    )
    assert not problems, problems
    stale = [e for e in res.events if e.type == "discard"]
    assert stale and all(e.reason == "stale epoch" for e in stale)


def test_logs_are_truncated_and_never_too_early():
    res = simulate(SimConfig(protocol="unc", workload="q8", parallelism=2, seed=1, records=20, interval=200))
    truncs = [e for e in res.events if e.type == "log_truncate"]
    assert truncs and res.metrics["log_truncations"] == len(truncs)
    rep = check_trace(res.trace())
    assert rep.ok and any(r.property == "log-retention" for r in rep.results)


@pytest.fixture
def cli(snapcheck_cli):
    return snapcheck_cli


def test_cli_simulates_and_checks_the_uncoordinated_protocols(cli, tmp_path):
    good = str(tmp_path / "hmnr.jsonl")
    code, _ = cli(
        "simulate",
        "--protocol",
        "hmnr",
        "--workload",
        "reachability",
        "-P",
        "2",
        "--records",
        "4",
        "--interval",
        "200",
        "--fail",
        "join[0]@900",
        "-o",
        good,
    )
    assert code == 0
    code, out = cli("check", good)
    assert code == 0, out
    bad = str(tmp_path / "no-c2.jsonl")
    assert cli("simulate", "--mutant", "hmnr-no-c2", "--demo", "-o", bad)[0] == 0
    code, out = cli("check", bad)
    assert code == 1 and "missing-forced-checkpoint" in out
    code, out = cli("simulate", "--list")
    assert code == 0 and all(p in out for p in ("unc", "hmnr", "hmnr-clock", "bcs", "hmnr-no-c1"))


def test_cli_recovery_option_selects_partial_recovery(cli, tmp_path):
    """``--recovery partial`` reaches the protocol: only the failed task and those rollback
    propagation reaches restore (restart-all restores every task), and the trace checks clean."""
    restored = {}
    for mode in ("restart-all", "partial"):
        out = tmp_path / f"{mode}.jsonl"
        code, text = cli(
            "simulate",
            "-p",
            "unc",
            "-w",
            "q3",
            "-P",
            "2",
            "-s",
            "7",
            "--records",
            "12",
            "--gap",
            "30",
            "--interval",
            "150",
            "--fail",
            "persons[1]@564",
            "--recovery",
            mode,
            "-o",
            str(out),
        )
        assert code == 0, text
        trace = read_trace(str(out))
        assert trace.header.protocol["params"]["recovery"] == mode
        restored[mode] = {e.proc for e in trace.events if e.type == "restore"}
        code, text = cli("check", str(out))
        assert code == 0, text
    assert "persons[1]" in restored["partial"] and len(restored["partial"]) < len(restored["restart-all"])
    code, text = cli(
        "simulate", "-p", "abs-aligned", "--recovery", "partial", "-o", str(tmp_path / "x.jsonl"), stderr=True
    )
    assert code == 2 and "recovery 'partial': abs-aligned implements restart-all (its recovery_modes)" in text
