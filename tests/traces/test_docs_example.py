"""The example in docs/trace-format.md is a valid trace that uses every event type."""

import re
from pathlib import Path

from snapcheck.traces import EVENT_TYPES
from snapcheck.traces.jsonl import parse_trace

DOC = Path(__file__).resolve().parents[2] / "docs" / "trace-format.md"


def example_block() -> str:
    return re.search(r"<!-- example:every-event-type -->\n```jsonl\n(.*?)```", DOC.read_text(), re.S).group(1)


def test_every_event_type_example_is_valid_and_complete():
    trace = parse_trace(example_block(), "docs/trace-format.md")
    # every event type but protocol_error, which by definition makes a trace a violation
    assert {e.type for e in trace.events} == set(EVENT_TYPES) - {"protocol_error"}
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
    dup = block.replace('"type":"discard","proc":"sink[0]","idx":8,"ch":"agg[0]>sink[0]","mid":"agg[0]>sink[0]:1@1/r1","reason":"duplicate"',
                        '"type":"recv","proc":"sink[0]","idx":8,"ch":"agg[0]>sink[0]","mid":"agg[0]>sink[0]:1@1/r1"')
    assert dup != block
    kinds = {v.kind for v in check_trace(parse_trace(dup), CheckOptions()).violations}
    assert kinds == {"duplicate-processing"}
