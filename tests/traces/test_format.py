"""Trace format v1: round trips (JSONL, Parquet), the recorder, the schema, and the reader."""

import io
import os
import tracemalloc

import jsonschema
import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from snapcheck.traces import TraceRecorder, iter_events, read_trace
from snapcheck.traces.convert import jsonl_to_parquet, parquet_to_jsonl
from snapcheck.traces.jsonl import parse_trace
from snapcheck.traces.parquet import trace_ids
from snapcheck.traces.schema import schema
from snapcheck.traces.writer import dumps_trace
from tests.traces.strategies import recorded_traces

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(recorded_traces())
def test_recorded_traces_are_valid_and_round_trip_through_jsonl(rec):
    data = rec.dumps()
    trace = parse_trace(data.decode())
    assert len(trace.events) == len(rec.events)
    assert dumps_trace(trace.header, trace.events) == data


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(recorded_traces(), recorded_traces())
def test_jsonl_parquet_round_trip_is_lossless(tmp_path, rec1, rec2):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    rec1.write(a)
    rec2.write(b)
    pq = tmp_path / "both.parquet"
    rows = jsonl_to_parquet([str(a), str(b)], str(pq), trace_ids=["one", "two"])
    assert rows == len(rec1.events) + len(rec2.events) + 2
    assert trace_ids(str(pq)) == ["one", "two"]
    for tid, src in (("one", a), ("two", b)):
        out = tmp_path / f"{tid}.jsonl"
        parquet_to_jsonl(str(pq), str(out), tid)
        assert out.read_bytes() == src.read_bytes()


def _through_a_pipe(data: bytes, keep: list) -> str:
    """A pipe fed ``data`` by a thread, as ``/dev/fd/N`` (what a shell's ``<(zcat t.gz)``
    gives): a source that can be read only once, a second reading finding it empty."""
    import threading

    r, w = os.pipe()
    keep.append(r)

    def feed():
        with os.fdopen(w, "wb") as f:
            f.write(data)

    threading.Thread(target=feed, daemon=True).start()
    return f"/dev/fd/{r}"


@pytest.mark.skipif(not os.path.isdir("/dev/fd"), reason="needs /dev/fd")
@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(recorded_traces())
def test_a_source_read_once_converts_whole(tmp_path_factory, rec):
    """convert reads each source once: a pipe converts to the same bytes as the file,
    and a pipe whose last line is bad converts to an error, the target untouched."""
    from snapcheck.traces.errors import TraceErrors

    tmp = tmp_path_factory.mktemp("pipe")
    data, fds = rec.dumps(), []
    (tmp / "f.jsonl").write_bytes(data)
    jsonl_to_parquet([str(tmp / "f.jsonl")], str(tmp / "f.parquet"), ["t"])
    parquet_to_jsonl(str(tmp / "f.parquet"), str(tmp / "f.out.jsonl"))
    jsonl_to_parquet([_through_a_pipe(data, fds)], str(tmp / "p.parquet"), ["t"])
    parquet_to_jsonl(str(tmp / "p.parquet"), str(tmp / "p.jsonl"))
    assert (tmp / "p.jsonl").read_bytes() == (tmp / "f.out.jsonl").read_bytes() == data
    parquet_to_jsonl(_through_a_pipe(data, fds), str(tmp / "q.jsonl"))  # JSONL -> JSONL
    assert (tmp / "q.jsonl").read_bytes() == data
    (tmp / "keep.jsonl").write_bytes(b"precious")
    with pytest.raises(TraceErrors):
        parquet_to_jsonl(_through_a_pipe(data + b"not json\n", fds), str(tmp / "keep.jsonl"))
    assert (tmp / "keep.jsonl").read_bytes() == b"precious"
    for fd in fds:
        os.close(fd)


@SETTINGS
@given(recorded_traces())
def test_every_line_satisfies_the_published_json_schema(rec):
    """The shipped JSON Schema (checked with the reference jsonschema implementation)
    accepts every line the recorder writes, header included."""
    validator = jsonschema.Draft202012Validator(schema())
    for raw in rec.dumps().splitlines():
        validator.validate(orjson.loads(raw))


