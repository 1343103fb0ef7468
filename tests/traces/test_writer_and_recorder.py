"""The one trace writer (fast and checked paths), atomic files, and the recorder's checks at the call."""

import doctest
import os

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from snapcheck.checker import report
from snapcheck.traces import (
    RecorderError,
    TraceRecorder,
    atomic,
    gc_pause,
    lines,
    model,
    read_trace,
    recorder,
    schema,
    writer,
)
from snapcheck.traces.errors import UsageError
from snapcheck.traces.jsonl import parse_trace
from snapcheck.traces.writer import TraceWriter, dumps_trace, write_trace
from tests.traces.strategies import recorded_traces


@pytest.mark.parametrize("module", [atomic, gc_pause, lines, model, recorder, schema, writer, report])
def test_doctests(module):
    result = doctest.testmod(module)
    assert result.failed == 0 and result.attempted > 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(recorded_traces())
def test_checked_and_fast_paths_write_the_same_bytes(rec):
    """The recorder (checked path) and dumps_trace (fast path) over the same events agree,
    and so does the fast path over the parsed Event objects."""
    data = rec.dumps()
    assert dumps_trace(rec.header, rec.events) == data
    assert dumps_trace(rec.header, parse_trace(data.decode()).events) == data
    w = TraceWriter(rec.header)
    for d in rec.events:
        w.event(d)
    assert w.dumps() == data


def two() -> TraceRecorder:
    return TraceRecorder(["A", "B", "C"], [("ab", "A", "B"), ("bc", "B", "C")], protocol="t")


@pytest.mark.parametrize(
    "call, fragment",
    [
        (lambda r: r.send("B", "ab"), "send on the wrong channel: B sends on 'ab', whose source is A"),
        (lambda r: r.recv("C", r.send("A", "ab")), "recv on the wrong channel: C is not the destination of 'ab'"),
        (lambda r: r.arrive("A", r.send("A", "ab")), "arrive on the wrong channel: A is not the destination"),
        (lambda r: r.send("Z", "ab"), "unknown process 'Z'"),
        (lambda r: r.send("A", "zz"), "unknown channel 'zz'"),
        (lambda r: r.recv("B", "ab:7"), "unknown message id 'ab:7'"),
        (lambda r: r.replay("B", "nope"), "unknown message id 'nope'"),
        (lambda r: r.record("B", 0, "ab", ["ghost"]), "unknown message id 'ghost'"),
        # accepted, and the file it wrote was then refused by every reader ("output of a message never sent")
        (lambda r: r.output("B", 1, mid="ghost"), "unknown message id 'ghost'"),
        (lambda r: r.checkpoint("A", kind="weird"), "field 'kind' must be one of"),
        (lambda r: r.restore("A", 3), "refers to checkpoint 3 of A, which it has not taken"),
        (lambda r: r.send("A", "ab", value=object()), "send by A: a value cannot be written as JSON"),
        (lambda r: r.send("A", "ab", value={1: 2}), "a value cannot be written as JSON"),
        (lambda r: r.send("A", "ab", value=float("nan")), "NaN and infinity are not JSON numbers"),
        (lambda r: r.send("A", "ab", value=2**63), "field 'value': integer 9223372036854775808 is outside"),
        (lambda r: r.send("A", "ab", value={"x": [-(2**63) - 1]}), "field 'value.x[0]': integer"),
        (lambda r: r.send("A", "ab", size=-1), "field 'size' must be bigger than or equal to 0"),
    ],
)
def test_recorder_rejects_a_bad_call_at_the_call(call, fragment):
    rec = two()
    with pytest.raises(RecorderError) as exc:
        call(rec)
    assert fragment in str(exc.value)


def test_receiving_twice_is_rejected_with_both_lines():
    rec = two()
    m = rec.send("A", "ab")
    rec.recv("B", m)
    with pytest.raises(RecorderError, match=r"'ab:1' processed at line 4, but it was already processed at line 3"):
        rec.recv("B", m)
    with pytest.raises(RecorderError, match=r"discarded at line 4, but it was already processed at line 3"):
        rec.discard("B", m)
    rec.arrive("B", rec.send("A", "ab"))
    rec.arrive("B", "ab:2")  # arrivals only buffer the message: not its fate
    rec.recv("B", "ab:2")


def test_a_refused_call_records_nothing_and_recording_goes_on():
    """After a RecorderError the recorder's numbering is unchanged, so the trace it goes
    on to write is exactly the trace of the accepted calls."""
    rec, ref = two(), two()
    for r in (rec, ref):
        m = r.send("A", "ab", value=1)
        r.recv("B", m)
    for bad in (
        lambda: rec.recv("B", "ab:1"),
        lambda: rec.send("A", "ab", value=object()),
        lambda: rec.checkpoint("B", kind="weird"),
        lambda: rec.send("B", "ab"),
    ):
        with pytest.raises(RecorderError):
            bad()
    for r in (rec, ref):
        r.checkpoint("B")
        r.recv("C", r.send("B", "bc"))
    assert rec.dumps() == ref.dumps()
    parse_trace(rec.dumps().decode())


def test_streaming_recorder_writes_only_accepted_lines(tmp_path):
    path = tmp_path / "s.jsonl"
    with TraceRecorder(["A", "B"], [("ab", "A", "B")], out=path) as rec:
        m = rec.send("A", "ab")
        with pytest.raises(RecorderError):
            rec.recv("A", m)
        rec.recv("B", m)
        assert len(path.read_bytes().splitlines()) == 3  # written through, line by line
    assert [e.type for e in parse_trace(path.read_text()).events] == ["send", "recv"]


