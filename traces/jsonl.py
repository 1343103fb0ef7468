"""Reading v1 traces (JSON Lines, or the Parquet form).

``iter_events`` streams: it parses, validates and yields one ``Event`` at a
time, so a 10M-event file is processed in one pass with memory proportional to
the number of processes and messages, not events. ``read_trace`` builds a whole
``Trace`` in memory. Both also accept the Parquet form (``.parquet``, one trace
chosen by ``trace_id`` when the file holds several), see ``traces.parquet``.
Lines are read with a length limit and integers must fit 64 bits
(``traces.lines``). Writing is ``traces.writer``.
"""

from __future__ import annotations

import io
import os
from typing import Iterator

import orjson

from snapcheck.traces.errors import TraceError, TraceErrors
from snapcheck.traces.lines import Unreadable, integer_problem, split_lines
from snapcheck.traces.model import Event, Header, Trace
from snapcheck.traces.validate import DEFAULT_MAX_ERRORS, TraceValidator


def _is_parquet(path: str) -> bool:
    return str(path).endswith((".parquet", ".pq"))


def _open_lines(path, max_line_bytes: int | None) -> Iterator[tuple[int, bytes]]:
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise TraceErrors([TraceError(str(path), 0, f"cannot open: {exc.strerror}")]) from None
    with f:
        yield from split_lines(f, str(path), max_line_bytes)


def _text_lines(source) -> Iterator[tuple[int, bytes]]:
    for n, raw in enumerate(source, 1):
        yield n, raw.encode() if isinstance(raw, str) else raw


def _raw_lines(source, max_line_bytes: int | None = None) -> Iterator[tuple[int, dict | None, str | None]]:
    """(line number, parsed object or None, parse error or None); blank lines skipped.
    Raises ``Unreadable`` when reading cannot go on (a line over the length limit)."""
    if isinstance(source, (str, os.PathLike)):
        lines = _open_lines(source, max_line_bytes)
    else:
        lines = _text_lines(source)
    loads, JSONDecodeError = orjson.loads, orjson.JSONDecodeError
    for n, raw in lines:
        try:
            obj = loads(raw)
        except JSONDecodeError as exc:
            if raw.isspace() or not raw:
                continue
            yield n, None, f"malformed JSON: {exc}"
            continue
        problem = integer_problem(raw)
        if problem is not None:
            yield n, None, problem
            continue
        yield n, obj, None


def iter_events(path, validator: TraceValidator | None = None, raise_errors: bool = True,
                max_errors: int = DEFAULT_MAX_ERRORS, trace_id: str | None = None,
                max_line_bytes: int | None = None) -> Iterator[Event]:
    """Stream the validated events of a trace file (the header is ``validator.header_obj``).

    Invalid lines are not yielded; when the file is exhausted, ``TraceErrors`` is
    raised if any problem was found (so a consumer never accepts a bad trace).
    ``trace_id`` picks one trace of a multi-trace Parquet file; ``max_line_bytes``
    bounds the length of a JSONL line (default: ``traces.lines.max_line_bytes()``).
    """
    name = str(path)
    v = validator or TraceValidator(name, max_errors)
    rows = _rows(path, trace_id, max_line_bytes)
    got_header = complete = False
    try:
        for line, obj, err in rows:
            if err is not None:
                v.error(line, err)
                if not got_header:
                    break
                continue
            if not got_header:
                got_header = True
                if v.header(obj, line) is None:
                    break
                continue
            ev = v.event(obj, line)
            if ev is not None:
                yield ev
        else:
            complete = True
    except Unreadable as exc:
        v.error(exc.line, exc.reason)
    if complete and not got_header and v.ok:
        v.error(0, "empty trace: no header line")
    if complete and v.header_obj is not None:
        v.finish()
    if raise_errors:
        v.raise_if_errors()


def _rows(path, trace_id: str | None, max_line_bytes: int | None):
    name = str(path)
    if isinstance(path, (str, os.PathLike)) and _is_parquet(name):
        from snapcheck.traces.parquet import iter_parquet_dicts
        return iter_parquet_dicts(name, trace_id)
    if trace_id is not None:
        raise TraceErrors([TraceError(name, 0, "--trace-id applies to Parquet files only (one JSONL file "
                                               "holds one trace)")])
    return _raw_lines(path, max_line_bytes)


def read_header(path, trace_id: str | None = None) -> Header:
    """Read and validate only the header line."""
    v = TraceValidator(str(path))
    try:
        for line, obj, err in _rows(path, trace_id, None):
            if err:
                v.error(line, err)
            else:
                h = v.header(obj, line)
                if h is not None:
                    return h
            break
    except Unreadable as exc:
        v.error(exc.line, exc.reason)
    if v.ok:
        v.error(0, "empty trace: no header line")
    v.raise_if_errors()
    raise AssertionError("unreachable")


def read_trace(path, max_errors: int = DEFAULT_MAX_ERRORS, trace_id: str | None = None) -> Trace:
    """Read, validate and return a whole trace (``trace_id``: one trace of a multi-trace
    Parquet file). Raises ``TraceErrors``."""
    v = TraceValidator(str(path), max_errors)
    events = list(iter_events(path, validator=v, trace_id=trace_id))
    return Trace(v.header_obj, events, str(path))


def parse_trace(text: str, name: str = "<memory>") -> Trace:
    """Parse and validate a trace given as JSONL text."""
    v = TraceValidator(name)
    events = list(iter_events(io.StringIO(text), validator=v))
    return Trace(v.header_obj, events, name)
