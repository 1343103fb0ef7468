"""Trace validation on hand-made traces (traces.TraceRecorder): correct runs are
accepted, a mutated step is rejected at that step (FILE:LINE), traces outside the
specifications' scope are errors. The mapping itself is tested without TLC."""

import pytest

from snapcheck.checker.tla import conform as conformance
from snapcheck.checker.tla.conform import ACCEPT, ERROR, REJECT
from snapcheck.checker.tla.trace_events import OutOfScope, causal_order, tla, tla_function
from snapcheck.checker.tla.tracelog import tracelog_text
from snapcheck.reference.catalogue import tla_mappings
from snapcheck.traces import TraceRecorder
from snapcheck.traces.jsonl import parse_trace


def conform(paths, **kw):
    """``snapcheck.checker.tla.conform.conform`` with the catalogue's specifications."""
    return conformance.conform(paths, tla_mappings(), **kw)


def prepare(trace):
    return conformance.prepare(trace, tla_mappings())


def write(rec: TraceRecorder, path) -> str:
    rec.write(path)
    return str(path)


def line_of(rec: TraceRecorder, **match) -> int:
    """File line (header = 1) of the first recorded event with these fields."""
    for n, e in enumerate(rec.events, 2):
        if all(e.get(k) == v for k, v in match.items()):
            return n
    raise AssertionError(f"no event {match}")


def two_messages(reordered: bool = False) -> TraceRecorder:
    """a sends two messages to b; b processes them in order, or the second first (non-FIFO)."""
    rec = TraceRecorder(["a", "b"], [("a>b", "a", "b")], protocol="chandy-lamport")
    m1, m2 = rec.send("a", "a>b"), rec.send("a", "a>b")
    for m in (m2, m1) if reordered else (m1, m2):
        rec.recv("b", m)
    return rec


def chandy_lamport(record_mids=None, with_record=True, twice=False, rnd=1) -> TraceRecorder:
    """A coordinator starts round ``rnd`` (1) at a; b's message m is in transit on b>a
    and a records it as the channel state of b>a (``twice``: in two identical records)."""
    rec = TraceRecorder(
        [{"id": "co", "role": "coordinator"}, "a", "b"],
        [{"id": "co>a", "src": "co", "dst": "a", "kind": "control"}, ("a>b", "a", "b"), ("b>a", "b", "a")],
        protocol="chandy-lamport",
    )
    rec.round_start("co", rnd)
    trigger = rec.barrier("co", "co>a", rnd)
    m = rec.send("b", "b>a", value=1)
    rec.recv("a", trigger)
    ck = rec.checkpoint("a", kind="coordinated", round=rnd)
    ab = rec.barrier("a", "a>b", rnd)
    rec.recv("a", m)  # processed while b>a is recorded
    rec.recv("b", ab)
    rec.checkpoint("b", kind="coordinated", round=rnd)
    ba = rec.barrier("b", "b>a", rnd)
    rec.send("b", "b>a", value=2)  # after the marker: not in the snapshot
    rec.recv("a", ba)
    for _ in range(2 if twice else 1 if with_record else 0):
        rec.record("a", ck, "b>a", [m] if record_mids is None else record_mids)
    rec.round_complete("co", rnd)
    return rec


def aligned(late_processing=False) -> TraceRecorder:
    """ABS Algorithm 1: a aligns barriers from s1 and s2; the record behind s1's
    barrier waits for the snapshot (unless late_processing: the mutant)."""
    rec = TraceRecorder(
        [{"id": "co", "role": "coordinator"}, {"id": "s1", "role": "source"}, {"id": "s2", "role": "source"}, "a"],
        [
            {"id": "co>s1", "src": "co", "dst": "s1", "kind": "control"},
            {"id": "co>s2", "src": "co", "dst": "s2", "kind": "control"},
            ("s1>a", "s1", "a"),
            ("s2>a", "s2", "a"),
        ],
        protocol="abs-aligned",
    )
    rec.round_start("co", 1)
    t1, t2 = rec.barrier("co", "co>s1", 1), rec.barrier("co", "co>s2", 1)
    for s, t, ch in (("s1", t1, "s1>a"), ("s2", t2, "s2>a")):
        rec.recv(s, t)
        rec.checkpoint(s, kind="coordinated", round=1)
        rec.barrier(s, ch, 1)
    behind = rec.send("s1", "s1>a", value=7)
    rec.recv("a", "s1>a:b1")
    if late_processing:
        rec.recv("a", behind)  # processed from a blocked input
    rec.recv("a", "s2>a:b1")
    rec.checkpoint("a", kind="coordinated", round=1)
    if not late_processing:
        rec.recv("a", behind)
    rec.round_complete("co", 1)
    return rec


