"""TLA+ trace validation at scale: ``snapcheck conform`` on single long traces.

Simulates ``snapcheck simulate -p abs-aligned -w q1 --records R`` traces of about
100 (the fixed cost of one command: Python, the JVM, SANY), 5,000, 50,000 and
1,000,000 events (the simulator keeps about 5 KB per event while
it runs: the 1,000,000-event trace needs about 5 GB once, while it is written),
then runs ``snapcheck conform`` on each, one trace per run, as a user does:

* ``segments`` -- the default: refinement on, the trace validated in segments cut
  where every round so far is finished, segments sharing TLC runs (``-j 2``);
* ``whole`` -- ``--no-segments`` (one TLC run on the whole trace; only for the
  smaller traces: its cost grows faster than the trace);
* ``no-refinement`` -- segments without the refinement check.

Per run it records wall time, CPU time of the command and every process it started
(TLC's JVMs included), and the peak memory of the whole process tree (the sum of
the resident sizes of the command and its children, sampled every 50 ms). Events
are the trace's events (lines after the header); events/s per core is events per
CPU second. On a shared machine CPU time is the robust figure.

The per-event rate beyond the fixed cost (``marginal``) is (events - events of the
smallest trace) / (CPU - CPU of the smallest trace).

Usage: ``python benchmarks/bench_conform.py [--records 5,225,2250,45000] [--no-write] [--keep DIR]``
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchdoc import machine, write_section

SNAPCHECK = [str(Path(sys.executable).with_name("snapcheck"))]
WHOLE_MAX_EVENTS = 10_000  # --no-segments only up to this size (quadratic beyond: 50,000 events > 10 min)
TARGETS = (
    "events/s at 5k, 50k and 1M events within 2x of each other; >= 10,000 events/s per core with "
    "refinement on a single long trace; peak memory <= 2 GB at 1M events"
)


def _tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and its descendants (Linux ``/proc``)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(entry), int(fields[1])
        children.setdefault(ppid, []).append(pid)
        rss[pid] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo += children.get(pid, [])
    return total


def measure(cmd: list[str], timeout: float | None = None) -> dict:
    """Run ``cmd``; its wall time, CPU time (with its waited-for children) and peak tree
    memory; after ``timeout`` seconds its whole process group is killed (``exit`` None)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_rss(proc.pid))
            done.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        out, _ = proc.communicate(timeout=timeout)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, code = proc.communicate()[0], None
    done.set()
    sampler.join()
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "peak_mb": peak / 2**20, "exit": code, "out": out}


def simulate(records: int, directory: Path, protocol: str = "abs-aligned") -> tuple[Path, int]:
    """The trace of ``snapcheck simulate -p PROTOCOL -w q1 --records RECORDS`` (made once
    in ``directory``) and its number of events."""
    path = directory / f"{protocol}-q1-{records}.jsonl"
    tmp = directory / f"{protocol}-q1-{records}.part.jsonl"
    if not path.exists():
        subprocess.run(
            [*SNAPCHECK, "simulate", "-p", protocol, "-w", "q1", "--records", str(records), "-o", str(tmp)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        tmp.rename(path)
    with open(path, "rb") as f:
        events = sum(1 for _ in f) - 1
    return path, events


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--records",
        default="5,225,2250,45000",
        help="input records per source partition of each trace (q1: about 22 events each)",
    )
    ap.add_argument("--keep", help="directory for the traces (kept; reused when present)")
    ap.add_argument("--no-write", action="store_true", help="print only, do not rewrite docs/benchmarks.md")
    args = ap.parse_args()
    directory = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-conform-"))
    directory.mkdir(parents=True, exist_ok=True)
    rows = []
    for records in (int(r) for r in args.records.split(",")):
        path, events = simulate(records, directory)
        modes = [("segments", [])]
        if events <= WHOLE_MAX_EVENTS:
            modes.append(("whole", ["--no-segments"]))
        modes.append(("no-refinement", ["--no-refinement"]))
        for mode, flags in modes:
            m = measure([*SNAPCHECK, "conform", "-j", "2", *flags, str(path)])
            verdict = "ACCEPT" if "1 accepted" in m["out"] else f"exit {m['exit']}"
            rows.append((events, mode, m, verdict))
            print(
                f"{events:>9,} {mode:14s} wall {m['wall']:7.1f}s cpu {m['cpu']:7.1f}s "
                f"{events / m['cpu']:9,.0f} ev/cpu-s {events / m['wall']:9,.0f} ev/s "
                f"peak {m['peak_mb']:6.0f} MB {verdict}",
                flush=True,
            )
    seg = [(e, m) for e, mode, m, _ in rows if mode == "segments"]
    (e0, m0), big = seg[0], seg[1:]
    per_cpu = [e / m["cpu"] for e, m in big]
    marginal = [(e - e0) / (m["cpu"] - m0["cpu"]) for e, m in big]
    lines = [
        "## TLA+ trace validation (`snapcheck conform`)",
        "",
        (
            f"`benchmarks/bench_conform.py` on {machine()}; load average at the start "
            f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (shared). One `abs-aligned` trace of "
            "`snapcheck simulate -w q1` per run, `-j 2`. CPU = the command and every TLC JVM it started; "
            "memory = peak of the sum of their resident sizes."
        ),
        "",
        "| events | mode | wall | CPU | events/s (wall) | events/s per CPU second | peak memory | verdict |",
        "|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for events, mode, m, verdict in rows:
        lines.append(
            f"| {events:,} | {mode} | {m['wall']:.1f} s | {m['cpu']:.1f} s | {events / m['wall']:,.0f} | "
            f"{events / m['cpu']:,.0f} | {m['peak_mb']:,.0f} MB | {verdict} |"
        )
    lines += [
        "",
        f"Targets: {TARGETS}.",
        "",
        f"Default mode (segments, refinement on), traces of {big[0][0]:,} to {big[-1][0]:,} events: "
        f"events per CPU second from {min(per_cpu):,.0f} to {max(per_cpu):,.0f} "
        f"({max(per_cpu) / min(per_cpu):.2f}x); the fixed cost of one command is "
        f"{m0['cpu']:.1f} s CPU ({e0:,} events), and beyond it the rate is "
        + ", ".join(f"{r:,.0f}" for r in marginal)
        + f" events per CPU second ({max(marginal) / min(marginal):.2f}x apart).",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        write_section("conform", text)


if __name__ == "__main__":
    main()
