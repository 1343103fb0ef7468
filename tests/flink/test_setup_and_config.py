"""Setup errors (no JDK, no Flink package), run configurations, campaign sampling and the
CLI's handling of them — all without starting a JVM."""

from __future__ import annotations

import random
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from snapcheck.cli import cli
from snapcheck.flink import build as build_mod
from snapcheck.flink.build import FlinkSetupError
from snapcheck.flink.campaign import CAMPAIGN_JOBS, CampaignRow, sample, summarize
from snapcheck.flink.run import OPERATORS, RunConfig
from snapcheck.traces import TraceRecorder
from snapcheck.traces.errors import UsageError


def test_missing_flink_package_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(build_mod.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(FlinkSetupError, match="apache-flink-libraries is not installed"):
        build_mod.flink_home()


def test_missing_jdk_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr(build_mod.shutil, "which", lambda name: None)
    with pytest.raises(FlinkSetupError, match="no JDK found"):
        build_mod.jdk()


def test_cli_exits_2_without_a_jdk(monkeypatch):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr(build_mod.shutil, "which", lambda name: None)
    from snapcheck.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["flink", "build"])
    assert exc.value.code == 2


def test_run_config_validation():
    RunConfig(job="q3-join", fails=["join:1:300", "persons:0:@500"], parallelism=2).validate()
    bad = [
        (dict(job="nope"), "unknown job"),
        (dict(mode="exactly"), "unknown mode"),
        (dict(fails=["agg:0"]), "bad failure spec"),
        (dict(fails=["agg:2:10"], parallelism=2), "subtask 2 >= parallelism"),
        (dict(fails=["join:0:10"]), "has operators src, agg, sink"),
        (dict(fails=["agg:0:@x"]), "bad failure spec"),
        (dict(work={"join": 10}), "not an operator"),
        (dict(parallelism=0), "out of range"),
    ]
    for kw, msg in bad:
        with pytest.raises(ValueError, match=msg):
            RunConfig(**kw).validate()


def test_command_repeats_the_configuration(monkeypatch):
    """The reproduction command, parsed by the real CLI, gives back the same RunConfig."""
    cfg = RunConfig(
        job="chain",
        mode="timeout",
        parallelism=3,
        fails=["score:2:50", "src:0:@20"],
        seed=9,
        rate=500.0,
        aligned_timeout_ms=5,
        work={"score": 100},
        conf={"a.b": "1"},
        records=300,
        interval_ms=20,
        buffer_timeout_ms=1,
        timeout_s=90,
    )
    captured = {}

    def fake_run_job(c, run_dir, b):
        captured["cfg"] = c
        raise FlinkSetupError("not running a JVM in this test")

    monkeypatch.setattr("snapcheck.flink.run.run_job", fake_run_job)
    monkeypatch.setattr("snapcheck.commands.flink._build", lambda force=False, home=None: None)
    argv = shlex.split(cfg.command("t.jsonl"))
    assert argv[:3] == ["snapcheck", "flink", "run"]
    res = CliRunner().invoke(cli, argv[1:])
    assert isinstance(res.exception, UsageError) and "not running a JVM" in str(res.exception)  # main(): exit 2
    assert captured["cfg"] == cfg
    assert "--aligned-timeout" not in RunConfig(mode="aligned", aligned_timeout_ms=5).command()


def test_campaign_sampling_is_deterministic_and_valid():
    a = [sample(random.Random(7)) for _ in range(1)] + [sample(random.Random(7))]
    assert a[0] == a[1]
    rng = random.Random(3)
    configs = [sample(rng) for _ in range(300)]
    for c in configs:
        c.validate()
        assert all(f.split(":")[0] in OPERATORS[c.job] for f in c.fails)
    assert {c.mode for c in configs} == {"aligned", "unaligned", "timeout", "at-least-once"}
    assert {c.job for c in configs} == set(CAMPAIGN_JOBS)
    assert sum(1 for c in configs if c.fails) > 200


