"""docs/protocols.md, "Hunting bugs in your own protocol": its protocol file and its
commands, run as a user would paste them (in a fresh directory, Spark local mode)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "protocols.md"
SNAPCHECK = [sys.executable, "-m", "snapcheck"]

pytestmark = pytest.mark.spark


def _block(marker: str) -> str:
    m = re.search(rf"<!-- hunt:{marker}[^>]*-->\n```\w+\n(.*?)```", DOC.read_text(), re.S)
    assert m, f"docs/protocols.md has no {marker} block"
    return m.group(1)


def _commands(marker: str) -> list[tuple[list[list[str]], int]]:
    """Each line: the commands it chains with && and the exit code its comment promises."""
    out = []
    for line in _block(marker).splitlines():
        code, _, comment = line.partition("  #")  # a comment follows spaces; a fault may hold "#K"
        want = int(re.search(r"exit (\d)", comment).group(1)) if "exit" in comment else 0
        out.append(([shlex.split(c) for c in code.split("&&")], want))
    return out


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    assert argv[0] == "snapcheck", argv
    env = dict(os.environ, PYTHONPATH=str(cwd))
    return subprocess.run(SNAPCHECK + argv[1:], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def test_the_hunt_finds_the_bug_and_the_failing_run_reproduces_and_shrinks(tmp_path):
    (tmp_path / "myaligned.py").write_text(_block("file myaligned.py"))
    for chain, want in _commands("commands"):
        for argv in chain:
            res = _run(argv, tmp_path)
            if res.returncode != 0:
                break
        assert res.returncode == want, (argv, res.stdout[-2000:], res.stderr[-2000:])
    summary = json.loads((tmp_path / "hunt" / "summary.json").read_text())
    failing = [f["command"] for f in summary["failing_runs"]]
    (shown, want), *rest = _commands("failing")
    assert shlex.join(shown[0]) == failing[0], "the doc must show the campaign's first failing run"
    assert "orphan" in summary["failing_runs"][0]["violation_kinds"].split(",")
    assert all(f["verdict"] == "violation" for f in summary["failing_runs"])  # violations, never errors
    res = _run(shown[0], tmp_path)  # the pasted reproduction command (with --oracle: exit 1 when it differs)
    assert res.returncode == want, res.stderr
    for chain, want in rest:
        res = _run(chain[0], tmp_path)
        assert res.returncode == want, (chain[0], res.stdout[-2000:], res.stderr[-2000:])
    small = [json.loads(line) for line in (tmp_path / "small.jsonl").read_text().splitlines()]
    assert len(small) - 1 <= 6 and {e["type"] for e in small[1:]} <= {"send", "recv", "checkpoint"}
    assert (tmp_path / "small.svg").read_text().lstrip().startswith("<?xml")