def unaligned(output_part=True, overtaken_arrives_first=False, twice=False) -> TraceRecorder:
    """Unaligned: s's barrier overtakes its queued record r2 (output part); a's
    barrier handling overtakes the arrived r1 (input part). The trace has no arrival
    event of the barrier; ``overtaken_arrives_first``: r2's arrival is written before
    a handles the barrier (the barrier, ahead of r2 on the wire, arrived before it)."""
    rec = TraceRecorder(
        [{"id": "co", "role": "coordinator"}, {"id": "s", "role": "source"}, "a"],
        [{"id": "co>s", "src": "co", "dst": "s", "kind": "control"}, ("s>a", "s", "a")],
        protocol="unaligned",
    )
    r1 = rec.send("s", "s>a", value=1)
    r2 = rec.send("s", "s>a", value=2)
    rec.round_start("co", 1)
    trig = rec.barrier("co", "co>s", 1)
    rec.recv("s", trig)
    cs = rec.checkpoint("s", kind="coordinated", round=1)
    b = rec.barrier("s", "s>a", 1)
    if output_part:
        rec.record("s", cs, "s>a", [r2], part="output")
    rec.arrive("a", r1)
    if overtaken_arrives_first:
        rec.arrive("a", r2)
    rec.recv("a", b)  # priority: overtakes r1 in the input buffer
    ca = rec.checkpoint("a", kind="coordinated", round=1)
    for _ in range(2 if twice else 1):
        rec.record("a", ca, "s>a", [r1], part="input")
    rec.recv("a", r1)
    if not overtaken_arrives_first:
        rec.arrive("a", r2)
    rec.recv("a", r2)
    rec.round_complete("co", 1)
    return rec


# -- mapping (no TLC) --------------------------------------------------------------


def spec_events(p):
    """The mapped events with the trace's process and channel names."""
    return [{**e, "p": p.names.get(e["p"], e["p"]), "c": p.names.get(e["c"], e["c"])} for e in p.events]


def test_mapping_of_a_chandy_lamport_trace():
    p = prepare(chandy_lamport().trace())
    ops = [(e["op"], e["p"], e["c"], e["k"], e["n"]) for e in spec_events(p)]
    assert ops[:4] == [
        ("start", "co", "", "", 1),
        ("send", "co", "co>a", "b", 1),
        ("send", "b", "b>a", "d", 1),
        ("recv", "a", "co>a", "b", 1),
    ]
    record = next(e for e in spec_events(p) if e["op"] == "record")
    assert (record["c"], record["n"], record["s"], record["part"]) == ("b>a", 1, [1], "input")
    assert p.events[-1]["op"] == "end" and p.lines[-1] == 0
    assert p.bounds == {"TRounds": 1, "TMaxData": 2}
    family, procs, coords, data, ctrl, ends, back = p.topology
    named = lambda xs: tuple(p.names[x] for x in xs)  # noqa: E731
    assert named(procs) == ("a", "b") and named(coords) == ("co",)
    assert named(ctrl) == ("co>a",) and named(data) == ("a>b", "b>a")


@pytest.mark.parametrize("overtaken_arrives_first", [False, True])
def test_unaligned_mapping_implies_arrivals_and_overtaking(overtaken_arrives_first):
    p = prepare(unaligned(overtaken_arrives_first=overtaken_arrives_first).trace())
    events = spec_events(p)
    barrier_send = next(e for e in events if e["op"] == "send" and e["c"] == "s>a" and e["k"] == "b")
    assert barrier_send["x"] == 1  # one record overtaken (the output part)
    arrivals = [(e["c"], e["k"], e["n"]) for e in events if e["op"] == "arrive"]
    # the control barrier and s's barrier have no arrive event: they arrive as late as
    # the wire's order allows -- just before their recv, or before r2, which s's
    # barrier overtook, when r2's arrival comes first in the trace
    assert arrivals == [("co>s", "b", 1), ("s>a", "d", 1), ("s>a", "b", 1), ("s>a", "d", 2)]


