"""The README main job (``snapcheck verify-all``): golden-traces stage and exit codes."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[2] / "traces" / "examples"


def run(*args):
    return subprocess.run(
        [sys.executable, "-m", "snapcheck", "verify-all", "--skip-specs", "--skip-spark", *args],
        capture_output=True,
        text=True,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )


def test_golden_stage_passes_on_the_shipped_traces():
    r = run()
    assert r.returncode == 0, r.stdout + r.stderr
    for path in GOLDEN.glob("*.jsonl"):
        assert path.stem in r.stdout
    assert "OK: every stage that ran passed; skipped: TLA+ specs (TLC), Spark validation" in r.stdout
    assert "every stage passed" not in r.stdout  # skipped stages are never reported as passed


def test_a_golden_trace_whose_verdict_is_wrong_fails_the_main_job(tmp_path):
    src = GOLDEN / "checkmate_fig2b_orphan.jsonl"
    lines = src.read_text().splitlines()
    header = json.loads(lines[0])
    header["metadata"]["expected"]["verdict"] = "clean"
    header["metadata"]["expected"]["violations"] = []
    (tmp_path / src.name).write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n")
    shutil.copy(GOLDEN / "theory_c_domino.jsonl", tmp_path)
    r = run("--golden", str(tmp_path))
    assert r.returncode == 1
    assert "FAILED: 1 stage(s) did not pass" in r.stdout
    assert "NO" in r.stdout
