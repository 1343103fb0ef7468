"""Every class of trace validation error: the message, the line, exit code 2, no traceback."""

import subprocess
import sys

import orjson
import pytest

from snapcheck.traces import TraceErrors
from snapcheck.traces.jsonl import parse_trace
from snapcheck.traces.validate import DEFAULT_MAX_ERRORS

HEADER = {
    "format": "snapcheck-trace",
    "version": 1,
    "processes": [{"id": "A"}, {"id": "B"}, {"id": "C"}],
    "channels": [
        {"id": "ab", "src": "A", "dst": "B"},
        {"id": "ba", "src": "B", "dst": "A"},
        {"id": "cb", "src": "C", "dst": "B"},
    ],
}


def text(*events, header=HEADER) -> str:
    lines = [header if isinstance(header, str) else orjson.dumps(header).decode()]
    lines += [e if isinstance(e, str) else orjson.dumps(e).decode() for e in events]
    return "\n".join(lines) + "\n"


def send(proc, idx, ch, mid, seq, **kw):
    return {"type": "send", "proc": proc, "idx": idx, "ch": ch, "mid": mid, "seq": seq, **kw}


def recv(proc, idx, ch, mid):
    return {"type": "recv", "proc": proc, "idx": idx, "ch": ch, "mid": mid}


def errors_of(*events, header=HEADER):
    with pytest.raises(TraceErrors) as exc:
        parse_trace(text(*events, header=header), "t.jsonl")
    return [(e.line, e.reason) for e in exc.value.errors]


def only_error(*events, header=HEADER):
    errs = errors_of(*events, header=header)
    assert len(errs) == 1, errs
    return errs[0]


def test_valid_trace_passes():
    t = parse_trace(text(send("A", 0, "ab", "m1", 1), recv("B", 0, "ab", "m1")))
    assert [e.line for e in t.events] == [2, 3]


def test_malformed_json():
    line, reason = only_error(send("A", 0, "ab", "m1", 1), '{"type": "recv", "proc": "B",')
    assert line == 3 and reason.startswith("malformed JSON")


def test_unknown_event_type():
    line, reason = only_error({"type": "snapshot", "proc": "A", "idx": 0})
    assert line == 2 and "unknown event type 'snapshot'" in reason


def test_missing_field():
    line, reason = only_error({"type": "send", "proc": "A", "idx": 0, "ch": "ab", "seq": 1})
    assert line == 2 and reason == "send: missing field 'mid'"


def test_mistyped_field():
    line, reason = only_error(send("A", 0, "ab", "m1", "one"))
    assert line == 2 and "field 'seq'" in reason and "integer" in reason


def test_unknown_field_is_rejected_not_ignored():
    line, reason = only_error(send("A", 0, "ab", "m1", 1, sqe=2))
    assert line == 2 and "unknown field 'sqe'" in reason


def test_unknown_process():
    line, reason = only_error({"type": "fail", "proc": "Z", "idx": 0})
    assert line == 2 and reason == "unknown process 'Z'"


def test_unknown_channel():
    line, reason = only_error(send("A", 0, "zz", "m1", 1))
    assert line == 2 and reason == "unknown channel 'zz'"


def test_receive_of_a_message_never_sent():
    line, reason = only_error(recv("B", 0, "ab", "ghost"))
    assert line == 2 and reason == "recv of a message never sent: 'ghost'"


def test_an_output_naming_a_message_never_sent():
    """Every other reference to a message was checked; an output's was not."""
    line, reason = only_error({"type": "output", "proc": "B", "idx": 0, "mid": "ghost", "value": 1})
    assert line == 2 and reason == "output of a message never sent: 'ghost'"


def test_duplicate_message_id():
    line, reason = only_error(send("A", 0, "ab", "m1", 1), send("A", 1, "ab", "m1", 2))
    assert line == 3 and "duplicate message identity: mid 'm1' was already sent at line 2" in reason


def test_duplicate_channel_sequence_number():
    line, reason = only_error(send("A", 0, "ab", "m1", 1), send("A", 1, "ab", "m2", 1))
    assert line == 3 and "seq 1 on 'ab' does not follow seq 1" in reason


