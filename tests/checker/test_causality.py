"""Happened-before in traces whose file order is not causal (``checker.causality``), and
the completion judgements that use it."""

from __future__ import annotations

import random

import networkx as nx
import orjson
import pytest
from hypothesis import assume, given, settings

from snapcheck.checker import check_trace
from snapcheck.checker.causality import Causality
from snapcheck.checker.trace_index import TraceIndex
from snapcheck.reference import SimConfig, simulate
from snapcheck.traces.errors import TraceErrors
from snapcheck.traces.jsonl import parse_trace
from tests.merged_logs import merged_logs, trace_lines


def _trace(per_proc, order):
    return parse_trace(b"\n".join(trace_lines(per_proc, order)).decode() + "\n", "t.jsonl")


@settings(max_examples=300, deadline=None)
@given(merged_logs(checkpoints=True))
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
