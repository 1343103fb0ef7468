"""TLA+ trace validation at scale: ``snapcheck conform`` on single long traces.

Simulates ``snapcheck simulate -p abs-aligned -w q1 --records R`` traces of about
100 (the fixed cost of one command), 5,000, 50,000 and 1,000,000 events (the
simulator keeps about 5 KB per event while it runs: the 1,000,000-event trace needs
about 5 GB once, while it is written), then runs ``snapcheck conform`` on each, one
trace per command, as a user does:

* ``warm`` -- the default: refinement on, the trace validated in segments cut where
  every round so far is finished, segments sharing TLC runs (``-j 2``), the command
  run by the warm server (``snapcheck.command_server``) that an earlier command
  started: the median of ``REPEAT`` commands, after one command on the smallest trace
  that started the server;
* ``own process`` -- the same with ``SNAPCHECK_SERVER=0``: Python, the JVM and TLC's
  classes started for this command alone (what the first command pays);
* ``whole`` -- ``--no-segments`` in its own process (one TLC run on the whole trace;
  only for the smaller traces: its cost grows faster than the trace);
* ``no-refinement`` -- ``--no-refinement`` on the warm server.

Per command it records wall time, CPU time (the command, every process it started,
and what the server and its JVMs spent meanwhile: their CPU times sampled every 50 ms,
so a JVM that ends between two samples loses at most that much), and the peak memory
of both process trees (the sum of their resident sizes, sampled every 50 ms). Events
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
import shutil
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


def _processes() -> dict[int, tuple[int, float, int]]:
    """Every process: pid -> (parent pid, CPU seconds of its own, resident bytes) (Linux ``/proc``)."""
    found = {}
    tick, page = os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick, int(fields[21]) * page)
    return found


def _tree(procs: dict, roots: list[int]) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [r for r in roots if r in procs]
    while todo:
        pid = todo.pop()
        if pid not in found:  # a server the command started is in both trees
            found.append(pid)
            todo += children.get(pid, [])
    return found


def _servers(runtime: Path) -> list[int]:
    pids = []
    for f in (runtime / "snapcheck").glob("*.pid"):
        try:
            pids.append(int(f.read_text()))
        except (OSError, ValueError):
            pass
    return pids


def measure(cmd: list[str], env: dict, runtime: Path, timeout: float | None = None) -> dict:
    """Run ``cmd``; its wall time, CPU time (with its waited-for children, plus what the
    warm servers of ``runtime`` and their JVMs spent meanwhile) and the peak memory of
    both trees; after ``timeout`` seconds its whole process group is killed (``exit`` None)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    first: dict[int, float] = {}
    last: dict[int, float] = {}
    procs = _processes()
    for pid in _tree(procs, _servers(runtime)):
        first[pid] = last[pid] = procs[pid][1]
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True, env=env
    )
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while True:
            procs = _processes()
            peak = max(peak, sum(procs[p][2] for p in _tree(procs, [proc.pid, *_servers(runtime)])))
            for p in _tree(procs, _servers(runtime)):
                last[p] = procs[p][1]
            if done.is_set():
                return
            done.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        out, _ = proc.communicate(timeout=timeout)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, code = proc.communicate()[0], None
    wall = time.perf_counter() - t0
    done.set()
    sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    served = sum(v - first.get(p, 0.0) for p, v in last.items())
    return {"wall": wall, "cpu": cpu + served, "peak_mb": peak / 2**20, "exit": code, "out": out}


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