def test_bad_header_is_a_recorder_error():
    with pytest.raises(RecorderError, match="names unknown process 'Q'"):
        TraceRecorder(["A"], [("aq", "A", "Q")])
    with pytest.raises(RecorderError, match="the header: a value cannot be written as JSON"):
        TraceRecorder(["A"], [], metadata={"x": object()})


# -- atomic files --------------------------------------------------------------------
def test_write_trace_is_atomic_and_refuses_its_input(tmp_path):
    rec = two()
    rec.recv("B", rec.send("A", "ab"))
    out = tmp_path / "t.jsonl"
    out.write_bytes(b"precious\n")
    os.chmod(out, 0o640)

    def events():
        yield rec.events[0]
        raise RuntimeError("producer died")

    with pytest.raises(RuntimeError):
        write_trace(out, rec.header, events())
    assert out.read_bytes() == b"precious\n"
    write_trace(out, rec.header, rec.events)
    assert out.read_bytes() == rec.dumps()
    assert (out.stat().st_mode & 0o777) == 0o640  # the existing file's mode is kept
    assert [p.name for p in tmp_path.iterdir()] == ["t.jsonl"]  # no temporary file left behind
    link = tmp_path / "link.jsonl"
    link.symlink_to(out)
    hard = tmp_path / "hard.jsonl"
    os.link(out, hard)
    for alias in (out, link, hard):
        with pytest.raises(UsageError, match="the output is the input"):
            write_trace(alias, rec.header, rec.events, inputs=[out])
    assert out.read_bytes() == rec.dumps()


def test_missing_directory_and_directory_target_are_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="directory .*nowhere does not exist"):
        atomic.write_atomic(tmp_path / "nowhere" / "x.json", b"{}")
    with pytest.raises(UsageError, match="is a directory"):
        atomic.write_atomic(tmp_path, b"{}")


def test_a_special_file_is_written_to_never_replaced(tmp_path):
    """A named pipe (like /dev/null or /dev/stdout) given as the output receives the
    content and stays a pipe: renaming a temporary file over it would replace it."""
    import stat
    import threading

    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    atomic.write_atomic(fifo, b"through the pipe\n")
    reader.join(10)
    assert got == [b"through the pipe\n"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["out.fifo"]  # no temporary file either
    atomic.ensure_writable(fifo)  # not refused: it exists and is no directory


def test_a_symbolic_link_is_followed_and_kept(tmp_path):
    """Writing through a link replaces the file it points to (atomically, in that file's
    directory) and leaves the link a link; a dangling link into a missing directory is
    refused naming that directory."""
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "t.txt"
    target.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    atomic.write_atomic(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new"
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["t.txt"]
    dangling = tmp_path / "dangling.txt"
    dangling.symlink_to(tmp_path / "gone" / "x.txt")
    for attempt in (atomic.ensure_writable, lambda p: atomic.write_atomic(p, "x")):
        with pytest.raises(UsageError, match="directory .*gone does not exist"):
            attempt(dangling)


def test_new_files_get_the_umask_mode(tmp_path):
    old = os.umask(0o027)
    try:
        atomic.write_atomic(tmp_path / "n.txt", "x")
    finally:
        os.umask(old)
    assert ((tmp_path / "n.txt").stat().st_mode & 0o777) == 0o640


def test_fast_path_of_the_simulator_matches_the_checked_writer():
    """The simulator's event log writes through dumps_trace; its trace passes the checked
    writer event by event, giving the same bytes."""
    from snapcheck.reference import SimConfig, simulate

    res = simulate(SimConfig(protocol="unaligned", workload="q3", seed=3, records=30, failures=(("join[0]", 900),)))
    data = res.dumps()
    header, *events = data.splitlines()
    w = TraceWriter(orjson.loads(header))
    for raw in events:
        w.event(orjson.loads(raw))
    w.finish()
    assert w.dumps() == data


def test_an_explicit_initial_checkpoint_is_number_0_and_the_next_is_1(tmp_path):
    """kind="initial" was numbered 1 by the recorder and always refused ("an initial
    checkpoint has ckpt 0, found 1"): the documented explicit initial checkpoint could not
    be recorded."""
    r = TraceRecorder(["A", "B"], [("ab", "A", "B")])
    assert (r.checkpoint("A", kind="initial"), r.checkpoint("A")) == (0, 1)
    r.recv("B", r.send("A", "ab"))
    r.write(tmp_path / "t.jsonl")
    events = read_trace(tmp_path / "t.jsonl").events
    assert [(e.kind, e.ckpt) for e in events if e.type == "checkpoint"] == [("initial", 0), ("basic", 1)]
    with pytest.raises(RecorderError):  # not after another event of the process
        r.checkpoint("B", kind="initial")


def test_recorder_mistakes_of_construction_and_after_close_are_said(tmp_path):
    """A string for the processes made one process per letter; recording after close()
    raised "I/O operation on closed file"; a file in a directory that does not exist
    raised FileNotFoundError (write() said "cannot write")."""
    with pytest.raises(RecorderError, match="processes: expected a list, not the string 'src'"):
        TraceRecorder("src", [])
    with pytest.raises(RecorderError, match="params: expected a dict"):
        TraceRecorder(["A"], [], params=[1])
    from snapcheck.traces.errors import UsageError

    with pytest.raises(UsageError, match="cannot write"):
        TraceRecorder(["A"], [], out=tmp_path / "missing" / "t.jsonl")
    r = TraceRecorder(["A", "B"], [("ab", "A", "B")], out=tmp_path / "t.jsonl")
    r.send("A", "ab")
    r.close()
    with pytest.raises(RecorderError, match="the recorder is closed"):
        r.send("A", "ab")
    assert len(read_trace(tmp_path / "t.jsonl").events) == 1
