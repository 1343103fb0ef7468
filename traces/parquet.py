"""The Parquet form of v1 traces: one row per event, many traces per file.

Columns: ``trace_id`` (string), ``line`` (the event's line in its JSONL form),
``type``, ``proc``, ``idx``, ``ch``, ``mid``, ``seq``, ``kind``, ``round``,
``ckpt`` (typed, for Spark joins and window functions) and ``extra`` (a JSON
object with every other field, e.g. ``mids``, ``piggyback``, ``vars``). The
header of each trace is a row with ``type = "header"``, ``idx = -1`` and the
header JSON in ``extra``. Conversion in both directions is lossless: typed
columns are 64-bit integers (every integer of a valid trace fits) and ``extra``
keeps the exact JSON text. Conversions between the two forms are in ``convert``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from snapcheck.traces.errors import TraceError, TraceErrors
from snapcheck.traces.lines import duplicate_key, integer_problem, max_line_bytes

TYPED = ("type", "proc", "idx", "ch", "mid", "seq", "kind", "round", "ckpt")

SCHEMA = pa.schema(
    [
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
    ]
)

BATCH = 100_000


def row_of(trace_id: str, line: int, obj: dict, is_header: bool = False) -> dict:
    if is_header:
        return {
            "trace_id": trace_id,
            "line": line,
            "type": "header",
            "proc": None,
            "idx": -1,
            "ch": None,
            "mid": None,
            "seq": None,
            "kind": None,
            "round": None,
            "ckpt": None,
            "extra": orjson.dumps(obj).decode(),
        }
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
        stray = [k for k, v in typed_fields(row).items() if k != "type" and (k, v) != ("idx", -1)]  # (row_of's)
        if stray:  # the header is its JSON in 'extra': a value in an event's column would be read by no one
            raise RowError(f"the header row has values in event column(s) {', '.join(map(repr, stray))}")
        return _extra(extra), True
    obj = typed_fields(row)
    if extra is not None:  # "" too: not JSON (the SQL engines' parser says so as well)
        more = _extra(extra)
        repeated = [k for k in more if k in obj]
        if repeated:
            raise RowError(f"column 'extra' repeats the typed column(s) {', '.join(map(repr, repeated))}")
        typed = [k for k, v in more.items() if k in TYPED and _fits(k, v)]  # (a value of another type is kept
        if typed:  # there: the validator names its type) — the SQL checks read these columns only
            raise RowError(f"column 'extra' holds {', '.join(map(repr, typed))}, which belong(s) in the typed column")
        obj.update(more)
    return obj, False


def typed_fields(row: dict) -> dict:
    """The fields of an event row's typed columns (those not NULL): all of the event that
    can be read when its ``extra`` cannot (``dict_of``)."""
    return {k: row[k] for k in TYPED if row.get(k) is not None}


def _extra(text: str) -> dict:
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise RowError(f"malformed JSON in column 'extra': {exc}") from None
    if not isinstance(obj, dict):
        raise RowError("column 'extra' must hold a JSON object")
    problem = integer_problem(text) or duplicate_key(text, obj)
    if problem is not None:
        raise RowError(f"column 'extra': {problem}")
    return obj


def _unreadable(path: str, exc: Exception) -> TraceErrors:
    """The reader's reason on one line, its control characters escaped (a damaged page's
    reason may quote the bytes it could not read)."""
    return TraceErrors([TraceError(path, 0, f"cannot read Parquet: {escaped(' '.join(str(exc).split()))}")])


def begins_like_parquet(path: str) -> bool | None:
    """Whether file ``path`` begins with the Parquet magic bytes ``PAR1`` (None: it
    cannot be read)."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"PAR1"
    except OSError:
        return None


def _not_parquet(path: str) -> str | None:
    """Why ``path`` is not a Parquet file at all (None when it begins like one, or cannot
    be read: the reader says why)."""
    if begins_like_parquet(path) is not False:
        return None
    return (
        "not a Parquet file (it does not begin with the Parquet magic bytes PAR1); a trace in JSON Lines "
        "becomes a Parquet trace file with 'snapcheck convert TRACE.jsonl... -o traces.parquet'"
    )


# The type of a column in the spelling of the SQL engines (Spark's simpleString), from Arrow's.
_SQL_TYPES = {"string": "string", "large_string": "string", "string_view": "string", "int64": "bigint"}


def sql_type(t: pa.DataType) -> str:
    """An Arrow type in the SQL engines' spelling, as the input check compares them. A
    dictionary-encoded column (pandas writes its ``category`` columns so) is spelled by the
    type of its values: the encoding is how the file stores them, not what they are, and
    the SQL engines read such a column as its values' type.

    >>> sql_type(pa.int64()), sql_type(pa.large_string()), sql_type(pa.int32())
    ('bigint', 'string', 'int32')
    >>> sql_type(pa.dictionary(pa.int8(), pa.string()))
    'string'
    """
    if pa.types.is_dictionary(t):
        return sql_type(t.value_type)
    return _SQL_TYPES.get(str(t), str(t))


