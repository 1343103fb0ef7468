"""Long measurements as resumable chunks: campaign ``c`` of ``size`` runs has base seed
``first + c * size``, so the chunks together are the seeds ``first … first + chunks *
size - 1``, and each is an ordinary campaign whose ``summary.json`` stays in its own
directory. A chunk whose summary exists is not run again, so a measurement interrupted
(or spread over several sittings) continues where it stopped.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def run_chunks(name: str, options: list[str], chunks: int, size: int, out: Path, first: int = 0) -> None:
    """Run the missing chunks ``out/NAME-C`` of ``snapcheck validate OPTIONS``."""
    for c in range(chunks):
        target = out / f"{name}-{c}"
        if (target / "summary.json").exists():
            continue
        cmd = [sys.executable, "-m", "snapcheck", "validate", "-n", str(size), *options]
        cmd += ["-s", str(first + c * size), "-o", str(target)]
        print(" ".join(cmd[1:]), flush=True)
        done = subprocess.run(cmd, stdout=subprocess.DEVNULL)
        if done.returncode not in (0, 1):  # 1: a failing run, which the summary lists
            raise SystemExit(f"chunk {c} of {name} ended with exit {done.returncode}")


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
