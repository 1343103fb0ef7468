"""The Parquet form of v1 traces: one row per event, many traces per file.

Columns: ``trace_id`` (string), ``line`` (the event's line in its JSONL form),
``type``, ``proc``, ``idx``, ``ch``, ``mid``, ``seq``, ``kind``, ``round``,
``ckpt`` (typed, for Spark joins and window functions) and ``extra`` (a JSON
object with every other field, e.g. ``mids``, ``piggyback``, ``vars``). The
header of each trace is a row with ``type = "header"``, ``idx = -1`` and the
header JSON in ``extra``. Conversion in both directions is lossless: typed
columns are 64-bit integers (every integer of a valid trace fits) and ``extra``
keeps the exact JSON text.
"""

from __future__ import annotations

from typing import Iterator

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from snapcheck.traces.errors import TraceError, TraceErrors
from snapcheck.traces.lines import integer_problem

TYPED = ("type", "proc", "idx", "ch", "mid", "seq", "kind", "round", "ckpt")

SCHEMA = pa.schema([
    ("trace_id", pa.string()),
    ("line", pa.int64()),
    ("type", pa.string()),
    ("proc", pa.string()),
    ("idx", pa.int64()),
    ("ch", pa.string()),
    ("mid", pa.string()),
    ("seq", pa.int64()),
    ("kind", pa.string()),
    ("round", pa.int64()),
    ("ckpt", pa.int64()),
    ("extra", pa.string()),
])

BATCH = 100_000


def row_of(trace_id: str, line: int, obj: dict, is_header: bool = False) -> dict:
    if is_header:
        return {"trace_id": trace_id, "line": line, "type": "header", "proc": None, "idx": -1, "ch": None,
                "mid": None, "seq": None, "kind": None, "round": None, "ckpt": None,
                "extra": orjson.dumps(obj).decode()}
    row = {"trace_id": trace_id, "line": line}
    extra = {}
    for k, v in obj.items():
        if k in TYPED and (k != "idx" or isinstance(v, int)) and _fits(k, v):
            row[k] = v
        else:
            extra[k] = v
    for k in TYPED:
        row.setdefault(k, None)
    row["extra"] = orjson.dumps(extra).decode() if extra else None
    return row


def _fits(k: str, v) -> bool:
    if k in ("idx", "seq", "round", "ckpt"):
        return isinstance(v, int) and not isinstance(v, bool)
    return isinstance(v, str)


class RowError(orjson.JSONDecodeError):
    """A row whose ``extra`` column is not the JSON object it must be (a ``JSONDecodeError``,
    so readers of the ``extra`` column handle every bad row alike)."""

    def __init__(self, reason: str):
        super().__init__(reason, "", 0)
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


def dict_of(row: dict) -> tuple[dict, bool]:
    """Inverse of ``row_of``: (JSON object, is_header). Raises ``RowError`` for a row
    whose ``extra`` column is not the JSON object it must be."""
    extra = row.get("extra")
    if extra is not None and not isinstance(extra, str):
        raise RowError("column 'extra' is not a string")
    if row.get("type") == "header":
        if extra is None:
            raise RowError("the header row has no JSON in column 'extra'")
        return _extra(extra), True
    obj = {k: row[k] for k in TYPED if row.get(k) is not None}
    if extra:
        obj.update(_extra(extra))
    return obj, False


def _extra(text: str) -> dict:
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise RowError(f"malformed JSON in column 'extra': {exc}") from None
    if not isinstance(obj, dict):
        raise RowError("column 'extra' must hold a JSON object")
    problem = integer_problem(text)
    if problem is not None:
        raise RowError(f"column 'extra': {problem}")
    return obj


def _unreadable(path: str, exc: Exception) -> TraceErrors:
    return TraceErrors([TraceError(path, 0, f"cannot read Parquet: {exc}")])


def trace_ids(path: str) -> list[str]:
    """The trace ids in a Parquet trace file, in order of first appearance."""
    try:
        table = pq.read_table(path, columns=["trace_id"])
    except (OSError, pa.ArrowException) as exc:
        raise _unreadable(path, exc) from None
    seen: dict[str, None] = {}
    for t in table.column("trace_id").to_pylist():
        seen.setdefault(t, None)
    return list(seen)


def iter_parquet_dicts(path: str, trace_id: str | None = None) -> Iterator[tuple[int, dict | None, str | None]]:
    """Yield (line, object, error) for one trace of a Parquet file, like the JSONL reader.

    Without ``trace_id`` the file must hold exactly one trace."""
    try:
        pf = pq.ParquetFile(path)
    except (OSError, pa.ArrowException) as exc:
        raise _unreadable(path, exc) from None
    missing = [f.name for f in SCHEMA if f.name not in pf.schema_arrow.names]
    if missing:
        raise TraceErrors([TraceError(path, 0, f"not a snapcheck Parquet trace: missing column(s) {', '.join(missing)}")])
    ids = trace_ids(path)
    if trace_id is None and len(ids) > 1:
        raise TraceErrors([TraceError(path, 0, f"holds {len(ids)} traces; choose one with --trace-id "
                                               f"(one of {', '.join(map(repr, ids[:5]))}{', ...' if len(ids) > 5 else ''})"
                                               " or check them all with 'snapcheck validate --input'")])
    if trace_id is not None and trace_id not in ids:
        raise TraceErrors([TraceError(path, 0, f"no trace {trace_id!r} (the file holds "
                                               f"{', '.join(map(repr, ids[:5]))}{', ...' if len(ids) > 5 else ''})")])
    try:
        for batch in pf.iter_batches(batch_size=BATCH):
            for row in batch.to_pylist():
                if trace_id is not None and row["trace_id"] != trace_id:
                    continue
                line = row.get("line") or 0
                try:
                    obj, _ = dict_of(row)
                except RowError as exc:
                    yield line, None, str(exc)
                    continue
                yield line, obj, None
    except (OSError, pa.ArrowException) as exc:
        raise _unreadable(path, exc) from None


def _validate(source: str, trace_id: str | None) -> None:
    from snapcheck.traces.jsonl import iter_events

    for _ in iter_events(source, trace_id=trace_id):
        pass


def _objects(source: str, trace_id: str | None) -> Iterator[tuple[int, dict]]:
    """(line, object) of a trace already validated, in file order (blank lines skipped)."""
    from snapcheck.traces.jsonl import _is_parquet, _raw_lines

    rows = iter_parquet_dicts(source, trace_id) if _is_parquet(source) else _raw_lines(source)
    for line, obj, _err in rows:
        yield line, obj


def write_parquet(items: list[tuple[str, str | None, str]], dest: str) -> int:
    """Write traces into one Parquet file; returns rows written. ``items``: (source file,
    trace id within it for a multi-trace Parquet source or None, trace id to write).
    Every trace is validated before anything is written; the file is written atomically
    and never onto one of its sources."""
    from snapcheck.traces.atomic import atomic_open

    first_from: dict[str, str] = {}
    for source, _, out_id in items:
        if out_id in first_from:
            raise TraceErrors([TraceError(source, 0, f"trace id {out_id!r} is also the id of a trace from "
                                                     f"{first_from[out_id]}; one Parquet file holds each id once")])
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
    from snapcheck.traces.atomic import atomic_open

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
