"""The merge of per-subtask Flink trace files into one v1 trace, on synthetic runs
(no JVM): identity, sequence numbers across restores, source re-reads, channel-state
replays observed by their effect, rebalance inference, anomalies — and the checker's
verdict on the result, clean for correct histories and a violation for broken ones."""

from __future__ import annotations

import pytest

from snapcheck.checker import CheckOptions, check_trace
from snapcheck.flink.expectations import latest_checkpoint_findings
from snapcheck.flink.merge import merge_run
from snapcheck.traces.errors import TraceErrors
from snapcheck.traces.jsonl import parse_trace
from tests.flink.fake_run import FakeRun, rebalanced


def merged(run: FakeRun, tmp_path):
    res = merge_run(str(run.write(tmp_path / "run")))
    return res, parse_trace(res.dumps().decode(), "merged.jsonl")  # parse_trace validates


def by_type(trace, t):
    return [e for e in trace.events if e.type == t]


def kinds(trace) -> set[str]:
    return check_trace(trace, CheckOptions(max_per_result=10**6)).kinds


def test_identity_channels_and_rounds(tmp_path):
    r = FakeRun()
    for off, to in enumerate([0, 1, 1]):
        r.read(0, off)
        r.send("src", 0, 0, off, to)
        r.recv("sink", to, 0, "src", 0, 0, off)
    r.ckpt(1)
    r.notify(1)
    res, trace = merged(r, tmp_path)
    assert res.anomalies == []
    assert [c.id for c in trace.channels] == ["src.input[0]>src[0]", "src[0]>sink[0]", "src[0]>sink[1]"]
    roles = {p.id: p.role for p in trace.processes}
    assert roles == {
        "src.input[0]": "external",
        "src[0]": "source",
        "sink[0]": "sink",
        "sink[1]": "sink",
        "coordinator": "coordinator",
    }
    sends = [(e.ch, e.seq, e.mid) for e in by_type(trace, "send") if e.proc == "src[0]"]
    assert sends == [
        ("src[0]>sink[0]", 1, "src[0]>sink[0]:1"),
        ("src[0]>sink[1]", 1, "src[0]>sink[1]:1"),
        ("src[0]>sink[1]", 2, "src[0]>sink[1]:2"),
    ]
    ext = [(e.mid, e.seq) for e in by_type(trace, "send") if e.proc == "src.input[0]"]
    assert ext == [("src.input[0]>src[0]:1", 1), ("src.input[0]>src[0]:2", 2), ("src.input[0]>src[0]:3", 3)]
    assert [(e.proc, e.ckpt, e.round, e.kind) for e in by_type(trace, "checkpoint")] == [
        ("src[0]", 1, 1, "coordinated"),
        ("sink[0]", 1, 1, "coordinated"),
        ("sink[1]", 1, 1, "coordinated"),
    ]
    assert [e.round for e in by_type(trace, "round_complete")] == [1]
    assert trace.header.protocol["name"] == "flink-aligned"
    assert kinds(trace) == set()


def _two_records_then_checkpoint(r: FakeRun) -> None:
    """src reads offsets 0 and 1 and sends them to sink[0], which processes them; checkpoint 1
    completes."""
    for off in range(2):
        r.read(0, off)
        r.send("src", 0, 0, off, 0)
        r.recv("sink", 0, 0, "src", 0, 0, off)
    r.ckpt(1)
    r.notify(1)


def _failover(r: FakeRun, restore_ckpt: int = 1):
    """src reads 0..3 (checkpoint 1 after offset 1), sink[0] fails before offset 3; everybody
    restores checkpoint 1, src re-reads 2..3 and regenerates its sends."""
    _two_records_then_checkpoint(r)
    for off in range(2, 4):
        r.read(0, off)
        r.send("src", 0, 0, off, 0)
    r.recv("sink", 0, 0, "src", 0, 0, 2)
    r.ev("sink", 0, 0, "fail", reason="injected")
    r.restore(restore_ckpt, 1)
    for i, off in enumerate(range(2, 4)):
        r.read(0, off, att=1)
        r.send("src", 0, 1, i, 0)
        r.recv("sink", 0, 1, "src", 0, 1, i)


