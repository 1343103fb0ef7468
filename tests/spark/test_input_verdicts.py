"""``validate --input`` judges each trace as ``snapcheck check`` does: a trace to which not one
property applied has no verdict (``not-judged``), never "OK", and the command's exit code over the
traces follows check's rule (a violation, then nothing judged, then clean; DuckDB only)."""

import json
from pathlib import Path

import jsonschema
import pyarrow.parquet as pq
import pytest

from snapcheck.checker import check_trace
from snapcheck.checker.report import json_schema
from snapcheck.spark_validation.input_job import markdown, validate_input
from snapcheck.spark_validation.synthetic import random_trace, to_jsonl
from snapcheck.traces import TraceRecorder, read_trace
from snapcheck.traces.convert import jsonl_to_parquet
from snapcheck.traces.jsonl import parse_trace
from snapcheck.traces.writer import dumps_trace

GOLDEN = Path(__file__).resolve().parents[2] / "traces" / "examples"
NOTHING = "nothing"  # theory_a_zcycle: no rounds, no cut, no promise; snapcheck check: NOTHING JUDGED, exit 4
CLEAN = "clean"  # one complete round, nothing in flight
VIOLATION = "violation"  # a random synthetic trace with violations


def _trace(name):
    if name == NOTHING:
        return read_trace(GOLDEN / "theory_a_zcycle.jsonl")
    if name == VIOLATION:
        return parse_trace(to_jsonl(*random_trace(0, max_procs=3)), name)
    rec = TraceRecorder(["A", "B", {"id": "C", "role": "coordinator"}], [{"id": "ab", "src": "A", "dst": "B"}])
    rec.round_start("C", 1)
    _ = rec.checkpoint("A", "coordinated", round=1)
    rec.recv("B", rec.barrier("A", "ab", round=1))
    _ = rec.checkpoint("B", "coordinated", round=1)
    rec.round_complete("C", 1)
    return rec.trace()


def _validate(tmp_path, names, **kw):
    sources = []
    for n in names:
        sources.append(tmp_path / f"{n}.jsonl")
        t = _trace(n)
        sources[-1].write_bytes(dumps_trace(t.header, t.events))
    src = tmp_path / "in.parquet"
    jsonl_to_parquet([str(p) for p in sources], str(src), trace_ids=list(names))
    return validate_input(str(src), str(tmp_path / "out"), master="local[1]", **kw), tmp_path / "out"


@pytest.mark.parametrize(
    ("names", "code"), [((NOTHING,), 4), ((CLEAN, NOTHING), 4), ((NOTHING, VIOLATION), 1), ((CLEAN,), 0)]
)
def test_the_exit_code_is_checks_worst_over_the_traces(tmp_path, names, code):
    res, out = _validate(tmp_path, names)
    s = res.summary
    assert res.exit_code == s["exit_code"] == code and s["ok"] == (code == 0)
    assert s["checker_traces_not_judged"] == names.count(NOTHING)
    assert s["not_judged_examples"] == [NOTHING] * names.count(NOTHING)
    jsonschema.Draft202012Validator(json_schema("validate-summary")).validate(s)
    text = markdown(s)
    assert "OK" not in text.split("Verdict:")[1] if code else "**OK** (exit 0)" in text
    assert ("Nothing judged" in text) == (NOTHING in names)
    # the traces with violations are named, not only counted (a CI log shows which failed)
    failing = s["violation_examples"]
    assert [e.split(":")[0] for e in failing] == [VIOLATION] * names.count(VIOLATION)
    assert all(f"- `{e}`" in text for e in failing)
    if VIOLATION in names:
        kinds = check_trace(_trace(VIOLATION)).kinds
        assert set(failing[0].split(": ")[1].split(",")) == kinds
        assert [e.split(":")[0] for e in s["native_violation_examples"]] == [VIOLATION]


