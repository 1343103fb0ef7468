"""A cluster that cannot be reached and an output directory that cannot be written are usage
errors (exit 2) with one line naming them, before any Spark session starts."""

import re
import socket
import subprocess
import sys

import pytest


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_master_is_one_line_exit_2(snapcheck_cli, tmp_path):
    master = f"spark://127.0.0.1:{_closed_port()}"
    code, out = snapcheck_cli(
        "validate", "--traces", "4", "--master", master, "--output", str(tmp_path / "o"), stderr=True
    )
    assert code == 2
    assert f"cannot reach the Spark master {master}" in out and "Traceback" not in out
    assert len([line for line in out.splitlines() if line.strip()]) == 1


@pytest.mark.parametrize("args", [("--traces", "4"), ("--input", "IN")])
def test_unwritable_out_is_one_line_exit_2(snapcheck_cli, tmp_path, args):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    args = tuple(str(blocker) if a == "IN" else a for a in args)
    code, out = snapcheck_cli("validate", *args, "--output", str(blocker / "sub"), stderr=True)
    assert code == 2
    assert f"--output {blocker / 'sub'}: cannot write there" in out and "Traceback" not in out


def test_a_spark_jvm_that_dies_starting_is_exit_2_with_what_java_said(tmp_path):
    """A local session whose JVM cannot start (here: a driver memory Java cannot parse; in the
    wild, a JVM killed or out of memory while starting) is the environment's problem, not a
    bug of the kit: Java's own message, then one line, exit 2; never a traceback."""
    res = subprocess.run(  # a process of its own: a test process may hold a running session already
        [sys.executable, "-m", "snapcheck", "validate", "--traces", "2", "--master", "local[1]",
         "--conf", "spark.driver.memory=lots", "--output", str(tmp_path / "o")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert "-Xmxlots" in res.stderr and "cannot start a Spark session on local[1]" in res.stderr


def test_conf_needs_key_and_value(snapcheck_cli, tmp_path):
    code, out = snapcheck_cli(
        "validate", "--traces", "4", "--conf", "spark.executor.memory", "--output", str(tmp_path), stderr=True
    )
    assert code == 2 and "expected KEY=VALUE" in out


def test_help_lists_the_protocols_the_code_runs(snapcheck_cli):
    from snapcheck.reference.catalogue import PROTOCOLS
    from snapcheck.spark_validation.configs import Selection

    code, out = snapcheck_cli("validate", "--help")
    flat = " ".join(re.sub(r"-\s*\n\s*", "-", out).split())  # help text wraps inside hyphenated names
    assert code == 0 and Selection.of().protocols == tuple(PROTOCOLS)
    assert all(name in flat for name in PROTOCOLS)