def check_columns(have: dict[str, str], path: str) -> None:
    """A Parquet trace file has the v1 columns with their types and no other (``have``: column ->
    type in the SQL spelling, ``sql_type``); else ``TraceErrors`` naming the file and every problem.
    The one check of every reader of Parquet traces (``open_parquet``, ``validate --input``).

    >>> check_columns({f.name: sql_type(f.type) for f in SCHEMA}, "t.parquet")
    >>> check_columns(dict({f.name: sql_type(f.type) for f in SCHEMA}, line="string"), "t.parquet")
    Traceback (most recent call last):
    ...
    snapcheck.traces.errors.TraceErrors: t.parquet: not a snapcheck Parquet trace: column 'line' has type string, \
expected bigint
    """
    problems, hints = [], set()
    missing = [f.name for f in SCHEMA if f.name not in have]
    if missing:
        problems.append(f"missing column(s) {', '.join(map(repr, missing))}")
    for f in SCHEMA:
        want = sql_type(f.type)
        if f.name in have and have[f.name] != want:
            problems.append(f"column {f.name!r} has type {have[f.name]}, expected {want}")
            hints.add(_hint(have[f.name], want))
    if unknown := unknown_columns(have):
        problems.append(unknown)
    if problems:
        why = "".join(sorted(hints))
        raise TraceErrors([TraceError(path, 0, "not a snapcheck Parquet trace: " + "; ".join(problems) + why)])


def _hint(have: str, want: str) -> str:
    """Why a column may have come out as ``have`` where ``want`` was meant, when a common
    writer is known to do it ('' otherwise)."""
    if want == "bigint" and have in ("double", "float"):
        return " (pandas stores an integer column with missing values as floating point: give such columns the Int64 dtype)"
    return ""


def open_parquet(path: str) -> pq.ParquetFile:
    """A Parquet trace file, opened and its columns checked (``check_columns``); else
    ``TraceErrors`` naming it and the reason (unreadable, not Parquet, wrong columns)."""
    try:
        pf = pq.ParquetFile(path)
    except (OSError, pa.ArrowException) as exc:
        reason = _not_parquet(path)
        if reason is not None:
            raise TraceErrors([TraceError(path, 0, reason)]) from None
        raise _unreadable(path, exc) from None
    names = [f.name for f in pf.schema_arrow]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:  # a reader would take one of them and never look at the other
        raise TraceErrors([TraceError(path, 0, f"not a snapcheck Parquet trace: column(s) {twice} appear twice")])
    check_columns({f.name: sql_type(f.type) for f in pf.schema_arrow}, path)
    return pf


CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")  # what no id of a trace may hold (its JSON Schema)


def escaped(text: str) -> str:
    """``text`` with every control character written as an escape (``\\x0a``), so that it
    prints on one line.

    >>> escaped("a\\nb")
    'a\\\\x0ab'
    """
    return CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _text_columns(data: pa.RecordBatch | pa.Table) -> list[str]:
    """The columns of ``data`` that hold text (``sql_type`` string)."""
    return [f.name for f in data.schema if sql_type(f.type) == "string"]


def _row(data: pa.RecordBatch | pa.Table, first_row: int, i: int, column: str) -> str:
    """Row ``i`` of ``data`` as a reason names it: its row of the file, and its trace and
    line where ``data`` has them (not the trace of a bad ``trace_id`` itself)."""
    names = data.schema.names
    where = []
    if "trace_id" in names and column != "trace_id":
        where.append(f"trace {escaped(repr(data.column('trace_id')[i].as_py()))}")
    if "line" in names:
        where.append(f"line {data.column('line')[i].as_py()}")
    return f"row {first_row + i} of the file" + (f" ({', '.join(where)})" if where else "")


