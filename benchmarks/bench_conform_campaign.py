"""Cost of ``snapcheck validate --conform``: the same campaign with and without TLA+
conformance (runs per second, CPU, what the specifications said).

    python benchmarks/bench_conform_campaign.py --runs 400
    python benchmarks/bench_conform_campaign.py --runs 800 --reuse-conform OUT   # a campaign run before

Both campaigns run the protocols the trace specifications cover and all their mutants
on the same seeds (``--master``, default local[2]); ``--reuse-conform`` reads the
summary.json of a ``--conform 1`` campaign already run with the same options instead of
running it again. ``--cold`` also runs the ``--conform 1`` campaign with every TLC job in
a JVM of its own (``SNAPCHECK_TLC_SERVER=0``, no warm TLC servers), and compares the
two campaigns' conformance verdicts run by run: they must be equal. Wall-clock time only (with the Spark session's start). Writes the section ``conform-campaign``
of docs/benchmarks.md.
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

SNAPCHECK = [str(Path(sys.executable).parent / "snapcheck")]
PROTOCOLS = (
    "chandy-lamport,abs-aligned,abs-cyclic,unaligned,aligned-timeout,unc,hmnr,hmnr-clock,bcs,liverobin,regional-aligned"
)
WORKLOADS = "q1,q3,q8,q12,diamond,reachability"


def campaign(args, out: Path, conform: bool, env: dict[str, str] | None = None) -> dict:
    """Run one campaign; its summary and wall-clock seconds (the CPU time of Spark's
    workers and of the TLC JVMs is not visible to this process: they are not its waited
    children)."""
    cmd = [
        *SNAPCHECK,
        "validate",
        "-n",
        str(args.runs),
        "-p",
        args.protocols,
        "-w",
        args.workloads,
        "-s",
        str(args.seed),
        "--master",
        args.master,
        "--no-progress",
        "-o",
        str(out),
    ]
    if conform:
        cmd += ["--conform", "1"]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    summary = json.loads((out / "summary.json").read_text())
    return {"summary": summary, "wall": wall, "out": out}


# A REJECT's detail names the first event no behaviour matches (FILE:LINE): compared too.
REUSED = " (`--reuse-conform`: the campaign's own time, without the Spark session's start)"
VERDICT_COLUMNS = (
    "seed, conform, conform_spec, conform_outside, disagreement, "
    "case when conform = 'reject' then conform_detail end as rejected_at"
)


def differing_verdicts(a: Path, b: Path) -> list[tuple]:
    """Runs whose conformance verdict differs between two campaigns' result tables."""
    import duckdb

    def rows(out: Path) -> set[tuple]:
        return set(duckdb.sql(f"select {VERDICT_COLUMNS} from read_parquet('{out}/results/*.parquet')").fetchall())

    return sorted(rows(a) ^ rows(b), key=lambda r: (r[0], str(r)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=400)
    ap.add_argument("--seed", type=int, default=20000)
    ap.add_argument("--protocols", default=PROTOCOLS)
    ap.add_argument("--workloads", default=WORKLOADS)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--reuse-conform", help="output directory of a --conform 1 campaign run with these options")
    ap.add_argument("--cold", action="store_true", help="also run --conform 1 without warm TLC servers, and compare")
    ap.add_argument("--no-write", action="store_true", help="print only, do not rewrite docs/benchmarks.md")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="bench-conform-campaign-"))
    plain = campaign(args, tmp / "plain", conform=False)
    if args.reuse_conform:
        s = json.loads((Path(args.reuse_conform) / "summary.json").read_text())
        if (s["runs"], s["base_seed"]) != (args.runs, args.seed):
            raise SystemExit(f"{args.reuse_conform}: {s['runs']} runs from seed {s['base_seed']}, not these options")
        conf = {"summary": s, "wall": s["seconds"], "out": Path(args.reuse_conform)}
    else:
        conf = campaign(args, tmp / "conform", conform=True)
    cold = campaign(args, tmp / "cold", conform=True, env={"SNAPCHECK_TLC_SERVER": "0"}) if args.cold else None
    c = conf["summary"]
    totals = {
        k: sum(x[k] for x in c["conformance"])
        for k in ("chosen", "conformed", "accepted", "rejected", "outside", "no_spec", "no_java", "errors")
    }
    outside: dict[str, int] = {}
    for x in c["conformance"]:
        for k, v in x["outside_reasons"].items():
            outside[k] = outside.get(k, 0) + v
    caught_by_spec = sum(m.get("caught_by_spec", 0) for m in c["mutants"])
    n = args.runs

    lines = [
        "## TLA+ conformance in the campaigns (`benchmarks/bench_conform_campaign.py`)",
        "",
        f"{machine()}; load average at the start {load:.1f} on {os.cpu_count()} cores (shared with other jobs). "
        f"{n:,} runs (seeds {args.seed}…{args.seed + n - 1}) of {args.protocols} and every mutant of them, "
        f"workloads {args.workloads}, master {args.master}.",
        "",
        "| campaign | wall | runs/s |",
        "|---|---:|---:|",
        f"| without `--conform` | {plain['wall']:,.1f} s | {n / plain['wall']:,.2f} |",
        f"| `--conform 1`{REUSED if args.reuse_conform else ''} | {conf['wall']:,.1f} s | {n / conf['wall']:,.2f} |",
    ]
    if cold is not None:
        differ = differing_verdicts(conf["out"], cold["out"])
        lines += [
            f"| `--conform 1`, every TLC job in a JVM of its own (`SNAPCHECK_TLC_SERVER=0`) | {cold['wall']:,.1f} s | "
            f"{n / cold['wall']:,.2f} |",
            "",
            f"With warm TLC servers against without: {cold['wall'] / conf['wall']:.2f}x faster; runs whose "
            f"conformance verdict differs between the two: {len(differ):,}"
            + (f" (seeds {', '.join(str(r[0]) for r in differ[:20])})" if differ else "")
            + ".",
        ]
    lines += [
        "",
        f"Conformance: {totals['chosen']:,} runs chosen, {totals['conformed']:,} conformed "
        f"({totals['accepted']:,} accepted, {totals['rejected']:,} rejected), {totals['outside']:,} outside the "
        f"specification ({', '.join(f'{k} {v:,}' for k, v in sorted(outside.items())) or '-'}), "
        f"{totals['no_spec']:,} without one, {totals['no_java']:,} without Java, {totals['errors']:,} errors; "
        f"mutant runs caught by a REJECT: {caught_by_spec:,}; disagreements with the checker: "
        f"{len(c['disagreements']):,}; failing runs of correct protocols: {len(c['failing_runs']):,}.",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        write_section("conform-campaign", text)


if __name__ == "__main__":
    main()
