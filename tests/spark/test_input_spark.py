"""``validate --input``: quarantine accounting on corrupted Parquet input, and the SQL analysis
cross-checked against ``checker.check_trace`` on the same traces, on DuckDB and on Spark (one run
each): both engines must write the same rows."""

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from snapcheck.checker import CheckOptions, check_trace
from snapcheck.reference.catalogue import header_facts
from snapcheck.spark_validation.synthetic import random_trace, to_jsonl
from snapcheck.spark_validation.trace_udf import ROUND_KINDS, native_cannot_judge
from snapcheck.traces import TraceRecorder, read_trace
from snapcheck.traces.jsonl import parse_trace
from snapcheck.traces.parquet import SCHEMA, row_of

GOLDEN = Path(__file__).resolve().parents[2] / "traces" / "examples"
CUT = {"P0": 1, "P1": 1}  # the cut of worked example D of docs/theory.md (also fits 2-process synthetic traces)
SEEDS = range(24)
CATALOGUE_SEEDS = range(100, 106)
DELIMIT_SEEDS = range(200, 206)


def _rows(tid, header, events):
    return [row_of(tid, 1, header, is_header=True)] + [row_of(tid, n, d) for n, d in enumerate(events, 2)]


def _corrupted(base_header, base_events):
    """(trace id, rows, rule the quarantine must report) for each kind of damage."""

    def rows(tid):
        return _rows(tid, base_header, base_events)

    out = []
    r = rows("bad-proc")
    r[3]["proc"] = None
    out.append(("bad-proc", r, "missing-field"))
    r = rows("bad-json")
    r[4]["extra"] = '{"mids": ["x"'
    out.append(("bad-json", r, "malformed-json"))
    r = rows("gap")
    del r[[i for i, x in enumerate(r) if x["type"] == "recv"][0]]
    out.append(("gap", r, "per-process-sequence"))
    r = rows("ghost-proc")
    r[5]["proc"] = "ZZ"
    out.append(("ghost-proc", r, "unknown-process"))
    r = rows("dup-mid")
    sends = [x for x in r if x["type"] == "send" and x["kind"] is None]
    sends[1]["mid"] = sends[0]["mid"]
    out.append(("dup-mid", r, "duplicate-identity"))
    r = rows("bad-type")
    r[2]["type"] = "snapshot"
    out.append(("bad-type", r, "unknown-event-type"))
    out.append(("no-header", rows("no-header")[1:], "header-count"))
    # an output naming a message that no one sent (as the JSONL reader also refuses it)
    last = base_events[-1]
    nxt = 1 + max(e["idx"] for e in base_events if e["proc"] == last["proc"])
    ghost = {"type": "output", "proc": last["proc"], "idx": nxt, "mid": "ghost", "value": 1}
    out.append(
        (
            "ghost-output",
            rows("ghost-output") + [row_of("ghost-output", len(base_events) + 2, ghost)],
            "message-never-sent",
        )
    )
    # happened-before cycle: each process receives the other's message before sending its own.
    header = {
        "format": "snapcheck-trace",
        "version": 1,
        "processes": [{"id": "A"}, {"id": "B"}],
        "channels": [{"id": "ab", "src": "A", "dst": "B"}, {"id": "ba", "src": "B", "dst": "A"}],
    }
    ev = [
        {"type": "recv", "proc": "A", "idx": 0, "ch": "ba", "mid": "m2"},
        {"type": "send", "proc": "A", "idx": 1, "ch": "ab", "mid": "m1", "seq": 1},
        {"type": "recv", "proc": "B", "idx": 0, "ch": "ab", "mid": "m1"},
        {"type": "send", "proc": "B", "idx": 1, "ch": "ba", "mid": "m2", "seq": 1},
    ]
    out.append(("hb-cycle", _rows("hb-cycle", header, ev), "rejected-by-validator"))
    return out


