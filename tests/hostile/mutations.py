"""Mutations of valid traces into hostile ones, for the fuzzer: byte flips, truncation,
dropped, swapped and duplicated lines, extreme integers, invalid UTF-8, wrong types,
absurd strings. Every choice comes from the ``random.Random`` given (one seed, one input)."""

from __future__ import annotations

import random
import re
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "traces" / "examples"
EXTREME_INTEGERS = (
    str(n).encode() for n in (2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**30, -1, 0)
)
EXTREME_INTEGERS = (*EXTREME_INTEGERS, b"1" + b"0" * 5000)
_INT = re.compile(rb"(?<![\w.])-?\d+(?![\w.])")
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


def golden() -> list[bytes]:
    """The golden traces, the seeds of every mutation."""
    return [p.read_bytes() for p in sorted(EXAMPLES.glob("*.jsonl"))]


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def flip_bytes(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if b:
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    return bytes(b)


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def drop_line(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    del lines[rng.randrange(len(lines))]
    return b"\n".join(lines)


def swap_lines(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


def duplicate_line(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    i = rng.randrange(len(lines))
    lines.insert(rng.randrange(len(lines) + 1), lines[i])
    return b"\n".join(lines)


def extreme_integer(data: bytes, rng: random.Random) -> bytes:
    spots = list(_INT.finditer(data))
    if not spots:
        return data
    m = rng.choice(spots)
    return data[: m.start()] + rng.choice(EXTREME_INTEGERS) + data[m.end() :]


def invalid_utf8(data: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(data) + 1)
    return data[:at] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\xef\xbb\xbf"]) + data[at:]


def wrong_value(data: bytes, rng: random.Random) -> bytes:
    spots = list(_STRING.finditer(data)) + list(_INT.finditer(data))
    if not spots:
        return data
    m = rng.choice(spots)
    value = rng.choice(
        [
            b"null",
            b"true",
            b"[]",
            b"{}",
            b"1.5",
            b'"' + b"x" * rng.choice([0, 201, 5000]) + b'"',
            b'"send"',
            b'"recv"',
            b'"checkpoint"',
            b"[[[[[[[[]]]]]]]]",
            b'{"a": [1, {"b": null}]}',
        ]
    )
    return data[: m.start()] + value + data[m.end() :]


def blank_and_noise(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    lines.insert(rng.randrange(len(lines) + 1), rng.choice([b"", b"   ", b"\r", b"{", b"]", b"null", b"42", b'"x"']))
    return b"\n".join(lines)


MUTATIONS = (
    flip_bytes,
    truncate,
    drop_line,
    swap_lines,
    duplicate_line,
    extreme_integer,
    invalid_utf8,
    wrong_value,
    blank_and_noise,
)


def mutate(data: bytes, rng: random.Random, steps: int | None = None) -> bytes:
    """``data`` after 1-4 random mutations (``steps`` of them when given)."""
    for _ in range(steps or rng.randint(1, 4)):
        data = rng.choice(MUTATIONS)(data, rng)
    return data


def hostile(seed: int) -> bytes:
    """The hostile input number ``seed``: a mutated golden trace."""
    rng = random.Random(seed)
    return mutate(rng.choice(golden()), rng)
