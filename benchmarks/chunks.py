"""Long measurements as resumable chunks: campaign ``c`` of ``size`` runs has base seed
``first + c * size``, so the chunks together are the seeds ``first … first + chunks *
size - 1``, and each is an ordinary campaign whose ``summary.json`` stays in its own
directory, beside ``commit.txt``, the commit of the code that ran it. A chunk whose
summary exists, or that ``done`` says was kept elsewhere, is not run again, so a
measurement interrupted (or spread over several sittings) continues where it stopped.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent


def commit() -> str:
    """The commit of the code these benchmarks run (``-dirty`` when the work tree has changes)."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=HERE, capture_output=True)
    return (head.stdout.strip() or "unknown") + ("-dirty" if dirty.stdout.strip() else "")


def run_chunks(
    name: str,
    options: list[str],
    chunks: int,
    size: int,
    out: Path,
    first: int = 0,
    done: Callable[[int], bool] = lambda seed: False,
) -> None:
    """Run the missing chunks ``out/NAME-C`` of ``snapcheck validate OPTIONS`` (``done(seed)``:
    the chunk of that base seed was kept elsewhere)."""
    for c in range(chunks):
        target = out / f"{name}-{c}"
        if (target / "summary.json").exists() or done(first + c * size):
            continue
        target.mkdir(parents=True, exist_ok=True)
        (target / "commit.txt").write_text(commit() + "\n")
        cmd = [sys.executable, "-m", "snapcheck", "validate", "-n", str(size), *options]
        cmd += ["-s", str(first + c * size), "-o", str(target)]
        print(" ".join(cmd[1:]), flush=True)
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL)
        if proc.returncode not in (0, 1):  # 1: a failing run, which the summary lists
            raise SystemExit(f"chunk {c} of {name} ended with exit {proc.returncode}")


def seed_ranges(seeds: list[tuple[int, int]]) -> str:
    """``0…99,999`` for contiguous chunks; the chunks' ranges otherwise.

    >>> seed_ranges([(10, 19), (0, 9), (30, 39)])
    '0…19, 30…39'
    """
    seeds = sorted(seeds)
    merged = [list(seeds[0])]
    for a, b in seeds[1:]:
        if a == merged[-1][1] + 1:
            merged[-1][1] = b
        else:
            merged.append([a, b])
    return ", ".join(f"{a:,}…{b:,}" for a, b in merged)
