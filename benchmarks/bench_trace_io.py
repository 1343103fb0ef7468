"""Trace I/O throughput: streaming validation, whole-trace reading and Parquet conversion.

Generates the checker benchmark's trace of N events (default 1,000,000) over P
processes (default 32), then measures
side by side, each in a fresh subprocess (so peak memory is its own):

* ``stream``: ``snapcheck.traces.iter_events`` — parse + validate, one pass, events not kept
* ``read``: ``snapcheck.traces.read_trace`` — the same, building the in-memory ``Trace``
* ``parquet``: ``snapcheck.traces.convert.jsonl_to_parquet`` (validates, then converts)

Usage: ``python benchmarks/bench_trace_io.py [--events N] [--procs P] [--no-write]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_checker import generate  # noqa: E402  (the checker benchmark's trace: messages in flight across checkpoints)
from benchdoc import machine, write_section  # noqa: E402

TASKS = {
    "stream": "from snapcheck.traces import iter_events\nn = sum(1 for _ in iter_events(PATH))",
    "read": "from snapcheck.traces import read_trace\nn = len(read_trace(PATH).events)",
    "parquet": "from snapcheck.traces.convert import jsonl_to_parquet\nn = jsonl_to_parquet([PATH], PATH + '.parquet') - 1",
}


def measure(task: str, path: Path) -> dict:
    code = (
        f"import resource, time, json\nPATH = {str(path)!r}\nt0 = time.perf_counter()\n{TASKS[task]}\n"
        "print(json.dumps({'seconds': time.perf_counter() - t0, 'events': n, "
        "'peak_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--procs", type=int, default=32)
    ap.add_argument("--no-write", action="store_true", help="print only; do not update docs/benchmarks.md")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.jsonl"
        generate(path, args.events, args.procs)
        size_mb = path.stat().st_size / 2**20
        rows = []
        for task in TASKS:
            r = measure(task, path)
            rows.append((task, r))
            print(
                f"{task:8s} {r['events']:>10,d} events  {r['seconds']:7.2f} s  "
                f"{r['events'] / r['seconds']:>12,.0f} events/s  peak {r['peak_mb']:7.0f} MB"
            )
    base = rows[0][1]["seconds"]
    table = ["| task | events | seconds | events/s | × stream time | peak RSS (MB) |", "|---|---|---|---|---|---|"]
    for task, r in rows:
        table.append(
            f"| {task} | {r['events']:,} | {r['seconds']:.2f} | {r['events'] / r['seconds']:,.0f} | "
            f"{r['seconds'] / base:.2f} | {r['peak_mb']:.0f} |"
        )
    text = (
        f"## Trace I/O (`benchmarks/bench_trace_io.py`)\n\n"
        f"{args.events:,} events, {args.procs} processes, {size_mb:.0f} MB of JSONL; {machine()}.\n"
        "`stream` parses and validates in one pass without keeping events (the floor every consumer pays); "
        "`read` also builds the in-memory trace; `parquet` validates and converts to the Parquet form.\n\n"
        + "\n".join(table)
    )
    if not args.no_write:
        write_section("trace-io", text)
    print(text)


if __name__ == "__main__":
    main()
