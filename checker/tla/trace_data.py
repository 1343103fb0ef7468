"""The data of a trace-validation run (``Traces``, ``TInit``, ``TCut`` of the
generated module ``TraceLog``) as a binary file that TLC reads through a Java
operator override, instead of TLA+ text that SANY parses.

SANY's time grows with the size of a literal (measured: about 2 ms of CPU per
trace event, 1,000 events in chunks of 40 definitions), which alone would make a
million-event trace take half an hour. TLC 2.15 replaces a definition of module
``M`` by the public static method of the same name and arity of a class named
``M`` on its classpath; ``java/TraceLog.java`` is that class for ``TraceLog``: it
reads the file named by the system property ``snapcheck.tracelog`` once. The
class is compiled with ``javac`` on first use (``checker.tla.javac``), cached
by its source and the TLC jar; without a JDK the run falls back to TLA+ text.

The format (big-endian) is described in ``java/TraceLog.java``; ``write_values``
writes Python values as TLA+ values: ``int`` (32-bit), ``str``, ``bool``,
``list``/``tuple`` (a sequence), ``set``/``frozenset`` (a finite set), ``dict``
with ``str`` keys that are identifiers (a record), and ``Function`` (a function
with arbitrary keys).

>>> import io
>>> buf = io.BytesIO()
>>> write_values(buf, {"Traces": [[{"op": "send", "n": 1}]]})
>>> buf.getvalue()[:8]
b'SNAPTLA1'
"""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import BinaryIO

from snapcheck.checker.tla.javac import compiled
from snapcheck.checker.tla.trace_events import Function, tla

MAGIC = b"SNAPTLA1"
PROPERTY = "snapcheck.tracelog"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def write_values(out: BinaryIO, defs: dict) -> None:
    """Write definitions (name -> value) in the format ``TraceLog.java`` reads."""
    strings: dict[str, int] = {}
    body = bytearray()
    pack_i = struct.Struct(">i").pack
    pack_u = struct.Struct(">I").pack
    string_code: dict[str, bytes] = {}  # "s" + index, per string
    int_code: dict[int, bytes] = {}  # "i" + value, per int
    shape_code: dict[tuple, list[bytes]] = {}  # per record shape: "r" + count, then each field's name

    def sid(s: str) -> bytes:
        n = strings.get(s)
        if n is None:
            n = strings[s] = len(strings)
        return pack_u(n)

    def value(v) -> None:
        t = type(v)
        if t is str:
            code = string_code.get(v)
            if code is None:
                code = string_code[v] = b"s" + sid(v)
            body.extend(code)
        elif t is int:
            code = int_code.get(v)
            if code is None:
                code = int_code[v] = b"i" + pack_i(v)
            body.extend(code)
        elif t is dict:
            keys = tuple(v)
            names = shape_code.get(keys)
            if names is None:
                for k in keys:
                    if not _IDENT.match(k):
                        raise ValueError(f"record field {k!r} is not an identifier")
                names = shape_code[keys] = [b"r" + pack_u(len(keys))] + [sid(k) for k in keys]
            body.extend(names[0])
            for name, x in zip(names[1:], v.values()):
                body.extend(name)
                value(x)
        elif t is list or t is tuple:
            body.extend(b"t" + pack_u(len(v)))
            for x in v:
                value(x)
        elif t is bool:
            body.extend(b"b\x01" if v else b"b\x00")
        elif t is set or t is frozenset:
            body.extend(b"e" + pack_u(len(v)))
            for x in sorted(v, key=tla):  # the text form's order: the file does not depend on hashing
                value(x)
        elif isinstance(v, Function):
            body.extend(b"f" + pack_u(len(v)))
            for k, x in v.items():
                value(k)
                value(x)
        else:
            raise TypeError(f"cannot write {v!r} as a TLA+ value")

    for name, v in defs.items():
        body.extend(sid(name))
        value(v)
    out.write(MAGIC)
    out.write(pack_u(len(strings)))
    for s in strings:  # insertion order = index order
        b = s.encode()
        out.write(pack_u(len(b)) + b)
    out.write(pack_u(len(defs)))
    out.write(body)


def override_classes(jar: Path, java: str) -> Path | None:
    """The directory holding the compiled ``TraceLog`` class (compiled now if needed),
    or None if no ``javac`` is found next to ``java`` or on PATH, or it fails."""
    return compiled("TraceLog", jar, java)