def test_failover_regenerates_seq_and_replays_source(tmp_path):
    r = FakeRun()
    _failover(r)
    res, trace = merged(r, tmp_path)
    assert res.anomalies == []
    fails = {e.proc: e.reason for e in by_type(trace, "fail")}
    assert fails["sink[0]"] == "injected"
    assert fails["src[0]"].startswith("cancelled by the failover")
    assert {e.proc: (e.ckpt, e.recovery, e.round) for e in by_type(trace, "restore")} == {
        "src[0]": (1, 1, 1),
        "sink[0]": (1, 1, 1),
        "sink[1]": (1, 1, 1),
    }
    regenerated = [(e.seq, e.mid) for e in by_type(trace, "send") if e.proc == "src[0]"][2:]
    assert regenerated == [
        (3, "src[0]>sink[0]:3"),
        (4, "src[0]>sink[0]:4"),
        (3, "src[0]>sink[0]:3@1"),
        (4, "src[0]>sink[0]:4@1"),
    ]
    replays = [(e.proc, e.replay_of, e.mid, e.source) for e in by_type(trace, "replay")]
    assert replays == [
        ("src.input[0]", "src.input[0]>src[0]:3", "src.input[0]>src[0]:3/r1", "source"),
        ("src.input[0]", "src.input[0]>src[0]:4", "src.input[0]>src[0]:4/r1", "source"),
    ]
    assert kinds(trace) == set()
    assert latest_checkpoint_findings(trace) == []


def test_restoring_an_older_checkpoint_is_stale(tmp_path):
    r = FakeRun()
    for off in range(2):
        r.read(0, off)
        r.send("src", 0, 0, off, 0)
        r.recv("sink", 0, 0, "src", 0, 0, off)
        r.ckpt(off + 1)
        r.notify(off + 1)
    r.ev("sink", 0, 0, "fail", reason="injected")
    r.restore(1, 1)
    res, trace = merged(r, tmp_path)
    found = latest_checkpoint_findings(trace)
    assert [f.kind for f in found] == ["stale-restore"]
    assert "restores checkpoint 1" in found[0].message and "checkpoint 2 was completed" in found[0].message


def test_at_least_once_orphan_gives_duplicate_after_recovery(tmp_path):
    """sink[0] processes offset 1's record before its checkpoint although src sent it after its
    own (no alignment); restoring that checkpoint makes src regenerate it: processed twice."""
    r = FakeRun(mode="at-least-once")
    r.read(0, 0)
    r.send("src", 0, 0, 0, 0)
    r.recv("sink", 0, 0, "src", 0, 0, 0)
    r.ckpt(1, procs=[("src", 0), ("sink", 1)])
    r.read(0, 1)
    r.send("src", 0, 0, 1, 0)
    r.recv("sink", 0, 0, "src", 0, 0, 1)
    r.ckpt(1, procs=[("sink", 0)])
    r.notify(1)
    r.ev("sink", 1, 0, "fail", reason="injected")
    r.restore(1, 1)
    r.read(0, 1, att=1)
    r.send("src", 0, 1, 0, 0)
    r.recv("sink", 0, 1, "src", 0, 1, 0)
    res, trace = merged(r, tmp_path)
    assert res.anomalies == []
    # the round is inconsistent (its orphan's send, rolled back by the restore, is still
    # not in src's checkpoint), and the observed recovery restored that inconsistent line
    assert kinds(trace) == {"orphan", "duplicate-processing", "inconsistent-restore"}