def test_published_schema_rejects_a_typo_field():
    validator = jsonschema.Draft202012Validator(schema())
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"type": "send", "proc": "A", "idx": 0, "ch": "c", "mid": "m", "sqe": 1})


@pytest.mark.parametrize(
    "params",
    [
        {"cic": "hnmr"},
        {"guarantees": ["z-cycle"]},
        {"guarantees": ["rdt", "exactly-once"]},
        {"channel_state": "observed_at_restore"},
    ],
)
def test_a_misspelt_protocol_fact_is_a_bad_header_not_a_fact_left_out(params):
    """The checker decides what to judge from these facts: a value it does not know would
    silently leave properties unjudged (``"cic": "hnmr"`` judged no forced checkpoint)."""
    from snapcheck.traces.errors import TraceErrors
    from snapcheck.traces.protocol_facts import CHANNEL_STATE_FORMS, CIC_FORMS, PROMISABLE

    header = orjson.loads(dumps_trace(TraceRecorder(["A"], [], protocol="p").trace().header, []))
    header["protocol"]["params"] = params
    with pytest.raises(TraceErrors, match="bad header: field 'protocol.params"):
        parse_trace(orjson.dumps(header).decode() + "\n", "t.jsonl")
    facts = schema()["$defs"]["header"]["properties"]["protocol"]["properties"]["params"]["properties"]
    assert facts["cic"]["enum"] == list(CIC_FORMS) and facts["guarantees"]["items"]["enum"] == list(PROMISABLE)
    assert facts["channel_state"]["enum"] == list(CHANNEL_STATE_FORMS)


@pytest.mark.parametrize(
    "elements, ok",
    [
        ([["src[0]", 4], ["src[1]", 0]], True),
        ([["src[0]"]], False),
        ([["src[0]", -1]], False),
        ([[4, "src[0]"]], False),
    ],
)
def test_published_schema_types_the_elements_a_rescales_restore_names(elements, ok):
    """``restore attrs.elements``: [process, checkpoint number] pairs, which the checker's
    regional properties read and the shrinker renumbers."""
    validator = jsonschema.Draft202012Validator(schema())
    event = {"type": "restore", "proc": "src[1]", "idx": 3, "ckpt": 2, "round": 5, "attrs": {"elements": elements}}
    assert validator.is_valid(event) == ok
    from snapcheck.traces.schema import fast_event_check

    assert fast_event_check("restore")(event) == ok  # the generated fast check agrees


def test_same_recording_gives_identical_bytes():
    def run():
        rec = TraceRecorder(["A", "B"], [("ab", "A", "B")], protocol="x", seed=3)
        m = rec.send("A", "ab", value={"v": 1})
        rec.checkpoint("B", kind="basic")
        rec.recv("B", m)
        return rec.dumps()

    assert run() == run()


def test_recorder_names_regenerated_messages_uniquely_after_restore():
    rec = TraceRecorder(["A", "B"], [("ab", "A", "B")])
    m1 = rec.send("A", "ab")
    c = rec.checkpoint("A")
    m2 = rec.send("A", "ab")
    rec.fail("A")
    rec.restore("A", c, recovery=1)
    m2again = rec.send("A", "ab")
    assert (m1, m2, m2again) == ("ab:1", "ab:2", "ab:2@1")
    trace = parse_trace(rec.dumps().decode())
    sends = [e for e in trace.events if e.type == "send"]
    assert [e.seq for e in sends] == [1, 2, 2]


def test_recorder_streams_to_file_line_by_line(tmp_path):
    path = tmp_path / "live.jsonl"
    with TraceRecorder(["A", "B"], [("ab", "A", "B")], out=path) as rec:
        m = rec.send("A", "ab")
        # Already on disk before close: a crash would not lose it.
        assert len(path.read_bytes().splitlines()) == 2
        rec.recv("B", m)
    assert [e.type for e in read_trace(path).events] == ["send", "recv"]


