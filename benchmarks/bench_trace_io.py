"""Trace I/O throughput: streaming validation, whole-trace reading and Parquet conversion.

Generates a trace of N events (default 1,000,000) over P processes (default
32) with random point-to-point messages and periodic checkpoints, then measures
side by side, each in a fresh subprocess (so peak memory is its own):

* ``stream``: ``traces.iter_events`` — parse + validate, one pass, events not kept
* ``read``: ``traces.read_trace`` — the same, building the in-memory ``Trace``
* ``parquet``: ``traces.parquet.jsonl_to_parquet`` (validates, then converts)

Usage: ``python benchmarks/bench_trace_io.py [--events N] [--procs P] [--no-write]``
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchdoc import machine, write_section  # noqa: E402


def generate(path: Path, n_events: int, n_procs: int, seed: int = 1) -> None:
    """Random messages between random pairs; each process checkpoints every ~50 of its events."""
    rng = random.Random(seed)
    procs = [f"P{i}" for i in range(n_procs)]
    chans = [(a, b) for a in range(n_procs) for b in range(n_procs) if a != b]
    header = {"format": "snapcheck-trace", "version": 1, "processes": [{"id": p} for p in procs],
              "channels": [{"id": f"{a}>{b}", "src": procs[a], "dst": procs[b]} for a, b in chans],
              "protocol": {"name": "none"}, "seed": seed}
    idx = [0] * n_procs
    seq: dict[tuple[int, int], int] = {}
    ckpt = [0] * n_procs
    written = 0
    with open(path, "wb") as f:
        f.write(orjson.dumps(header) + b"\n")
        while written < n_events:
            a, b = rng.choice(chans)
            s = seq.get((a, b), 0) + 1
            seq[(a, b)] = s
            mid = f"{a}>{b}:{s}"
            f.write(orjson.dumps({"type": "send", "proc": procs[a], "idx": idx[a], "ch": f"{a}>{b}", "mid": mid, "seq": s}) + b"\n")
            f.write(orjson.dumps({"type": "recv", "proc": procs[b], "idx": idx[b], "ch": f"{a}>{b}", "mid": mid}) + b"\n")
            idx[a] += 1
            idx[b] += 1
            written += 2
            for p in (a, b):
                if rng.random() < 0.02:
                    ckpt[p] += 1
                    f.write(orjson.dumps({"type": "checkpoint", "proc": procs[p], "idx": idx[p], "ckpt": ckpt[p], "kind": "basic"}) + b"\n")
                    idx[p] += 1
                    written += 1


TASKS = {
    "stream": "from traces import iter_events\nn = sum(1 for _ in iter_events(PATH))",
    "read": "from traces import read_trace\nn = len(read_trace(PATH).events)",
    "parquet": "from traces.parquet import jsonl_to_parquet\nn = jsonl_to_parquet([PATH], PATH + '.parquet') - 1",
}


def measure(task: str, path: Path) -> dict:
    code = (f"import resource, time, json\nPATH = {str(path)!r}\nt0 = time.perf_counter()\n{TASKS[task]}\n"
            "print(json.dumps({'seconds': time.perf_counter() - t0, 'events': n, "
            "'peak_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))")
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
            print(f"{task:8s} {r['events']:>10,d} events  {r['seconds']:7.2f} s  "
                  f"{r['events'] / r['seconds']:>12,.0f} events/s  peak {r['peak_mb']:7.0f} MB")
    base = rows[0][1]["seconds"]
    table = ["| task | events | seconds | events/s | × stream time | peak RSS (MB) |", "|---|---|---|---|---|---|"]
    for task, r in rows:
        table.append(f"| {task} | {r['events']:,} | {r['seconds']:.2f} | {r['events'] / r['seconds']:,.0f} | "
                     f"{r['seconds'] / base:.2f} | {r['peak_mb']:.0f} |")
    text = (f"## Trace I/O (`benchmarks/bench_trace_io.py`)\n\n"
            f"{args.events:,} events, {args.procs} processes, {size_mb:.0f} MB of JSONL; {machine()}.\n"
            "`stream` parses and validates in one pass without keeping events (the floor every consumer pays); "
            "`read` also builds the in-memory trace; `parquet` validates and converts to the Parquet form.\n\n"
            + "\n".join(table))
    if not args.no_write:
        write_section("trace-io", text)
    print(text)


if __name__ == "__main__":
    main()
