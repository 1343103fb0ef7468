"""Happened-before in traces whose file order is not causal (``checker.causality``), and
the completion judgements that use it."""

from __future__ import annotations

import random

import networkx as nx
import orjson
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from snapcheck.checker import check_trace
from snapcheck.checker.causality import Causality
from snapcheck.checker.trace_index import TraceIndex
from snapcheck.reference import SimConfig, simulate
from snapcheck.traces.errors import TraceErrors
from snapcheck.traces.jsonl import parse_trace


@st.composite
def merged_logs(draw):
    """Three processes exchanging messages, each process's events in program order, the
    processes' logs merged at random (receives may precede their sends)."""
    procs = ["A", "B", "C"]
    per_proc: dict[str, list[tuple]] = {p: [] for p in procs}
    for k in range(draw(st.integers(1, 8))):
        src, dst = draw(st.sampled_from([(a, b) for a in procs for b in procs if a != b]))
        per_proc[src].insert(draw(st.integers(0, len(per_proc[src]))), ("send", f"{src}{dst}", f"m{k}"))
        per_proc[dst].insert(draw(st.integers(0, len(per_proc[dst]))), ("recv", f"{src}{dst}", f"m{k}"))
    for p in procs:  # a local event or two, which only process order links
        for _ in range(draw(st.integers(0, 2))):
            per_proc[p].insert(draw(st.integers(0, len(per_proc[p]))), ("checkpoint", None, None))
    order = draw(st.permutations([p for p in procs for _ in per_proc[p]]))
    return per_proc, order


def _trace(per_proc, order):
    header = {
        "format": "snapcheck-trace",
        "version": 1,
        "processes": [{"id": p} for p in per_proc],
        "channels": [{"id": a + b, "src": a, "dst": b} for a in per_proc for b in per_proc if a != b],
    }
    lines, cursor, seq, ckpt = [orjson.dumps(header)], dict.fromkeys(per_proc, 0), {}, dict.fromkeys(per_proc, 0)
    for p in order:
        kind, ch, mid = per_proc[p][cursor[p]]
        ev: dict = {"type": kind, "proc": p, "idx": cursor[p]}
        if kind == "checkpoint":
            ckpt[p] += 1
            ev.update(ckpt=ckpt[p], kind="basic")
        else:
            ev.update(ch=ch, mid=mid)
        if kind == "send":
            seq[ch] = seq.get(ch, 0) + 1
            ev["seq"] = seq[ch]
        lines.append(orjson.dumps(ev))
        cursor[p] += 1
    return parse_trace(b"\n".join(lines).decode() + "\n", "t.jsonl")


@settings(max_examples=300, deadline=None)
@given(merged_logs())
def test_before_is_reachability_in_the_happened_before_graph(case):
    """Cross-checked against networkx: an edge from each event to the next of its process
    and from each send to its receive; ``before(a, b)`` iff a path leads from a to b."""
    try:
        trace = _trace(*case)
    except TraceErrors as exc:  # happened-before has a cycle: no trace
        assert "causally impossible" in str(exc)
        assume(False)
    g = nx.DiGraph()
    events = trace.events
    g.add_nodes_from(range(len(events)))
    last: dict[str, int] = {}
    sends = {e.mid: i for i, e in enumerate(events) if e.type == "send"}
    for i, e in enumerate(events):
        if e.proc in last:
            g.add_edge(last[e.proc], i)
        last[e.proc] = i
        if e.type == "recv":
            g.add_edge(sends[e.mid], i)
    causality = Causality(TraceIndex(trace))
    for i, a in enumerate(events):
        for j, b in enumerate(events):
            if i != j:
                assert causality.before(a, b) == nx.has_path(g, i, j), (a, b)


def _merged(trace_text: str, rnd: random.Random) -> str:
    """The trace's per-process logs merged in a random order (each process's own kept)."""
    header, *lines = trace_text.splitlines()
    logs: dict[str, list[str]] = {}
    for line in lines:
        logs.setdefault(orjson.loads(line)["proc"], []).append(line)
    out = [header]
    while logs:
        p = rnd.choice(sorted(logs))
        out.append(logs[p].pop(0))
        if not logs[p]:
            del logs[p]
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("protocol", ["chandy-lamport", "abs-aligned", "unaligned", "abs-aligned-2pc"])
def test_a_clean_run_stays_clean_however_its_logs_are_merged(protocol):
    """A round's completion follows its participants' acknowledgements: the checkpoints
    and channel state that the file puts after it happened before it. Merged logs of a
    clean failure-free run are clean (the completion judgements compared lines, and
    flagged every round of a merge that put the coordinator's log first)."""
    res = simulate(SimConfig(protocol=protocol, workload="diamond", seed=3))
    text = res.dumps().decode()
    assert check_trace(parse_trace(text, "t.jsonl")).ok
    rnd = random.Random(protocol)
    coordinator_first = sorted(
        text.splitlines()[1:], key=lambda line: orjson.loads(line)["proc"] != "coordinator"
    )  # (a stable sort: each process keeps its order)
    for merged in [text.splitlines()[0] + "\n" + "\n".join(coordinator_first) + "\n"] + [
        _merged(text, rnd) for _ in range(3)
    ]:
        report = check_trace(parse_trace(merged, "t.jsonl"))
        assert report.ok, [v.message for v in report.violations][:2]