def _unaligned(r: FakeRun, lose: bool = False):
    """Checkpoint 1 is taken by src after sending offsets 0,1 and by sink[0] before processing
    them (unaligned: they are channel state). After the failover sink[0] first processes the
    recovered records (old attempt 0 envelopes), then new data; ``lose`` drops offset 0's."""
    for off in range(2):
        r.read(0, off)
        r.send("src", 0, 0, off, 0)
    r.ckpt(1)
    r.notify(1)
    r.recv("sink", 0, 0, "src", 0, 0, 0)
    r.ev("sink", 0, 0, "fail", reason="injected")
    r.restore(1, 1)
    for off in [1] if lose else [0, 1]:
        r.recv("sink", 0, 1, "src", 0, 0, off)
    r.read(0, 2, att=1)
    r.send("src", 0, 1, 0, 0)
    r.recv("sink", 0, 1, "src", 0, 1, 0)


def test_channel_state_replays_are_observed_and_recorded(tmp_path):
    r = FakeRun(mode="unaligned")
    _unaligned(r)
    res, trace = merged(r, tmp_path)
    assert res.anomalies == []
    replays = [(e.proc, e.replay_of, e.source) for e in by_type(trace, "replay")]
    assert replays == [
        ("sink[0]", "src[0]>sink[0]:1", "channel_state"),
        ("sink[0]", "src[0]>sink[0]:2", "channel_state"),
    ]
    records = {(e.proc, e.ckpt, e.ch): e.mids for e in by_type(trace, "record")}
    assert records == {
        ("sink[0]", 1, "src[0]>sink[0]"): ["src[0]>sink[0]:1", "src[0]>sink[0]:2"],
        ("sink[1]", 1, "src[0]>sink[1]"): [],
    }
    assert res.header["metadata"]["flink"]["channel_state_observed"] == {"1": ["src[0]>sink[0]", "src[0]>sink[1]"]}
    assert trace.header.protocol["params"]["channel_state"] == "observed-at-restore"
    assert kinds(trace) == set()


def test_channel_state_that_loses_a_record_is_caught(tmp_path):
    r = FakeRun(mode="unaligned")
    _unaligned(r, lose=True)
    res, trace = merged(r, tmp_path)
    assert res.anomalies == []
    found = kinds(trace)
    assert "lost" in found and "dropped" in found
    report = check_trace(trace, CheckOptions(max_per_result=10**6))
    assert [v for v in report.violations if v.kind == "dropped"]


def test_unobserved_channel_state_is_not_judged(tmp_path):
    """A checkpoint with in-flight records that is never restored: its channel state is
    Flink-internal, so the checker does not judge it (a note and a count, no 'dropped')."""
    r = FakeRun(mode="unaligned")
    r.read(0, 0)
    r.send("src", 0, 0, 0, 0)
    r.ckpt(1)
    r.notify(1)
    r.recv("sink", 0, 0, "src", 0, 0, 0)
    res, trace = merged(r, tmp_path)
    report = check_trace(trace, CheckOptions(max_per_result=10**6))
    assert report.ok, report.violations
    assert report.stats["unobservable_in_transit"] == 1
    assert any("not judged as dropped" in n for n in report.notes)
    aligned = FakeRun(mode="aligned")
    aligned.files, aligned.g = r.files, r.g
    _, trace2 = merged(aligned, tmp_path / "aligned")
    assert "aligned-in-flight" in kinds(trace2)


def test_rebalance_start_is_inferred(tmp_path):
    r = FakeRun(topology=rebalanced(1, 3))
    for n in range(6):
        r.read(0, n)
        r.send("src", 0, 0, n)
    for n in range(6):
        r.recv("sink", (n + 2) % 3, 0, "src", 0, 0, n)
    res, trace = merged(r, tmp_path)
    assert res.anomalies == []
    targets = [e.ch for e in by_type(trace, "send") if e.proc == "src[0]"]
    assert targets == [f"src[0]>sink[{(n + 2) % 3}]" for n in range(6)]
    assert kinds(trace) == set()