def test_external_input_and_control_messages_are_counted_not_mapped():
    rec = TraceRecorder(
        [{"id": "ext", "role": "external"}, {"id": "s", "role": "source"}, "a", {"id": "co", "role": "coordinator"}],
        [
            {"id": "ext>s", "src": "ext", "dst": "s", "logged": True},
            ("s>a", "s", "a"),
            {"id": "a>co", "src": "a", "dst": "co", "kind": "control"},
        ],
        protocol="abs-aligned",
    )
    m = rec.send("ext", "ext>s", value=1)
    rec.recv("s", m)
    rec.recv("a", rec.send("s", "s>a", value=1))
    rec.recv("co", rec.send("a", "a>co", value=["ack", 1]))
    rec.output("a", 1)
    p = prepare(rec.trace())
    assert [e["op"] for e in p.events] == ["send", "recv", "end"]
    assert p.ignored["send (external input or control message)"] == 2
    assert p.ignored["output"] == 1


def test_causal_order_puts_a_receive_after_its_send():
    text = chandy_lamport().dumps().decode().splitlines()
    header, events = text[0], text[1:]
    # move b's send of m (and b's later events) after a's receipt of it in the file
    b_events = [e for e in events if '"proc":"b"' in e]
    others = [e for e in events if '"proc":"b"' not in e]
    trace = parse_trace("\n".join([header] + others + b_events) + "\n")
    order = causal_order(trace)
    pos = {(e.type, e.proc, e.mid): k for k, e in enumerate(order)}
    assert pos[("send", "b", "b>a:1")] < pos[("recv", "a", "b>a:1")]
    assert [e.idx for e in order if e.proc == "a"] == sorted(e.idx for e in order if e.proc == "a")


def test_tla_values():
    assert tla({"op": "send", "s": [1, 2], "ok": True}) == '[op |-> "send", s |-> <<1, 2>>, ok |-> TRUE]'
    assert tla('a"b\\c') == '"a\\"b\\\\c"'
    assert tla({"b", "a"}) == '{"a", "b"}'
    assert tla_function({"x": "p"}) == '("x" :> "p")'
    with pytest.raises(TypeError):
        tla(1.5)


def test_tracelog_splits_long_traces_into_short_definitions():
    p = prepare(chandy_lamport().trace())
    text = tracelog_text([p, p])
    assert "Traces == <<T1_0," in text and "T2_0" in text and "TRounds == 1" in text


# -- verdicts (TLC) ---------------------------------------------------------------


@pytest.mark.tlc
def test_correct_and_mutated_chandy_lamport_traces(tmp_path):
    good = write(chandy_lamport(), tmp_path / "good.jsonl")
    dropped = chandy_lamport(record_mids=[])
    drop_path = write(dropped, tmp_path / "dropped.jsonl")
    missing = write(chandy_lamport(with_record=False), tmp_path / "missing.jsonl")
    v_good, v_drop, v_missing = conform([good, drop_path, missing], refinement=True)
    assert v_good.verdict == ACCEPT and v_good.matched == v_good.total
    # the recorded channel state omits the in-flight message: rejected at the record event
    assert v_drop.verdict == REJECT
    assert v_drop.location == f"{drop_path}:{line_of(dropped, type='record')}"
    # the longest matched prefix is everything before the record event
    assert v_drop.matched == [e["op"] for e in prepare(dropped.trace()).events].index("record")
    # no record at all: every event matches, the end of the trace does not
    assert v_missing.verdict == REJECT and v_missing.location.endswith(":end")


@pytest.mark.tlc
def test_channel_state_reported_twice_is_rejected_at_the_second_report(tmp_path):
    """The same record event twice would replay its records twice (check: duplicate-recorded);
    each matched the channel state, so the trace was accepted."""
    cl, un = chandy_lamport(twice=True), unaligned(twice=True)
    paths = [write(cl, tmp_path / "cl.jsonl"), write(un, tmp_path / "un.jsonl")]
    for rec, path, v in zip((cl, un), paths, conform(paths)):
        second = [
            n for n, e in enumerate(rec.events, 2) if e["type"] == "record" and e.get("part", "input") == "input"
        ][1]
        assert v.verdict == REJECT and v.location == f"{path}:{second}", v.render()


