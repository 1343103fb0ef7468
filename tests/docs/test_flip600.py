"""docs/flip-600.md: every command of the finding, run as a reader would paste it (each
``sh`` block in a fresh directory, its lines in order), must give the outcome its comment
states: ``# -> exit N: word, word`` — exit code ``N`` and every word in the output (a
line without ``# ->`` must exit 0). A block after ``<!-- flip600-test: KIND -->`` needs
more than the kit: ``slow`` (a benchmark; with --runslow), ``tlc`` (Java; with
--runslow), ``flink`` (the Flink jars), ``registry`` (the package registry; with
--runslow). The diagrams the doc shows are those its commands draw."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "flip-600.md"
BLOCK = re.compile(r"(?:<!-- flip600-test: (\w+) -->\n)?```sh\n(.*?)```", re.DOTALL)
CLAIM = re.compile(r"#\s*->\s*exit (\d+)(?::(.*))?$")


def blocks() -> list[tuple[str, list[tuple[str, int, list[str]]]]]:
    """(kind, [(command, exit code, words)]) for every ``sh`` block of the doc."""
    out = []
    for kind, body in BLOCK.findall(DOC.read_text()):
        lines = []
        for line in body.splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            m = CLAIM.search(line)
            command = line[: m.start()].strip() if m else line.strip()
            words = [w.strip() for w in (m.group(2) or "").split(",") if w.strip()] if m else []
            lines.append((command, int(m.group(1)) if m else 0, words))
        out.append((kind or "plain", lines))
    return out


def _needs(kind: str, request) -> None:
    slow = request.config.getoption("--runslow") or os.environ.get("SNAPCHECK_SLOW") == "1"
    if kind in ("slow", "tlc", "registry") and not slow:
        pytest.skip(f"{kind}: run with --runslow or SNAPCHECK_SLOW=1")
    if kind == "tlc" and not shutil.which("java"):
        pytest.skip("TLC needs Java")
    if kind == "flink":
        from snapcheck.flink.build import FlinkSetupError, flink_home

        try:
            flink_home()
        except FlinkSetupError as exc:
            pytest.skip(str(exc))


def test_the_doc_has_a_claimed_command_for_every_condition_and_every_mutant():
    from snapcheck.reference.catalogue import mutants_of

    text = " ".join(c for _, lines in blocks() for c, _, _ in lines)
    for m in mutants_of("regional-aligned"):
        assert f"--mutant {m.name} " in text, m.name
    shrinks = [c for _, lines in blocks() for c, _, _ in lines if c.startswith("snapcheck shrink")]
    assert len(shrinks) == 8 and all("--simulation" in c for c in shrinks)


@pytest.mark.parametrize("index", range(len(blocks())))
def test_each_command_of_the_doc_gives_the_outcome_it_states(index, tmp_path, request):
    kind, lines = blocks()[index]
    _needs(kind, request)
    (tmp_path / "benchmarks").symlink_to(ROOT / "benchmarks")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for command, code, words in lines:
        argv = shlex.split(command)
        if argv[0] == "pip":
            argv = [sys.executable, "-m", "pip", *argv[1:]]
        res = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200, check=False)
        if kind == "registry" and res.returncode != 0:
            pytest.skip(f"the package registry did not answer: {res.stderr.strip()[:200]}")
        out = res.stdout + res.stderr
        assert res.returncode == code, f"{command}\nexit {res.returncode}, expected {code}\n{out[-2000:]}"
        missing = [w for w in words if w not in out]
        assert not missing, f"{command}\nmissing {missing} in:\n{out[-2000:]}"


def test_the_diagrams_the_doc_shows_are_drawn_by_its_commands():
    text = DOC.read_text()
    drawn = {
        Path(shlex.split(c.split(" -o ")[1])[0]).name
        for _, lines in blocks()
        for c, _, _ in lines
        if c.startswith("snapcheck render")
    }
    shown = set(re.findall(r"!\[[^\]]*\]\(img/flip-600/([\w.-]+)\)", text))
    assert shown == drawn
    assert all((ROOT / "docs" / "img" / "flip-600" / name).exists() for name in shown)
