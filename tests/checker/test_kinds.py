"""Every violation kind the checker can report is in ``KIND_PROPERTY`` (the contract that
``shrink --property KIND`` and the docs rely on), mapped to a property the checker knows,
and every kind there is reported somewhere."""

from __future__ import annotations

import re
from pathlib import Path

from snapcheck.checker.options import PROPERTIES
from snapcheck.checker.report import KIND_PROPERTY

CHECKER = Path(__file__).resolve().parents[2] / "checker"
# Violation("kind", "property", ...) as written in the checker's modules
_CONSTRUCTED = re.compile(r'Violation\(\s*"([a-z0-9-]+)",\s*"([a-z0-9-]+)"')


def constructed() -> set[tuple[str, str]]:
    pairs = set()
    for path in CHECKER.rglob("*.py"):
        pairs |= set(_CONSTRUCTED.findall(path.read_text()))
    return pairs


def test_every_reported_kind_is_in_the_contract():
    pairs = constructed()
    assert len(pairs) > 40  # the scan sees the checker's violations
    missing = sorted(k for k, _ in pairs if k not in KIND_PROPERTY)
    assert not missing, missing
    assert all(p in PROPERTIES for _, p in pairs)


def test_the_contract_names_known_properties_and_reported_kinds():
    assert set(KIND_PROPERTY.values()) <= set(PROPERTIES)
    # every kind of the contract is written somewhere in the checker besides the contract itself
    # (kinds chosen at run time, e.g. ``Violation(kind, ...)``, appear as literals there)
    source = "\n".join(p.read_text() for p in CHECKER.rglob("*.py") if p.name != "report.py")
    unused = sorted(k for k in KIND_PROPERTY if f'"{k}"' not in source)
    assert not unused, unused


def test_a_dropped_message_whose_processing_a_restore_undid_says_so():
    """B processes ab:1 after its checkpoint, records the channel empty, then restores that
    checkpoint: the witness said "never processed by B in the trace", though line 8
    processes it (the ``lost`` of the same report cites that line)."""
    from snapcheck.checker import check_trace
    from snapcheck.traces import TraceRecorder

    rec = TraceRecorder(["A", "B"], [("ab", "A", "B")], protocol="chandy-lamport")
    m = rec.send("A", "ab")
    rec.checkpoint("A", round=1)
    rec.recv("B", rec.barrier("A", "ab", round=1))
    cb = rec.checkpoint("B", round=1)
    rec.record("B", cb, "ab", [])
    rec.recv("B", m)
    rec.fail("B")
    rec.restore("B", cb, recovery=1)
    [dropped] = [v for v in check_trace(rec.trace()).violations if v.kind == "dropped"]
    assert "processed by B at line 8, which the restore at line 10 undid" in dropped.message