def test_receive_by_a_process_that_is_not_the_destination():
    line, reason = only_error(send("A", 0, "ab", "m1", 1), recv("A", 1, "ab", "m1"))
    assert line == 3 and "recv on the wrong channel: A is not the destination of 'ab'" in reason


def test_receive_on_the_wrong_channel():
    line, reason = only_error(send("C", 0, "cb", "m1", 1), recv("B", 0, "ab", "m1"))
    assert line == 3 and "recv on the wrong channel: 'm1' received on 'ab' but sent on 'cb' (line 2)" in reason


def test_receive_on_the_wrong_channel_when_the_send_comes_later_in_the_file():
    line, reason = only_error(recv("B", 0, "ab", "m1"), send("C", 0, "cb", "m1", 1))
    assert line == 2 and "received on 'ab' but sent on 'cb'" in reason


def test_send_by_a_process_that_is_not_the_source():
    line, reason = only_error(send("B", 0, "ab", "m1", 1))
    assert line == 2 and "send on the wrong channel: B sends on 'ab', whose source is A" in reason


def test_out_of_order_per_process_sequence():
    line, reason = only_error(send("A", 0, "ab", "m1", 1), send("A", 2, "ab", "m2", 2))
    assert line == 3 and reason == "out-of-order per-process sequence: A event idx 2, expected 1"


def test_causally_impossible_history():
    # A receives b before sending a; B receives a before sending b: a cycle in happened-before.
    line, reason = only_error(
        recv("A", 0, "ba", "b"), send("A", 1, "ab", "a", 1), recv("B", 0, "ab", "a"), send("B", 1, "ba", "b", 1)
    )
    assert line == 2 and reason.startswith("causally impossible history: happened-before has a cycle")
    assert "A at line 2" in reason and "B at line 4" in reason


def test_receive_before_send_in_file_order_is_fine_when_causally_possible():
    t = parse_trace(text(recv("B", 0, "ab", "m1"), send("A", 0, "ab", "m1", 1)))
    assert len(t.events) == 2


def test_checkpoint_numbers_must_increase():
    ck = lambda idx, n: {"type": "checkpoint", "proc": "A", "idx": idx, "ckpt": n, "kind": "basic"}
    line, reason = only_error(ck(0, 2), ck(1, 2))
    assert line == 3 and "checkpoint numbers must increase: A ckpt 2 after ckpt 2" in reason


def test_restore_of_a_checkpoint_never_taken():
    line, reason = only_error(
        {"type": "fail", "proc": "A", "idx": 0}, {"type": "restore", "proc": "A", "idx": 1, "ckpt": 4}
    )
    assert line == 3 and "restore refers to checkpoint 4 of A, which it has not taken" in reason


@pytest.mark.parametrize(
    "elements, message",
    [
        ([["B", 3]], "takes list-state elements of checkpoint 3 of 'B', which it has not taken"),
        ([["Z", 1]], "takes list-state elements of checkpoint 1 of 'Z', which is no process of the header"),
    ],
)
def test_a_rescales_restore_names_checkpoints_taken(elements, message):
    """``restore attrs.elements`` names checkpoints by number (the checker's regional
    properties read them, the shrinker renumbers them): each must have been taken."""
    ck = {"type": "checkpoint", "proc": "B", "idx": 0, "ckpt": 1, "kind": "basic"}
    fail = {"type": "fail", "proc": "A", "idx": 0}
    restore = {"type": "restore", "proc": "A", "idx": 1, "ckpt": 0, "attrs": {"elements": [["B", 1], ["A", 0]]}}
    assert len(parse_trace(text(ck, fail, restore)).events) == 3
    line, reason = only_error(ck, fail, restore | {"attrs": {"elements": elements}})
    assert line == 4 and message in reason