@pytest.fixture(scope="module")
def input_file(tmp_path_factory):
    """(path, traces by id, corrupted traces, row count) of one Parquet file with every kind of damage."""
    d = tmp_path_factory.mktemp("input")
    traces, rows = {}, []
    for s in SEEDS:
        header, events = random_trace(s, max_procs=3 if s % 2 else 5)
        traces[f"t{s}"] = parse_trace(to_jsonl(header, events), f"t{s}")
        rows += _rows(f"t{s}", header, events)
    # A protocol the catalogue knows as aligned, named without params: the catalogue's facts decide.
    for s in CATALOGUE_SEEDS:
        header, events = random_trace(s, max_procs=3)
        header = dict(header, protocol={"name": "abs-aligned"})
        traces[f"cat{s}"] = parse_trace(to_jsonl(header, events), f"cat{s}")
        rows += _rows(f"cat{s}", header, events)
    # Barriers that only trigger checkpoints: rounds complete with barriers still travelling.
    for s in DELIMIT_SEEDS:
        header, events = random_trace(s, max_procs=3)
        protocol = dict(header["protocol"])
        protocol["params"] = dict(protocol.get("params") or {}, barriers_delimit_channel_state=False)
        header = dict(header, protocol=protocol)
        traces[f"markers{s}"] = parse_trace(to_jsonl(header, events), f"markers{s}")
        rows += _rows(f"markers{s}", header, events)
    # A round complete only because its barrier need not arrive: a record overtook the
    # barrier on a non-FIFO channel and is an orphan of it.
    for delimit in (True, False):
        rec = TraceRecorder(
            ["A", "B", {"id": "C", "role": "coordinator"}],
            [{"id": "a2b", "src": "A", "dst": "B", "fifo": False}],
            protocol="mine",
            params={"aligned": False, "barriers_delimit_channel_state": delimit},
        )
        _ = rec.checkpoint("A", "coordinated", round=1)
        rec.barrier("A", "a2b", round=1)
        rec.recv("B", rec.send("A", "a2b"))
        _ = rec.checkpoint("B", "coordinated", round=1)
        rec.round_complete("C", 1)
        t = rec.trace()
        traces[f"overtaken-{delimit}"] = t
        rows += _rows(f"overtaken-{delimit}", t.header.to_dict(), [e.to_dict() for e in t.events])
    for path in sorted(GOLDEN.glob("theory_*.jsonl")) + sorted(GOLDEN.glob("checkmate_fig2*.jsonl")):
        t = read_trace(path)
        traces[path.stem] = t
        rows += _rows(path.stem, t.header.to_dict(), [e.to_dict() for e in t.events])
    header, events = random_trace(1000, max_procs=3)
    bad = _corrupted(header, events)
    for _, r, _ in bad:
        rows += r
    orphan_row = dict(rows[5], trace_id=None)  # a row that belongs to no trace
    rows.append(orphan_row)
    path = d / "traces.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), path)
    return path, traces, bad, len(rows)


_RUNS: dict = {}


def _run(input_file, engine: str):
    """(result, output directory) of ``validate --input`` on ``engine``, once per module."""
    from snapcheck.spark_validation.input_job import validate_input

    path = input_file[0]
    if (path, engine) not in _RUNS:
        out = path.parent / f"out-{engine}"
        res = validate_input(str(path), str(out), master="local[2]", engine=engine, cut=CUT)
        assert res.summary["engine"] == engine
        _RUNS[(path, engine)] = res, out
    return _RUNS[(path, engine)]


@pytest.fixture(scope="module", params=["duckdb", pytest.param("spark", marks=pytest.mark.spark)])
def checked(request, input_file):
    if request.param == "spark":
        request.getfixturevalue("spark")
    res, out = _run(input_file, request.param)
    _, traces, bad, n_rows = input_file
    return res, traces, bad, n_rows, out


def test_every_row_is_checked_or_quarantined_with_its_reason(checked):
    res, traces, bad, n_rows, out = checked
    s = res.summary
    assert s["rows_in"] == n_rows
    assert s["rows_in"] == s["rows_checked"] + s["rows_quarantined"]
    assert s["rows_quarantined"] == sum(len(r) for _, r, _ in bad) + 1
    assert s["traces_checked"] == len(traces) and s["traces_quarantined"] == len(bad)
    for _, _, rule in bad:
        assert s["quarantine_rules"].get(rule, 0) >= 1, rule
    q = pq.read_table(out / "quarantine.parquet").to_pylist()
    assert len(q) == s["rows_quarantined"]
    assert {r["trace_id"] for r in q} == {tid for tid, _, _ in bad} | {None}
    assert all(r["trace_reason"] for r in q)
    by_trace = {r["trace_id"]: r["trace_reason"] for r in q}
    assert "idx" in by_trace["gap"] and "never sent" not in by_trace["gap"]
    assert "causally impossible" in by_trace["hb-cycle"]
    assert by_trace[None] == "missing trace_id"
    assert res.exit_code == 1  # violations found (takes precedence over bad input)


def test_a_refused_row_keeps_its_place_in_its_process_sequence(checked):
    """One row of an unknown type is one problem, as for the JSONL reader (``traces.validate``):
    the next events of its process are not reported out of order as well."""
    res, _, _, _, out = checked
    q = pq.read_table(out / "quarantine.parquet").to_pylist()
    reasons = [r["reason"] for r in q if r["trace_id"] == "bad-type" and r["reason"]]
    assert "unknown event type snapshot" in reasons
    assert not [r for r in reasons if "per-process sequence" in r]
    gap = [r["reason"] for r in q if r["trace_id"] == "gap" and r["reason"]]
    assert len([r for r in gap if "per-process sequence" in r]) == 1  # a missing row: one break, where it is


