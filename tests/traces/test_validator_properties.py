"""Properties of the validator's fast paths, each against an independent method: the
generated schema check against the JSON Schema, and the happened-before check (recorded
from the first receive that precedes its send) against a cycle search on the whole graph."""

from __future__ import annotations

import fastjsonschema
import networkx as nx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from snapcheck.traces import TraceErrors
from snapcheck.traces.jsonl import parse_trace
from snapcheck.traces.schema import event_types, event_validator, fast_event_check, stricter_than_schema
from tests.merged_logs import merged_logs, trace_lines

VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.integers(2**62, 2**63 + 2),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=3),
    st.sampled_from(["", "x" * 201, "basic", "forced", "input", "barrier", "log", "data"]),
    st.lists(st.one_of(st.text(max_size=2), st.integers()), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)
FIELDS = [
    "proc",
    "idx",
    "ch",
    "mid",
    "seq",
    "kind",
    "round",
    "ckpt",
    "part",
    "mids",
    "replay_of",
    "from",
    "logged",
    "size",
    "key",
    "value",
    "piggyback",
    "vars",
    "digest",
    "through_seq",
    "reason",
    "recovery",
    "t",
    "attrs",
    "key_group",
    "sources",
    "channels",
    "typo",
]


VALID = {
    "proc": "A",
    "idx": 0,
    "ch": "ab",
    "mid": "m",
    "seq": 1,
    "ckpt": 1,
    "kind": "basic",
    "mids": ["m"],
    "replay_of": "m0",
    "value": 1,
    "round": 1,
    "through_seq": 1,
    "reason": "r",
}


@st.composite
def events(draw):
    """An event of a random type: its required fields valid, then up to three fields set to
    random values (valid or not), some removed."""
    from snapcheck.traces.schema import schema

    etype = draw(st.sampled_from(event_types()))
    spec = schema()["$defs"][f"event_{etype}"]
    d = {"type": etype, **{k: VALID[k] for k in spec["required"] if k != "type"}}
    if etype == "send" or etype == "log":
        d.pop("kind", None)
    for k, v in draw(st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=3)).items():
        d[k] = v
    for k in draw(st.lists(st.sampled_from(sorted(d)), max_size=1)):
        if k != "type":
            del d[k]
    return etype, d


@settings(max_examples=4000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events())
def test_generated_check_is_the_json_schema(case):
    etype, d = case
    try:
        event_validator(etype)(d)
        valid = stricter_than_schema(etype, d) is None  # the format also refuses 1.0 for 1
    except fastjsonschema.JsonSchemaException:
        valid = False
    assert fast_event_check(etype)(d) == valid, d


@settings(max_examples=400, deadline=None)
@given(merged_logs())
def test_happened_before_cycles_are_found_exactly(case):
    """Per-process logs merged in any order (``tests.merged_logs``): the trace is refused
    exactly when happened-before has a cycle."""
    per_proc, order = case
    lines = trace_lines(per_proc, order)
    g = nx.DiGraph()
    for p, evs in per_proc.items():
        g.add_nodes_from((p, i) for i in range(len(evs)))
        g.add_edges_from(((p, i), (p, i + 1)) for i in range(len(evs) - 1))
    where = {(kind, mid): (p, i) for p, evs in per_proc.items() for i, (kind, _, mid) in enumerate(evs)}
    g.add_edges_from((where[("send", mid)], where[("recv", mid)]) for (kind, mid) in where if kind == "send")
    cyclic = not nx.is_directed_acyclic_graph(g)
    try:
        parse_trace(b"\n".join(lines).decode())
        found = False
    except TraceErrors as exc:
        assert all("causally impossible" in e.reason for e in exc.errors), exc
        found = True
    assert found == cyclic
