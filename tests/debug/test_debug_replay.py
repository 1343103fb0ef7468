"""The replay state machine: state at every position, navigation, breakpoints."""

from __future__ import annotations

import debug_samples as S
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from snapcheck.debug.history import causal_order, event_intervals, lamport_columns, message_table, vector_clocks
from snapcheck.debug.replay import Breakpoint, Replay, position_of_line
from snapcheck.traces import TraceRecorder


def _flight(state):
    return {c: [m.mid for m in v.in_flight] for c, v in state.channels.items()}


def test_initial_and_final_positions():
    t = S.example_c()
    r = Replay(t)
    assert r.position == 0 and r.state.event is None
    assert all(
        v.interval == 1 and v.last_checkpoint.ckpt == 0 and v.last_checkpoint.kind == "initial"
        for v in r.state.processes.values()
    )
    r.goto(10**6)
    assert r.position == len(t.events)
    assert r.state.processes["P0"].last_checkpoint.ckpt == 3
    assert r.state.processes["P0"].interval == 4
    assert r.state.processes["P1"].interval == 3
    r.goto(-5)
    assert r.position == 0


def test_in_flight_matches_an_independent_computation_at_every_position():
    """in flight at position n = sent at or before event n, not processed/discarded by then."""
    for t in (S.example_c(), S.aligned(), S.unaligned(), S.failure(), S.random_trace(5)):
        msgs = message_table(t)
        r = Replay(t)
        for n in range(len(t.events) + 1):
            applied = {id(e) for e in t.events[:n]}
            want = {c.id: [] for c in t.channels}
            for m in sorted(msgs.values(), key=lambda m: m.origin.line):
                end = m.end
                if id(m.origin) in applied and not (end is not None and id(end) in applied):
                    want[m.ch].append(m.mid)
            assert _flight(r.goto(n)) == want, (t.path, n)


def test_intervals_agree_with_history():
    t = S.random_trace(11, fail=True)
    iota = event_intervals(t)
    r = Replay(t)
    for n, e in enumerate(t.events, 1):
        st_ = r.goto(n)
        if e.type not in ("checkpoint", "restore"):
            assert st_.processes[e.proc].interval == iota[n - 1]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.lists(st.integers(-3, 80), min_size=1, max_size=25))
def test_random_navigation_equals_fresh_replay(seed, moves):
    """Moving around (with snapshots every 4 events) gives exactly the state of a
    straight replay from the start to the same position."""
    t = S.random_trace(seed % 50, fail=True)
    nav = Replay(t, snapshot_every=4)
    for m in moves:
        nav.goto(m)
        fresh = Replay(t, snapshot_every=10**9).goto(nav.position)
        assert nav.state.to_json() == fresh.to_json()


def test_blocked_channels_of_aligned_checkpoints():
    t = S.aligned()
    r = Replay(t)
    blocked = lambda line, p: r.goto_line(line).processes[p].blocked  # noqa: E731
    assert blocked(6, "A") == {}
    assert blocked(7, "A") == {"s2a": 1}  # barrier arrived: s2a blocked
    assert blocked(9, "A") == {"s2a": 1}  # processing the barrier does not release
    assert blocked(10, "A") == {}  # A's checkpoint of round 1 releases
    assert blocked(13, "B") == {"s2b": 1}
    assert blocked(15, "B") == {"s2b": 1, "a2b": 1}
    assert blocked(18, "B") == {}
    st_ = r.goto_line(14)
    flight = {c: [(m.mid, m.arrived) for m in v.in_flight] for c, v in st_.channels.items()}
    assert flight["s2b"] == [("s2b:b1", True), ("s2b:1", True)]
    assert all(not v.recording for v in r.goto(len(t.events)).processes.values())


def test_recording_channels_of_unaligned_checkpoints():
    t = S.unaligned()
    r = Replay(t)
    b = lambda line: r.goto_line(line).processes["B"]  # noqa: E731
    assert b(9).blocked == {"a2b": 1}
    assert b(10).blocked == {} and b(10).recording == {"s2b": 1}
    assert b(12).recording == {"s2b": 1}
    assert b(13).recording == {}
    rec = r.goto_line(14).channels["s2b"].recorded["input"]
    assert (rec.proc, rec.ckpt, rec.mids, rec.line) == ("B", 1, ["s2b:1"], 14)