def test_rebalance_that_is_not_round_robin_is_an_anomaly(tmp_path):
    r = FakeRun(topology=rebalanced(1, 2))
    for n in range(3):
        r.read(0, n)
        r.send("src", 0, 0, n)
    for n, sub in enumerate([0, 1, 1]):
        r.recv("sink", sub, 0, "src", 0, 0, n)
    res, _ = merged(r, tmp_path)
    assert any("not distributed round robin" in a for a in res.anomalies)


def test_misrouted_record_and_untraced_send_are_anomalies(tmp_path):
    r = FakeRun()
    r.read(0, 0)
    r.send("src", 0, 0, 0, 1)
    r.recv("sink", 0, 0, "src", 0, 0, 0)  # keyed model says subtask 1
    r.recv("sink", 1, 0, "src", 0, 0, 7)  # never sent
    res, trace = merged(r, tmp_path)
    assert len(res.anomalies) == 2
    assert "routes to sink[1]" in res.anomalies[0] and "never traced" in res.anomalies[1]
    assert trace.header.metadata["flink"]["anomalies"] == res.anomalies


def test_restore_of_a_checkpoint_never_taken_is_an_anomaly(tmp_path):
    r = FakeRun()
    r.read(0, 0)
    r.ev("src", 0, 0, "fail", reason="injected")
    r.restore(5, 1)
    res = merge_run(str(r.write(tmp_path / "run")))
    assert any("restores checkpoint 5, which it never took" in a for a in res.anomalies)


def test_restore_id_and_operator_state_disagree(tmp_path):
    r = FakeRun()
    r.read(0, 0)
    r.ckpt(1)
    r.ev("src", 0, 0, "fail", reason="injected")
    for op, sub in r.procs():
        r.ev(op, sub, 1, "restore", id=1, state=0)
    res = merge_run(str(r.write(tmp_path / "run")))
    assert sum("operator state restored is that of checkpoint 0" in a for a in res.anomalies) == 3


def test_pending_round_at_the_end_is_aborted_only_for_a_quiescent_end(tmp_path):
    for status, aborted in (("completed", True), ("timeout", False)):
        r = FakeRun(status=status)
        r.read(0, 0)
        r.ckpt(1)
        r.notify(1)
        r.ckpt(2, procs=[("src", 0)])
        _, trace = merged(r, tmp_path / status)
        assert [e.round for e in by_type(trace, "round_abort")] == ([2] if aborted else [])
        assert ("incomplete-round" in kinds(trace)) is not aborted


def test_events_after_an_injected_failure_are_dropped(tmp_path):
    r = FakeRun()
    r.read(0, 0)
    r.ev("src", 0, 0, "fail", reason="injected")
    r.ev("src", 0, 0, "notify", id=1)
    res, trace = merged(r, tmp_path)
    assert any("after its injected failure" in n for n in res.notes)
    assert [e.type for e in trace.events if e.proc == "src[0]"] == ["recv", "fail"]


def test_a_last_line_cut_mid_write_is_tolerated_but_a_bad_line_is_not(tmp_path):
    r = FakeRun()
    r.read(0, 0)
    d = r.write(tmp_path / "run")
    f = d / "src-0-0.jsonl"
    whole = f.read_bytes()
    f.write_bytes(whole + b'{"g": 9, "t"')
    assert len(merge_run(str(d)).events) == 2
    f.write_bytes(whole + b'{"g": 9, "t"\n{"g": 10, "t": 1, "e": "close"}\n')
    with pytest.raises(TraceErrors, match=r"src-0-0.jsonl:3: malformed JSON"):
        merge_run(str(d))
    f.write_bytes(whole + b'{"g": 10}\n')
    with pytest.raises(TraceErrors, match="src-0-0.jsonl:3: an event needs fields 'g' and 'e'"):
        merge_run(str(d))


def test_missing_run_json_is_a_clear_error(tmp_path):
    with pytest.raises(TraceErrors, match="run.json.*cannot open"):
        merge_run(str(tmp_path))


