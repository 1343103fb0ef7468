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
import json
import os
from collections.abc import Iterator

import orjson

from snapcheck.traces.errors import TraceError, TraceErrors
from snapcheck.traces.gc_pause import paused_gc
from snapcheck.traces.lines import Unreadable, duplicate_key, integer_problem, line_batches
from snapcheck.traces.model import Event, EventBuilder, Header, Trace
from snapcheck.traces.validate import DEFAULT_MAX_ERRORS, TraceValidator

_JSON_SPACE = b" \t\r\n"  # the whitespace of JSON (RFC 8259): \v or \f makes no blank line


def _is_parquet(path: str) -> bool:
    return str(path).endswith((".parquet", ".pq"))


def _open_batches(path, max_line_bytes: int | None, progress=None) -> Iterator[tuple[int, list[bytes], bool]]:
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise TraceErrors([TraceError(str(path), 0, f"cannot open: {exc.strerror}")]) from None
    with f:
        yield from line_batches(f, str(path), max_line_bytes, progress)


def _text_batches(source) -> Iterator[tuple[int, list[bytes], bool]]:
    lines = [raw.encode() if isinstance(raw, str) else raw for raw in source]
    yield 1, lines, True


class _JsonLines:
    """The parsed lines of a JSON Lines source, read in batches (``traces.lines``).

    ``rows()`` yields (line number, parsed object, None) or, for a line refused as it
    is parsed, (line number, the object as far as it could be read or None, the
    problem), blank lines skipped; ``checked(check, refuse, builder)`` goes on after the last line
    ``rows()`` yielded and yields, per batch, the ``Event`` objects ``builder`` makes of
    the lines ``check(object, line)`` accepts (empty lists without a builder; ``check``
    returns the object's keys in order, which pick the builder's constructor, or None for
    a line it refuses): parsing, checking and building in one loop, the hot path of every
    reader. The problems of
    the lines go to ``refuse(line, reason, object as far as read or None)``. Both raise ``Unreadable`` when
    reading cannot go on (a line over the length limit)."""

    def __init__(self, source, max_line_bytes: int | None = None, progress=None):
        if isinstance(source, (str, os.PathLike)):
            self._batches = _open_batches(source, max_line_bytes, progress)
        else:
            self._batches = _text_batches(source)
        self._batch: tuple[int, list[bytes], bool] | None = None  # the batch rows() is in
        self._next = 0  # its next line

    def rows(self) -> Iterator[tuple[int, object, str | None]]:
        loads, dumps, JSONDecodeError = orjson.loads, orjson.dumps, orjson.JSONDecodeError
        for batch in self._batches:
            self._batch = batch
            n, lines, long_digits = batch
            for k, raw in enumerate(lines):
                self._next = k + 1
                try:
                    obj = loads(raw)
                except JSONDecodeError as exc:
                    if raw.strip(_JSON_SPACE):  # a blank line holds only JSON whitespace
                        yield n + k, _as_read(raw), _not_json(raw, exc)
                    continue
                problem = integer_problem(raw) if long_digits else None
                if problem is None:
                    try:
                        if dumps(obj) != raw:  # the common case proves no repeated key
                            problem = _repeated(raw, obj)
                    except orjson.JSONEncodeError:  # orjson writes at most 254 levels
                        problem = TOO_DEEP
                yield n + k, obj, problem
        self._batch = None

    def _remaining(self):
        if self._batch is not None:
            n, lines, long_digits = self._batch
            yield n + self._next, lines[self._next :], long_digits
        yield from self._batches

    def checked(self, check, refuse, builder: EventBuilder | None = None) -> Iterator[list[Event]]:
        loads, dumps, JSONDecodeError = orjson.loads, orjson.dumps, orjson.JSONDecodeError
        makers = builder.makers if builder is not None else None
        for n, lines, long_digits in self._remaining():
            events: list[Event] = []
            add = events.append
            for raw in lines:
                try:
                    obj = loads(raw)
                except JSONDecodeError as exc:
                    if raw.strip(_JSON_SPACE):  # a blank line holds only JSON whitespace
                        refuse(n, _not_json(raw, exc), _as_read(raw))
                    n += 1
                    continue
                problem = integer_problem(raw) if long_digits else None
                if problem is None:
                    try:
                        if dumps(obj) != raw:  # the common case proves no repeated key
                            problem = _repeated(raw, obj)
                    except orjson.JSONEncodeError:  # orjson writes at most 254 levels
                        problem = TOO_DEEP
                if problem is not None:
                    refuse(n, problem, obj)
                    n += 1
                    continue
                keys = check(obj, n)
                if keys and makers is not None:
                    make = makers.get(keys)
                    if make is None:
                        make = builder.maker(keys)  # type: ignore[union-attr]  # makers is builder's
                    add(make(n, obj))
                n += 1
            if builder is not None:
                builder.batch_done()
            yield events


