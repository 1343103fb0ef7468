"""Checks that read the trace format's free-form fields, guarded.

The trace format types every field the checker's core reads (validated against the
JSON Schema before a check). Some families of checks also read fields the format
leaves free-form: a protocol's ``params``, events' ``attrs``, ``piggyback`` and
``vars``, the header's ``metadata`` (the 2PC sink's ``txn`` and ``phase``, HMNR's
piggybacked vectors, changelog handles, split assignments, the simulator's
configuration…). A trace whose such field has another shape than its family
expects cannot be judged by that family; ``guarded`` turns the exception that
reading it raises into ``UnreadableField``: a usage error (exit 2) naming the
family, the line of the event being read when it failed (found among the failing
frames' local variables) and the reason, never a traceback.
"""

from __future__ import annotations

from collections.abc import Callable

from snapcheck.checker.options import CheckerUsageError
from snapcheck.traces.model import Event

READING = (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError)


class UnreadableField(CheckerUsageError):
    """A free-form field of the trace has a shape a family of checks cannot read: bad
    input (exit 2), never a verdict.

    >>> isinstance(UnreadableField("line 1: params.replicas must map …"), CheckerUsageError)
    True
    """


def guarded(name: str, family: Callable, run) -> None:
    """Run ``family(run)`` (the checks of ``name``); an exception it raises reading the
    trace becomes ``UnreadableField`` (a ``CheckerUsageError`` as such raises itself).

    >>> from snapcheck.traces.model import Event
    >>> def family(run):
    ...     e = Event(type="output", proc="sink", idx=3, line=12, attrs={"txn": "V"})
    ...     return e.attrs["txn"] + 1
    >>> try:
    ...     guarded("output-commit", family, None)
    ... except UnreadableField as exc:
    ...     print(str(exc)[:70])
    line 12: the output-commit checks cannot read this trace: TypeError: c
    """
    try:
        family(run)
    except CheckerUsageError:
        raise
    except READING as exc:
        line = _line_being_read(exc)
        where = f"line {line}: " if line else ""
        raise UnreadableField(
            f"{where}the {name} checks cannot read this trace: {type(exc).__name__}: {exc} (a protocol-specific "
            "field -- params, attrs, piggyback, vars or metadata -- has a type or shape these checks do not "
            "expect; docs/trace-format.md says what each holds)"
        ) from None


def need_count(value, what: str, least: int = 0) -> int | None:
    """``value`` (a protocol-specific field, ``what`` names it) as a count: an integer of
    at least ``least``, or None when absent; anything else is ``UnreadableField``.

    >>> need_count(3, "params.max_consecutive", 1), need_count(None, "attrs.records")
    (3, None)
    >>> need_count("3", "params.max_consecutive", 1)
    Traceback (most recent call last):
    ...
    snapcheck.checker.free_fields.UnreadableField: line 1: params.max_consecutive must be an integer of at least 1, not '3'
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise UnreadableField(f"line 1: {what} must be an integer of at least {least}, not {value!r}")
    return value


def _line_being_read(exc: BaseException) -> int | None:
    """The line of the event a failing frame was reading: the innermost frame with an
    ``Event`` among its local variables (None when no frame has one)."""
    tb, frames = exc.__traceback__, []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        for value in frame.f_locals.values():
            if isinstance(value, Event) and value.line:
                return value.line
    return None