def test_replay_and_discard_events():
    rec = TraceRecorder(["A", "B"], [("ab", "A", "B")], protocol="unc")
    m = rec.send("A", "ab", logged=True)
    rec.recv("B", m)
    r = rec.replay("A", m, source="log")
    rec.discard("B", r, reason="duplicate")
    t = parse_trace(rec.dumps().decode())
    replay = t.events[2]
    assert (replay.type, replay.mid, replay.replay_of, replay.source) == ("replay", "ab:1/r1", "ab:1", "log")
    assert '"from":"log"' in rec.dumps().decode()


def _big_trace(path, n_msgs):
    header = {
        "format": "snapcheck-trace",
        "version": 1,
        "processes": [{"id": "A"}, {"id": "B"}],
        "channels": [{"id": "ab", "src": "A", "dst": "B"}],
    }
    with open(path, "wb") as f:
        f.write(orjson.dumps(header) + b"\n")
        for i in range(n_msgs):
            f.write(
                orjson.dumps({"type": "send", "proc": "A", "idx": i, "ch": "ab", "mid": f"m{i}", "seq": i + 1}) + b"\n"
            )
            f.write(orjson.dumps({"type": "recv", "proc": "B", "idx": i, "ch": "ab", "mid": f"m{i}"}) + b"\n")


def test_streaming_reader_does_not_keep_events(tmp_path):
    """One pass over 100k events uses far less memory than materializing them."""
    path = tmp_path / "big.jsonl"
    _big_trace(path, 50_000)
    tracemalloc.start()
    count = sum(1 for _ in iter_events(path))
    _, streaming_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert count == 100_000
    tracemalloc.start()
    events = list(iter_events(path))
    _, list_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(events) == 100_000
    assert streaming_peak * 3 < list_peak, (streaming_peak, list_peak)


def test_parse_accepts_file_objects_and_skips_blank_lines():
    rec = TraceRecorder(["A", "B"], [("ab", "A", "B")])
    rec.recv("B", rec.send("A", "ab"))
    text = rec.dumps().decode().replace("\n", "\n\n")
    assert len(list(iter_events(io.StringIO(text)))) == 2


def test_parquet_rows_are_numbered_by_the_lines_of_the_jsonl_form(tmp_path):
    """JSONL -> Parquet numbers a trace's rows 1, 2, 3, … (the lines of the JSONL form it
    converts back to): a blank line of the source leaves no gap, which a reader would
    take for a missing row."""
    import pyarrow.parquet as pq

    rec = TraceRecorder(["A", "B"], [("ab", "A", "B")])
    rec.recv("B", rec.send("A", "ab"))
    src, out, back = tmp_path / "t.jsonl", tmp_path / "t.parquet", tmp_path / "back.jsonl"
    src.write_bytes(rec.dumps().replace(b"\n", b"\n\n", 1))
    jsonl_to_parquet([str(src)], str(out))
    assert pq.read_table(out).column("line").to_pylist() == [1, 2, 3]
    parquet_to_jsonl(str(out), str(back))
    assert back.read_bytes() == rec.dumps()


def test_parquet_round_trip_keeps_fields_and_bytes_of_canonical_lines(tmp_path):
    """docs/trace-format.md (Parquet form): back from Parquet, a trace has the same header
    and events; the same bytes when written as the kit writes it, else its lines compact
    and an event's typed-column fields first, in column order."""
    rec = TraceRecorder(["A", "B"], [("ab", "A", "B")])
    rec.checkpoint("A")
    src, out, back = tmp_path / "t.jsonl", tmp_path / "t.parquet", tmp_path / "back.jsonl"
    for moved in (False, True):
        lines = rec.dumps().splitlines()
        if moved:  # the same event, other bytes: ckpt before kind (canonical: after)
            lines[1] = lines[1].replace(b'"kind":"basic","ckpt":1', b'"ckpt":1,"kind":"basic"')
        src.write_bytes(b"\n".join(lines) + b"\n")
        jsonl_to_parquet([str(src)], str(out))
        parquet_to_jsonl(str(out), str(back))
        assert (back.read_bytes() == src.read_bytes()) is not moved
        assert back.read_bytes() == rec.dumps()
        assert [orjson.loads(x) for x in back.read_bytes().splitlines()] == [orjson.loads(x) for x in lines]