@pytest.mark.tlc
def test_round_ids_that_start_elsewhere_or_skip_are_accepted(tmp_path):
    """An engine's checkpoint ids may start past 1 (a job restored from a savepoint) or skip
    one (a trigger that failed): the specification counts from 1, one after another, so the
    mapping numbers them in order, and says so; such a trace was rejected at its first round."""
    path = write(chandy_lamport(rnd=5), tmp_path / "cl5.jsonl")
    (v,) = conform([path])
    assert v.verdict == ACCEPT, v.render()
    assert any("numbered 1…1 for the specification" in n for n in v.notes)


@pytest.mark.tlc
def test_reordered_channel_is_rejected_at_the_receive(tmp_path):
    rec = two_messages(reordered=True)
    path = write(rec, tmp_path / "reorder.jsonl")
    (v,) = conform([path])
    assert v.verdict == REJECT and v.location == f"{path}:{line_of(rec, type='recv', mid='a>b:2')}"


@pytest.mark.tlc
def test_aligned_abs_blocking(tmp_path):
    good = write(aligned(), tmp_path / "aligned.jsonl")
    bad_rec = aligned(late_processing=True)
    bad = write(bad_rec, tmp_path / "noblock.jsonl")
    v_good, v_bad = conform([good, bad])
    assert v_good.verdict == ACCEPT
    assert v_bad.verdict == REJECT
    assert v_bad.location == f"{bad}:{line_of(bad_rec, type='recv', mid='s1>a:1')}"


@pytest.mark.tlc
def test_unaligned_input_and_output_parts(tmp_path):
    good = write(unaligned(), tmp_path / "uc.jsonl")
    early = write(unaligned(overtaken_arrives_first=True), tmp_path / "uc-overtaken-arrives-first.jsonl")
    bad_rec = unaligned(output_part=False)
    bad = write(bad_rec, tmp_path / "uc-no-output.jsonl")
    v_good, v_early, v_bad = conform([good, early, bad])
    assert v_good.verdict == ACCEPT, v_good.render()
    assert v_early.verdict == ACCEPT, v_early.render()
    # without the output part the barrier cannot have overtaken r2, yet it arrives first
    assert v_bad.verdict == REJECT
    assert v_bad.location == f"{bad}:{line_of(bad_rec, type='recv', mid='s>a:b1')}"


def bcs(forced_first: bool, forced_second: bool) -> TraceRecorder:
    """BCS: p's basic checkpoint raises its clock to 1, so q must take a forced
    checkpoint before processing p's second message (lc 1 > 0) -- but not before
    the first one (lc 0)."""
    rec = TraceRecorder(["p", "q"], [("p>q", "p", "q")], protocol="bcs", params={"cic": "bcs"})
    m1 = rec.send("p", "p>q", piggyback={"lc": 0})
    rec.checkpoint("p", kind="basic", vars={"lc": 1})
    m2 = rec.send("p", "p>q", piggyback={"lc": 1})
    if forced_first:
        rec.checkpoint("q", kind="forced")
    rec.recv("q", m1)
    if forced_second:
        rec.checkpoint("q", kind="forced", vars={"lc": 1})
    rec.recv("q", m2)
    return rec


@pytest.mark.tlc
def test_cic_forced_checkpoint_decisions(tmp_path):
    good = write(bcs(False, True), tmp_path / "bcs.jsonl")
    missing_rec = bcs(False, False)
    missing = write(missing_rec, tmp_path / "missing.jsonl")
    spurious_rec = bcs(True, True)
    spurious = write(spurious_rec, tmp_path / "spurious.jsonl")
    v_good, v_missing, v_spurious = conform([good, missing, spurious])
    assert v_good.verdict == ACCEPT
    # a missing forced checkpoint (a safety bug) and a spurious one (an efficiency bug)
    # are both rejected at the receive they belong to
    assert v_missing.verdict == REJECT
    assert v_missing.location == f"{missing}:{line_of(missing_rec, type='recv', mid='p>q:2')}"
    assert "without a forced checkpoint" in v_missing.message
    assert v_spurious.verdict == REJECT
    assert v_spurious.location == f"{spurious}:{line_of(spurious_rec, type='recv', mid='p>q:1')}"