def test_summary_counts_per_mode():
    rows = [
        CampaignRow(0, RunConfig(mode="aligned"), 2.0, "completed", True, stats={"restores": 1, "rounds": 3}),
        CampaignRow(
            1,
            RunConfig(mode="at-least-once"),
            4.0,
            "completed",
            False,
            ["duplicate-processing", "orphan"],
            stats={"restores": 1},
        ),
        CampaignRow(2, RunConfig(mode="at-least-once"), 6.0, "completed", False, ["orphan"]),
    ]
    s = summarize(rows)
    assert s["aligned"]["clean"] == 1 and s["aligned"]["rounds"] == 3
    assert s["at-least-once"] == {
        "runs": 2,
        "clean": 0,
        "violations": 2,
        "kinds": {"duplicate-processing": 1, "orphan": 2},
        "with_failure": 1,
        "seconds": 10.0,
        "rounds": 0,
        "replayed": 0,
        "hidden": 0,
        "rescaled": 0,
    }
    assert not rows[1].exactly_once and rows[0].exactly_once


def test_flink_check_cli_on_a_merged_trace(tmp_path):
    from snapcheck.flink.merge import merge_run
    from tests.flink.fake_run import FakeRun

    r = FakeRun(mode="unaligned")
    r.read(0, 0)
    r.send("src", 0, 0, 0, 0)
    r.ckpt(1)
    r.notify(1)
    r.recv("sink", 0, 0, "src", 0, 0, 0)
    merge_run(str(r.write(tmp_path / "run"))).write(str(tmp_path / "t.jsonl"))
    res = CliRunner().invoke(cli, ["flink", "check", str(tmp_path / "t.jsonl")])
    assert res.exit_code == 0, res.output
    assert "1 in-flight record(s) of checkpoints that were never restored" in res.output
    assert "verdict: clean" in res.output
    # the generic checker reads the trace's channel_state param and agrees
    res = CliRunner().invoke(cli, ["check", str(tmp_path / "t.jsonl")])
    assert res.exit_code == 0, res.output
    assert "not judged as dropped" in res.output


def test_flink_check_has_no_verdict_for_a_trace_nothing_applied_to(tmp_path):
    """As 'snapcheck check': a trace no property applied to exits 4 (no verdict), and over
    several traces the worst exit code wins (a violation before no verdict)."""
    examples = Path(__file__).resolve().parents[2] / "traces" / "examples"
    nothing = str(examples / "theory_a_zcycle.jsonl")
    res = CliRunner().invoke(cli, ["flink", "check", nothing])
    assert res.exit_code == 4, res.output
    assert "verdict: NOTHING JUDGED" in res.output
    assert CliRunner().invoke(cli, ["check", nothing]).exit_code == 4
    rec = TraceRecorder(["a", "b"], [("a>b", "a", "b")], protocol="chandy-lamport")
    rec.checkpoint("a", kind="coordinated", round=1)
    rec.recv("b", rec.send("a", "a>b"))  # sent after a's checkpoint, processed before b's: an orphan
    rec.checkpoint("b", kind="coordinated", round=1)
    rec.write(tmp_path / "orphan.jsonl")
    res = CliRunner().invoke(cli, ["flink", "check", nothing, str(tmp_path / "orphan.jsonl")])
    assert res.exit_code == 1 and "verdict: VIOLATION (orphan)" in res.output


def test_run_reports_anomalies_that_break_the_trace_as_a_violation(monkeypatch, tmp_path):
    """A restore of a checkpoint the subtask never took cannot be a valid trace: `flink run`
    shows the anomaly and exits 1 (a finding about Flink), not 2 (bad input)."""
    from snapcheck.flink.merge import merge_run
    from snapcheck.flink.run import RunOutcome
    from tests.flink.fake_run import FakeRun

    r = FakeRun()
    r.read(0, 0)
    r.ev("src", 0, 0, "fail", reason="injected")
    r.restore(5, 1)
    merged = merge_run(str(r.write(tmp_path / "run")))
    monkeypatch.setattr(
        "snapcheck.flink.run.run_job", lambda cfg, run_dir, b: RunOutcome(cfg, tmp_path / "run", 1.0, merged)
    )
    monkeypatch.setattr("snapcheck.commands.flink._build", lambda force=False, home=None: None)
    out = tmp_path / "t.jsonl"
    res = CliRunner().invoke(cli, ["flink", "run", "-o", str(out)])
    assert res.exit_code == 1, res.output
    assert "restores checkpoint 5, which it never took" in res.output
    assert "verdict: VIOLATION (flink-anomaly)" in res.output