def test_spark_native_results_equal_the_checker_on_the_same_traces(checked):
    res, traces, _, _, out = checked
    native = Counter(
        (r["trace_id"], r["subject"], r["kind"], r["mid"])
        for r in pq.read_table(out / "violations.parquet").to_pylist()
    )
    expected = Counter()
    for tid, t in traces.items():
        base = dict(
            properties={"consistency", "channel-state"}, max_per_result=10**9, facts=header_facts(t.header.protocol)
        )  # as snapcheck check does
        try:
            report = check_trace(t, CheckOptions(cut=CUT, **base))
        except ValueError:  # the cut does not fit this trace
            report = check_trace(t, CheckOptions(**base))
        for v in report.violations:
            if v.kind in ROUND_KINDS and not native_cannot_judge(v):
                subject = "cut" if v.subject.startswith("cut ") else v.subject
                expected[(tid, subject, v.kind, v.witness["messages"][0])] += 1
    assert native == expected
    kinds = {k for _, _, k, _ in native}
    assert {"orphan", "dropped", "phantom", "duplicate-recorded", "aligned-in-flight"} <= kinds
    assert native[("theory_d_dropped", "cut", "dropped", "P0>P1:1")] == 1
    assert [k[2] for k in native if k[0] == "overtaken-False"] == ["orphan"]  # judged: its barrier need not arrive
    assert not [k for k in native if k[0] == "overtaken-True"]  # not complete: its barrier never arrived
    assert ("theory_d_phantom", "cut", "phantom", "P0>P1:2") in native
    assert res.summary["native_vs_checker"]["traces_disagreeing"] == 0


def test_aligned_comes_from_the_catalogue_when_the_header_omits_it(checked):
    """``abs-aligned`` without params: the checker (with the catalogue's facts, as ``snapcheck check``)
    and the SQL analysis both hold the traces to empty channel state; without the facts the checker
    would not (so the facts are what decides)."""
    res, traces, _, _, out = checked
    native = Counter(
        r["trace_id"]
        for r in pq.read_table(out / "violations.parquet").to_pylist()
        if r["kind"] == "aligned-in-flight" and r["subject"].startswith("round ")
    )
    with_facts = without = 0
    for s in CATALOGUE_SEEDS:
        t = traces[f"cat{s}"]
        opts = dict(properties={"consistency", "channel-state"}, max_per_result=10**9)
        n = sum(
            v.kind == "aligned-in-flight" and v.subject.startswith("round ")
            for v in check_trace(t, CheckOptions(facts=header_facts(t.header.protocol), **opts)).violations
        )
        assert native[f"cat{s}"] == n
        with_facts += n
        without += sum(v.kind == "aligned-in-flight" for v in check_trace(t, CheckOptions(**opts)).violations)
    assert with_facts > 0 and without == 0


def test_per_trace_checker_results(checked):
    res, traces, _, _, out = checked
    per = {r["trace_id"]: r for r in pq.read_table(out / "traces.parquet").to_pylist()}
    assert set(per) == set(traces)
    a = per["theory_a_zcycle"]
    assert a["n_useless"] == len(check_trace(traces["theory_a_zcycle"]).useless) > 0
    assert per["theory_d_recorded"]["native_violations"] == 0
    assert res.summary["useless_checkpoints"] >= a["n_useless"]


def _table(path: Path) -> list[tuple]:
    """Rows of a Parquet file or directory, in a canonical order (engines write in any order)."""
    rows = pq.read_table(path).to_pylist()
    return sorted(tuple(sorted((k, repr(v)) for k, v in r.items())) for r in rows)


@pytest.mark.spark
def test_duckdb_and_spark_write_the_same_results(spark, input_file):
    """The same statements on both engines: same summary, same rows in every output file."""
    (duck, duck_out), (sp, sp_out) = _run(input_file, "duckdb"), _run(input_file, "spark")
    drop = ("engine", "seconds")
    assert {k: v for k, v in duck.summary.items() if k not in drop} == {
        k: v for k, v in sp.summary.items() if k not in drop
    }
    for name in ("violations.parquet", "quarantine.parquet", "traces.parquet"):
        assert _table(duck_out / name) == _table(sp_out / name), name


@pytest.mark.parametrize("engine", ["duckdb", pytest.param("spark", marks=pytest.mark.spark)])
def test_a_column_the_format_does_not_have_is_bad_input(request, input_file, tmp_path, engine):
    """A column beyond the v1 ones is data no reader would look at: exit 2 naming it,
    never a silently ignored field (a JSONL event with an unknown field is refused too)."""
    from snapcheck.spark_validation.input_job import validate_input
    from snapcheck.traces.errors import TraceErrors

    if engine == "spark":
        request.getfixturevalue("spark")
    table = pq.read_table(input_file[0])
    path = tmp_path / "with-ts.parquet"
    pq.write_table(table.append_column("ts", pa.array(range(table.num_rows), pa.int64())), path)
    with pytest.raises(TraceErrors, match="unknown column\\(s\\) 'ts'"):
        validate_input(str(path), str(tmp_path / "out"), master="local[2]", engine=engine, cut=CUT)