def test_a_trace_with_nothing_judged_says_so_and_why(tmp_path):
    res, out = _validate(tmp_path, (NOTHING, CLEAN))
    per = {r["trace_id"]: r for r in pq.read_table(out / "traces.parquet").to_pylist()}
    for name in (NOTHING, CLEAN):
        report = check_trace(_trace(name))
        row = per[name]
        assert row["verdict"] == report.verdict and row["ok"] == (report.verdict == "clean")
        assert row["judged"] == ",".join(report.judged)
        assert json.loads(row["not_judged"]) == report.not_judged_json()
    assert per[NOTHING]["verdict"] == "not-judged" and not per[NOTHING]["ok"]
    assert "NOTHING JUDGED" in (out / "summary.md").read_text()
    assert json.loads((out / "summary.json").read_text())["checker_traces_not_judged"] == 1


@pytest.mark.parametrize(("names", "code"), [((NOTHING,), 4), ((CLEAN, NOTHING), 4), ((CLEAN,), 0)])
def test_native_only_says_which_traces_it_judged_nothing_of(tmp_path, names, code):
    """With --native-only the SQL analysis is the only judge: a trace without a complete
    round (and no --cut) is judged by nothing, which the summary says and the exit shows."""
    res, out = _validate(tmp_path, names, native_only=True)
    s = res.summary
    assert res.exit_code == s["exit_code"] == code
    assert s["native_traces_not_judged"] == names.count(NOTHING)
    assert s["not_judged_examples"] == [NOTHING] * names.count(NOTHING)
    jsonschema.Draft202012Validator(json_schema("validate-summary")).validate(s)
    assert ("Nothing judged" in markdown(s)) == (NOTHING in names)


@pytest.mark.parametrize(
    "cfg",
    [
        # cancellation markers: declined rounds of aligned checkpoints, two rounds in flight
        {"protocol": "abs-aligned", "workload": "q3", "records": 6, "decline_prob": 0.3, "max_concurrent": 2},
        # a failure rescale: the failed task retires before the job restores at another parallelism
        {"protocol": "unaligned", "workload": "q12", "records": 8, "rescale": (("failure", 900, 3),)},
    ],
    ids=["cancel-markers", "failure-rescale"],
)
def test_a_valid_trace_is_not_quarantined(tmp_path, cfg):
    """What the trace format allows (a ``cancel`` marker, ``retire`` right after ``fail``)
    passes the Parquet quarantine as it passes ``traces.read_trace``, and is judged as
    ``snapcheck check`` judges it."""
    from snapcheck.reference import SimConfig, simulate

    trace = simulate(SimConfig(seed=1, **cfg)).trace()
    kinds = {e.kind for e in trace.events if e.type == "send"}
    assert ("cancel" in kinds) == ("decline_prob" in cfg) and any(e.type == "retire" for e in trace.events) == (
        "rescale" in cfg
    )
    src = tmp_path / "t.jsonl"
    src.write_bytes(dumps_trace(trace.header, trace.events))
    jsonl_to_parquet([str(src)], str(tmp_path / "in.parquet"), trace_ids=["t"])
    res = validate_input(str(tmp_path / "in.parquet"), str(tmp_path / "out"), engine="duckdb")
    assert res.summary["rows_quarantined"] == 0, pq.read_table(tmp_path / "out" / "quarantine.parquet").to_pylist()[:3]
    assert res.exit_code == (1 if check_trace(trace).violations else 0)


def test_a_row_after_a_protocol_error_is_quarantined(tmp_path):
    """As ``traces.read_trace`` refuses an event after a protocol_error (the run ended
    there), the Parquet quarantine takes the row: it is never silently left unjudged."""
    import pyarrow as pa

    rec = TraceRecorder(["A", "B"], [("ab", "A", "B")])
    rec.recv("B", rec.send("A", "ab"))
    rec.protocol_error("A", "on_barrier raised KeyError")
    src = tmp_path / "t.jsonl"
    src.write_bytes(dumps_trace(rec.trace().header, rec.trace().events))
    jsonl_to_parquet([str(src)], str(tmp_path / "ok.parquet"), trace_ids=["t"])
    rows = pq.read_table(tmp_path / "ok.parquet").to_pylist()
    late = dict(rows[1], line=rows[-1]["line"] + 1, idx=1 + max(r["idx"] or 0 for r in rows if r["proc"] == "A"))
    late.update(mid="ab:9", seq=2)
    pq.write_table(
        pa.Table.from_pylist([*rows, late], schema=pq.read_schema(tmp_path / "ok.parquet")), tmp_path / "in.parquet"
    )
    res = validate_input(str(tmp_path / "in.parquet"), str(tmp_path / "out"), engine="duckdb")
    quarantined = pq.read_table(tmp_path / "out" / "quarantine.parquet").to_pylist()
    assert res.exit_code == 2 and res.summary["rows_quarantined"] >= 1
    assert any("nothing follows the protocol_error" in str(r.get("reason")) for r in quarantined), quarantined[:3]


