"""The Parquet form of v1 traces: one row per event, many traces per file.

Columns: ``trace_id`` (string), ``line`` (the event's line in its JSONL form),
``type``, ``proc``, ``idx``, ``ch``, ``mid``, ``seq``, ``kind``, ``round``,
``ckpt`` (typed, for Spark joins and window functions) and ``extra`` (a JSON
object with every other field, e.g. ``mids``, ``piggyback``, ``vars``). The
header of each trace is a row with ``type = "header"``, ``idx = -1`` and the
header JSON in ``extra``. Conversion in both directions is lossless.
"""

from __future__ import annotations

from typing import Iterator

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from snapcheck.traces.errors import TraceError, TraceErrors

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


def dict_of(row: dict) -> tuple[dict, bool]:
    """Inverse of ``row_of``: (JSON object, is_header)."""
    if row["type"] == "header":
        return orjson.loads(row["extra"]), True
    obj = {k: row[k] for k in TYPED if row.get(k) is not None}
    if row.get("extra"):
        obj.update(orjson.loads(row["extra"]))
    return obj, False


def jsonl_to_parquet(sources: list[str], dest: str, trace_ids: list[str] | None = None) -> int:
    """Convert JSONL traces (each validated) into one Parquet file; returns rows written."""
    from snapcheck.traces.jsonl import _raw_lines, iter_events
    from snapcheck.traces.validate import TraceValidator

    trace_ids = trace_ids or [str(s) for s in sources]
    writer = pq.ParquetWriter(dest, SCHEMA)
    rows_written = 0
    try:
        for src, tid in zip(sources, trace_ids):
            v = TraceValidator(str(src))
            for _ in iter_events(src, validator=v):
                pass
            batch: list[dict] = []
            first = True
            for line, obj, _err in _raw_lines(src):
                batch.append(row_of(tid, line, obj, is_header=first))
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


def trace_ids(path: str) -> list[str]:
    """The trace ids in a Parquet trace file, in order of first appearance."""
    table = pq.read_table(path, columns=["trace_id"])
    seen: dict[str, None] = {}
    for t in table.column("trace_id").to_pylist():
        seen.setdefault(t, None)
    return list(seen)


def iter_parquet_dicts(path: str, trace_id: str | None = None) -> Iterator[tuple[int, dict | None, str | None]]:
    """Yield (line, object, error) for one trace of a Parquet file, like the JSONL reader.

    Without ``trace_id`` the file must hold exactly one trace.
    """
    try:
        pf = pq.ParquetFile(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise TraceErrors([TraceError(path, 0, f"cannot read Parquet: {exc}")]) from None
    missing = [f.name for f in SCHEMA if f.name not in pf.schema_arrow.names]
    if missing:
        raise TraceErrors([TraceError(path, 0, f"not a snapcheck Parquet trace: missing column(s) {', '.join(missing)}")])
    if trace_id is None:
        ids = trace_ids(path)
        if len(ids) > 1:
            raise TraceErrors([TraceError(path, 0, f"holds {len(ids)} traces; choose one by trace id "
                                                   f"(e.g. {ids[0]!r}) or check them with 'snapcheck validate --input'")])
    for batch in pf.iter_batches(batch_size=BATCH):
        for row in batch.to_pylist():
            if trace_id is not None and row["trace_id"] != trace_id:
                continue
            try:
                obj, _ = dict_of(row)
            except orjson.JSONDecodeError as exc:
                yield row.get("line") or 0, None, f"malformed JSON in column 'extra': {exc}"
                continue
            yield row.get("line") or 0, obj, None


def parquet_to_jsonl(path: str, dest: str, trace_id: str | None = None) -> int:
    """Write one trace of a Parquet file back as JSONL; returns lines written."""
    n = 0
    with open(dest, "wb") as out:
        for _line, obj, err in iter_parquet_dicts(path, trace_id):
            if err:
                raise TraceErrors([TraceError(path, _line, err)])
            out.write(orjson.dumps(obj) + b"\n")
            n += 1
    return n