def test_out_of_scope_and_invalid_traces_are_errors(tmp_path):
    rec = chandy_lamport()
    rec.fail("a")  # a failure without a restore (with one: RescaleTrace judges it)
    failing = write(rec, tmp_path / "fail.jsonl")
    other = TraceRecorder(["p", "q"], [("p>q", "p", "q")], protocol="kazoo")
    other.recv("q", other.send("p", "p>q"))
    unknown = write(other, tmp_path / "kazoo.jsonl")
    unreplicated = TraceRecorder(["p", "q"], [("p>q", "p", "q")], protocol="liverobin")
    unreplicated.recv("q", unreplicated.send("p", "p>q"))
    no_replicas = write(unreplicated, tmp_path / "liverobin.jsonl")
    broken = tmp_path / "broken.jsonl"
    broken.write_text(chandy_lamport().dumps().decode().replace('"idx":1', '"idx":7', 1))
    v_fail, v_unknown, v_norep, v_broken = conform([failing, unknown, no_replicas, str(broken)])
    assert v_fail.verdict == ERROR and "failure-free" in v_fail.message
    assert v_fail.location == f"{failing}:{line_of(rec, type='fail')}"
    assert v_unknown.verdict == ERROR and "no TLA+ trace specification for protocol 'kazoo'" in v_unknown.message
    assert v_norep.verdict == ERROR and "replicated tasks" in v_norep.message
    assert v_broken.verdict == ERROR and "out-of-order per-process sequence" in v_broken.message


def uncoordinated(restore_b=1, replay=True, truncate=0, logged="send") -> TraceRecorder:
    """UNC with a failure: b processed m1 in its checkpoint 1, a's checkpoint 1 sent
    m1 and m2; b fails; the recovery line is (a:1, b:1) and m2 is in transit, so a
    replays it from its log. ``logged``: where the messages are marked logged, on
    each ``send`` or on the ``channel`` (or None: nowhere)."""
    chan = {"id": "a>b", "src": "a", "dst": "b", "logged": logged == "channel"}
    rec = TraceRecorder(["a", "b"], [chan], protocol="unc", params={"recovery": "restart-all"})
    on_send = True if logged == "send" else None
    m1 = rec.send("a", "a>b", value=1, logged=on_send)
    rec.recv("b", m1)
    rec.checkpoint("b")
    m2 = rec.send("a", "a>b", value=2, logged=on_send)
    rec.checkpoint("a")
    if truncate:
        rec.log_truncate("a", "a>b", truncate)
    rec.fail("b")
    rec.restore("a", 1, recovery=1)
    rec.restore("b", restore_b, recovery=1)
    if replay:
        rec.recv("b", rec.replay("a", m2))
    return rec


def test_uncoordinated_recovery_is_judged_step_by_step(tmp_path):
    recs = {
        "ok": uncoordinated(),
        "safe-truncation": uncoordinated(truncate=1),
        "wrong-line": uncoordinated(restore_b=0),
        "no-replay": uncoordinated(replay=False),
        "early-truncation": uncoordinated(truncate=2),
        "unlogged": uncoordinated(logged=None),
        # the channel's ``logged: true`` makes every send on it durable, as ``logged`` on each send
        "channel-logged": uncoordinated(logged="channel"),
    }
    paths = {k: write(r, tmp_path / f"{k}.jsonl") for k, r in recs.items()}
    v = dict(zip(recs, conform(list(paths.values()))))
    for good in ("ok", "safe-truncation", "channel-logged"):
        assert v[good].verdict == ACCEPT, v[good].render()
    # b's checkpoint 0 is not on the recovery line (its checkpoint 1 is consistent with a's)
    assert v["wrong-line"].verdict == REJECT
    assert v["wrong-line"].location == f"{paths['wrong-line']}:{line_of(recs['wrong-line'], type='restore', proc='b')}"
    # the in-transit m2 was never replayed: the recovery is incomplete at the end
    assert v["no-replay"].verdict == REJECT and v["no-replay"].location.endswith(":end")
    # the line's receiver checkpoint (b:1) covers m1 only: truncating m2 is premature
    assert v["early-truncation"].verdict == REJECT
    assert v["early-truncation"].location.endswith(f":{line_of(recs['early-truncation'], type='log_truncate')}")
    # m2 is in transit on the line but not in a's log: lost at the recovery
    assert v["unlogged"].verdict == REJECT
    assert v["unlogged"].location.endswith(f":{line_of(recs['unlogged'], type='restore', proc='a')}")


