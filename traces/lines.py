"""Reading JSON Lines defensively: bounded line length, exact 64-bit integers.

``split_lines`` cuts a binary stream into numbered lines, reading fixed-size
chunks, and stops with ``Unreadable`` at the first line longer than the limit
(``max_line_bytes``, default ``DEFAULT_MAX_LINE_BYTES``): an endless line (say
``/dev/zero`` given as a trace) is rejected after reading at most the limit,
in bounded memory, instead of being read until memory runs out.

``integer_problem`` decides whether every integer of a JSON text fits the
signed 64-bit range [-2^63, 2^63 - 1] of the trace format (and of its Parquet
columns). orjson parses integers up to 2^64 - 1 exactly but turns larger ones
into floats without a word, so the check looks at the text itself: only a line
with a run of 19 or more digits can hold an out-of-range integer, and only such
a line is parsed a second time, exactly, to find the field.

``duplicate_key`` decides whether a JSON object repeats a key (``{"ckpt": 1, "ckpt":
2}``): orjson keeps the last value without a word, which would let one line say two
things. A line is proved free of repeated keys by comparing it with the serialization
of what was parsed (equal texts, once spaces are removed, have the same number of keys
in every object); only a line that differs otherwise (other escapes or number forms)
is parsed a second time, keeping every key.

>>> import io
>>> list(split_lines(io.BytesIO(b'{"a": 1}\\n\\n{"b": 2}'), "t.jsonl"))
[(1, b'{"a": 1}'), (2, b''), (3, b'{"b": 2}')]
>>> integer_problem(b'{"vars": {"x": 18446744073709551616}}')
"field 'vars.x': integer 18446744073709551616 is outside the signed 64-bit range"
>>> integer_problem(b'{"seq": 9223372036854775807}') is None
True
>>> duplicate_key(b'{"a": 1, "b": {"c": 2, "c": 3}}', {"a": 1, "b": {"c": 3}})
"key 'c' appears twice in one object (which value is meant is ambiguous)"
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

import orjson

DEFAULT_MAX_LINE_BYTES = 64 * 2**20
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
CHUNK = 1 << 18

_max_line_bytes = DEFAULT_MAX_LINE_BYTES
_ZERO_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_NINETEEN_DIGITS = b"0" * 19


class Unreadable(Exception):
    """Reading cannot go on: ``line`` (1-based) and ``reason``."""

    def __init__(self, line: int, reason: str):
        super().__init__(reason)
        self.line = line
        self.reason = reason


def max_line_bytes() -> int:
    """The current line length limit (bytes, without the newline)."""
    return _max_line_bytes


def set_max_line_bytes(limit: int) -> None:
    """Change the line length limit of every reader in this process (``snapcheck --max-line-bytes``)."""
    global _max_line_bytes
    if limit < 1:
        raise ValueError("the line length limit must be at least 1 byte")
    _max_line_bytes = limit


def _too_long(line: int, limit: int) -> Unreadable:
    return Unreadable(
        line,
        f"line longer than {limit:,} bytes (the limit of one trace line; "
        f"raise it with 'snapcheck --max-line-bytes N' if the line is real)",
    )


def line_batches(
    f: BinaryIO, name: str = "<stream>", limit: int | None = None, progress=None
) -> Iterator[tuple[int, list[bytes], bool]]:
    """The lines of ``f`` in batches, one per chunk read: (number of the batch's first line,
    its lines without newlines, whether a line of the batch may hold a run of 19 digits,
    i.e. an integer that ``integer_problem`` must look at). Raises ``Unreadable`` for a line
    longer than ``limit`` bytes or a read error. ``progress(bytes read so far)`` is called
    after every chunk."""
    limit = _max_line_bytes if limit is None else limit
    n = 1  # number of the next line
    done = 0
    pending: list[bytes] = []  # pieces of a line not finished yet
    pending_len = 0
    while True:
        try:
            chunk = f.read(CHUNK)
        except OSError as exc:
            raise Unreadable(n, f"cannot read: {exc.strerror or exc}") from None
        if not chunk:
            break
        if progress is not None:
            done += len(chunk)
            progress(done)
        cut = chunk.find(b"\n")
        if cut < 0:
            pending.append(chunk)
            pending_len += len(chunk)
            if pending_len > limit:
                raise _too_long(n, limit)
            continue
        if pending:
            pending.append(chunk[:cut])
            first = b"".join(pending)
            pending, pending_len = [], 0
            chunk = chunk[cut + 1 :]
            if len(first) > limit:
                raise _too_long(n, limit)
            yield n, [first], _NINETEEN_DIGITS in first.translate(_ZERO_DIGITS)
            n += 1
        lines = chunk.split(b"\n")
        tail = lines.pop()
        if len(chunk) > limit:
            for k, raw in enumerate(lines):
                if len(raw) > limit:
                    raise _too_long(n + k, limit)
        if lines:
            yield n, lines, _NINETEEN_DIGITS in chunk.translate(_ZERO_DIGITS)
            n += len(lines)
        if tail:
            pending.append(tail)
            pending_len = len(tail)
            if pending_len > limit:
                raise _too_long(n, limit)
    if pending:
        last = b"".join(pending)
        yield n, [last], _NINETEEN_DIGITS in last.translate(_ZERO_DIGITS)


def split_lines(f: BinaryIO, name: str = "<stream>", limit: int | None = None) -> Iterator[tuple[int, bytes]]:
    """(line number, line without its newline) for every line of ``f``, blank ones included.
    Raises ``Unreadable`` for a line longer than ``limit`` bytes or a read error."""
    for first, lines, _ in line_batches(f, name, limit):
        yield from enumerate(lines, first)


class _Big:
    """An integer literal outside the signed 64-bit range (kept as its text)."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