REPEAT = 3  # warm commands per trace (their median is reported)


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
    runtime = Path(tempfile.mkdtemp(prefix="bc-", dir="/tmp"))  # the warm servers of this run alone
    nobody = runtime / "none"  # no server's pid file is here
    warm_env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "SNAPCHECK_SERVER_IDLE": "600"}
    own_env = {**warm_env, "SNAPCHECK_SERVER": "0"}
    load = os.getloadavg()[0]
    traces = [simulate(int(r), directory) for r in args.records.split(",")]
    rows = []
    try:
        measure([*SNAPCHECK, "conform", "-j", "2", str(traces[0][0])], warm_env, runtime)  # starts the server
        for path, events in traces:
            modes = [("own process", own_env, [], 1), ("warm", warm_env, [], REPEAT)]
            if events <= WHOLE_MAX_EVENTS:
                modes.append(("whole", own_env, ["--no-segments"], 1))
            modes.append(("no-refinement", warm_env, ["--no-refinement"], 1))
            for mode, env, flags, repeat in modes:
                served = runtime if env is warm_env else nobody  # an idle server is not this command's
                runs = [
                    measure([*SNAPCHECK, "conform", "-j", "2", *flags, str(path)], env, served) for _ in range(repeat)
                ]
                m = sorted(runs, key=lambda r: r["wall"])[len(runs) // 2]
                verdict = "ACCEPT" if "1 accepted" in m["out"] else f"exit {m['exit']}"
                rows.append((events, mode, m, verdict))
                print(
                    f"{events:>9,} {mode:14s} wall {m['wall']:7.2f}s cpu {m['cpu']:7.2f}s "
                    f"{events / m['cpu']:9,.0f} ev/cpu-s {events / m['wall']:9,.0f} ev/s "
                    f"peak {m['peak_mb']:6.0f} MiB {verdict}",
                    flush=True,
                )
    finally:
        subprocess.run([*SNAPCHECK, "server", "stop"], env=warm_env, stdout=subprocess.DEVNULL)
        shutil.rmtree(runtime, ignore_errors=True)
    text = _report(rows, load)
    print(text)
    if not args.no_write:
        write_section("conform", text)


def _report(rows: list, load: float) -> str:
    lines = [
        "## TLA+ trace validation (`snapcheck conform`)",
        "",
        (
            f"`benchmarks/bench_conform.py` on {machine()}; load average at the start "
            f"{load:.1f} on {os.cpu_count()} cores (shared). One `abs-aligned` trace of "
            "`snapcheck simulate -w q1` per command, `-j 2`. `warm`: the median of "
            f"{REPEAT} commands run by the warm server an earlier command started (the default); "
            "`own process`: `SNAPCHECK_SERVER=0`, what a first command pays. CPU = the command, "
            "every process it started and what the warm server and its JVMs spent meanwhile; "
            "memory = peak of the sum of their resident sizes."
        ),
        "",
        "| events | mode | wall | CPU | events/s (wall) | events/s per CPU second | peak memory | verdict |",
        "|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for events, mode, m, verdict in rows:
        lines.append(
            f"| {events:,} | {mode} | {m['wall']:.2f} s | {m['cpu']:.2f} s | {events / m['wall']:,.0f} | "
            f"{events / m['cpu']:,.0f} | {m['peak_mb']:,.0f} MiB | {verdict} |"
        )
    lines += ["", f"Targets: {TARGETS}.", ""]
    for mode in ("warm", "own process"):
        seg = [(e, m) for e, md, m, _ in rows if md == mode]
        (e0, m0), big = seg[0], seg[1:]
        wall = [e / m["wall"] for e, m in big]
        cpu = [e / m["cpu"] for e, m in big]
        marginal = [(e - e0) / (m["cpu"] - m0["cpu"]) for e, m in big]
        lines.append(
            f"`{mode}`, traces of {big[0][0]:,} to {big[-1][0]:,} events: events per second (wall) from "
            f"{min(wall):,.0f} to {max(wall):,.0f} ({max(wall) / min(wall):.2f}x apart); events per CPU "
            f"second from {min(cpu):,.0f} to {max(cpu):,.0f} ({max(cpu) / min(cpu):.2f}x apart); the fixed "
            f"cost of one command is {m0['wall']:.2f} s wall, {m0['cpu']:.2f} s CPU ({e0:,} events), and "
            "beyond it the rate is " + ", ".join(f"{r:,.0f}" for r in marginal) + " events per CPU second "
            f"({max(marginal) / min(marginal):.2f}x apart)."
        )
        lines.append("")
    return "\n".join(lines).rstrip()


if __name__ == "__main__":
    main()
