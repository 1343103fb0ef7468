"""Trace format of rescaling and finished tasks: validation (FILE:LINE), Parquet round trip."""

from __future__ import annotations

import json

import pytest

from snapcheck.traces import read_trace
from snapcheck.traces.errors import TraceErrors
from tests.rescale.gen import build


def _lines(tmp_path):
    rec = build(7, 3, 2, 8, 1, 12)
    path = tmp_path / "ok.jsonl"
    rec.write(path)
    read_trace(str(path))  # valid as generated
    return [json.loads(x) for x in path.read_text().splitlines()]


def _write(tmp_path, lines, name="bad.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _errors(path):
    with pytest.raises(TraceErrors) as exc:
        read_trace(str(path))
    return [str(e) for e in exc.value.errors]


def _restore_of(lines, proc):
    return next(n for n, x in enumerate(lines) if x.get("type") == "restore" and x["proc"] == proc)


def test_unknown_source_process(tmp_path):
    lines = _lines(tmp_path)
    n = _restore_of(lines, "g1.agg[0]")
    lines[n]["sources"][0]["proc"] = "agg[9]"
    errs = _errors(_write(tmp_path, lines))
    assert any(f"bad.jsonl:{n + 1}:" in e and "unknown process 'agg[9]'" in e for e in errs), errs


def test_source_checkpoint_not_taken(tmp_path):
    lines = _lines(tmp_path)
    n = _restore_of(lines, "g1.agg[0]")
    lines[n]["sources"][0]["ckpt"] = 5
    errs = _errors(_write(tmp_path, lines))
    assert any(f":{n + 1}:" in e and "which it has not taken" in e for e in errs), errs


def test_overlapping_sources(tmp_path):
    lines = _lines(tmp_path)
    n = _restore_of(lines, "g1.agg[0]")
    s = lines[n]["sources"]
    s.append(dict(s[0]))
    errs = _errors(_write(tmp_path, lines))
    assert any(f":{n + 1}:" in e and "overlap" in e for e in errs), errs


def test_a_restore_naming_a_later_round_than_its_sources_is_read_and_judged(tmp_path):
    """A restore of round 2 whose sources hold round 1 restores round 1 fallen back, as a
    restore of a process's own checkpoint may; it was refused as bad input. (Sources of two
    rounds in one restore: ``tests/checker/test_rescale_hand.py``, ``state-wrong-round``.)"""
    from snapcheck.checker import check_trace

    lines = _lines(tmp_path)
    n = _restore_of(lines, "g1.agg[0]")
    lines[n]["round"] = 2
    report = check_trace(read_trace(_write(tmp_path, lines)))
    assert any(r.property == "rescale-state" for r in report.results) and report.ok


def test_mapping_onto_someone_elses_channel(tmp_path):
    lines = _lines(tmp_path)
    n = _restore_of(lines, "g1.agg[0]")
    lines[n]["channels"][0]["new"] = "g1.src[0]>g1.agg[1]"
    errs = _errors(_write(tmp_path, lines))
    assert any(f":{n + 1}:" in e and "not the destination" in e for e in errs), errs


def test_the_ranges_of_one_source_overlap(tmp_path):
    """Two ranges of one source that share key groups take them twice from one checkpoint
    (only two sources sharing one were refused)."""
    lines = _lines(tmp_path)
    n = _restore_of(lines, "g1.agg[0]")
    src = next(x for x in lines[n]["sources"] if x.get("key_groups"))
    lo, hi = src["key_groups"][0]
    src["key_groups"] = [[lo, hi], [hi, hi]]
    errs = _errors(_write(tmp_path, lines))
    assert any(f":{n + 1}:" in e and f"gives key groups {hi}..{hi} twice" in e for e in errs), errs


@pytest.mark.parametrize("then_retire", [True, False])
def test_a_task_a_rescale_replaces_after_a_crash_still_retires(tmp_path, then_retire):
    """A failure-triggered rescale: the old task crashes, and the new ones take its
    checkpoint. Without a ``retire`` after the ``fail``, the checker would count what the
    old task did after that checkpoint as kept (a zombie keeping its final state, and its
    records processed again by the new tasks as duplicates): refused, naming the restore
    and what to write, where it used to be judged as those violations."""
    lines = _lines(tmp_path)
    n = next(n for n, x in enumerate(lines) if x.get("type") == "retire" and x["proc"] == "agg[0]")
    retire = lines[n]
    fail = {"type": "fail", "proc": "agg[0]", "idx": retire["idx"], "reason": "crash"}
    lines[n : n + 1] = [fail, {**retire, "idx": retire["idx"] + 1}] if then_retire else [fail]
    path = _write(tmp_path, lines)
    if then_retire:
        read_trace(str(path))
        return
    taker = next(k for k, x in enumerate(lines) if x.get("type") == "restore" and "agg[0]" in str(x.get("sources")))
    errs = _errors(path)
    assert any(f":{taker + 1}:" in e and "neither restores nor retires" in e for e in errs), errs


def test_event_after_retire(tmp_path):
    lines = _lines(tmp_path)
    n = next(n for n, x in enumerate(lines) if x.get("type") == "retire" and x["proc"] == "agg[0]")
    idx = lines[n]["idx"] + 1
    lines.insert(n + 1, {"type": "checkpoint", "proc": "agg[0]", "idx": idx, "kind": "basic", "ckpt": 7})
    errs = _errors(_write(tmp_path, lines))
    assert any(f":{n + 2}:" in e and "retired at line" in e for e in errs), errs


def test_appearing_process_must_start_with_sources(tmp_path):
    lines = _lines(tmp_path)
    n = _restore_of(lines, "g1.agg[1]")
    del lines[n]["sources"]
    errs = _errors(_write(tmp_path, lines))
    assert any(f":{n + 1}:" in e and "appears later" in e for e in errs), errs


def test_replay_on_unmapped_channel(tmp_path):
    lines = _lines(tmp_path)
    n = _restore_of(lines, "g1.agg[0]")
    lines[n]["channels"] = [m for m in lines[n]["channels"] if not m["old"].endswith("agg[0]")]
    errs = _errors(_write(tmp_path, lines))
    assert any("replay on the wrong channel" in e and "no restore maps" in e for e in errs), errs


def test_key_group_outside_max_parallelism(tmp_path):
    lines = _lines(tmp_path)
    n = _restore_of(lines, "g1.agg[0]")
    lines[n]["sources"][0]["key_groups"] = [[0, 99]]
    errs = _errors(_write(tmp_path, lines))
    assert any(f":{n + 1}:" in e and "outside max_parallelism" in e for e in errs), errs


def test_a_sends_key_group_outside_its_receivers_max_parallelism(tmp_path):
    """A record whose key group the receiving operator cannot have: bad input naming the
    line, not an ``in-flight-lost`` or misrouted record reported by the checker."""
    lines = _lines(tmp_path)
    max_par = {p["id"]: p["max_parallelism"] for p in lines[0]["processes"] if p.get("max_parallelism")}
    dst = {c["id"]: c["dst"] for c in lines[0]["channels"]}
    n = next(i for i, e in enumerate(lines) if e.get("type") == "send" and e.get("key_group") is not None)
    lines[n]["key_group"] = max_par[dst[lines[n]["ch"]]]
    errs = _errors(_write(tmp_path, lines))
    assert any(f":{n + 1}:" in e and "send: key_group" in e and "outside max_parallelism" in e for e in errs), errs


def test_parquet_round_trip(tmp_path):
    """The new fields (sources, channels, key_group, appears, retire) survive Parquet byte for byte."""
    from snapcheck.traces.convert import jsonl_to_parquet, parquet_to_jsonl

    rec = build(11, 2, 3, 8, 2, 10)
    src = tmp_path / "r.jsonl"
    rec.write(src)
    jsonl_to_parquet([str(src)], str(tmp_path / "r.parquet"))
    parquet_to_jsonl(str(tmp_path / "r.parquet"), str(tmp_path / "back.jsonl"))
    assert (tmp_path / "back.jsonl").read_bytes() == src.read_bytes()
    trace = read_trace(str(tmp_path / "r.parquet"))
    assert any(e.sources for e in trace.events) and any(e.key_group is not None for e in trace.events)


def test_lines_valid_against_the_json_schema(tmp_path):
    """Every line of a rescale trace is valid against the published JSON Schema (draft 2020-12)."""
    jsonschema = pytest.importorskip("jsonschema")
    from snapcheck.traces.schema import schema

    validator = jsonschema.Draft202012Validator(schema())
    lines = _lines(tmp_path)
    lines.append({"type": "finish", "proc": "g1.src[0]", "idx": 999})
    for x in lines:
        validator.validate(x)


def test_a_refused_restore_is_not_reported_again_as_a_missing_first_restore(tmp_path):
    """The restore's key-group range is beyond Flink's bound: that line is the problem. The
    next event of the process said its first event was not a restore, which was false."""
    lines = _lines(tmp_path)
    n = _restore_of(lines, "g1.agg[0]")
    lines[n]["sources"][0]["key_groups"] = [[0, 40000]]
    errs = _errors(_write(tmp_path, lines))
    assert any(f":{n + 1}:" in e and "key_groups" in e for e in errs), errs
    assert not [e for e in errs if "its first event is" in e], errs


def test_a_source_of_a_later_round_than_the_restore_names_is_bad_input(tmp_path):
    """As for a restore of a process's own checkpoint: no completion of a round names a
    later round's checkpoint."""
    lines = _lines(tmp_path)
    n = _restore_of(lines, "g1.agg[0]")
    lines[n]["round"] = 0
    errs = _errors(_write(tmp_path, lines))
    assert any(f":{n + 1}:" in e and "of round 1, as round 0" in e for e in errs), errs
