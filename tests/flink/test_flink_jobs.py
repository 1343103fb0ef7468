"""Real Flink (slow: a MiniCluster JVM per test, ≤ 60 s each on 2 cores): one small job with one
injected failure in each exactly-once mode gets a clean verdict, and Flink's AT_LEAST_ONCE
mode is caught processing records twice after the recovery."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from snapcheck.commands.flink import Judgement
from snapcheck.flink.run import RunConfig, run_job
from snapcheck.traces.jsonl import parse_trace

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def run(jar, tmp_path, **kw) -> Judgement:
    jvm_default = set(Path("/tmp").glob("minicluster_*"))  # where the JVM would put them by itself
    with pytest.MonkeyPatch.context() as mp:  # the JVM's temporary directory is made in this one
        (tmp_path / "tmp").mkdir()
        mp.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
        outcome = run_job(RunConfig(timeout_s=60, **kw), tmp_path / "run", jar)
    # Flink's mini cluster (blobs, I/O spill, shuffle, its RPC jar: 24 MB a run) left nothing behind
    assert list((tmp_path / "tmp").iterdir()) == []
    assert set(Path("/tmp").glob("minicluster_*")) <= jvm_default
    assert outcome.status == "completed", outcome.merged.header["metadata"]["flink"]
    assert outcome.merged.anomalies == []
    return Judgement(parse_trace(outcome.merged.dumps().decode(), "flink.jsonl"))


@pytest.mark.parametrize("mode", ["aligned", "unaligned", "timeout"])
def test_exactly_once_modes_recover_cleanly(jar, tmp_path, mode):
    # agg (400 µs per record) cannot keep up with the sources: backpressure, so unaligned
    # checkpoints hold in-flight records; the failure comes after several checkpoints
    j = run(
        jar,
        tmp_path,
        job="keyed-agg",
        mode=mode,
        parallelism=2,
        records=2500,
        rate=4000,
        fails=["agg:0:@700"],
        work={"agg": 400},
        seed=4,
    )
    stats = j.stats()
    assert stats["restores"] == 1 and stats["rounds"] >= 2, stats
    if mode == "aligned":
        assert stats["reread"] > 0 and stats["replayed"] == 0, stats  # sources rewound; no channel state
    elif mode == "unaligned":
        assert stats["replayed"] > 0, stats  # in-flight records came back from channel state
    assert j.ok, j.render()


def test_at_least_once_duplicates_are_found(jar, tmp_path):
    # small network buffers and buffer timeout: checkpoints complete often despite the
    # backpressure, and barriers reach a task's inputs at different times; two failures give two
    # chances to restore a checkpoint that reflects records processed past a barrier
    j = run(
        jar,
        tmp_path,
        job="keyed-agg",
        mode="at-least-once",
        parallelism=2,
        records=4000,
        rate=4000,
        fails=["sink:0:@1000", "sink:1:@2500"],
        work={"agg": 400},
        buffer_timeout_ms=10,
        conf={"taskmanager.memory.segment-size": "4kb"},
        seed=3,
    )
    assert not j.ok
    assert "duplicate-processing" in j.kinds, j.render()
