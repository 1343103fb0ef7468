"""JSON Lines reading and writing of v1 traces.

``iter_events`` streams: it parses, validates and yields one ``Event`` at a
time, so a 10M-event file is processed in one pass with memory proportional to
the number of processes and messages, not events. ``read_trace`` builds a whole
``Trace`` in memory. Both also accept the Parquet form (``.parquet``), see
``traces.parquet``.
"""

from __future__ import annotations

import io
import os
from typing import IO, Iterable, Iterator

import orjson

from snapcheck.traces.errors import TraceError, TraceErrors
from snapcheck.traces.model import Event, Header, Trace
from snapcheck.traces.validate import DEFAULT_MAX_ERRORS, TraceValidator


def _is_parquet(path: str) -> bool:
    return str(path).endswith((".parquet", ".pq"))


def _open_lines(path: str) -> Iterator[tuple[int, bytes]]:
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise TraceErrors([TraceError(str(path), 0, f"cannot open: {exc.strerror}")]) from None
    with f:
        for n, raw in enumerate(f, 1):
            yield n, raw


def _raw_lines(source) -> Iterator[tuple[int, dict | None, str | None]]:
    """(line number, parsed object or None, parse error or None); blank lines skipped."""
    lines = _open_lines(source) if isinstance(source, (str, os.PathLike)) else enumerate(source, 1)
    for n, raw in lines:
        if isinstance(raw, str):
            raw = raw.encode()
        if not raw.strip():
            continue
        try:
            yield n, orjson.loads(raw), None
        except orjson.JSONDecodeError as exc:
            yield n, None, f"malformed JSON: {exc}"


def iter_events(path, validator: TraceValidator | None = None, raise_errors: bool = True,
                max_errors: int = DEFAULT_MAX_ERRORS) -> Iterator[Event]:
    """Stream the validated events of a trace file (the header is ``validator.header_obj``).

    Invalid lines are not yielded; when the file is exhausted, ``TraceErrors`` is
    raised if any problem was found (so a consumer never accepts a bad trace).
    """
    name = str(path)
    v = validator or TraceValidator(name, max_errors)
    if _is_parquet(name):
        from snapcheck.traces.parquet import iter_parquet_dicts
        rows = iter_parquet_dicts(name)
    else:
        rows = _raw_lines(path)
    got_header = False
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
    if not got_header and v.ok:
        v.error(0, "empty trace: no header line")
    if v.header_obj is not None:
        v.finish()
    if raise_errors:
        v.raise_if_errors()


def read_header(path) -> Header:
    """Read and validate only the header line."""
    v = TraceValidator(str(path))
    for line, obj, err in (_raw_lines(path) if not _is_parquet(str(path)) else _parquet_first(path)):
        if err:
            v.error(line, err)
        else:
            h = v.header(obj, line)
            if h is not None:
                return h
        break
    if v.ok:
        v.error(0, "empty trace: no header line")
    v.raise_if_errors()
    raise AssertionError("unreachable")


def _parquet_first(path):
    from snapcheck.traces.parquet import iter_parquet_dicts
    yield next(iter(iter_parquet_dicts(str(path))))


def read_trace(path, max_errors: int = DEFAULT_MAX_ERRORS) -> Trace:
    """Read, validate and return a whole trace. Raises ``TraceErrors``."""
    v = TraceValidator(str(path), max_errors)
    events = list(iter_events(path, validator=v))
    return Trace(v.header_obj, events, str(path))


def parse_trace(text: str, name: str = "<memory>") -> Trace:
    """Parse and validate a trace given as JSONL text."""
    v = TraceValidator(name)
    events = list(iter_events(io.StringIO(text), validator=v))
    return Trace(v.header_obj, events, name)


def _dump(obj: dict) -> bytes:
    return orjson.dumps(obj) + b"\n"


def dumps_trace(header: Header | dict, events: Iterable[Event | dict]) -> bytes:
    """Serialize a trace to JSONL bytes (deterministic: same input, same bytes)."""
    hd = header.to_dict() if isinstance(header, Header) else header
    parts = [_dump(hd)]
    parts.extend(_dump(e.to_dict() if isinstance(e, Event) else e) for e in events)
    return b"".join(parts)


def write_trace(path_or_file, trace_or_header, events: Iterable[Event | dict] | None = None) -> None:
    """Write a ``Trace`` (or a header and events) as JSONL to a path or binary file."""
    if isinstance(trace_or_header, Trace):
        header, events = trace_or_header.header, trace_or_header.events
    else:
        header = trace_or_header
    data = dumps_trace(header, events or [])
    if isinstance(path_or_file, (str, os.PathLike)):
        with open(path_or_file, "wb") as f:
            f.write(data)
    else:
        f: IO[bytes] = path_or_file
        f.write(data)
