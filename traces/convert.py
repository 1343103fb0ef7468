"""Conversions between the JSONL and the Parquet forms of v1 traces (``parquet``
describes the columns): every trace is validated before anything is written, files
are written atomically and never onto one of their sources, and a round trip is
lossless.
"""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from snapcheck.traces.atomic import atomic_open
from snapcheck.traces.errors import TraceError, TraceErrors
from snapcheck.traces.jsonl import _is_parquet, _raw_lines, iter_events
from snapcheck.traces.parquet import BATCH, SCHEMA, iter_parquet_dicts, row_of


def _validate(source: str, trace_id: str | None) -> None:
    for _ in iter_events(source, trace_id=trace_id):
        pass


def _objects(source: str, trace_id: str | None) -> Iterator[tuple[int, dict]]:
    """(line, object) of a trace already validated, in file order (blank lines skipped)."""
    rows = iter_parquet_dicts(source, trace_id) if _is_parquet(source) else _raw_lines(source)
    for line, obj, _err in rows:
        if obj is not None:
            yield line, obj


def write_parquet(items: list[tuple[str, str | None, str]], dest: str) -> int:
    """Write traces into one Parquet file; returns rows written. ``items``: (source file,
    trace id within it for a multi-trace Parquet source or None, trace id to write).
    Every trace is validated before anything is written; the file is written atomically
    and never onto one of its sources."""
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
    for source, tid, _ in items:
        _validate(source, tid)
    rows_written = 0
    with atomic_open(dest, "wb", inputs=[s for s, _, _ in items]) as f:
        writer = pq.ParquetWriter(f, SCHEMA)
        try:
            for source, tid, out_id in items:
                batch: list[dict] = []
                first = True
                for line, obj in _objects(source, tid):
                    batch.append(row_of(out_id, line, obj, is_header=first))
                    first = False
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
    returns lines written. Validated first; written atomically, never onto ``source``."""
    _validate(source, trace_id)
    n = 0
    with atomic_open(dest, "wb", inputs=[source]) as out:
        for _line, obj in _objects(source, trace_id):
            out.write(orjson.dumps(obj) + b"\n")
            n += 1
    return n


def parquet_to_jsonl(path: str, dest: str, trace_id: str | None = None) -> int:
    """Write one trace of a Parquet file back as JSONL; returns lines written."""
    return write_jsonl(path, dest, trace_id)
