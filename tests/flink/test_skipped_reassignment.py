"""``skipped-reassignment``: an operator without state of its own whose exchanges carry channel
state of the restored checkpoint must take part in Flink's state assignment (its new subtasks
report a restore). Judged on synthetic traces: the restored checkpoint's ``_metadata`` summary
(run.json's ``rescale.restored_state``) and the restores of the new subtasks, reported or
inferred by the merge."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from snapcheck.flink.expectations import (
    skipped_reassignment_findings,
    stateless_operators,
)
from snapcheck.traces.model import Event, Header, Process, Trace

OPS = ("src", "relay", "sink")
EDGES = (("src", "relay"), ("relay", "sink"))
INFERRED = {"inferred": "Flink assigned this subtask no state, so it reports no restore"}


def sub(keyed=0, operator=0, output_to=None, input_from=None) -> dict:
    inputs, outputs = input_from or {}, output_to or {}
    return {
        "keyed_bytes": keyed,
        "operator_bytes": operator,
        "input_bytes": 8 * sum(inputs.values()),
        "input_handles": sum(inputs.values()),
        "output_bytes": 8 * sum(outputs.values()),
        "output_handles": sum(outputs.values()),
        "input_from": inputs,
        "output_to": outputs,
    }


def trace(state: dict, inferred: dict[str, bool], new_parallelism: int = 2) -> Trace:
    """Old subtasks ``op[i]``, new ones ``g1.op[j]`` whose first event is the rescale restore,
    inferred (the subtask reported none) where ``inferred[op]``."""
    procs = [Process(f"{op}[0]", operator=op, subtask=0) for op in OPS]
    procs += [
        Process(f"g1.{op}[{j}]", operator=op, subtask=j, appears=True) for op in OPS for j in range(new_parallelism)
    ]
    events = []
    for p in procs:
        if p.appears:
            events.append(
                Event(
                    "restore",
                    p.id,
                    0,
                    line=len(events) + 2,
                    ckpt=0,
                    round=7,
                    recovery=1000,
                    attrs=INFERRED if inferred.get(p.operator) else None,
                )
            )
    metadata = {
        "flink": {
            "rescale": {
                "kind": "failure",
                "restored_checkpoint": 7,
                "restored_state": {
                    "checkpoint_id": 7,
                    "operators": {op: {"parallelism": 1, "subtasks": s} for op, s in state.items()},
                },
            }
        }
    }
    return Trace(Header(processes=procs, channels=[], metadata=metadata), events)


def test_a_skipped_operator_next_to_downstream_input_state_is_found():
    state = {
        "src": {"0": sub(operator=519)},
        "relay": {},
        "sink": {"0": sub(keyed=1458, input_from={"relay": 3}), "1": sub(keyed=1458, input_from={"relay": 1})},
    }
    [f] = skipped_reassignment_findings(trace(state, {"relay": True}))
    assert f.kind == "skipped-reassignment"
    assert "operator relay" in f.message and "checkpoint 7" in f.message
    assert "sink[0]: 3 input-part handle(s) from relay" in f.message and "sink[1]: 1" in f.message
    assert "g1.relay[0], g1.relay[1]" in f.message
    assert f.lines == [4, 5]  # the two inferred restores of g1.relay


def test_a_skipped_operator_next_to_upstream_output_state_is_found():
    state = {"src": {"0": sub(operator=519, output_to={"relay": 2})}, "relay": {}, "sink": {"0": sub(keyed=1)}}
    [f] = skipped_reassignment_findings(trace(state, {"relay": True}))
    assert "src[0]: 2 output-part handle(s) toward relay" in f.message


def test_restored_stateless_operator_is_listed_but_not_a_finding():
    state = {"src": {"0": sub(operator=519)}, "relay": {}, "sink": {"0": sub(keyed=1, input_from={"relay": 3})}}
    t = trace(state, {})
    assert skipped_reassignment_findings(t) == []
    ckpt, [s] = stateless_operators(t)
    assert ckpt == 7 and s.op == "relay" and s.skipped == [] and len(s.restores) == 2
    assert "none reported" not in s.describe() and "sink[0]: 3 input-part handle(s) from relay" in s.describe()


def test_skipping_an_operator_without_adjacent_channel_state_is_fine():
    state = {"src": {"0": sub(operator=519)}, "relay": {}, "sink": {"0": sub(keyed=1, input_from={"?": 1})}}
    assert skipped_reassignment_findings(trace(state, {"relay": True})) == []


def test_an_operator_with_state_of_its_own_is_not_judged():
    state = {
        "src": {"0": sub(operator=519)},
        "relay": {"1": sub(output_to={"sink": 1})},
        "sink": {"0": sub(keyed=1, input_from={"relay": 3})},
    }
    assert stateless_operators(trace(state, {"relay": True}))[1] == []


def test_a_run_without_a_restored_checkpoint_summary_has_nothing_to_judge():
    t = trace({}, {"relay": True})
    t.header.metadata["flink"]["rescale"].pop("restored_state")
    assert stateless_operators(t) == (None, []) and skipped_reassignment_findings(t) == []


handles = st.integers(0, 2)


@st.composite
def checkpoints(draw):
    """A restored checkpoint of src -> relay -> sink: each operator holds state of its own or
    not, each exchange carries output-part and input-part handles or not; and which operators'
    new subtasks reported their restore."""
    state = {}
    for op in OPS:
        own = draw(st.booleans())
        out = {b: draw(handles) for a, b in EDGES if a == op}
        inp = {a: draw(handles) for a, b in EDGES if b == op}
        s = sub(
            keyed=int(own),
            output_to={k: v for k, v in out.items() if v},
            input_from={k: v for k, v in inp.items() if v},
        )
        state[op] = {"0": s} if own or s["output_handles"] or s["input_handles"] else {}
    inferred = {op: draw(st.booleans()) for op in OPS}
    return state, inferred


@given(checkpoints())
def test_finding_iff_stateless_skipped_and_adjacent_to_channel_state(case):
    state, inferred = case

    def adjacent(op):
        return any(state[a].get("0", {}).get("output_to", {}).get(b) for a, b in EDGES if b == op) or any(
            state[b].get("0", {}).get("input_from", {}).get(a) for a, b in EDGES if a == op
        )

    expected = {op for op in OPS if not state[op] and inferred[op] and adjacent(op)}
    found = {
        f.message.split("skipped operator ")[1].split(" ")[0]
        for f in skipped_reassignment_findings(trace(state, inferred))
    }
    assert found == expected
