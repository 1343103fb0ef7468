"""The example in docs/trace-format.md is a valid trace that uses every event type."""

import re
from pathlib import Path

from traces import EVENT_TYPES
from traces.jsonl import parse_trace

DOC = Path(__file__).resolve().parents[2] / "docs" / "trace-format.md"


def test_every_event_type_example_is_valid_and_complete():
    text = DOC.read_text()
    block = re.search(r"<!-- example:every-event-type -->\n```jsonl\n(.*?)```", text, re.S).group(1)
    trace = parse_trace(block, "docs/trace-format.md")
    assert {e.type for e in trace.events} == set(EVENT_TYPES)
    kinds = {e.kind for e in trace.events if e.type == "checkpoint"}
    assert "coordinated" in kinds
