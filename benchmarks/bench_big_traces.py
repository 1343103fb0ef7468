"""Scale benchmark: the commands on a 2,000,000-event trace, and render on a 100,000-process header.

Writes the traces with ``benchmarks/big_trace.py`` (the q12 dataflow under
Chandy-Lamport snapshots, and a ring of 100,000 processes), then runs each task as a
child process and records its CPU time (user + system), wall time and peak RSS, from
the resource usage of the child reported when it is reaped (``os.wait4``): the whole
process, from the interpreter's start to its exit.

* ``orjson``: a bare ``orjson.loads`` of every line (the floor of any reader);
* ``validate-trace``, ``check``, ``replay --until END --json``, ``render -o x.svg``:
  the ``snapcheck`` command (``python -m snapcheck``, the console script's entry point),
  as a user runs them;
* ``render`` of the 100,000-process trace;
* ``check, by part``: where ``check``'s time goes, in one process with the library's
  functions (validation alone, a second time, once the generated checks exist; reading =
  validation and building the events; the analyses of ``check_trace``; freeing the
  trace), for the reasons of a missed target.

The targets of the scale work are checked against these figures (``render`` within 60 s,
``replay`` to the end within 20 s, ``check`` within 1 GB and 2x ``validate-trace``,
``validate-trace`` within 4x ``orjson``). On a shared machine CPU time is the robust
figure (wall time includes waiting for other processes); both are reported.

Usage: ``python benchmarks/bench_big_traces.py [--events N] [--wide P] [--no-write]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchdoc import machine, write_section  # noqa: E402
from big_trace import generate, wide  # noqa: E402

# The parts of ``check`` (``check, by part``): CPU seconds of each, printed as JSON.
_PARTS = """
import json, time
from snapcheck.checker import CheckOptions, check_trace
from snapcheck.reference.catalogue import header_facts
from snapcheck.traces.gc_pause import paused_gc
from snapcheck.traces.jsonl import read_trace, validate_file
clock = time.process_time
validate_file({path!r})  # once before: the generated checks of each key order are made on first use
t = clock(); validate_file({path!r}); validate = clock() - t
with paused_gc():
    t = clock(); trace = read_trace({path!r}); read = clock() - t
    opts = CheckOptions(facts=header_facts(trace.header.protocol))
    t = clock(); report = check_trace(trace, opts); analyses = clock() - t
    t = clock(); del trace, report; free = clock() - t
