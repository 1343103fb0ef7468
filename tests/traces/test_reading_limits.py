"""Bounded reading (line length), exact 64-bit integers, and a message received twice."""

import io
import subprocess
import sys

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from snapcheck.traces import TraceErrors, read_trace
from snapcheck.traces.lines import INT64_MAX, INT64_MIN, Unreadable, integer_problem, split_lines
from tests.traces.test_validation import only_error, recv, send, text

HEADER = (
    '{"format":"snapcheck-trace","version":1,"processes":[{"id":"A"},{"id":"B"}],'
    '"channels":[{"id":"ab","src":"A","dst":"B"}]}'
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=30),
    st.booleans(),
    st.integers(1, 64),
)
def test_split_lines_agrees_with_bytes_splitlines(lines, final_newline, chunk):
    """Any chunk size gives the same numbered lines as splitting the whole text."""
    import snapcheck.traces.lines as mod

    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    old = mod.CHUNK
    mod.CHUNK = chunk
    try:
        got = list(split_lines(io.BytesIO(data), limit=10**6))
    finally:
        mod.CHUNK = old
    want = list(enumerate(data.split(b"\n"), 1))
    if want and want[-1][1] == b"":
        want.pop()
    assert got == want


@pytest.mark.parametrize("chunk", [3, 1 << 20])
def test_a_line_over_the_limit_stops_reading_at_that_line(chunk):
    import snapcheck.traces.lines as mod

    old, mod.CHUNK = mod.CHUNK, chunk
    try:
        data = b"ok\n" + b"x" * 101 + b"\nnever read\n"
        with pytest.raises(Unreadable) as exc:
            list(split_lines(io.BytesIO(data), limit=100))
        assert exc.value.line == 2 and "longer than 100 bytes" in exc.value.reason
        assert [n for n, _ in split_lines(io.BytesIO(data), limit=101)] == [1, 2, 3]
    finally:
        mod.CHUNK = old


def test_dev_zero_is_rejected_quickly_in_bounded_memory():
    code = (
        "import time; from snapcheck.cli import main\n"
        "t = time.time()\n"
        "try:\n    main(['--max-line-bytes', '20000000', 'validate-trace', '/dev/zero'])\n"
        "except SystemExit as e:\n    code = e.code\n"
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1]\n"
        "print(code, time.time() - t, hwm)"
    )  # VmHWM, not ru_maxrss: the latter keeps the forking pytest worker's size across exec
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    code, seconds, rss_kb = out.stdout.split()
    assert code == "2" and float(seconds) < 10 and int(rss_kb) < 200_000, out
    assert "/dev/zero:1: line longer than 20,000,000 bytes" in out.stderr


@pytest.mark.parametrize(
    "literal, ok",
    [
        (str(INT64_MAX), True),
        (str(INT64_MIN), True),
        (str(INT64_MAX + 1), False),
        (str(INT64_MIN - 1), False),
        ("18446744073709551615", False),
        ("18446744073709551616", False),
        ("1" + "0" * 5000, False),
        ("0.1234567890123456789012", True),
        ('"12345678901234567890123"', True),
        ("1e300", True),
    ],
)
def test_integer_problem_is_exact(literal, ok):
    raw = f'{{"type": "send", "vars": {{"P0": [{literal}]}}}}'.encode()
    problem = integer_problem(raw)
    assert (problem is None) == ok
    if not ok:
        assert problem.startswith("field 'vars.P0[0]': integer ") and "signed 64-bit range" in problem


@pytest.mark.parametrize("field, value", [("seq", 2**63), ("seq", 2**64), ("ckpt", 2**64 + 7), ("idx", 2**70)])
def test_out_of_range_typed_fields_are_rejected_with_file_line_and_field(field, value):
    ev = (
        {"type": "checkpoint", "proc": "A", "idx": 0, "kind": "basic", "ckpt": 1}
        if field == "ckpt"
        else send("A", 0, "ab", "m1", 1)
    )
    ev[field] = 123456789
    raw = orjson.dumps(ev).decode().replace("123456789", str(value))
    line, reason = only_error(raw)
    assert line == 2 and f"field {field!r}" in reason and str(value) in reason


