"""ShiViz export: every line parses with the published regex; the vector clocks obey
ShiViz's rules and encode happened-before exactly."""

from __future__ import annotations

import json

import debug_samples as S
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from snapcheck.cli import cli
from snapcheck.debug.history import message_table
from snapcheck.debug.shiviz import PYTHON_REGEX, SHIVIZ_REGEX, shiviz_lines, shiviz_log


def _parsed(trace):
    out = []
    for line in shiviz_lines(trace):
        m = PYTHON_REGEX.fullmatch(line)
        assert m, line
        out.append((m["host"], json.loads(m["clock"]), m["event"]))
    return out


def _leq(a: dict, b: dict) -> bool:
    return all(b.get(k, 0) >= v for k, v in a.items())


def test_every_line_parses_and_local_clocks_count_events():
    for t in (S.example_c(), S.aligned(), S.failure(), S.random_trace(2, fail=True)):
        rows = _parsed(t)
        assert len(rows) == len(t.events)
        seen: dict[str, int] = {}
        for host, clock, _ in rows:
            seen[host] = seen.get(host, 0) + 1
            assert clock[host] == seen[host]  # starts at 1, grows by one per event
        assert set(seen) <= {p.id for p in t.processes}


def test_clocks_encode_happened_before():
    """e -> f (program order or a message chain) iff VC(e) <= VC(f) and e != f,
    checked against a transitive closure computed independently from the trace."""
    t = S.random_trace(9, n=3, steps=40)
    rows = _parsed(t)
    lines = [int(ev.split()[0][1:]) for _, _, ev in rows]  # "L<line> ..." tags
    by_line = {e.line: e for e in t.events}
    events = [by_line[n] for n in lines]
    n = len(events)
    succ = {i: set() for i in range(n)}
    last: dict[str, int] = {}
    pos = {id(e): i for i, e in enumerate(events)}
    for i, e in enumerate(events):
        if e.proc in last:
            succ[last[e.proc]].add(i)
        last[e.proc] = i
    for m in message_table(t).values():
        firsts = [x for x in (m.arrive, m.recv, m.discard) if x is not None]
        if firsts:
            succ[pos[id(m.origin)]].add(min(pos[id(x)] for x in firsts))
    reach = {i: set() for i in range(n)}
    for i in reversed(range(n)):  # rows are in a causal order
        for j in succ[i]:
            assert j > i
            reach[i] |= {j} | reach[j]
    for i in range(n):
        for j in range(n):
            if i != j:
                assert (j in reach[i]) == _leq(rows[i][1], rows[j][1]), (i, j)


def test_log_file_layout_and_cli(tmp_path):
    t = S.example_c()
    text = shiviz_log(t)
    first, second, *rest = text.split("\n")
    assert first == SHIVIZ_REGEX and second == "" and len([r for r in rest if r]) == len(t.events)
    src = tmp_path / "c.jsonl"
    src.write_text(S.as_text(t))
    res = CliRunner().invoke(cli, ["shiviz", str(src), "-o", str(tmp_path / "c.log")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "c.log").read_text() == text
    assert SHIVIZ_REGEX in res.output


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["A", "A B", "A_B", "A%20B", "A\u2003B", "B", "%"]), min_size=2, unique=True))
def test_every_process_is_its_own_host(names):
    """Processes whose names differ only in whitespace, '_' or '%' get distinct hosts
    ('A B' and 'A_B' used to share one, merging their clocks), and every line still
    parses with the published regex, also with Unicode line separators in a channel's name
    (an id never holds a control character: such a trace is refused)."""
    from snapcheck.traces import TraceRecorder

    chans = [(f"c{k}\u2028\u2029", a, b) for k, (a, b) in enumerate(zip(names, names[1:]))]
    rec = TraceRecorder(names, chans)
    for ch, a, b in chans:
        rec.recv(b, rec.send(a, ch))
    trace = rec.trace()
    by_line = {e.line: e.proc for e in trace.events}
    host_of: dict[str, set] = {}
    clock_keys: set[str] = set()
    for host, clock, event in _parsed(trace):  # every line parses: no line break inside one
        host_of.setdefault(by_line[int(event.split()[0][1:])], set()).add(host)
        clock_keys |= set(clock)
    hosts = {h for hs in host_of.values() for h in hs}
    assert all(len(hs) == 1 for hs in host_of.values())
    assert len(hosts) == len(host_of) == len(names) and clock_keys == hosts
    assert len(shiviz_lines(trace)) == len(trace.events)
