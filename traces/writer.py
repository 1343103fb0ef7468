"""Writing v1 traces: the one serialization every producer uses.

A trace is JSON Lines: the header object, then one event object per line, each
serialized by orjson in compact form with its keys in the order given
(``Event.to_dict`` gives the canonical order), every line ending in a newline.
The simulator's event log, ``TraceRecorder`` and the Flink trace merger all
write through this module, so the same trace is always the same bytes.

Two ways in, the same serialization underneath:

* the fast path, ``dumps_trace(header, events)``: serialize, check nothing. For
  producers whose events are valid by construction (the reference simulator,
  millions of events per campaign) or validated when read back (the Flink merger).
* the checked path, ``TraceWriter``: every event is checked at the call: it must
  serialize (JSON values only; no NaN or infinity), every integer must fit the
  format's signed 64 bits, and it must be valid where it stands in the trace
  (``TraceValidator``: schema, known process and channel, the right end of its
  channel, a message received at most once, ...). A problem is a
  ``RecorderError`` naming it, and nothing is written. ``TraceRecorder`` records
  through it.

Files are written atomically (``traces.atomic``); a ``TraceWriter`` given
``stream=`` writes each line through to an open binary file as it is accepted.

>>> from snapcheck.traces.model import Header, Process, Channel
>>> h = Header([Process("A"), Process("B")], [Channel("a2b", "A", "B")])
>>> w = TraceWriter(h)
>>> _ = w.event({"type": "send", "proc": "A", "idx": 0, "ch": "a2b", "mid": "m1", "seq": 1})
>>> w.event({"type": "recv", "proc": "A", "idx": 1, "ch": "a2b", "mid": "m1"})
Traceback (most recent call last):
...
snapcheck.traces.errors.RecorderError: recv on the wrong channel: A is not the destination of 'a2b' (destination B)
>>> len(w.dumps().splitlines())
2
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from typing import IO

import orjson

from snapcheck.traces.atomic import atomic_open
from snapcheck.traces.errors import RecorderError
from snapcheck.traces.lines import integer_problem
from snapcheck.traces.model import Event, Header, Trace
from snapcheck.traces.validate import TraceValidator


def header_dict(header: Header | dict) -> dict:
    """The header as the JSON object of the first line."""
    return header.to_dict() if isinstance(header, Header) else header


def dumps_trace(header: Header | dict, events: Iterable[Event | dict]) -> bytes:
    """The trace as JSONL bytes, unchecked (the fast path; deterministic: same input, same bytes)."""
    dumps = orjson.dumps
    parts = [dumps(header_dict(header))]
    parts.extend(dumps(e.to_dict() if type(e) is Event else e) for e in events)
    parts.append(b"")
    return b"\n".join(parts)


def write_trace(
    path_or_file,
    trace_or_header,
    events: Iterable[Event | dict] | None = None,
    inputs: Iterable[str | os.PathLike] = (),
) -> None:
    """Write a ``Trace`` (or a header and events) as JSONL to a path (atomically; never
    onto one of ``inputs``) or to an open binary file."""
    if isinstance(trace_or_header, Trace):
        header, events = trace_or_header.header, trace_or_header.events
    else:
        header = trace_or_header
    data = dumps_trace(header, events or [])
    if isinstance(path_or_file, (str, os.PathLike)):
        with atomic_open(path_or_file, "wb", inputs) as f:
            f.write(data)
    else:
        path_or_file.write(data)


def _not_finite(value) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_not_finite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_not_finite(v) for v in value)
    return False


def _encoding_problem(obj) -> str | None:
    """Why orjson refused ``obj``, when it is an integer beyond 64 bits (naming the field)."""
    try:
        text = json.dumps(obj)
    except (TypeError, ValueError):
        return None
    return integer_problem(text)


def encoded(obj) -> tuple[bytes, str | None]:
    """``obj`` as one line of a trace, and why it cannot be one (None when it can): a value
    JSON cannot hold, NaN or infinity, an integer beyond 64 bits.

    >>> encoded({"sn": 3})
    (b'{"sn":3}', None)
    >>> encoded({"sn": object()})[1]
    'a value cannot be written as JSON (Type is not JSON serializable: object)'
    >>> encoded({"sn": float("nan")})[1]
    'NaN and infinity are not JSON numbers'
    """
    try:
        line = orjson.dumps(obj)
    except (TypeError, orjson.JSONEncodeError) as exc:
        return b"", _encoding_problem(obj) or f"a value cannot be written as JSON ({exc})"
    if b"null" in line and _not_finite(obj):
        return line, "NaN and infinity are not JSON numbers"
    return line, integer_problem(line)


class TraceWriter:
    """A trace written event by event, each event checked at the call (see the module).

    ``header``: a ``Header`` or its dict; ``stream``: an open binary file that
    receives the header and each accepted line at once (else the lines are kept
    and ``dumps``/``write`` give them)."""

    def __init__(self, header: Header | dict, stream: IO[bytes] | None = None, name: str = "<recorder>"):
        self._stream = stream
        self._lines: list[bytes] = []
        self._v = TraceValidator(name, max_errors=1, strict=True)
        hd = header_dict(header)
        line = self._encode(hd, "the header")
        if self._v.header(hd, 1) is None or not self._v.ok:
            raise RecorderError(self._v.last_reason)
        self._emit(line)

    @property
    def events_written(self) -> int:
        return self._v.events_seen

    def _encode(self, obj: dict, what: str) -> bytes:
        line, problem = encoded(obj)
        if problem is not None:
            raise RecorderError(f"{what}: {problem}")
        return line

    def _emit(self, line: bytes) -> None:
        if self._stream is not None:
            self._stream.write(line + b"\n")
        else:
            self._lines.append(line)

    def event(self, d: dict) -> bytes:
        """Check and write one event (a dict in the JSONL form); returns its line.
        Raises ``RecorderError`` (and writes nothing) if the event is not valid here."""
        line = self._encode(d, f"{d.get('type', 'event')} by {d.get('proc', '?')}")
        v = self._v
        if not v.check_event(d, v.events_seen + 2):
            raise RecorderError(v.last_reason)
        self._emit(line)
        return line

    def finish(self) -> None:
        """The whole-trace checks (references resolved, happened-before acyclic)."""
        v = self._v
        before = v.total_errors
        v.finish()
        if v.total_errors > before:
            raise RecorderError(v.last_reason)

    def dumps(self) -> bytes:
        """The whole trace as JSONL bytes (a writer without ``stream``)."""
        if self._stream is not None:
            raise ValueError("this writer streams to a file; read the file instead")
        return b"\n".join(self._lines + [b""])

    def write(self, path: str | os.PathLike) -> None:
        """Write the whole trace to ``path`` atomically."""
        with atomic_open(path, "wb") as f:
            f.write(self.dumps())
