"""TLA+ conformance of traces whose rounds pile up: segments cut with obsolete markers
in flight against segments cut only when no marker is in flight.

On a slow channel (one-record buffers, a cycle, a straggler) markers of finished
rounds can queue behind records for most of a run; a trace is then cut into
segments also where the markers in flight are harmless (``checker.tla.segments``,
``OBSOLETE_IN_FLIGHT``), and segments of very different numbers of rounds share no
TLC run (``conform._round_classes``: a run's per-round state is as large as its
largest member's). The traces are campaign runs (``snapcheck validate``'s default
strategy, protocols of the snapshot specifications), chosen as the costliest of 400
(and of 1,000: 7000456) for TLC, and the first of them with three times the input;
each is validated by ``snapcheck conform -j 1`` three times: with every one of these
cuts switched off (``quiet``: cuts only where no marker is in flight, every segment
in one run), without the cuts with late barriers of aborted rounds in flight
(``obsolete``: ``segments.LATE_BARRIERS``), and as shipped (``late``); CPU time of
the command and its TLC JVMs, verdict and its location compared.

Usage: ``python benchmarks/bench_conform_pileup.py [--no-write] [--keep DIR]``
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_conform import measure  # noqa: E402
from benchdoc import machine, write_section  # noqa: E402

PYTHON = sys.executable
SNAPCHECK = str(Path(sys.executable).with_name("snapcheck"))
# ``snapcheck simulate`` commands of campaign runs (seeds 1056, 1164, 1244, 1252 of
# ``snapcheck validate -s 1000`` over the snapshot protocols, workloads q1,q3,q8,q12,diamond,reachability)
RUNS = {
    "1244": "--protocol aligned-timeout --workload reachability --parallelism 3 --seed 1244 --records 9 --gap 30 "
    "--interval 150 --aligned-timeout 50 --latency 4 --jitter 1 --buffer 1 --out-buffer 1 --control-latency 1 "
    "--decline-prob 0.1",
    "1252": "--protocol aligned-timeout --workload reachability --parallelism 3 --seed 1252 --records 8 --gap 30 "
    "--interval 100 --aligned-timeout 200 --latency 4 --jitter 20 --buffer 1 --out-buffer 1 --decline-prob 0.15",
    "1244x3": "--protocol aligned-timeout --workload reachability --parallelism 3 --seed 1244 --records 27 "
    "--gap 30 --interval 150 --aligned-timeout 50 --latency 4 --jitter 1 --buffer 1 --out-buffer 1 "
    "--control-latency 1 --decline-prob 0.1",
    "1056": "--protocol abs-aligned --workload q8 --parallelism 3 --seed 1056 --records 14 --gap 20 --hot-ratio 0.8 "
    "--interval 200 --max-concurrent 3 --checkpoint-timeout 300 --aligned-timeout 20 --latency 7 --jitter 30 "
    "--buffer 1 --out-buffer 1 --control-latency 1 --control-jitter 75 --detect-delay 5 "
    "--straggler window_join[1]=10.0 --decline-prob 0.1",
    "7000456": "--protocol aligned-timeout --workload reachability --parallelism 3 --seed 7000456 --records 8 "
    "--gap 50 --interval 80 --checkpoint-timeout 300 --aligned-timeout 150 --latency 13 --jitter 400 --buffer 1 "
    "--out-buffer 1 --decline-prob 0.1 --fail sources[2]@completed-unnotified#2",
    "1164": "--protocol abs-cyclic --workload reachability --parallelism 2 --seed 1164 --records 10 --gap 20 "
    "--interval 80 --max-concurrent 3 --checkpoint-timeout 800 --aligned-timeout 150 --latency 26 --jitter 1 "
    "--buffer 1 --out-buffer 1 --control-latency 1 --control-jitter 100 --detect-delay 5 "
    "--straggler select[0]=5.0 --decline-prob 0.05",
}
# What each mode switches off (``snapcheck.cli.main`` in the same process: ``console()``
# would re-execute itself and lose the patch).
MODES = {
    "quiet": "s.OBSOLETE_IN_FLIGHT = s.LATE_BARRIERS = frozenset(); c.ROUND_CLASS_SPLIT = float('inf')",
    "obsolete": "s.LATE_BARRIERS = frozenset()",
    "late": "",
}
PATCH = "import sys; import snapcheck.checker.tla.segments as s; import snapcheck.checker.tla.conform as c; "


def command(mode: str) -> list[str]:
    """The ``snapcheck`` command line of ``mode`` (arguments to follow)."""
    if not MODES[mode]:
        return [SNAPCHECK]
    return [PYTHON, "-c", PATCH + MODES[mode] + "; from snapcheck.cli import main; sys.argv[0] = 'snapcheck'; main()"]


def shape(path: Path, mode: str) -> tuple[int, int, int]:
    """Spec events, segments and the most rounds a segment holds."""
    code = (
        PATCH + MODES[mode] + "\n"
        "from snapcheck.traces import read_trace\n"
        "from snapcheck.checker.tla.conform import prepare, _units\n"
        "from snapcheck.reference.catalogue import tla_mappings\n"
        "p = prepare(read_trace(sys.argv[1]), tla_mappings()); u = _units(p, True)\n"
        "print(len(p.events), len(u), max(x.prepared.bounds['TRounds'] for x in u))\n"
    )
    out = subprocess.run([PYTHON, "-c", code, str(path)], capture_output=True, text=True, check=True).stdout
    events, segments, rounds = map(int, out.split())
    return events, segments, rounds


def report(out: str) -> str:
    """What ``snapcheck conform`` said of the trace, without its timing line."""
    return "\n".join(ln for ln in out.splitlines() if "trace(s) in" not in ln)


def verdict(out: str) -> str:
    """The verdict word of a one-trace report."""
    for word in ("ACCEPT", "REJECT", "ERROR"):
        if f": {word}" in out:
            return word
    return "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-write", action="store_true", help="print the section, do not write docs/benchmarks.md")
    ap.add_argument("--keep", type=Path, help="directory for the traces (kept)")
    args = ap.parse_args()
    where = args.keep or Path(tempfile.mkdtemp(prefix="snapcheck-pileup-"))
    where.mkdir(parents=True, exist_ok=True)
    rows = []
    for seed, options in RUNS.items():
        path = where / f"run-{seed}.jsonl"
        if not path.exists():
            subprocess.run(
                [SNAPCHECK, "simulate", *shlex.split(options), "-o", str(path)], check=True, capture_output=True
            )
        runs = {mode: measure([*command(mode), "conform", "-j", "1", str(path)]) for mode in MODES}
        shapes = {mode: shape(path, mode) for mode in MODES}
        differ = [m for m in MODES if report(runs[m]["out"]) != report(runs["late"]["out"])]
        same = "yes" if not differ else "no: " + ", ".join(f"`{m}` {verdict(runs[m]['out'])}" for m in differ)
        cpu = {m: r["cpu"] for m, r in runs.items()}
        speedup = "-" if "quiet" in differ else f"{cpu['quiet'] / max(cpu['late'], 1e-9):.1f}x"
        rows.append((seed, options.split()[1], shapes, cpu, speedup, verdict(runs["late"]["out"]), same))
        print(rows[-1], flush=True)
    lines = [
        "## TLA+ conformance when rounds pile up (`benchmarks/bench_conform_pileup.py`)",
        "",
        f"{machine()}. Campaign traces whose markers of finished rounds stay in flight on slow channels, "
        "each validated by `snapcheck conform -j 1` (refinement on) three ways: segments cut only where no "
        "marker is in flight and all segments of a trace in one TLC run (`quiet`); also cut where the markers "
        "in flight are obsolete, segments of very different numbers of rounds in TLC runs of their own "
        "(`obsolete`); and as shipped, also cut with late barriers of aborted rounds in flight (`late`, "
        "Unaligned specification only); all three with the shipped specifications. CPU = the command and its TLC JVMs. 1244x3: run 1244 with three "
        "times the input; 7000456: a run of the default strategy (`snapcheck validate -s 7000000`), the "
        "costliest of 1,000.",
        "",
        "| run | protocol | spec events | segments (most rounds in one): quiet | obsolete | late "
        "| CPU quiet | CPU obsolete | CPU late | speed-up over quiet | verdict | same verdict and location |",
        "|---|---|---:|---|---|---|---:|---:|---:|---:|---|---|",
    ]
    for seed, proto, shapes, cpu, speedup, v, same in rows:
        cuts = " | ".join(f"{shapes[m][1]} ({shapes[m][2]})" for m in MODES)
        times = " | ".join(f"{cpu[m]:.1f} s" for m in MODES)
        lines.append(f"| {seed} | `{proto}` | {shapes['late'][0]:,} | {cuts} | {times} | {speedup} | {v} | {same} |")
    lines += [
        "",
        "A mode whose report differs from the shipped one is named in the last column with its verdict (an "
        "ERROR is TLC failing, e.g. a `StackOverflowError` on a segment of over a hundred rounds); no speed-up "
        "is given over a mode that did not judge the trace. Reproduce a trace: `snapcheck simulate OPTIONS "
        "-o run.jsonl` with the options in the script (`RUNS`).",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        write_section("conform-pileup", text)


if __name__ == "__main__":
    main()
