"""Does TLA+ trace validation stay linear under every specification?

``benchmarks/bench_conform.py`` measures the snapshot specification on traces up to
1,000,000 events. This script holds every other trace specification to the same
question on a smaller scale: for each protocol, two ``snapcheck simulate -p PROTOCOL
-w q1`` traces, the second with four times the input records of the first, each
validated by ``snapcheck conform -j 2`` (refinement on, segments where the
specification has them) as a user runs it, one trace per command. A specification
whose per-event cost does not grow with the trace validates the larger trace at
about the same events per CPU second (above it, once the command's fixed cost is
spread over more events); a state that grows with the trace (histories, logs,
sequences of every message) makes the larger trace's rate fall, about four times
for a quadratic cost. A run past ``--timeout`` is killed and said as such.

Usage: ``python benchmarks/bench_conform_specs.py [--protocols unc,hmnr] [--timeout 300] [--no-write]``
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_conform import SNAPCHECK, measure, simulate
from benchdoc import machine, write_section

# Input records per source partition of the smaller trace: about 5,000 events each.
RECORDS = {
    "chandy-lamport": 250,
    "abs-aligned": 225,
    "unaligned": 200,
    "aligned-timeout": 225,
    "unc": 250,
    "hmnr": 250,
    "bcs": 250,
    "liverobin": 125,
    "regional-aligned": 60,
}
SCALE = 4


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--protocols", default=",".join(RECORDS))
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds one conform command may take")
    ap.add_argument("--keep", help="directory for the traces (kept; reused when present)")
    ap.add_argument("--no-write", action="store_true", help="print only, do not rewrite docs/benchmarks.md")
    args = ap.parse_args()
    directory = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-conform-specs-"))
    directory.mkdir(parents=True, exist_ok=True)
    lines = [
        "## TLA+ trace validation under every specification (`benchmarks/bench_conform_specs.py`)",
        "",
        (
            f"On {machine()}; load average at the start {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
            f"(shared). Per protocol two traces of `snapcheck simulate -w q1`, the second with {SCALE}x the "
            "input records, each validated by one `snapcheck conform -j 2` command (refinement on); CPU = the "
            f"command and every TLC JVM it started; a command past {args.timeout:.0f} s is killed. The last "
            "column is the larger trace's events per CPU second over the smaller's: about 1 or more when the "
            f"cost per event does not grow with the trace, about 1/{SCALE} when it is quadratic."
        ),
        "",
        "| protocol | events | CPU | events/s per CPU second | events | CPU | events/s per CPU second | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for protocol in args.protocols.split(","):
        cells, rates = [], []
        for records in (RECORDS[protocol], SCALE * RECORDS[protocol]):
            path, events = simulate(records, directory, protocol)
            m = measure([*SNAPCHECK, "conform", "-j", "2", str(path)], timeout=args.timeout)
            if m["exit"] is None:
                cells += [f"{events:,}", f"> {args.timeout:.0f} s (killed)", "-"]
                rates.append(None)
            else:
                verdict = "" if "1 accepted" in m["out"] else f" (exit {m['exit']})"
                cells += [f"{events:,}", f"{m['cpu']:.1f} s{verdict}", f"{events / m['cpu']:,.0f}"]
                rates.append(events / m["cpu"])
            print(protocol, cells[-3:], flush=True)
        ratio = f"{rates[1] / rates[0]:.2f}" if None not in rates else "-"
        lines.append(f"| `{protocol}` | " + " | ".join(cells) + f" | {ratio} |")
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        write_section("conform-specs", text)


if __name__ == "__main__":
    main()