def test_free_form_integer_above_2_64_is_not_silently_a_float(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text(
        HEADER + '\n{"type":"checkpoint","proc":"A","idx":0,"kind":"basic","ckpt":1,'
        '"vars":{"P0":18446744073709551616}}\n'
    )
    with pytest.raises(TraceErrors) as exc:
        read_trace(p)
    assert str(exc.value) == (
        f"{p}:2: field 'vars.P0': integer 18446744073709551616 is outside the signed 64-bit range"
    )


@pytest.mark.parametrize(
    "value, reason",
    [
        ("123456789012345678901234567890", "field 'value': integer 1234"),  # orjson reads a float
        ("9" * 400, "field 'value': integer 9999"),  # orjson reads no number at all
        ('1, "value": 2', "key 'value' appears twice"),
    ],
)
def test_a_line_refused_as_it_is_parsed_keeps_its_place(value, reason, tmp_path):
    """A send refused for an integer outside 64 bits or a repeated key is one problem, as
    an event refused for a field is: its idx still counts and its mid is known, so the
    next event of its process and the receive of its message are not reported as well
    (they were: an out-of-order idx and a receive of a message never sent). The same for
    a Parquet row whose 'extra' holds the number."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from snapcheck.spark_validation.trace_udf import check_rows
    from snapcheck.traces.parquet import SCHEMA, row_of

    events = [send("A", 0, "ab", "m1", 1, value=0), send("A", 1, "ab", "m2", 2), recv("B", 0, "ab", "m1")]
    events.append(recv("B", 1, "ab", "m2"))
    lines = [orjson.dumps(e).decode() for e in events]
    lines[0] = lines[0].replace('"value":0', f'"value":{value}')
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([HEADER, *lines]) + "\n")
    rows = [row_of("t", 1, orjson.loads(HEADER), is_header=True)]
    rows += [row_of("t", n, e) for n, e in enumerate(events, 2)]
    rows[1]["extra"] = f'{{"value": {value}}}'
    pq.write_table(pa.Table.from_pylist(rows, SCHEMA), tmp_path / "t.parquet")
    for trace in (path, tmp_path / "t.parquet"):
        with pytest.raises(TraceErrors) as exc:
            read_trace(str(trace))
        assert [e.line for e in exc.value.errors] == [2], exc.value
        assert trace.suffix == ".parquet" or reason in exc.value.errors[0].reason
    result = check_rows(rows, "t", None, None, "partial")  # validate --input (Spark, DuckDB)
    assert result["problems"] == 1 and result["problem"].startswith("line 2: "), result


def test_values_round_trip_exactly_through_parquet(tmp_path):
    from snapcheck.traces.convert import jsonl_to_parquet, parquet_to_jsonl

    src = tmp_path / "t.jsonl"
    src.write_text(
        HEADER.replace('"channels"', '"seed":9223372036854775807,"channels"') + "\n"
        '{"type":"send","proc":"A","idx":0,"ch":"ab","mid":"m","seq":9223372036854775807,'
        '"value":{"a":-9223372036854775808,"f":0.1,"g":1e-300,"s":"\\u00e9"}}\n'
        '{"type":"recv","proc":"B","idx":0,"ch":"ab","mid":"m"}\n'
    )
    jsonl_to_parquet([str(src)], str(tmp_path / "t.parquet"))
    parquet_to_jsonl(str(tmp_path / "t.parquet"), str(tmp_path / "back.jsonl"))
    assert read_trace(tmp_path / "back.jsonl").events[0].value == {"a": -(2**63), "f": 0.1, "g": 1e-300, "s": "é"}
    assert (tmp_path / "back.jsonl").read_bytes() == orjson.dumps(
        orjson.loads(src.read_bytes().splitlines()[0])
    ) + b"\n" + b"\n".join(orjson.dumps(orjson.loads(x)) for x in src.read_bytes().splitlines()[1:]) + b"\n"


# -- a message received twice ---------------------------------------------------------
def test_a_message_processed_twice_is_a_validation_error_naming_both_lines():
    line, reason = only_error(send("A", 0, "ab", "m1", 1), recv("B", 0, "ab", "m1"), recv("B", 1, "ab", "m1"))
    assert line == 4
    assert "message received twice: 'm1' processed at line 4, but it was already processed at line 3" in reason


def test_received_twice_before_its_send_in_file_order_is_caught_too():
    line, reason = only_error(recv("B", 0, "ab", "m1"), recv("B", 1, "ab", "m1"), send("A", 0, "ab", "m1", 1))
    assert line == 3 and "already processed at line 2" in reason


def test_processed_then_discarded_is_received_twice_but_arrivals_are_not_counted():
    """A message's fate (processed or discarded) happens once; an arrive only buffers it,
    before its fate (as often as the trace says)."""
    from snapcheck.traces.jsonl import parse_trace

    arrive = {"type": "arrive", "proc": "B", "idx": 1, "ch": "ab", "mid": "m1"}
    discard = {"type": "discard", "proc": "B", "idx": 2, "ch": "ab", "mid": "m1", "reason": "duplicate"}
    line, reason = only_error(send("A", 0, "ab", "m1", 1), recv("B", 0, "ab", "m1"), dict(discard, idx=1))
    assert line == 4 and "'m1' discarded at line 4, but it was already processed at line 3" in reason
    line, reason = only_error(send("A", 0, "ab", "m1", 1), recv("B", 0, "ab", "m1"), arrive)  # arrives before it
    assert line == 4 and "'m1' arrives at line 4, but it was already processed at line 3" in reason
    line, reason = only_error(send("A", 0, "ab", "m1", 1), dict(discard, idx=0), recv("B", 1, "ab", "m1"))
    assert line == 4 and "'m1' processed at line 4, but it was already discarded at line 3" in reason
    parse_trace(text(send("A", 0, "ab", "m1", 1), dict(arrive, idx=0), arrive, recv("B", 2, "ab", "m1")))


def test_a_replay_is_a_new_incarnation_and_may_be_received():
    replay = {"type": "replay", "proc": "A", "idx": 1, "ch": "ab", "mid": "m1/r1", "replay_of": "m1", "from": "log"}
    from snapcheck.traces.jsonl import parse_trace

    t = parse_trace(text(send("A", 0, "ab", "m1", 1), recv("B", 0, "ab", "m1"), replay, recv("B", 1, "ab", "m1/r1")))
    assert len(t.events) == 4


def test_max_line_bytes_option_reaches_every_reader(tmp_path, snapcheck_cli):
    p = tmp_path / "t.jsonl"
    p.write_text(HEADER + "\n")
    code, out = snapcheck_cli("--max-line-bytes", "50", "check", str(p), stderr=True)
    assert code == 2 and f"{p}:1: line longer than 50 bytes" in out
    code, _ = snapcheck_cli("check", str(p))
    assert code == 4  # read: a header alone, nothing to judge


def test_an_in_process_cli_call_leaves_the_line_limit_as_it_found_it(tmp_path):
    """``snapcheck --max-line-bytes N`` called through ``cli.main`` in a process that reads
    traces itself (a test suite, a user's script) must not shrink its later reads."""
    from snapcheck.cli import main
    from snapcheck.traces.lines import max_line_bytes

    path = tmp_path / "t.jsonl"
    path.write_text(HEADER + "\n")
    before = max_line_bytes()
    with pytest.raises(SystemExit) as done:
        main(["--max-line-bytes", "20", "validate-trace", str(path)])
    assert done.value.code == 2  # the header is longer than 20 bytes
    assert max_line_bytes() == before
    assert read_trace(path).header.processes


# -- repeated keys -------------------------------------------------------------------
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12,
)


def _with_repeat(obj, key_value):
    """``obj`` as JSON text with one more (key, value) pair written into its first object
    that already has that key; None if no object has it."""
    key, value = key_value
    import json

    if isinstance(obj, dict):
        if key in obj:
            body = json.dumps(obj)
            return body[:-1] + (", " if obj else "") + json.dumps(key) + ": " + json.dumps(value) + "}"
        parts = []
        found = None
        for k, v in obj.items():
            sub = None if found else _with_repeat(v, key_value)
            found = found or sub
            parts.append(json.dumps(k) + ": " + (sub or json.dumps(v)))
        return "{" + ", ".join(parts) + "}" if found else None
    if isinstance(obj, list):
        for i, v in enumerate(obj):
            sub = _with_repeat(v, key_value)
            if sub is not None:
                return "[" + ", ".join(sub if j == i else json.dumps(w) for j, w in enumerate(obj)) + "]"
    return None


@settings(max_examples=300, deadline=None)
@given(_JSON, st.text(max_size=4), _JSON, st.sampled_from([{}, {"ensure_ascii": False}, {"separators": (",", ":")}]))
def test_duplicate_key_finds_exactly_the_repeated_keys(obj, key, value, style):
    """Any JSON value written in any style passes; with a key written twice into one of its
    objects it is refused naming the key (orjson would keep the last value silently)."""
    import json

    from snapcheck.traces.lines import duplicate_key

    raw = json.dumps(obj, **style).encode()
    assert duplicate_key(raw, orjson.loads(raw)) is None
    repeated = _with_repeat({key: 0, "x": obj}, (key, value))
    assert repeated is not None
    raw = repeated.encode()
    assert duplicate_key(raw, orjson.loads(raw)) == (
        f"key {key!r} appears twice in one object (which value is meant is ambiguous)"
    )


@pytest.mark.parametrize(
    "line",
    [
        '{"type":"send","proc":"A","idx":0,"ch":"ab","mid":"m1","seq":1,"proc":"A"}',
        '{"type": "send", "proc": "A", "idx": 0, "ch": "ab", "mid": "m1", "seq": 1, "seq": 1}',
        '{"type":"send","proc":"A","idx":0,"ch":"ab","mid":"m1","seq":1,"attrs":{"k":1,"k":2}}',
    ],
)
def test_an_event_with_a_repeated_key_is_malformed(line, tmp_path):
    """Even when both values are equal or the key is nested, a line that repeats a key is
    refused at its line (tests/hostile/test_corpus.py: the same in Parquet's 'extra')."""
    path = tmp_path / "t.jsonl"
    path.write_text(HEADER + "\n" + line + "\n")
    with pytest.raises(TraceErrors) as exc:
        read_trace(str(path))
    assert f"{path}:2: malformed JSON: key " in str(exc.value) and "appears twice" in str(exc.value)


@pytest.mark.parametrize("filler, blank", [(b"", True), (b" \t\r", True), (b"\x0c", False), (b" \x0b ", False)])
def test_only_json_whitespace_makes_a_blank_line(filler, blank, tmp_path):
    """A line of spaces, tabs and a CR is blank and skipped; a form feed or vertical tab
    is not JSON whitespace, so the line is malformed (it used to be skipped unseen)."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(HEADER.encode() + b"\n" + filler + b"\n" + b'{"type":"fail","proc":"A","idx":0}\n')
    if blank:
        assert len(read_trace(str(path)).events) == 1
    else:
        with pytest.raises(TraceErrors) as exc:
            read_trace(str(path))
        assert f"{path}:2: malformed JSON" in str(exc.value)