def test_restore_labelled_with_an_older_round_than_its_checkpoint():
    """A round restored gives a process its checkpoint of that round or, after a regional
    fallback, of an older one: a restore of a round-2 checkpoint ``as round 1`` contradicts
    itself (it was trusted, and an aborted round 2 restored passed as round 1)."""
    ck = {"type": "checkpoint", "proc": "A", "idx": 0, "ckpt": 1, "kind": "coordinated", "round": 2}
    restore = {"type": "restore", "proc": "A", "idx": 2, "ckpt": 1}
    line, reason = only_error(ck, {"type": "fail", "proc": "A", "idx": 1}, {**restore, "round": 1})
    assert line == 4 and "restore: A restores checkpoint 1, of round 2, as round 1" in reason
    for fine in ({"round": 2}, {"round": 3}, {}):  # its own round, a later one that fell back to it, unsaid
        parse_trace(text(ck, {"type": "fail", "proc": "A", "idx": 1}, {**restore, **fine}))


def test_events_between_fail_and_restore():
    line, reason = only_error({"type": "fail", "proc": "A", "idx": 0}, send("A", 1, "ab", "m1", 1))
    assert line == 3 and "A has failed and records 'send' before a 'restore'" in reason


def test_record_of_the_wrong_end_of_a_channel():
    line, reason = only_error({"type": "record", "proc": "A", "idx": 0, "ckpt": 0, "ch": "ab", "mids": []})
    assert line == 2 and "A records the input part of 'ab' but is not its destination" in reason


def test_bad_header():
    line, reason = only_error(
        header={
            "format": "snapcheck-trace",
            "version": 1,
            "processes": [{"id": "A"}],
            "channels": [{"id": "c", "src": "A"}],
        }
    )
    assert line == 1 and reason == "bad header: missing field 'dst'"
    line, reason = only_error(header={"format": "other"})
    assert line == 1 and "snapcheck-trace header" in reason
    line, reason = only_error(header={"format": "snapcheck-trace", "version": 2, "processes": [], "channels": []})
    assert line == 1 and "unsupported trace format version 2" in reason


def test_error_count_is_capped_but_all_are_counted():
    events = [{"type": "fail", "proc": "Z", "idx": i} for i in range(50)]
    with pytest.raises(TraceErrors) as exc:
        parse_trace(text(*events), "t.jsonl")
    assert len(exc.value.errors) == 20 and exc.value.total == 50
    assert exc.value.render().endswith("... and 30 more error(s) not shown")


