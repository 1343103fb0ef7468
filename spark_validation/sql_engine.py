"""One SQL pipeline, two engines: the Parquet trace check runs as the same statements on
DuckDB (embedded, the default for local runs) and on Spark SQL (clusters).

The pipeline (``parquet_input``, ``native_check``, ``input_job``) is a sequence of
named SQL statements, each a ``SELECT`` over the input and the statements before it.
An engine runs a statement either as a **table** (computed now, kept: what several
later statements read) or as a **view** (inlined where it is used). The split into
statements is the "staged" formulation measured in docs/spark.md: Spark inlines
every reference to a ``WITH`` clause, so a shared intermediate given once as a CTE
is recomputed at every use; as a table it is computed once on both engines.

Where the dialects differ (JSON in ``extra``, arrays, exploding a list) the text
holds a placeholder filled from ``Dialect``; everything else is SQL both engines
read alike (window functions, joins, ``ANTI JOIN ... USING``, ``CASE``, ``CAST(x AS
STRING)``, ``||`` with NULL propagation, ``min_by``, ``cardinality``).

Python runs in two places, the same code on both engines: ``aligned_of(extra)``,
the trace header's ``aligned`` fact completed by the protocol catalogue (a scalar
function registered under that name), and the per-trace checker stage
(``trace_udf``).

>>> DUCKDB.array("a", "b"), SPARK.array("a", "b")
('[a, b]', 'array(a, b)')
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import dataclass

import orjson

from snapcheck.spark_validation.output_dirs import check_replaceable, replace_dataset
from snapcheck.traces.parquet import SCHEMA, begins_like_parquet


def _facts(extra: str | None):
    """The ``DeclaredFacts`` of a trace header (its ``extra`` JSON text), with the
    catalogue's facts for a protocol known by name completing what the header omits: the
    same decision as ``snapcheck check`` (``CheckOptions(facts=header_facts(...))``);
    None for JSON that does not parse."""
    from snapcheck.reference.catalogue import header_facts
    from snapcheck.traces.protocol_facts import DeclaredFacts

    try:
        header = orjson.loads(extra) if extra is not None else None
    except orjson.JSONDecodeError:
        return None
    protocol = header.get("protocol") if isinstance(header, dict) else None
    if not isinstance(protocol, dict):
        protocol = None
    return DeclaredFacts.of(protocol, header_facts(protocol))


def aligned_of(extra: str | None) -> bool | None:
    """Does a trace header (its ``extra`` JSON text) declare aligned snapshots?

    >>> aligned_of('{"protocol": {"name": "abs-aligned"}}'), aligned_of('{"protocol": {"name": "x"}}')
    (True, False)
    >>> aligned_of('{"protocol": {"name": "abs-aligned", "params": {"aligned": false}}}')
    False
    """
    facts = _facts(extra)
    return None if facts is None else facts.aligned


def barriers_delimit_of(extra: str | None) -> bool | None:
    """Do a trace's barriers end the channel state recorded for their round (the header's
    ``params.barriers_delimit_channel_state``, true unless declared false)?

    >>> barriers_delimit_of('{"protocol": {"name": "x"}}')
    True
    >>> barriers_delimit_of('{"protocol": {"name": "x", "params": {"barriers_delimit_channel_state": false}}}')
    False
    """
    facts = _facts(extra)
    return None if facts is None else facts.barriers_delimit


UDFS = {"aligned_of": aligned_of, "barriers_delimit_of": barriers_delimit_of}  # header facts, both engines

HEADER_DDL = (
    "struct<format:string,version:bigint,"
    "processes:array<struct<id:string,role:string>>,"
    "channels:array<struct<id:string,src:string,dst:string,fifo:boolean,kind:string,logged:boolean,"
    "back_edge:boolean>>,"
    "protocol:struct<name:string>>"
)


@dataclass(frozen=True)
class Dialect:
    """SQL fragments that differ between the engines (``c``: a column of JSON text)."""

    name: str

    def parse(self, c: str) -> str:
        """``c`` (JSON text) in the form the field functions below read (their ``x``)."""
        return f"try_parse_json({c})" if self.spark else f"CASE WHEN json_valid({c}) THEN {c} END"

    def json_ok(self, c: str, x: str) -> str:
        """True iff ``c`` is NULL or well-formed JSON (``x`` = ``parse(c)``)."""
        return f"({c} IS NULL OR {x} IS NOT NULL)" if self.spark else f"coalesce(json_valid({c}), true)"

    def jstr(self, x: str, field: str) -> str:
        return (
            f"try_variant_get({x}, '$.{field}', 'string')" if self.spark else f"json_extract_string({x}, '$.{field}')"
        )

    def jbool(self, x: str, field: str) -> str:
        return (
            f"try_variant_get({x}, '$.{field}', 'boolean')"
            if self.spark
            else f"TRY_CAST(json_extract_string({x}, '$.{field}') AS BOOLEAN)"
        )

    def jint(self, x: str, field: str) -> str:
        return (
            f"try_variant_get({x}, '$.{field}', 'bigint')"
            if self.spark
            else f"TRY_CAST(json_extract_string({x}, '$.{field}') AS BIGINT)"
        )

    def jstr_list(self, x: str, field: str) -> str:
        return (
            f"try_variant_get({x}, '$.{field}', 'array<string>')"
            if self.spark
            else f"TRY_CAST(json_extract({x}, '$.{field}') AS STRING[])"
        )

    def jis_str_list(self, x: str, field: str) -> str:
        """NULL if the field is absent, else: is it a JSON list of strings (or nulls)?"""
        if self.spark:
            return f"schema_of_variant(variant_get({x}, '$.{field}')) IN ('ARRAY<STRING>', 'ARRAY<VOID>')"
        return (
            f"CASE WHEN json_type({x}, '$.{field}') IS NULL THEN NULL ELSE json_type({x}, '$.{field}') = 'ARRAY' "
            f"AND list_has_all(['VARCHAR', 'NULL'], json_type({x}, '$.{field}[*]')) END"
        )

    def header(self, c: str) -> str:
        """The v1 header in ``c`` as a struct (format, version, processes, channels, protocol.name);
        NULL if ``c`` is not JSON of that shape."""
        if self.spark:
            return f"from_json({c}, '{HEADER_DDL}')"
        shape = (
            '{"format": "VARCHAR", "version": "JSON", "processes": [{"id": "VARCHAR", "role": "VARCHAR"}], '
            '"channels": [{"id": "VARCHAR", "src": "VARCHAR", "dst": "VARCHAR", "fifo": "BOOLEAN", '
            '"kind": "VARCHAR", "logged": "BOOLEAN", "back_edge": "BOOLEAN"}], "protocol": {"name": "VARCHAR"}}'
        )
        return f"CASE WHEN json_valid({c}) AND json_type({c}) = 'OBJECT' THEN from_json({c}, '{shape}') END"

    def version_is_1(self, hdr: str) -> str:
        return (
            f"{hdr}.version IS NOT DISTINCT FROM 1"
            if self.spark
            else f"coalesce(json_type({hdr}.version) IN ('BIGINT', 'UBIGINT') "
            f"AND CAST({hdr}.version AS BIGINT) = 1, false)"
        )

    def explode(self, arr: str, alias: str) -> str:
        """Select-list item: one row per element of ``arr`` (none for NULL or empty)."""
        return f"explode({arr}) AS {alias}" if self.spark else f"unnest({arr}) AS {alias}"

    def posexplode(self, arr: str, pos: str, alias: str) -> str:
        """Select-list items: one row per element with its 0-based position."""
        return (
            f"posexplode({arr}) AS ({pos}, {alias})"
            if self.spark
            else f"generate_subscripts({arr}, 1) - 1 AS {pos}, unnest({arr}) AS {alias}"
        )

    def explode_counts(self, c: str, key: str, value: str) -> str:
        """Select-list items: one row per entry of a JSON object of counts."""
        if self.spark:
            return f"explode(from_json({c}, 'map<string,bigint>')) AS ({key}, {value})"
        return (
            f"unnest(map_keys(CAST(CAST({c} AS JSON) AS MAP(VARCHAR, BIGINT)))) AS {key}, "
            f"unnest(map_values(CAST(CAST({c} AS JSON) AS MAP(VARCHAR, BIGINT)))) AS {value}"
        )

    def array(self, *items: str) -> str:
        return f"array({', '.join(items)})" if self.spark else f"[{', '.join(items)}]"

    def compact(self, a: str, b: str) -> str:
        """The list [a, b] without its NULLs."""
        if self.spark:
            return f"array_compact(array({a}, {b}))"
        return (
            f"CASE WHEN {a} IS NULL AND {b} IS NULL THEN CAST([] AS BIGINT[]) WHEN {a} IS NULL THEN [{b}] "
            f"WHEN {b} IS NULL THEN [{a}] ELSE [{a}, {b}] END"
        )

    def sorted_set(self, a: str, b: str) -> str:
        """The distinct values of a and b, ascending."""
        return f"array_sort(array_distinct(array({a}, {b})))" if self.spark else f"list_sort(list_distinct([{a}, {b}]))"

    def joined(self, c: str) -> str:
        """Aggregate: the distinct values of ``c`` in ascending order, joined with commas."""
        if self.spark:
            return f"concat_ws(',', array_sort(collect_set({c})))"
        return f"string_agg(DISTINCT {c}, ',' ORDER BY {c})"

    @property
    def spark(self) -> bool:
        return self.name == "spark"


SPARK = Dialect("spark")
DUCKDB = Dialect("duckdb")
INPUT_COLUMNS = tuple(f.name for f in SCHEMA)


class Engine(ABC):
    """Runs named statements. ``table`` computes and keeps; ``view`` names a statement lazily."""

    dialect: Dialect
    master: str

    @abstractmethod
    def table(self, name: str, sql: str) -> None:
        """Compute ``sql`` now and keep its result as table ``name``."""

    @abstractmethod
    def view(self, name: str, sql: str) -> None:
        """Name ``sql`` as view ``name``, computed when read."""

    @abstractmethod
    def rows(self, sql: str) -> list[dict]:
        """Every row of ``sql``, as dictionaries."""

    @abstractmethod
    def write_parquet(self, sql: str, path: str) -> None:
        """Write the result of ``sql`` to the Parquet file or directory ``path``."""

    @abstractmethod
    def read_parquet(self, name: str, path: str) -> None:
        """Name the Parquet data at ``path`` as view ``name``."""

    @abstractmethod
    def checked(self, name: str, source: str, check) -> None:
        """``name`` := one result row per trace of ``source`` (rows in the v1 columns), computed by
        ``check(rows, trace_id) -> dict`` (``trace_udf.RESULT_SCHEMA``)."""

    @abstractmethod
    def forget(self, names=None) -> None:
        """Drop the tables and views ``names`` (default: every one this engine made)."""

    def close(self) -> None:
        self.forget()

    @abstractmethod
    def first(self, sql: str) -> tuple:
        """The first row of ``sql`` as a tuple (columns may share a name)."""

    def value(self, sql: str):
        return self.first(sql)[0]


class DuckEngine(Engine):
    """DuckDB in this process; ``threads`` worker threads (the per-trace stage uses as many processes)."""

    dialect = DUCKDB

    def __init__(self, threads: int, master: str = "duckdb"):
        import duckdb

        self.threads = max(1, threads)
        self.master = master
        self.con = duckdb.connect()
        self.made: dict[str, str] = {}  # name -> TABLE | VIEW
        self.con.execute(f"SET threads TO {self.threads}")
        self.con.execute("SET enable_progress_bar = false")
        self.con.execute("SET preserve_insertion_order = false")
        # duckdb's stubs (_duckdb-stubs) want null_handling as its FunctionNullHandling enum, whose module
        # moved between the versions we accept (duckdb.functional, duckdb.func); every version takes the string.
        for name, fn in UDFS.items():
            self.con.create_function(  # type: ignore[call-overload]
                name, fn, ["VARCHAR"], "BOOLEAN", null_handling="special", side_effects=False
            )

    def table(self, name, sql):
        self._make(name, "TABLE", sql)

    def view(self, name, sql):
        self._make(name, "VIEW", sql)

    def _make(self, name, kind, sql):
        if self.made.get(name, kind) != kind:
            self.con.execute(f"DROP {self.made.pop(name)} {name}")
        self.con.execute(f"CREATE OR REPLACE TEMP {kind} {name} AS {sql}")
        self.made[name] = kind

    def rows(self, sql):
        cur = self.con.execute(sql)
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]

    def first(self, sql):
        return tuple(self.con.execute(sql).fetchall()[0])  # fetched to the end: the connection is free again

    def write_parquet(self, sql, path):
        replace_dataset(path)  # (an earlier run may have left a directory)
        self.con.execute(f"COPY ({sql}) TO '{_sql_str(path)}' (FORMAT parquet)")

    def read_parquet(self, name, path):
        import duckdb

        files = parquet_files(path)
        if not files:
            raise duckdb.IOException(f"no Parquet files in {path}")
        listed = ", ".join(f"'{_sql_str(f)}'" for f in files)
        self.view(name, f"SELECT * FROM read_parquet([{listed}])")

    def columns(self, name: str) -> dict[str, str]:
        """Column name -> type in Spark's spelling (string, bigint, ...), for the input check."""
        spell = {"VARCHAR": "string", "BIGINT": "bigint", "INTEGER": "int", "DOUBLE": "double", "BOOLEAN": "boolean"}
        cur = self.con.execute(f"SELECT * FROM {name} LIMIT 0")
        return {d[0]: spell.get(str(d[1]), str(d[1]).lower()) for d in cur.description}

    def checked(self, name, source, check):
        import pyarrow as pa

        from snapcheck.spark_validation.trace_udf import arrow_result_schema

        traces = self.value(f"SELECT count(DISTINCT trace_id) FROM {source}")
        cols = ", ".join(INPUT_COLUMNS)
        rel = self.con.sql(f"SELECT {cols} FROM {source} ORDER BY trace_id, line")
        reader = (getattr(rel, "to_arrow_reader", None) or rel.fetch_arrow_reader)(10_000)  # DuckDB 2 / 1
        results = _check_grouped(reader, check, min(self.threads, -(-traces // CHUNK)))
        table = pa.Table.from_pylist(results, schema=arrow_result_schema())
        self.con.register("_checked_arrow", table)
        try:
            self.table(name, "SELECT * FROM _checked_arrow")
        finally:
            self.con.unregister("_checked_arrow")

    def forget(self, names=None):
        for name in reversed([n for n in self.made if names is None or n in names]):
            self.con.execute(f"DROP {self.made.pop(name)} IF EXISTS {name}")

    def close(self):
        self.forget()
        self.con.close()


class SparkEngine(Engine):
    """Spark SQL on the process's shared session: tables are ``localCheckpoint``-ed DataFrames
    (computed now, lineage cut) behind temporary views."""

    dialect = SPARK

    def __init__(self, spark, master: str):
        self.spark = spark
        self.master = master
        self.names: list[str] = []
        self.kept: dict = {}  # name -> checkpointed DataFrame
        for name, fn in UDFS.items():
            spark.udf.register(name, fn, "boolean")

    def df(self, name: str):
        return self.spark.table(name)

    def table(self, name, sql):
        self._keep(name, self.spark.sql(sql).localCheckpoint(eager=True))

    def view(self, name, sql):
        self._name(name, self.spark.sql(sql))

    def _name(self, name, df):
        df.createOrReplaceTempView(name)
        if name not in self.names:
            self.names.append(name)

    def _keep(self, name, df):
        old = self.kept.pop(name, None)
        if old is not None:
            old.unpersist()
        self.kept[name] = df
        self._name(name, df)

    def rows(self, sql):
        return [r.asDict() for r in self.spark.sql(sql).collect()]

    def first(self, sql):
        return tuple(self.spark.sql(sql).collect()[0])

    def write_parquet(self, sql, path):
        from snapcheck.spark_validation.session import check_visible

        path = os.path.abspath(path)  # executors resolve no relative path
        check_replaceable(path)  # overwrite deletes whatever the directory holds
        self.spark.sql(sql).write.mode("overwrite").parquet(path)
        check_visible(path)

    def read_parquet(self, name, path):
        self._name(name, self.spark.read.parquet(os.path.abspath(path) if "://" not in path else path))

    def columns(self, name: str) -> dict[str, str]:
        return {f.name: f.dataType.simpleString() for f in self.spark.table(name).schema.fields}

    def checked(self, name, source, check):
        from snapcheck.spark_validation.trace_udf import RESULT_SCHEMA, arrow_result_schema

        def fn(table):
            import pyarrow as pa

            rows = table.to_pylist()
            return pa.Table.from_pylist([check(rows, rows[0]["trace_id"])], schema=arrow_result_schema())

        df = (
            self.spark.table(source)
            .select(*INPUT_COLUMNS)
            .groupBy("trace_id")
            .applyInArrow(fn, RESULT_SCHEMA)
            .localCheckpoint(eager=True)
        )
        self._keep(name, df)

    def forget(self, names=None):
        for name in [n for n in self.names if names is None or n in names]:
            self.spark.catalog.dropTempView(name)
            self.names.remove(name)
            df = self.kept.pop(name, None)
            if df is not None:
                df.unpersist()


def _sql_str(s: str) -> str:
    return s.replace("'", "''")


def parquet_files(path: str) -> list[str]:
    """A Parquet file, or the Parquet files of a directory (Spark's output: ``part-*``; files
    starting with ``_`` or ``.`` are not data)."""
    if os.path.isdir(path):
        out = []
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))
            out += [os.path.join(root, f) for f in sorted(files) if not f.startswith(("_", "."))]
        return out
    return [path] if os.path.exists(path) else []


def unread_parquet(path: str) -> list[str]:
    """The Parquet files under directory ``path`` that ``parquet_files`` (and Spark) do not
    read: named with a leading ``_`` or ``.``, or inside a folder so named — Spark's
    convention for bookkeeping, which a user's trace file can fall under by its name. A
    file counts as Parquet when it begins with the magic bytes ``PAR1``; Spark's own
    bookkeeping (``_SUCCESS``, ``.crc`` checksums) does not, and is not listed.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for name in ("part-0.parquet", "_old.parquet", "_SUCCESS", ".part-0.parquet.crc"):
    ...     _ = (d / name).write_bytes(b"PAR1..." if name.endswith("parquet") else b"")
    >>> [pathlib.Path(f).name for f in unread_parquet(str(d))], [pathlib.Path(f).name for f in parquet_files(str(d))]
    (['_old.parquet'], ['part-0.parquet'])
    """
    if not os.path.isdir(path):
        return []
    read = set(parquet_files(path))
    out = []
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for f in sorted(files):
            full = os.path.join(root, f)
            if full not in read and begins_like_parquet(full):
                out.append(full)
    return out


def _chunks(reader, traces_per_chunk: int):
    """Arrow tables of whole traces (about ``traces_per_chunk`` each) from a reader sorted by trace_id."""
    import pyarrow as pa

    pending, n_traces, last = [], 0, None
    for batch in reader:
        ids = batch.column("trace_id").to_pylist()
        start = 0
        for i, tid in enumerate(ids):
            if last is not None and tid < last:
                raise RuntimeError("per-trace stage: rows not sorted by trace_id")
            if tid != last:
                if n_traces >= traces_per_chunk:
                    pending.append(batch.slice(start, i - start))
                    yield pa.Table.from_batches(pending)
                    pending, n_traces, start = [], 0, i
                n_traces += 1
                last = tid
        pending.append(batch.slice(start))
    if n_traces:
        yield pa.Table.from_batches(pending)


def check_table(check, table) -> list[dict]:
    """``check(rows, trace_id)`` for every trace of an Arrow table sorted by trace_id."""
    out: list[dict] = []
    rows: list[dict] = []
    for r in table.to_pylist():
        if rows and r["trace_id"] != rows[0]["trace_id"]:
            out.append(check(rows, rows[0]["trace_id"]))
            rows = []
        rows.append(r)
    if rows:
        out.append(check(rows, rows[0]["trace_id"]))
    return out


CHUNK = 256  # traces per task of the per-trace stage on DuckDB


def _check_grouped(reader, check, processes: int) -> list[dict]:
    """``check`` on every trace of ``reader`` (sorted by trace_id), results in trace order; on
    ``processes`` processes when more than one, at most two chunks per process in flight."""
    from collections import deque

    chunks = _chunks(reader, CHUNK)
    if processes <= 1:
        return [r for chunk in chunks for r in check_table(check, chunk)]
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    out: list[dict] = []
    with ProcessPoolExecutor(processes, mp_context=mp.get_context("forkserver")) as pool:
        flight: deque = deque()
        for chunk in chunks:
            flight.append(pool.submit(check_table, check, chunk))
            if len(flight) >= 2 * processes:
                out += flight.popleft().result()
        while flight:
            out += flight.popleft().result()
    return out
