"""The Parquet-checking benchmark's SQL: the staged formulation (shared intermediates materialized by
the product's engines, statements run one by one) gives the same counts as the single-statement forms."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_spark  # noqa: E402


def test_split_with_recovers_every_cte_and_the_final_select():
    defs, final = bench_spark.split_with(
        "WITH a AS (SELECT (1) AS x), b AS (SELECT x FROM a WHERE (x > 0))\nSELECT count(*) FROM b"
    )
    assert defs == [("a", "SELECT (1) AS x"), ("b", "SELECT x FROM a WHERE (x > 0)")]
    assert final == "SELECT count(*) FROM b"
    names = [n for n, _ in bench_spark.staged("duckdb")[0]]
    assert set(bench_spark.MATERIALIZED) <= set(names) and names[:3] == ["ev", "flag", "eff"]


def _duck(path):
    from snapcheck.spark_validation.sql_engine import DuckEngine

    engine = DuckEngine(2)
    engine.read_parquet("t", str(path))
    return engine


def test_staged_formulation_gives_the_same_counts(tmp_path):
    from snapcheck.spark_validation.synthetic import write_parquet

    path = tmp_path / "t.parquet"
    write_parquet(range(40), str(path))
    engine = _duck(path)
    core = bench_spark.CORE_SQL.format(explode_mids=bench_spark.EXPLODE_MIDS["duckdb"])
    single = [engine.first(core + final) for final in bench_spark.FINAL_SQL.values()]
    staged = bench_spark.staged_counts(engine)
    assert single[0] == single[1] == staged
    assert staged[0] > 0 and staged[1] > 0 and staged[2] > 0  # orphans, in transit, recorded exist
    assert engine.con.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary").fetchone()[0] == 0


@pytest.mark.spark
def test_spark_staged_formulation_equals_duckdb(spark, tmp_path):
    """Spark's staged run (checkpointed DataFrames behind temporary views) gives DuckDB's counts and cleans up."""
    from snapcheck.spark_validation.sql_engine import SparkEngine
    from snapcheck.spark_validation.synthetic import write_parquet

    path = tmp_path / "t.parquet"
    write_parquet(range(30), str(path))
    engine = SparkEngine(spark, "local[2]")
    engine.read_parquet("t", str(path))
    expected = bench_spark.staged_counts(_duck(path))
    assert tuple(int(x or 0) for x in bench_spark.staged_counts(engine)) == expected
    assert not {n for n, _ in bench_spark.staged("spark")[0]} & {t.name for t in spark.catalog.listTables()}