print(json.dumps(dict(validate=validate, read=read, analyses=analyses, free=free)))
"""

# Why a target is missed, when it is (what the figures above show; see also docs/benchmarks.md).
WHY_NOT = {
    "replay": "`replay` reads the whole trace (validation and one `Event` per line: about half of its CPU "
    "time), runs the checker for the violation panels and applies every event to the replayed state; each "
    "part costs a few microseconds of interpreted Python per event, and CPU time on this shared 2-vCPU "
    "machine grows with its load.",
    "check-memory": "the checker holds the whole trace in memory: per event a compact `Event` (14 slots, "
    "160 bytes; the rarer fields only where set) and its own integers and values (about 400 bytes per "
    "event here, strings shared), and per message its tuple of the effective history; going well below "
    "needs a columnar in-memory trace (one array per field), not done.",
    "check-time": "in one process (`check, by part`), validation alone took {validate:.1f} s; `check` adds "
    "to it the building of the events ({build:.2f}x validation: one `Event` per line, made in the "
    "validator's own pass, kept with its values) and the analyses ({analyses:.2f}x: the event index, the "
    "effective history with one object per message and the table of message ids (the largest part: "
    "allocations and hash-table lookups spread over a heap of about 1 GB), the cuts of every round, the "
    "recovery lines), besides starting the interpreter and importing the checker and the protocol "
    "catalogue; the command leaves the trace to the operating system instead of freeing it "
    "(`traces/process_exit.py`). Each part is CPython allocating and filling millions of objects, and "
    "the system time of the page faults of a 1 GB heap grows with the machine's load more than the "
    "validation's; well below 2x needs the trace kept in columns (one array per field) with the analyses "
    "written over them, not done.",
    "validate": "validation costs {v_us:.2f} µs of CPU per event here, the bare parse {o_us:.2f} µs: besides "
    "the parse, per event the dispatch on its type and key order and one generated schema check, one "
    "dictionary lookup per id, the per-process and per-message tables, the proof that no key is written "
    "twice (one re-serialization of the line by orjson, compared with it: about 0.4 µs), and per 256 KB "
    "read the split into lines and the scan for integers too long for 64 bits. The ratio sits at 4x within "
    "the noise of this shared machine (the bare parse is short and cache-friendly, and is hit less by the load).",
}


def measure(argv: list[str]) -> dict:
    """Run ``argv`` as a child process: its CPU time (user + system), wall time, peak RSS and
    exit code, from the resource usage the kernel reports when the child is reaped."""
    t0 = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t0
    child.returncode = os.waitstatus_to_exitcode(status)
    return {
        "cpu": usage.ru_utime + usage.ru_stime,
        "wall": wall,
        "peak_mb": usage.ru_maxrss / 1024,
        "exit": child.returncode,
    }


def cli(*args: str) -> list[str]:
    """The ``snapcheck`` command with these arguments, run as its console script runs it."""
    return [sys.executable, "-m", "snapcheck", *args]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=2_000_000)
    ap.add_argument("--wide", type=int, default=100_000)
    ap.add_argument("--no-write", action="store_true", help="print only; do not update docs/benchmarks.md")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        big, ring = Path(tmp) / "big.jsonl", Path(tmp) / "wide.jsonl"
        n = generate(big, args.events)
        wide(ring, args.wide)
        size_mb = big.stat().st_size / 2**20
        load = os.getloadavg()[0]
        tasks = {
            "orjson": [
                sys.executable,
                "-c",
                f"import orjson\nwith open({str(big)!r}, 'rb') as f:\n    for line in f:\n        orjson.loads(line)",
            ],
            "validate-trace": cli("validate-trace", str(big)),
            "check": cli("check", str(big)),
            "replay --until END": cli("replay", str(big), "--until", str(n), "--json"),
            "render": cli("render", str(big), "-o", str(Path(tmp) / "big.svg")),
            f"render ({args.wide:,} processes)": cli("render", str(ring), "-o", str(Path(tmp) / "wide.svg")),
        }
        rows = {}
        for name, argv in tasks.items():
            rows[name] = r = measure(argv)
            print(
                f"{name:32s} cpu {r['cpu']:7.1f} s  wall {r['wall']:7.1f} s  peak {r['peak_mb']:6.0f} MB  "
                f"exit {r['exit']}",
                flush=True,
            )
        out = subprocess.run(
            [sys.executable, "-c", _PARTS.format(path=str(big))], capture_output=True, text=True, check=True
        )
        parts = json.loads(out.stdout.strip().splitlines()[-1])
        print("check, by part (CPU s):", ", ".join(f"{k} {v:.2f}" for k, v in parts.items()), flush=True)
        load_after = os.getloadavg()[0]
    v, c, o = rows["validate-trace"], rows["check"], rows["orjson"]
    render_wide = rows[f"render ({args.wide:,} processes)"]
    targets = [
        ("render ≤ 60 s", rows["render"]["cpu"], rows["render"]["cpu"] <= 60, None),
        (f"render of {args.wide:,} processes ≤ 60 s", render_wide["cpu"], render_wide["cpu"] <= 60, None),
        (
            "replay to the end ≤ 20 s",
            rows["replay --until END"]["cpu"],
            rows["replay --until END"]["cpu"] <= 20,
            "replay",
        ),
        ("check peak ≤ 1 GB", c["peak_mb"], c["peak_mb"] <= 1024, "check-memory"),
        ("check ≤ 2 × validate-trace", c["cpu"] / v["cpu"], c["cpu"] <= 2 * v["cpu"], "check-time"),
        ("validate-trace ≤ 4 × orjson", v["cpu"] / o["cpu"], v["cpu"] <= 4 * o["cpu"], "validate"),
    ]
    table = ["| task | CPU s | wall s | peak RSS (MB) | exit |", "|---|---|---|---|---|"]
    table += [
        f"| {name} | {r['cpu']:.1f} | {r['wall']:.1f} | {r['peak_mb']:.0f} | {r['exit']} |" for name, r in rows.items()
    ]
    goals = ["| target | measured | met |", "|---|---|---|"]
    goals += [f"| {name} | {value:.2f} | {'yes' if ok else 'no'} |" for name, value, ok, _ in targets]
    pv = parts["validate"]
    ratios = {
        "validate": pv,
        "build": (parts["read"] - pv) / pv,
        "analyses": parts["analyses"] / pv,
        "free": parts["free"] / pv,
        "v_us": v["cpu"] / n * 1e6,
        "o_us": o["cpu"] / n * 1e6,
    }
    missed = [f"* {name}: {WHY_NOT[why].format(**ratios)}" for name, _, ok, why in targets if not ok and why]
    text = (
        f"## Big traces (`benchmarks/bench_big_traces.py`)\n\n"
        f"{n:,} events ({size_mb:.0f} MB of JSONL, `benchmarks/big_trace.py`: the q12 dataflow under "
        f"Chandy-Lamport snapshots, a round every 3,000 ticks) and a header of {args.wide:,} processes; "
        f"{machine()}; load average {load:.1f} at the start, {load_after:.1f} at the end (CPU time is the "
        "robust figure on a shared machine). `render` draws the part `plan_view` picks (2,000 events, 40 "
        "lanes); `replay` and `render` run the checker first, as by default.\n\n"
        + "\n".join(table)
        + "\n\n"
        + "\n".join(goals)
        + (
            f"\n\n`check` by part (one process, CPU s): validation alone {parts['validate']:.1f}, reading "
            f"(validation and building the events) {parts['read']:.1f}, analyses {parts['analyses']:.1f}, "
            f"freeing the trace {parts['free']:.1f} (which the `snapcheck` command leaves to the operating "
            "system: `traces/process_exit.py`)."
        )
        + ("\n\nTargets missed, and why:\n\n" + "\n".join(missed) if missed else "")
    )
    if not args.no_write:
        write_section("big-traces", text)
    print(text)


if __name__ == "__main__":
    main()