def not_utf8(data: pa.RecordBatch | pa.Table, first_row: int = 1) -> str | None:
    """Where ``data`` (rows ``first_row``, ``first_row + 1``, … of a file) holds a string
    that is not UTF-8, which a damaged file or a writer that stores raw bytes as text can
    leave: the first such value's row, trace, line and column; None when every string
    is UTF-8.

    >>> good = pa.record_batch({"trace_id": ["t"], "line": [1], "type": ["send"]})
    >>> not_utf8(good) is None
    True
    >>> bad = pa.record_batch({"trace_id": ["t"], "line": [1], "type": pa.array([b"s\\xffnd"]).view(pa.string())})
    >>> not_utf8(bad, 7)
    "row 7 of the file (trace 't', line 1): column 'type' is not UTF-8 text (byte 1 of its value: b's\\\\xffnd')"
    """
    for name in _text_columns(data):
        for i, raw in enumerate(data.column(name).cast(pa.binary()).to_pylist()):
            try:
                if raw is not None:
                    raw.decode()
            except UnicodeDecodeError as exc:
                at = exc.start
                shown = (
                    ("…" if at > 20 else "")
                    + repr(raw[max(0, at - 20) : at + 20])
                    + ("…" if at + 20 < len(raw) else "")
                )
                return f"{_row(data, first_row, i, name)}: column {name!r} is not UTF-8 text (byte {at} of its value: {shown})"
    return None


def too_long(data: pa.RecordBatch | pa.Table, first_row: int = 1, limit: int | None = None) -> str | None:
    """Where ``data`` (rows ``first_row``, … of a file) holds a string longer than a line of
    a trace may be (``limit``, default the readers' ``--max-line-bytes``): the first such
    value's row, trace, line, column and length; None when none is. A compressed file can
    hold a value far larger than itself, which reading would expand in memory.

    >>> batch = pa.record_batch({"trace_id": ["t"], "line": [3], "extra": ['{"value":"' + "a" * 90 + '"}']})
    >>> too_long(batch, 1, 64)
    "row 1 of the file (trace 't', line 3): column 'extra' holds 102 bytes, more than a line of a trace may (64, --max-line-bytes)"
    """
    limit = max_line_bytes() if limit is None else limit
    for name in _text_columns(data):
        lengths = pc.binary_length(data.column(name).cast(pa.large_binary()))
        longest = pc.max(lengths).as_py()
        if longest is None or longest <= limit:
            continue
        i = pc.index(pc.greater(lengths, limit), True).as_py()
        return (
            f"{_row(data, first_row, i, name)}: column {name!r} holds {lengths[i].as_py():,} bytes, more than "
            f"a line of a trace may ({limit:,}, --max-line-bytes)"
        )
    return None


def _pylist(data: pa.RecordBatch | pa.Table, path: str, first_row: int, column: str | None = None) -> list:
    """``data.to_pylist()`` (of its ``column`` alone, if given), or ``TraceErrors`` naming the
    file and the value that is not UTF-8."""
    if (problem := too_long(data, first_row)) is not None:
        raise TraceErrors([TraceError(path, 0, f"cannot read Parquet: {problem}")])
    try:
        return data.column(column).to_pylist() if column is not None else data.to_pylist()
    except UnicodeDecodeError:
        raise TraceErrors([TraceError(path, 0, f"cannot read Parquet: {not_utf8(data, first_row)}")]) from None


def scan(path: str) -> int:
    """Read every row of a Parquet trace file (its columns checked first, ``open_parquet``)
    and return how many there are: ``TraceErrors`` naming the file and the reason when a
    page cannot be read (damaged, badly compressed), a string is not UTF-8 (``not_utf8``)
    or longer than a line may be (``too_long``). An engine that met any of these in the
    middle of its work would stop without saying which file or row."""
    pf = open_parquet(path)
    rows = 0
    try:
        for batch in pf.iter_batches(batch_size=BATCH):
            try:
                batch.validate(full=True)
            except pa.ArrowInvalid:
                if (problem := not_utf8(batch, rows + 1)) is None:
                    raise
                raise TraceErrors([TraceError(path, 0, f"cannot read Parquet: {problem}")]) from None
            if (problem := too_long(batch, rows + 1)) is not None:
                raise TraceErrors([TraceError(path, 0, f"cannot read Parquet: {problem}")])
            rows += batch.num_rows
    except (OSError, pa.ArrowException) as exc:
        raise _unreadable(path, exc) from None
    return rows


def trace_ids(path: str) -> list[str]:
    """The trace ids in a Parquet trace file, in order of first appearance."""
    try:
        table = open_parquet(path).read(columns=["trace_id"])
    except (OSError, pa.ArrowException) as exc:
        raise _unreadable(path, exc) from None
    seen: dict[str, None] = {}
    for row, t in enumerate(_pylist(table, path, 1, "trace_id"), 1):
        if t is None:  # no trace would read the row: it would vanish
            raise TraceErrors(
                [TraceError(path, 0, f"row {row} of the file has no trace_id (null): every row names its trace")]
            )
        if t not in seen and CONTROL.search(t):  # reports print it: a newline would print a line of its own
            shown = escaped(t)
            raise TraceErrors(
                [TraceError(path, 0, f"row {row}: trace_id '{shown}' holds a control character, as no id may")]
            )
        seen.setdefault(t, None)
    return list(seen)