def _parse_int(text: str):
    digits = len(text) - (text[0] == "-")
    if digits < 19:
        return int(text)
    if digits > 20:
        return _Big(text)
    v = int(text)
    return v if INT64_MIN <= v <= INT64_MAX else _Big(text)


def _find_big(obj, path: str) -> tuple[str, str] | None:
    if isinstance(obj, _Big):
        return path, obj.text
    items: Iterable[tuple[Any, Any]]
    if isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, list):
        items = ((f"[{i}]", v) for i, v in enumerate(obj))
    else:
        return None
    for k, v in items:
        sub = (f"{path}{k}" if k.startswith("[") else f"{path}.{k}" if path else k) if isinstance(k, str) else path
        found = _find_big(v, sub)
        if found is not None:
            return found
    return None


def integer_problem(raw: bytes | str) -> str | None:
    """None if every integer literal of the JSON text ``raw`` fits signed 64 bits,
    else a reason naming the first field that does not."""
    if isinstance(raw, str):
        raw = raw.encode()
    if _NINETEEN_DIGITS not in raw.translate(_ZERO_DIGITS):  # no run of 19 digits: all fit
        return None
    try:
        obj = json.loads(raw, parse_int=_parse_int)
    except ValueError:
        return None  # not JSON: the parser reports it
    found = _find_big(obj, "")
    if found is None:
        return None
    path, text = found
    shown = text if len(text) <= 40 else f"{text[:20]}…{text[-8:]} ({len(text.lstrip('-'))} digits)"
    where = f"field {path!r}: " if path else ""
    return f"{where}integer {shown} is outside the signed 64-bit range"


_SPACES = b" \t\r\n"


class _Repeated(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _unique(pairs: list[tuple[str, Any]]) -> dict:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise _Repeated(k)
            seen.add(k)
    return d


def duplicate_key(raw: bytes | str, obj: object) -> str | None:
    """None if no object of the JSON text ``raw`` (parsed as ``obj``) repeats a key, else
    the reason naming the key (or saying that ``obj`` is nested deeper than any trace is)."""
    if isinstance(raw, str):
        raw = raw.encode()
    try:
        again = orjson.dumps(obj)
    except orjson.JSONEncodeError:  # orjson writes at most 254 levels, as every trace writer does
        return "values nested more than 254 levels deep"
    if again == raw or again.translate(None, _SPACES) == raw.translate(None, _SPACES):
        return None
    try:
        json.loads(raw, object_pairs_hook=_unique)
    except _Repeated as exc:
        return f"key {exc.key!r} appears twice in one object (which value is meant is ambiguous)"
    except (ValueError, RecursionError):
        return None  # a text orjson reads and json does not: no repeated key was seen
    return None