@pytest.mark.parametrize("field", ["round", "seq", "ckpt"])
def test_numbers_beyond_tlc_integers_are_an_error_naming_the_line(field, tmp_path):
    """The trace format allows 64-bit numbers, TLC 32-bit ones: such a trace is an ERROR
    at the event's line (writing it for TLC ended conform with a traceback)."""
    import re

    from tests.hostile.commands import run

    path = tmp_path / "t.jsonl"
    chandy_lamport().write(path)
    number = re.compile(rf'"{field}":(\d+)')
    lines = [number.sub(lambda m: f'"{field}":{int(m[1]) + 2**31}', text) for text in path.read_text().splitlines()]
    path.write_text("\n".join(lines) + "\n")
    line = next(n for n, text in enumerate(lines, 1) if number.search(text))
    big = int(number.search(lines[line - 1])[1])
    code, out = run(["conform", str(path)])
    assert code == 2 and "Traceback" not in out, out
    assert f"{path}:{line}: {field} {big} is beyond TLC's 32-bit integers" in out, out


# -- header params that leave out what a specification judges ------------------------


def with_params(rec: TraceRecorder, **params) -> TraceRecorder:
    """The trace with these protocol params in its header (by default channel state
    observed at restore: ``record`` events only where a restore read the state)."""
    rec.header.protocol["params"] = params or {"channel_state": "observed-at-restore"}
    return rec


@pytest.mark.parametrize(
    "rec",
    [
        with_params(chandy_lamport(with_record=False)),
        with_params(unaligned(output_part=False)),
        with_params(unaligned(), barriers_delimit_channel_state=False),
        with_params(aligned(), barriers_delimit_channel_state=False),
    ],
    ids=["chandy-lamport", "unaligned", "unaligned-counters", "abs-aligned-counters"],
)
def test_header_params_that_leave_out_what_the_specification_judges_are_outside(rec):
    """A failure-free trace whose channel state is observed at restore reports no channel
    state: judged by a specification that records it, it would be rejected for lacking
    data, not for leaving the specification. Channel state not delimited by the barriers
    is not what the specifications model either."""
    with pytest.raises(OutOfScope) as exc:
        prepare(rec.trace())
    assert exc.value.line == 1
    assert exc.value.category in ("channel state observed at restore", "channel state not delimited by barriers")


def test_channel_state_observed_at_restore_is_an_error_not_a_reject(tmp_path):
    path = tmp_path / "observed.jsonl"
    path.write_text(
        unaligned(output_part=False)
        .dumps()
        .decode()
        .replace('"params":{}', '"params":{"channel_state":"observed-at-restore"}', 1)
    )
    (v,) = conform([str(path)])
    assert v.verdict == ERROR and v.location == f"{path}:1", v.render()
    assert v.outside == "channel state observed at restore"


def test_channel_state_observed_at_restore_is_judged_where_no_channel_state_is_recorded():
    """Aligned ABS (Algorithm 1) records no channel state: nothing is missing."""
    assert prepare(with_params(aligned()).trace()).family.module == "ABSTrace"