def unknown_columns(names) -> str:
    """What is wrong with a file's columns beyond the v1 ones ('' if nothing): a column the
    format does not have would be data no reader looks at, so it is refused, as a field
    an event of the JSONL form does not have is.

    >>> unknown_columns([f.name for f in SCHEMA])
    ''
    >>> unknown_columns([f.name for f in SCHEMA] + ["ts"])
    "unknown column(s) 'ts' (a field of an event that has no column of its own goes in the JSON of 'extra')"
    """
    known = set(SCHEMA.names)
    extra = [n for n in names if n not in known]
    if not extra:
        return ""
    return (
        f"unknown column(s) {', '.join(map(repr, extra))} "
        "(a field of an event that has no column of its own goes in the JSON of 'extra')"
    )


def line_problem(line: int | None, last: int) -> tuple[str | None, bool]:
    """(problem, read) of a trace's row numbered ``line`` that comes after its row of line
    ``last`` (0: its first row). A trace's rows hold its lines 1, 2, 3, … in order, each
    once, since every ``FILE:LINE`` a report names is a ``line`` value: ``problem`` says
    why the row breaks that (None when it does not), ``read`` whether the row is still
    read as the trace's next line (yes after a gap, so one missing row is one problem,
    not a cascade; no for a row without a number, a repeated or an earlier one). The
    last rows of a trace missing cannot be told from a shorter trace: the format states
    no row count.

    >>> line_problem(2, 1), line_problem(1, 0)
    ((None, True), (None, True))
    >>> line_problem(5, 3)
    ('no row of line 4 (the row of line 5 follows the row of line 3): a trace has a row for each of its lines 1, 2, 3, …', True)
    >>> line_problem(3, 0)[0]
    'no row of lines 1-2 (the first row is of line 3): a trace has a row for each of its lines 1, 2, 3, …'
    >>> line_problem(2, 2)
    ("two rows of line 2: a trace's rows hold each line once", False)
    """
    if line is None:
        return f"a row without a line number after line {last}", False
    if line == last:
        return f"two rows of line {line}: a trace's rows hold each line once", False
    if line < last:
        return (
            f"the row of line {line} comes after the row of line {last}: a trace's rows are in the order of its lines",
            False,
        )
    if line > last + 1:
        missing = f"line {last + 1}" if line == last + 2 else f"lines {last + 1}-{line - 1}"
        where = f"the row of line {line} follows the row of line {last}" if last else f"the first row is of line {line}"
        return f"no row of {missing} ({where}): a trace has a row for each of its lines 1, 2, 3, …", True
    return None, True


def iter_parquet_dicts(path: str, trace_id: str | None = None) -> Iterator[tuple[int, dict | None, str | None]]:
    """Yield (line, object, error) for one trace of a Parquet file, like the JSONL reader
    (for a row whose ``extra`` is bad, the object of its typed columns with the error).

    Without ``trace_id`` the file must hold exactly one trace."""
    pf = open_parquet(path)
    ids = trace_ids(path)
    if trace_id is None and len(ids) > 1:
        raise TraceErrors(
            [
                TraceError(
                    path,
                    0,
                    f"holds {len(ids)} traces; choose one with --trace-id "
                    f"(one of {', '.join(map(repr, ids[:5]))}{', ...' if len(ids) > 5 else ''}) where the "
                    "command has it, write one out with 'snapcheck convert FILE --trace-id ID -o one.jsonl' "
                    "(conform takes such files), or check them all with 'snapcheck validate --input'",
                )
            ]
        )
    if trace_id is not None and trace_id not in ids:
        raise TraceErrors(
            [
                TraceError(
                    path,
                    0,
                    f"no trace {trace_id!r} (the file holds "
                    f"{', '.join(map(repr, ids[:5]))}{', ...' if len(ids) > 5 else ''})",
                )
            ]
        )
    last = 0  # the line of the trace's last row
    try:
        first_row = 1
        for batch in pf.iter_batches(batch_size=BATCH):
            rows, first_row = _pylist(batch, path, first_row), first_row + batch.num_rows
            for row in rows:
                if trace_id is not None and row["trace_id"] != trace_id:
                    continue
                line = row.get("line")
                problem, read = line_problem(line, last)
                if problem is not None:
                    yield line or last, None, problem
                if not read:
                    continue
                first, last = last == 0, line
                try:
                    obj, is_header = dict_of(row)
                except RowError as exc:
                    yield line, typed_fields(row), str(exc)
                    continue
                if is_header and not first:
                    yield line, None, "a second header row (a trace has one header, its first row)"
                    continue
                yield line, obj, None
    except (OSError, pa.ArrowException) as exc:
        raise _unreadable(path, exc) from None