def _as_read(raw: bytes) -> object:
    """A line orjson refuses, as far as it can be read (None when it cannot): the exact
    parser reads an integer too long for orjson's number types."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


TOO_DEEP = "malformed JSON: values nested more than 254 levels deep"  # more than orjson (or any trace) writes


def _repeated(raw: bytes, obj: object) -> str | None:
    problem = duplicate_key(raw, obj)
    return None if problem is None else f"malformed JSON: {problem}"


# How files that are not JSON Lines begin: the line that fails says what the file is
_NOT_JSONL = (
    (b"\x1f\x8b", "a gzip-compressed file, not JSON Lines: decompress it first (gunzip)"),
    (b"PAR1", "a Parquet file named as JSON Lines: name it .parquet"),
    (b"\xff\xfe", "UTF-16 text, not UTF-8: convert it (iconv -f UTF-16 -t UTF-8)"),
    (b"\xfe\xff", "UTF-16 text, not UTF-8: convert it (iconv -f UTF-16 -t UTF-8)"),
)


def _not_json(raw: bytes, exc: Exception) -> str:
    r"""Why a line is not parsed: a file of another format (gzip, Parquet, UTF-16), an
    integer too long for any number type (orjson calls it infinity), else the parser's
    message.

    >>> _not_json(b"\x1f\x8b\x08\x00", ValueError("str is not valid UTF-8"))
    'not JSON: a gzip-compressed file, not JSON Lines: decompress it first (gunzip)'
    >>> _not_json(b'{"proc": "a\xff"}', ValueError("str is not valid UTF-8: surrogates not allowed"))
    'not UTF-8: byte 0xff at column 12 starts no UTF-8 character (a trace is UTF-8 text)'
    """
    for magic, what in _NOT_JSONL:
        if raw.startswith(magic):
            return f"not JSON: {what}"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as bad:
        return (
            f"not UTF-8: byte 0x{raw[bad.start]:02x} at column {bad.start + 1} starts no UTF-8 character "
            "(a trace is UTF-8 text)"
        )
    return integer_problem(raw) or f"malformed JSON: {exc}"


def iter_events(
    path,
    validator: TraceValidator | None = None,
    raise_errors: bool = True,
    max_errors: int = DEFAULT_MAX_ERRORS,
    trace_id: str | None = None,
    max_line_bytes: int | None = None,
    progress=None,
) -> Iterator[Event]:
    """Stream the validated events of a trace file (the header is ``validator.header_obj``).

    Invalid lines are not yielded; when the file is exhausted, ``TraceErrors`` is
    raised if any problem was found (so a consumer never accepts a bad trace).
    ``trace_id`` picks one trace of a multi-trace Parquet file; ``max_line_bytes``
    bounds the length of a JSONL line (default: ``traces.lines.max_line_bytes()``);
    ``progress(bytes read)`` is called as a JSONL file is read. Memory: the events of
    one read batch (``traces.lines.CHUNK`` bytes) at a time.
    """
    v = validator or TraceValidator(str(path), max_errors)
    for events in _valid_batches(path, v, trace_id, max_line_bytes, progress, build=True):
        yield from events
    if raise_errors:
        v.raise_if_errors()


def _builder(header: Header) -> EventBuilder:
    """The ``EventBuilder`` of a trace: its processes and channels share their header's strings."""
    return EventBuilder([p.id for p in header.processes] + [c.id for c in header.channels])


