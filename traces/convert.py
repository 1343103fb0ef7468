"""Conversions between the JSONL and the Parquet forms of v1 traces (``parquet``
describes the columns): every source is read once, validated as it is converted, and
the output (written atomically, never onto one of its sources) replaces the target
only when every source was valid; a round trip is lossless. Reading once is what
makes a source that can be read only once (a pipe, ``<(zcat t.jsonl.gz)``) convert
whole, and a file that grows while it is converted convert as it was validated.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from snapcheck.traces.atomic import atomic_open
from snapcheck.traces.errors import TraceError, TraceErrors
from snapcheck.traces.jsonl import _valid_batches
from snapcheck.traces.model import Header
from snapcheck.traces.parquet import BATCH, SCHEMA, row_of
from snapcheck.traces.validate import TraceValidator


class _Keeping(TraceValidator):
    """A validator that keeps the object of every line it accepts."""

    def __init__(self, file: str):
        super().__init__(file)
        self.kept: list[dict] = []

    def header(self, d: object, line: int = 1) -> Header | None:
        as_read = copy.deepcopy(d)  # the schema check fills in defaults
        h = super().header(d, line)
        if h is not None:
            self.kept.append(as_read)  # type: ignore[arg-type]  # a valid header is a dict
        return h

    def check_event(self, d: Any, line: int) -> tuple | None:
        keys = super().check_event(d, line)
        if keys:
            self.kept.append(d)
        return keys


def _objects(source: str, trace_id: str | None) -> Iterator[dict]:
    """The object of every line of a trace in file order (blank lines skipped), read
    once and validated on the way; ``TraceErrors`` at the end if any line was invalid."""
    v = _Keeping(source)
    for _ in _valid_batches(source, v, trace_id, None):
        yield from v.kept
        v.kept.clear()
    yield from v.kept
    v.raise_if_errors()


def write_parquet(items: list[tuple[str, str | None, str]], dest: str) -> int:
    """Write traces into one Parquet file; returns rows written. ``items``: (source file,
    trace id within it for a multi-trace Parquet source or None, trace id to write).
    Every trace is validated as it is read; its rows are numbered 1, 2, 3, … (column
    ``line``) in the order of its objects, the lines of the JSONL form it converts back
    to (blank lines of a JSONL source dropped). The file is written atomically (replaced
    only when every trace was valid) and never onto one of its sources."""
    first_from: dict[str, str] = {}
    for source, _, out_id in items:
        if out_id in first_from:
            raise TraceErrors(
                [
                    TraceError(
                        source,
                        0,
                        f"trace id {out_id!r} is also the id of a trace from "
                        f"{first_from[out_id]}; one Parquet file holds each id once",
                    )
                ]
            )
        first_from[out_id] = source
    rows_written = 0
    with atomic_open(dest, "wb", inputs=[s for s, _, _ in items]) as f:
        writer = pq.ParquetWriter(f, SCHEMA)
        try:
            for source, tid, out_id in items:
                batch: list[dict] = []
                for line, obj in enumerate(_objects(source, tid), 1):
                    batch.append(row_of(out_id, line, obj, is_header=line == 1))
                    if len(batch) >= BATCH:
                        writer.write_table(pa.Table.from_pylist(batch, SCHEMA))
                        rows_written += len(batch)
                        batch = []
                if batch:
                    writer.write_table(pa.Table.from_pylist(batch, SCHEMA))
                    rows_written += len(batch)
        finally:
            writer.close()
    return rows_written


def jsonl_to_parquet(sources: list[str], dest: str, trace_ids: list[str] | None = None) -> int:
    """Convert JSONL traces (each validated) into one Parquet file; returns rows written."""
    trace_ids = trace_ids or [str(s) for s in sources]
    return write_parquet([(str(s), None, t) for s, t in zip(sources, trace_ids)], dest)


def write_jsonl(source: str, dest: str, trace_id: str | None = None) -> int:
    """Write one trace (of a JSONL file, or of a Parquet file: ``trace_id`` picks one of
    several) as normalized JSONL (compact, one object per line, blank lines dropped);
    returns lines written. Validated as it is read; written atomically (only when
    valid), never onto ``source``."""
    n = 0
    with atomic_open(dest, "wb", inputs=[source]) as out:
        for obj in _objects(source, trace_id):
            out.write(orjson.dumps(obj) + b"\n")
            n += 1
    return n


def parquet_to_jsonl(path: str, dest: str, trace_id: str | None = None) -> int:
    """Write one trace of a Parquet file back as JSONL; returns lines written."""
    return write_jsonl(path, dest, trace_id)