def test_protocol_variables_failure_restore_and_logs():
    t = S.failure()
    r = Replay(t)
    st_ = r.goto_line(3)
    assert st_.processes["P0"].vars == {"lc": 1}
    assert st_.channels["c01"].log == ["c01:1"]  # send.logged
    st_ = r.goto_line(5)
    assert st_.channels["c01"].log == ["c01:1", "c01:2"]  # log event
    st_ = r.goto_line(8)
    assert st_.processes["P1"].failed
    st_ = r.goto_line(9)
    p1 = st_.processes["P1"]
    assert not p1.failed and p1.epoch == 1 and p1.last_checkpoint.restored and p1.last_checkpoint.ckpt == 1
    assert p1.interval == 2
    st_ = r.goto_line(10)
    assert [m.mid for m in st_.channels["c01"].in_flight] == ["c01:2", "c01:2/r1"]
    assert st_.channels["c01"].in_flight[1].replay_of == "c01:2"
    st_ = r.goto_line(12)
    assert st_.channels["c01"].log == ["c01:2"]  # truncated through seq 1


def test_a_logged_channel_logs_every_send():
    """A channel marked ``logged`` logs each message at its send, as ``send.logged`` does
    (docs/trace-format.md, the header's channels)."""
    rec = TraceRecorder(["A", "B"], [{"id": "ab", "src": "A", "dst": "B", "logged": True}])
    rec.send("A", "ab")
    assert Replay(rec.trace()).goto_line(2).channels["ab"].log == ["ab:1"]


def test_piggyback_shown_for_the_sender():
    r = Replay(S.aligned())
    assert r.goto(1).processes["S"].piggyback == {"tdv": [1, 0, 0]}


def test_breakpoints_forward_and_backward():
    t = S.aligned()
    r = Replay(t)
    r.breakpoints = [Breakpoint("proc", "B")]
    hit = r.run_to_break()
    assert str(hit) == "proc B" and r.state.event.proc == "B" and r.state.event.line == 13
    r.breakpoints = [Breakpoint("msg", "s2b:1")]
    r.run_to_break()
    assert r.state.event.line == 14  # its arrival (the send was earlier)
    r.run_to_break(forward=False)
    assert r.state.event.line == 12 and r.state.event.type == "send"
    r.breakpoints = [Breakpoint("ckpt", "B")]
    r.goto(0)
    r.run_to_break()
    assert r.state.event.line == 18
    r.breakpoints = [Breakpoint("type", "record")]
    assert r.run_to_break() is None and r.position == len(t.events)


def test_message_breakpoint_also_stops_on_records_and_replays():
    t = S.failure()
    r = Replay(t)
    r.breakpoints = [Breakpoint("msg", "c01:2")]
    lines = []
    while r.run_to_break() is not None:
        lines.append(r.state.event.line)
    assert lines == [4, 5, 10]  # send, log, replay


def test_position_of_line():
    t = S.example_c()
    assert position_of_line(t.events, 1) == 0
    assert position_of_line(t.events, 2) == 1
    assert position_of_line(t.events, 10**6) == len(t.events)


def test_receive_before_send_in_file_order():
    """A trace may list a receive before its send: the message is never shown in flight."""
    text = S.as_text(S.example_a()).splitlines()
    header, events = text[0], text[1:]
    # move P0's recv of c10:1 (line 3) before P1's send (line 2): still a valid trace
    events[0], events[1] = events[1], events[0]
    from snapcheck.traces.jsonl import parse_trace

    t = parse_trace("\n".join([header] + events) + "\n")
    r = Replay(t)
    assert _flight(r.goto(1)) == {"c01": [], "c10": []}
    assert _flight(r.goto(2)) == {"c01": [], "c10": []}
    assert r.state.early == set()


def test_history_orders_and_clocks():
    t = S.random_trace(3)
    order = causal_order(t)
    assert sorted(order) == list(range(len(t.events)))
    col = lamport_columns(t)
    vc = vector_clocks(t)
    for m in message_table(t).values():
        s = t.events.index(m.origin)
        if m.recv is not None:
            r_ = t.events.index(m.recv)
            assert col[r_] > col[s]
            assert all(vc[r_].get(k, 0) >= v for k, v in vc[s].items())
            assert order.index(r_) > order.index(s)


def test_lamport_columns_strictly_increase_per_process():
    t = S.random_trace(8, n=5, steps=120, fail=True)
    col = lamport_columns(t)
    last = {}
    for e, c in zip(t.events, col):
        assert c > last.get(e.proc, 0)
        last[e.proc] = c


def test_state_at_does_not_move_the_cursor():
    r = Replay(S.example_c())
    r.goto(5)
    other = r.state_at(12)
    assert r.position == 5 and other.position == 12