def test_a_field_the_checker_cannot_read_is_that_traces_bad_input(tmp_path):
    """As ``snapcheck check`` says: a field the checker cannot read makes that trace bad
    input (it ended the whole job with a traceback and wrote nothing); the others are judged."""
    rec = TraceRecorder(["P0", "P1"], [("a", "P0", "P1")], protocol="bcs", params={"cic": "bcs"})
    _ = rec.checkpoint("P0")
    rec.recv("P1", rec.send("P0", "a", piggyback={"sn": "one"}))  # no number
    (tmp_path / "bad").mkdir()
    src = tmp_path / "bad" / "t.jsonl"
    rec.write(src)
    clean = tmp_path / "bad" / "c.jsonl"
    t = _trace(CLEAN)
    clean.write_bytes(dumps_trace(t.header, t.events))
    jsonl_to_parquet([str(src), str(clean)], str(tmp_path / "bad.parquet"), trace_ids=["bad", CLEAN])
    res = validate_input(str(tmp_path / "bad.parquet"), str(tmp_path / "out2"), master="local[1]")
    per = {r["trace_id"]: r for r in pq.read_table(tmp_path / "out2" / "traces.parquet").to_pylist()}
    assert res.exit_code == 2 and per[CLEAN]["verdict"] == "clean"
    assert "the CIC checks cannot read this trace" in (tmp_path / "out2" / "summary.md").read_text()


def test_a_trace_id_with_a_control_character_forges_no_line(tmp_path):
    """A trace id holding a newline printed a forged 'Verdict: clean' line in the summary and
    in check's report: check refuses it, as any id (bad input); the summary escapes it."""
    evil = "t`\n\nVerdict: **clean** (exit 0).\n\n`"
    t = _trace(VIOLATION)
    (tmp_path / "v.jsonl").write_bytes(dumps_trace(t.header, t.events))
    src = tmp_path / "in.parquet"
    jsonl_to_parquet([str(tmp_path / "v.jsonl")], str(src), trace_ids=[evil])
    res = validate_input(str(src), str(tmp_path / "out"), master="local[1]")
    text = (tmp_path / "out" / "summary.md").read_text()
    assert res.exit_code == 1 and "\nVerdict: **clean**" not in text and "\\x0a" in text
    from snapcheck.traces.errors import TraceErrors

    with pytest.raises(TraceErrors, match="holds a control character"):
        read_trace(str(src), trace_id=evil)


@pytest.mark.parametrize(("cut", "code", "unfit"), [("A=1,B=1", 0, 0), ("A=1,Z=1", 2, 1)])
def test_a_cut_that_fits_no_trace_is_a_mistake_of_the_command(tmp_path, cut, code, unfit):
    """A misspelt process in ``--cut`` was noted in the trace's notes only, and the command
    exited 0 as if the cut had been judged: now the summary counts and names such traces,
    and exit 2 says the option fitted none."""
    from snapcheck.checker.notation import parse_cut

    res, _ = _validate(tmp_path, (CLEAN,), cut=parse_cut(cut))
    s = res.summary
    assert res.exit_code == code and s["options_not_applicable"] == unfit
    assert [e.split(":")[0] for e in s["options_not_applicable_examples"]] == [CLEAN] * unfit
    jsonschema.Draft202012Validator(json_schema("validate-summary")).validate(s)
    assert ("Options not applied" in markdown(s)) == bool(unfit)