def test_cli_reports_file_line_reason_and_exits_2_without_traceback(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(text(send("A", 0, "ab", "m1", 1), recv("B", 0, "ab", "ghost")))
    good = tmp_path / "good.jsonl"
    good.write_text(text(send("A", 0, "ab", "m1", 1), recv("B", 0, "ab", "m1")))
    r = subprocess.run(
        [sys.executable, "-m", "snapcheck", "validate-trace", str(good), str(bad)], capture_output=True, text=True
    )
    assert r.returncode == 2
    assert f"{bad}:3: recv of a message never sent: 'ghost'" in r.stderr
    assert "Traceback" not in r.stderr
    assert f"{good}: OK (2 events" in r.stdout


def test_cli_missing_file_exits_2(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "snapcheck", "validate-trace", str(tmp_path / "nope.jsonl")],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and "cannot open" in r.stderr and "Traceback" not in r.stderr


def test_cli_usage_error_exits_2():
    r = subprocess.run([sys.executable, "-m", "snapcheck", "validate-trace"], capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_fast_schema_path_agrees_with_the_full_schema_validator():
    """The fast per-type check never accepts what the JSON Schema rejects."""
    import fastjsonschema

    from snapcheck.traces.schema import event_validator, fast_event_check

    samples = [
        send("A", 0, "ab", "m", 1),
        send("A", 0, "ab", "m", 0),
        send("A", 0, "ab", "", 1),
        send("A", 0, "ab", "m", True),
        send("A", -1, "ab", "m", 1),
        send("A", 0, "ab", "m", 1, kind="barrier"),
        send("A", 0, "ab", "m", 1, kind="weird"),
        send("A", 0, "ab", "m", 1, piggyback=[1]),
        send("A", 0, "ab", "m", 1, t="now"),
        send("A", 0, "ab", "m", 1, t=1.5, value={"x": [1]}),
        {"type": "record", "proc": "B", "idx": 0, "ckpt": 1, "ch": "ab", "mids": ["m", 3]},
        {"type": "record", "proc": "B", "idx": 0, "ckpt": 1, "ch": "ab", "mids": ["m"], "part": "output"},
        {"type": "checkpoint", "proc": "B", "idx": 0, "ckpt": 1, "kind": "basic", "vars": {"lc": 1}},
        {"type": "checkpoint", "proc": "B", "idx": 0, "ckpt": 1.0, "kind": "basic"},
        {"type": "replay", "proc": "B", "idx": 0, "ch": "ab", "mid": "x", "replay_of": "m", "from": "tape"},
    ]
    for d in samples:
        try:
            event_validator(d["type"])(d)
            schema_ok = True
        except fastjsonschema.JsonSchemaException:
            schema_ok = False
        if fast_event_check(d["type"])(d):
            assert schema_ok, d


@pytest.mark.parametrize(
    "event, reason",
    [
        ({"type": "fail", "proc": "X", "idx": 0}, "X is an external input log, which never fails"),
        ({"type": "restore", "proc": "X", "idx": 0, "ckpt": 0}, "X is an external input log, which never rolls back"),
    ],
)
def test_an_external_input_log_never_fails_nor_rolls_back(event, reason):
    """The header's role 'external' promises a log that never fails (every send durable);
    a fail or restore of one contradicts it (such a trace was judged clean)."""
    header = {**HEADER, "processes": [*HEADER["processes"], {"id": "X", "role": "external"}]}
    assert only_error(event, header=header) == (2, f"{reason} (its role in the header)")
    parse_trace(text({"type": "fail", "proc": "A", "idx": 0}, header=header))  # a task may


@pytest.mark.parametrize("etype", ["fail", "restore"])
def test_a_coordinator_failover_is_bad_input_saying_what_to_record(etype):
    """A coordinator keeps no checkpoint in the format, so its fail or restore cannot be
    judged (one was judged a whole-job restore-stale)."""
    header = {**HEADER, "processes": [*HEADER["processes"], {"id": "J", "role": "coordinator"}]}
    event = {"type": etype, "proc": "J", "idx": 0, **({"ckpt": 0} if etype == "restore" else {})}
    line, reason = only_error(event, header=header)
    verb = "fails" if etype == "fail" else "restores"
    assert line == 2 and reason.startswith(f"J is a coordinator and {verb}: a coordinator failover"), reason
    assert "record what the coordinator decides after it" in reason


@pytest.mark.parametrize(
    "where, value, reason",
    [
        ("params", {"aligned": "false"}, "field 'protocol.params.aligned' must be boolean"),
        ("params", {"guarantees": 5}, "field 'protocol.params.guarantees' must be array"),
        ("params", {"cic": ["bcs"]}, "field 'protocol.params.cic' must be string"),
        ("check", {"failures": 5}, "field 'metadata.expected.check.failures' must be a string (P0,P1, all or none)"),
        ("check", {"cut": {"A": 1.5}}, "field 'metadata.expected.check.cut.A' must be a checkpoint number or V"),
        ("check", {"cut": {"A": True}}, "field 'metadata.expected.check.cut.A' must be a checkpoint number or V"),
        ("check", {"cut": "A=1"}, "field 'metadata.expected.check.cut' must be object"),
        ("check", {"semantics": "all"}, "field 'metadata.expected.check.semantics' must be one of"),
        ("check", {"cuts": {"A": 1}}, "unknown field 'cuts'"),
        ("check", [1], "field 'metadata.expected.check' must be object"),
    ],
)
def test_what_the_checker_reads_from_the_header_is_typed(where, value, reason):
    """The protocol params and expected check options the checker reads are checked at
    line 1: aligned "false" was true, guarantees 5 and failures 5 ended check with a
    traceback, a cut of 1.5 or true was read as checkpoint 1, and a misspelt option was
    ignored; other params stay free-form."""
    if where == "params":
        header = {**HEADER, "protocol": {"name": "p", "params": {"interval": [1, "x"], **value}}}
    else:
        header = {**HEADER, "metadata": {"expected": {"verdict": "clean", "check": value}}}
    line, got = only_error(header=header)
    assert line == 1 and got.startswith("bad header: ") and reason in got, got
    ok = {**HEADER, "protocol": {"name": "p", "params": {"aligned": False, "guarantees": ["rdt"], "x": {}}}}
    parse_trace(
        text(header={**ok, "metadata": {"expected": {"check": {"cut": {"A": 1, "B": "V"}, "failures": "all"}}}})
    )


def test_a_rejected_event_keeps_its_place_in_its_process_sequence():
    """An event refused for its type or a field still counts in its process's idx
    sequence: the next event of the process is not also reported out of order (it was:
    "idx 1, expected 0", as if that event's idx were wrong)."""
    typo = {"type": "recieve", "proc": "A", "idx": 0}
    unknown = {**send("A", 0, "ab", "m1", 1), "sqe": 1}
    missing = {"type": "send", "proc": "A", "idx": 0, "ch": "ab", "seq": 1}
    for bad in (typo, unknown, missing):
        [(line, _)] = errors_of(bad, send("A", 1, "ab", "m2", 1))
        assert line == 2


def test_errors_are_listed_in_line_order():
    """A reference resolved at the end of the file (a receive of a message never sent) is
    listed at its own line among the others, not after them."""
    errs = errors_of(recv("B", 0, "ab", "ghost"), send("A", 0, "ab", "m1", 1), send("A", 2, "ab", "m2", 2))
    assert [line for line, _ in errs] == [2, 4], errs


def test_a_receive_of_a_refused_send_is_not_reported_again():
    """A send refused for a field of its own (an unknown one here) is the one error:
    its receive is not also reported as a receive of a message never sent."""
    errs = errors_of(send("A", 0, "ab", "m1", 1, colour="red"), recv("B", 0, "ab", "m1"))
    assert [line for line, _ in errs] == [2], errs


def test_the_errors_kept_are_the_first_by_line_even_when_found_last():
    """Past the cap, an error of an early line found at the end of the file (a receive
    of a message never sent) is kept in place of a later line's."""
    late = [send("A", i, "ab", f"m{i}", i + 1, seq_typo=1) for i in range(DEFAULT_MAX_ERRORS + 5)]
    errs = errors_of(recv("B", 0, "ab", "ghost"), *late)
    assert len(errs) == DEFAULT_MAX_ERRORS and errs[0][0] == 2 and "ghost" in errs[0][1], errs[:2]


@pytest.mark.parametrize(
    "field, value, path",
    [
        ("version", 1.0, "version"),
        ("seed", 7.0, "seed"),
        ("processes", [{"id": "A", "subtask": 0.0}, {"id": "B"}, {"id": "C"}], "processes[0].subtask"),
    ],
)
def test_an_integer_field_of_the_header_written_with_a_fraction_is_refused(field, value, path):
    """The header's integer fields must be written as integers, as an event's are: the
    JSON Schema (and ``1.0 == 1``) took ``"version": 1.0``."""
    header = dict(HEADER, **{field: value})
    line, reason = only_error(send("A", 0, "ab", "m1", 1), header=header)
    assert line == 1 and reason == (
        f"bad header: field {path!r} must be an integer written without a fraction, found {value if field != 'processes' else 0.0}"
    )


def test_nothing_follows_a_protocol_error():
    """docs/trace-format.md: a protocol_error ends the run. An event after it would be left
    unjudged by the checker (which judges the trace up to that line): the trace is bad input,
    and the recorder refuses to write one."""
    from snapcheck.traces import TraceRecorder
    from snapcheck.traces.errors import RecorderError, TraceErrors
    from snapcheck.traces.jsonl import parse_trace
    from snapcheck.traces.writer import dumps_trace

    rec = TraceRecorder(["A", "B"], [("ab", "A", "B")])
    rec.send("A", "ab")
    rec.protocol_error("A", "on_barrier raised KeyError")
    text = dumps_trace(rec.trace().header, rec.trace().events).decode()
    parse_trace(text, "t.jsonl")  # ending at the protocol_error: fine
    late = '{"type":"send","proc":"B","idx":0,"ch":"ab","mid":"ab:9","seq":1}\n'
    with pytest.raises(TraceErrors, match=r"t.jsonl:4: nothing follows the protocol_error at line 3"):
        parse_trace(text + late, "t.jsonl")
    with pytest.raises(RecorderError, match="nothing follows the protocol_error"):
        rec.send("B", "ab")


@pytest.mark.parametrize("n", ["0", "-1"])
def test_validate_trace_shows_at_least_the_first_error(n, tmp_path):
    """``--max-errors 0`` printed only "... and N more error(s) not shown", naming no file."""
    from click.testing import CliRunner

    from snapcheck.cli import cli

    res = CliRunner().invoke(cli, ["validate-trace", "--max-errors", n, str(tmp_path / "t.jsonl")])
    assert res.exit_code == 2 and "--max-errors" in res.output


def test_a_send_refused_for_its_meaning_is_not_reported_again_at_its_receive():
    """A barrier without its round is refused; its receive is not reported again as the
    receive of a message never sent (one error, not a cascade)."""
    from snapcheck.traces import TraceRecorder
    from snapcheck.traces.errors import TraceErrors
    from snapcheck.traces.jsonl import parse_trace
    from snapcheck.traces.writer import dumps_trace

    rec = TraceRecorder(["A", "B"], [("ab", "A", "B")])
    rec.recv("B", rec.barrier("A", "ab", round=1))
    lines = dumps_trace(rec.trace().header, rec.trace().events).decode().splitlines(keepends=True)
    lines[1] = lines[1].replace(',"round":1', "")
    with pytest.raises(TraceErrors) as caught:
        parse_trace("".join(lines), "t.jsonl")
    assert [str(e) for e in caught.value.errors] == ["t.jsonl:2: send: a barrier marker needs field 'round'"]


def test_an_arrive_after_the_message_was_processed_is_bad_input():
    """An ``arrive`` is a message received and not processed yet: one after its ``recv``
    passed, and the checker then reported the consumed message as stalled."""
    from snapcheck.traces import TraceRecorder
    from snapcheck.traces.errors import RecorderError

    rec = TraceRecorder(["U", "K"], [("u", "U", "K")])
    m = rec.send("U", "u")
    rec.recv("K", m)
    with pytest.raises(RecorderError, match="arrives at line 4, but it was already processed at line 3"):
        rec.arrive("K", m)


@pytest.mark.parametrize("again", ["round_start", "checkpoint"])
def test_a_round_number_used_again_is_bad_input(again):
    """A micro-batch re-run under its old number after a recovery: the checker judged the
    attempt the recovery undid (a missed orphan). A round starts once, and each process
    takes one checkpoint of it."""
    from snapcheck.traces import TraceRecorder
    from snapcheck.traces.errors import RecorderError

    rec = TraceRecorder(["A", {"id": "C", "role": "coordinator"}], [])
    rec.round_start("C", 2)
    rec.checkpoint("A", round=2)
    rec.fail("A")
    rec.restore("A", 0, recovery=1)
    with pytest.raises(
        RecorderError, match="round 2 starts again" if again == "round_start" else "second checkpoint of round 2"
    ):
        if again == "round_start":
            rec.round_start("C", 2)
        else:
            rec.checkpoint("A", round=2)


def test_a_restore_with_a_wrong_field_is_still_a_restore_for_the_events_after_it():
    """A restore naming a checkpoint never taken is one error: the events after it were
    read as if the process were still failed ("records 'send' before a 'restore'") and
    numbered in the old incarnation ("seq 1 does not follow seq 1")."""
    import json

    from snapcheck.traces.errors import TraceErrors
    from snapcheck.traces.jsonl import parse_trace

    lines = [
        {
            "format": "snapcheck-trace",
            "version": 1,
            "processes": [{"id": "A"}, {"id": "B"}],
            "channels": [{"id": "ab", "src": "A", "dst": "B"}],
            "protocol": {"name": "x", "params": {}},
        },
        {"type": "send", "proc": "A", "idx": 0, "ch": "ab", "mid": "m1", "seq": 1},
        {"type": "fail", "proc": "A", "idx": 1},
        {"type": "restore", "proc": "A", "idx": 2, "ckpt": 5},
        {"type": "send", "proc": "A", "idx": 3, "ch": "ab", "mid": "m1@1", "seq": 1},
    ]
    with pytest.raises(TraceErrors) as info:
        parse_trace("".join(json.dumps(x) + "\n" for x in lines))
    assert [(e.line, e.reason) for e in info.value.errors] == [
        (4, "restore refers to checkpoint 5 of A, which it has not taken")
    ]