def test_an_untraced_source_has_no_input_process(tmp_path):
    """TracedJob.from(...): the first traced operator has no identified input, only sends."""
    topo = [
        {
            "op": "src",
            "parallelism": 1,
            "role": "source",
            "inputs": [],
            "out": {"to": "sink", "mode": "forward", "parallelism": 1, "max_parallelism": 128},
        },
        {"op": "sink", "parallelism": 1, "role": "sink", "inputs": ["src"], "out": None},
    ]
    r = FakeRun(topology=topo)
    for n in range(2):
        r.send("src", 0, 0, n, 0)
        r.recv("sink", 0, 0, "src", 0, 0, n)
    r.ckpt(1)
    r.notify(1)
    res, trace = merged(r, tmp_path)
    assert res.anomalies == []
    assert [p.id for p in trace.processes] == ["src[0]", "sink[0]", "coordinator"]
    assert [c.id for c in trace.channels] == ["src[0]>sink[0]"]
    assert kinds(trace) == set()


def test_a_failure_during_recovery_leaves_no_fake_survivor(tmp_path):
    """sink's attempt 1 is cancelled by a second failure before it initializes (seen in the
    campaign): the merge infers its restore of the recovery's checkpoint, so recovery 1 does not
    look as if sink kept its pre-failure state (which would be an inconsistent restore)."""
    r = FakeRun()
    r.read(0, 0)
    r.send("src", 0, 0, 0, 0)
    r.recv("sink", 0, 0, "src", 0, 0, 0)
    r.ckpt(1)
    r.notify(1)
    r.read(0, 1)
    r.send("src", 0, 0, 1, 0)
    r.recv("sink", 0, 0, "src", 0, 0, 1)
    r.ev("src", 0, 0, "fail", reason="injected")
    r.ev("src", 0, 1, "restore", id=1, state=1)
    r.ev("src", 0, 1, "fail", reason="injected again")
    r.restore(1, 2)
    r.read(0, 1, att=2)
    r.send("src", 0, 2, 0, 0)
    r.recv("sink", 0, 2, "src", 0, 2, 0)
    res, trace = merged(r, tmp_path)
    sink = [
        (e.type, e.ckpt, e.recovery, (e.attrs or {}).get("inferred", "")[:20])
        for e in trace.events
        if e.proc == "sink[0]" and e.type in ("fail", "restore")
    ]
    assert sink == [
        ("fail", None, None, ""),
        ("restore", 1, 1, "attempt 1 was cancel"),
        ("fail", None, None, ""),
        ("restore", 1, 2, ""),
    ]
    assert kinds(trace) == set()


def test_a_requested_failure_that_never_fired_is_not_exercised(tmp_path, snapcheck_cli):
    """--fail whose failure point was never reached: the trace says so (metadata.faults), the
    checker lists it as not exercised, and --require-faults turns that into exit 1."""
    r = FakeRun()
    _two_records_then_checkpoint(r)
    res = merge_run(str(r.write(tmp_path / "run", faults=["sink:0:50", "src:0:1"], fired={"src:0:1": 7})))
    assert res.header["metadata"]["faults"] == [
        {"fault": "Flink --fail sink:0:50", "proc": "sink[0]", "fired": False},
        {"fault": "Flink --fail src:0:1", "proc": "src[0]", "fired": True},
    ]
    path = tmp_path / "t.jsonl"
    res.write(str(path))
    report = check_trace(parse_trace(path.read_text(), str(path)), CheckOptions())
    assert [(f["proc"], f["exercised"]) for f in report.faults] == [("sink[0]", False), ("src[0]", True)]
    code, out = snapcheck_cli("flink", "check", str(path))
    assert code == 0 and "NOT EXERCISED: Flink --fail sink:0:50" in out and "recovery not exercised" in out
    code, _ = snapcheck_cli("flink", "check", "--require-faults", str(path))
    assert code == 1
    code, out = snapcheck_cli("check", "--require-faults", str(path))
    assert code == 1 and "NOT EXERCISED" in out