def observed_recovery(live_first: bool) -> TraceRecorder:
    """Unaligned, channel state observed at restore: round 1 completes with r1 in flight
    on s>a; a fails, every task restores round 1, a's record of s>a is written when the
    restore read it (after the restores), a processes the recovered r1 and then the live
    r2 (``live_first``: r2 before r1, the recovered record is late)."""
    rec = TraceRecorder(
        [{"id": "co", "role": "coordinator"}, {"id": "s", "role": "source"}, "a"],
        [{"id": "co>s", "src": "co", "dst": "s", "kind": "control"}, ("s>a", "s", "a")],
        protocol="unaligned",
        params={"channel_state": "observed-at-restore"},
    )
    r1 = rec.send("s", "s>a", value=1)
    rec.round_start("co", 1)
    rec.recv("s", rec.barrier("co", "co>s", 1))
    cs = rec.checkpoint("s", kind="coordinated", round=1)
    rec.arrive("a", r1)
    rec.recv("a", rec.barrier("s", "s>a", 1))  # overtakes r1: its input part
    ca = rec.checkpoint("a", kind="coordinated", round=1)
    rec.round_complete("co", 1)
    rec.fail("a")
    for p, ck in (("a", ca), ("s", cs)):
        rec.restore(p, ck, recovery=1, round=1)
    replayed = rec.replay("a", r1, source="channel_state")
    rec.record("a", ca, "s>a", [r1])
    r2 = rec.send("s", "s>a", value=2)
    for m in (r2, replayed) if live_first else (replayed, r2):
        rec.recv("a", m)
    return rec


def test_channel_state_observed_at_restore_is_the_state_the_restore_took():
    """A record written after the restore that read it is the restored round's channel
    state: the recovered record is judged as recovered, not as live data."""
    p = prepare(observed_recovery(live_first=False).trace())
    assert [e["op"] for e in p.events] == [
        "complete",
        "rec",
        "restore",
        "restore",
        "restored",
        "recover",
        "live",
        "end",
    ]


@pytest.mark.tlc
def test_a_recovered_record_after_live_data_is_rejected_when_observed_at_restore(tmp_path):
    good_rec, late_rec = observed_recovery(live_first=False), observed_recovery(live_first=True)
    good, late = write(good_rec, tmp_path / "good.jsonl"), write(late_rec, tmp_path / "late.jsonl")
    v_good, v_late = conform([good, late])
    assert v_good.verdict == ACCEPT, v_good.render()
    assert v_late.verdict == REJECT, v_late.render()
    assert v_late.location == f"{late}:{line_of(late_rec, type='recv', mid='s>a:2@1')}"


def checkpoint_pairs(rounds: int, domino: bool, restore: dict) -> TraceRecorder:
    """UNC: ``rounds`` times a sends b one message, b processes it and checkpoints;
    with ``domino`` b then answers and a processes the answer and checkpoints (every
    checkpoint of one has an orphan with the other's, so the recovery line falls
    back to the initial state); without, a checkpoints after its send (the line is
    the last checkpoints). Then b fails and each process restores ``restore[p]``."""
    chans = [("a>b", "a", "b")] + ([("b>a", "b", "a")] if domino else [])
    rec = TraceRecorder(["a", "b"], chans, protocol="unc", params={"recovery": "restart-all"})
    for _ in range(rounds):
        rec.recv("b", rec.send("a", "a>b", value=1, logged=True))
        rec.checkpoint("b")
        if domino:
            rec.recv("a", rec.send("b", "b>a", value=2, logged=True))
        rec.checkpoint("a")
    rec.fail("b")
    for p in ("a", "b"):
        rec.restore(p, restore[p], recovery=1)
    return rec


def test_uncoordinated_histories_keep_every_checkpoint_a_recovery_can_still_restore(tmp_path):
    """The trace specification drops the checkpoints below the recovery line for the
    failure of every process (so its state does not grow with the trace); a recovery
    line deep in the past (the domino effect) is still there to restore, and a restore
    of a dropped checkpoint is still rejected where it happens."""
    recs = {
        "latest": checkpoint_pairs(6, False, {"a": 6, "b": 6}),
        "too-old": checkpoint_pairs(6, False, {"a": 6, "b": 2}),
        "domino": checkpoint_pairs(6, True, {"a": 0, "b": 0}),
        "domino-too-new": checkpoint_pairs(6, True, {"a": 0, "b": 1}),
    }
    paths = {k: write(r, tmp_path / f"{k}.jsonl") for k, r in recs.items()}
    v = dict(zip(recs, conform(list(paths.values()))))
    assert v["latest"].verdict == ACCEPT and v["domino"].verdict == ACCEPT, v["domino"].render()
    for bad in ("too-old", "domino-too-new"):
        assert v[bad].verdict == REJECT, v[bad].render()
        assert v[bad].location == f"{paths[bad]}:{line_of(recs[bad], type='restore', proc='b')}"
