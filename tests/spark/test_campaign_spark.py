"""A small local-mode campaign gives exactly the plain-Python engine's rows; summary and exit logic."""

import pytest

from snapcheck.spark_validation.campaign import read_results, run_campaign
from snapcheck.spark_validation.configs import Selection, mutant_period
from snapcheck.spark_validation.main_job import run_validation

pytestmark = pytest.mark.spark


def test_spark_rows_equal_the_python_loop_on_the_same_seeds(spark, tmp_path):
    sel = Selection.of(
        protocols=["unaligned", "abs-aligned"],
        workloads=["q1", "q12"],
        mutants=["unaligned-late-snapshot", "abs-aligned-no-block"],
    )
    py = run_campaign(24, sel, str(tmp_path / "py"), base_seed=5, engine="python", progress=False)
    sp = run_campaign(24, sel, str(tmp_path / "sp"), base_seed=5, engine="spark", progress=False)
    assert sp.tasks > 1  # really distributed over several tasks
    a, b = read_results(py.results), read_results(sp.results)
    assert a.num_rows == b.num_rows == 24
    assert a.to_pylist() == b.to_pylist()
    rows = a.to_pylist()
    assert [r["run_id"] for r in rows] == list(range(24)) and [r["seed"] for r in rows] == list(range(5, 29))
    assert any(r["mutant"] for r in rows) and any(r["failures"] for r in rows)


def test_run_validation_writes_results_and_summaries(spark, tmp_path):
    s = run_validation(
        10,
        str(tmp_path / "v"),
        protocols=["unaligned"],
        workloads=["q1"],
        mutants=["unaligned-late-snapshot"],
        failures=False,
        engine="spark",
        progress=False,
    )
    assert s["runs"] == 10 and [p["protocol"] for p in s["protocols"]] == ["unaligned"]
    assert s["mutants"][0]["runs"] == 10 // mutant_period(10, 1) and s["ok"] == (s["mutants"][0]["caught"] > 0)
    assert (tmp_path / "v" / "summary.json").exists()
    assert "unaligned-late-snapshot" in (tmp_path / "v" / "summary.md").read_text()