def scan(path, validator: TraceValidator, trace_id: str | None = None, max_line_bytes: int | None = None) -> None:
    """Validate a whole trace file into ``validator`` without building events."""
    for _ in _valid_batches(path, validator, trace_id, max_line_bytes):
        pass


def _valid_batches(
    path,
    v: TraceValidator,
    trace_id: str | None,
    max_line_bytes: int | None,
    progress=None,
    build: bool = False,
) -> Iterator[list[Event]]:
    """Per read batch, the ``Event`` objects of its valid event lines, built (``build``) in the
    validating pass by the trace's ``EventBuilder``; empty lists otherwise (validation only).
    Every problem is recorded in ``v``; the whole-trace checks run at the end when the file
    could be read to its end."""
    source = _source(path, trace_id, max_line_bytes, progress)
    rows = source.rows() if isinstance(source, _JsonLines) else source
    got_header = complete = False
    try:
        for line, obj, err in rows:  # up to the header
            if err is not None:
                v.error(line, err)
                break
            got_header = v.header(obj, line) is not None
            break
        else:
            complete = True
        if got_header:
            assert v.header_obj is not None
            builder = _builder(v.header_obj) if build else None
            if isinstance(source, _JsonLines):
                yield from source.checked(v.check_event, v.refuse, builder)
            else:
                check = v.check_event
                valid: list = []
                for line, obj, err in rows:
                    if err is not None:
                        v.refuse(line, err, obj)
                    elif check(obj, line) and builder is not None:
                        valid.append((line, obj))
                        if len(valid) >= 4096:
                            yield builder.events(valid)
                            valid = []
                yield builder.events(valid) if builder is not None else []
            complete = True
    except Unreadable as exc:
        v.error(exc.line, exc.reason)
    if complete and not got_header and v.ok:
        v.error(0, "empty trace: no header line")
    if complete and got_header:
        v.finish()


def _source(path, trace_id: str | None, max_line_bytes: int | None, progress=None):
    """A ``_JsonLines`` reader, or the (line, object, error) rows of a Parquet trace."""
    name = str(path)
    if isinstance(path, (str, os.PathLike)) and _is_parquet(name):
        from snapcheck.traces.parquet import iter_parquet_dicts

        return iter_parquet_dicts(name, trace_id)
    if trace_id is not None:
        raise TraceErrors(
            [TraceError(name, 0, "--trace-id applies to Parquet files only (one JSONL file holds one trace)")]
        )
    return _JsonLines(path, max_line_bytes, progress)


def _rows(path, trace_id: str | None, max_line_bytes: int | None):
    source = _source(path, trace_id, max_line_bytes)
    return source.rows() if isinstance(source, _JsonLines) else source


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


def read_trace(path, max_errors: int = DEFAULT_MAX_ERRORS, trace_id: str | None = None, progress=None) -> Trace:
    """Read, validate and return a whole trace (``trace_id``: one trace of a multi-trace
    Parquet file; ``progress(bytes read)`` as a JSONL file is read). Raises ``TraceErrors``.

    The cyclic garbage collector is paused while the events are built (``traces.gc_pause``)."""
    v = TraceValidator(str(path), max_errors)
    events: list[Event] = []
    with paused_gc():
        for batch in _valid_batches(path, v, trace_id, None, progress, build=True):
            events += batch
    v.raise_if_errors()
    assert v.header_obj is not None  # raised otherwise
    return Trace(v.header_obj, events, str(path))


def parse_trace(text: str, name: str = "<memory>") -> Trace:
    """Parse and validate a trace given as JSONL text."""
    v = TraceValidator(name)
    events = list(iter_events(io.StringIO(text), validator=v))
    assert v.header_obj is not None  # iter_events raised otherwise
    return Trace(v.header_obj, events, name)


def validate_file(path: str, max_errors: int = DEFAULT_MAX_ERRORS, trace_id: str | None = None) -> TraceValidator:
    """Validate a JSONL or Parquet trace file completely (``trace_id``: one trace of a
    multi-trace Parquet file); return the validator (see ``.errors``)."""
    v = TraceValidator(path, max_errors)
    try:
        scan(path, v, trace_id)
    except TraceErrors as exc:  # the file itself could not be read
        for e in exc.errors:
            v.error(e.line, e.reason)
    return v
