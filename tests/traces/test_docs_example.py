"""The example in docs/trace-format.md is a valid trace that uses every event type."""

import re
from pathlib import Path

from snapcheck.traces import EVENT_TYPES
from snapcheck.traces.jsonl import parse_trace

DOC = Path(__file__).resolve().parents[2] / "docs" / "trace-format.md"


def example_block(name: str = "every-event-type") -> str:
    return re.search(rf"<!-- example:{name} -->\n```jsonl\n(.*?)```", DOC.read_text(), re.S).group(1)


def test_every_event_type_example_is_valid_and_complete():
    """The first example uses every event type but those of rescaling and finished tasks,
    which the rescale example adds; both are valid."""
    trace = parse_trace(example_block(), "docs/trace-format.md")
    rescale = parse_trace(example_block("rescale"), "docs/trace-format.md")
    # every event type but protocol_error, which by definition makes a trace a violation
    assert {e.type for e in trace.events} == set(EVENT_TYPES) - {"finish", "retire", "protocol_error"}
    assert {e.type for e in trace.events} | {e.type for e in rescale.events} == set(EVENT_TYPES) - {"protocol_error"}
    kinds = {e.kind for e in trace.events if e.type == "checkpoint"}
    assert "coordinated" in kinds


def test_every_event_type_example_is_clean_and_its_perturbations_are_caught():
    """What the document says about the example: clean; an emptied recording is a drop;
    processing the log's second delivery is a duplicate."""
    from snapcheck.checker import CheckOptions, check_trace

    block = example_block()
    assert check_trace(parse_trace(block), CheckOptions()).ok
    dropped = block.replace('"mids":["src[0]>agg[0]:1"]', '"mids":[]')
    kinds = {v.kind for v in check_trace(parse_trace(dropped), CheckOptions()).violations}
    assert kinds == {"dropped"}
    dup = block.replace(
        '"type":"discard","proc":"sink[0]","idx":8,"ch":"agg[0]>sink[0]","mid":"agg[0]>sink[0]:1@1/r1","reason":"duplicate"',
        '"type":"recv","proc":"sink[0]","idx":8,"ch":"agg[0]>sink[0]","mid":"agg[0]>sink[0]:1@1/r1"',
    )
    assert dup != block
    kinds = {v.kind for v in check_trace(parse_trace(dup), CheckOptions()).violations}
    assert kinds == {"duplicate-processing"}


def test_rescale_example_is_clean_and_skipping_its_mapping_is_caught():
    """What the document says: clean; without the channel mapping of g1.agg[0] (and its
    replays), both recorded records are in-flight-lost, with the old channel and key group."""
    import json

    from snapcheck.checker import CheckOptions, check_trace

    block = example_block("rescale")
    assert check_trace(parse_trace(block), CheckOptions()).ok
    lines = [json.loads(x) for x in block.splitlines()]
    out, drop = [], set()
    for x in lines:
        if x.get("type") == "restore" and x["proc"] == "g1.agg[0]":
            x.pop("channels")
        if x.get("type") == "replay" and x["proc"] == "g1.agg[0]":
            drop.add(x["mid"])
            continue
        if x.get("type") == "recv" and x["mid"] in drop:
            continue
        out.append(x)
    idx: dict = {}
    for x in out[1:]:
        x["idx"] = idx[x["proc"]] = idx.get(x["proc"], -1) + 1
    report = check_trace(parse_trace("\n".join(json.dumps(x) for x in out) + "\n"), CheckOptions())
    lost = [v for v in report.violations if v.kind == "in-flight-lost"]
    assert {v.witness["old_channel"] for v in lost} == {"src[0]>agg[0]", "src[0]>agg[1]"}
    assert {v.witness["key_group"] for v in lost} == {1, 2}


def test_the_rescale_example_without_its_optional_rounds_is_still_clean():
    """``round`` is optional on a restore (the rounds of the checkpoints it takes say it):
    every property judges the example the same without it (recovery-lineage read a
    missing round as the empty initial state: restore-stale)."""
    import json

    from snapcheck.checker import check_trace

    lines = [json.loads(x) for x in example_block("rescale").splitlines()]
    for x in lines:
        if x.get("type") == "restore":
            x.pop("round", None)
    report = check_trace(parse_trace("\n".join(json.dumps(x) for x in lines)))
    assert report.ok, [v.message for v in report.violations]
    assert any(r.property == "recovery-lineage" for r in report.results)
