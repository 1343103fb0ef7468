"""Real Flink restored at another parallelism (slow: two job generations in one MiniCluster JVM,
≤ 90 s each on 2 cores): a failure followed by a restore of the latest retained unaligned
checkpoint at a higher parallelism, and a stop-with-savepoint followed by a restore at a lower
one, are traced with their restore sources and channel mappings and judged clean; removing one
record recovered across the rescale from the merged trace is caught."""

from __future__ import annotations

import orjson
import pytest

from snapcheck.commands.flink import Judgement
from snapcheck.flink.run import RunConfig, run_job
from snapcheck.traces.jsonl import parse_trace

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def rescaled(jar, tmp_path, **kw):
    outcome = run_job(RunConfig(timeout_s=90, **kw), tmp_path / "run", jar)
    assert outcome.status == "completed", outcome.merged.header["metadata"]["flink"]
    assert outcome.merged.anomalies == []
    flink = outcome.merged.header["metadata"]["flink"]
    assert flink["rescale"]["skipped"] is None, flink["rescale"]
    return outcome.merged


def test_failure_then_unaligned_restore_at_higher_parallelism(jar, tmp_path):
    merged = rescaled(
        jar,
        tmp_path,
        job="keyed-agg",
        mode="unaligned",
        parallelism=2,
        records=1200,
        rate=1000,
        work={"agg": 300},
        fails=["agg:0:@900"],
        rescale="failure:3",
        seed=3,
    )
    restores = [e for e in merged.events if e["type"] == "restore" and "sources" in e]
    assert sorted(e["proc"] for e in restores) == [f"g1.{op}[{i}]" for op in ("agg", "sink", "src") for i in range(3)]
    taken = sorted(
        kg for e in restores if e["proc"].startswith("g1.agg") for s in e["sources"] for kg in s.get("key_groups", ())
    )
    assert taken[0][0] == 0 and taken[-1][1] == 127  # every key group is taken
    j = Judgement(parse_trace(merged.dumps().decode(), "flink.jsonl"))
    assert j.ok, j.render()
    crossing = [
        e
        for e in merged.events
        if e["type"] == "replay"
        and e["proc"].startswith("g1.")
        and e["from"] == "channel_state"
        and not e["replay_of"].startswith("g1.")
    ]
    assert crossing, (
        "the restored unaligned checkpoint had no in-flight records: the rescale of channel state was not exercised"
    )
    # drop one recovered record (its replay and its processing): the checker must notice
    victim = crossing[0]["mid"]
    kept, idx = [], {}
    for e in merged.events:
        if e.get("mid") != victim:
            kept.append({**e, "idx": idx.setdefault(e["proc"], 0)})
            idx[e["proc"]] += 1
    lines = [orjson.dumps(merged.header).decode()] + [orjson.dumps(e).decode() for e in kept]
    broken = Judgement(parse_trace("\n".join(lines) + "\n", "broken.jsonl"))
    assert not broken.ok and {"in-flight-lost"} & set(broken.kinds), broken.render()


def test_savepoint_then_restore_at_lower_parallelism(jar, tmp_path):
    merged = rescaled(
        jar,
        tmp_path,
        job="q3-join",
        mode="aligned",
        parallelism=3,
        records=600,
        rate=1000,
        rescale="savepoint:2@400",
        seed=2,
    )
    assert any(e["type"] == "retire" for e in merged.events)
    j = Judgement(parse_trace(merged.dumps().decode(), "flink.jsonl"))
    assert j.ok, j.render()
