"""TLA+ conformance at scale: ``snapcheck validate --conform 1`` on every protocol the
trace specifications cover and every mutant of them, in resumable chunks
(``benchmarks/chunks.py``: chunk ``c`` of ``--chunk`` runs has base seed ``--seed + c *
chunk``; a chunk whose ``summary.json`` exists in ``--out`` is not run again). Then every
summary found is added up — runs, what the specifications said (accepted, rejected,
outside and why, errors), mutant runs caught by a REJECT, failing runs of correct
protocols, and every disagreement between a specification and the checker, grouped by
what disagreed — and written into the section ``conform-at-scale`` of
docs/benchmarks.md.

    python benchmarks/conform_at_scale.py --chunks 40 --chunk 2500     # 100,000 runs
    python benchmarks/conform_at_scale.py --collect-only --out conform-at-scale
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_conform_campaign import PROTOCOLS, WORKLOADS  # noqa: E402
from benchdoc import machine, write_section  # noqa: E402
from chunks import run_chunks, seed_ranges  # noqa: E402

COUNTS = ("chosen", "conformed", "accepted", "rejected", "outside", "no_spec", "no_java", "no_trace", "errors")


def collect(out: Path) -> dict:
    """Every ``--conform`` campaign summary in ``out``, added up."""
    a: dict = {"chunks": 0, "runs": 0, "seconds": 0.0, "seeds": [], "caught_by_spec": 0, "mutant_runs": 0}
    a.update({k: 0 for k in COUNTS})
    a.update(outside_reasons=Counter(), failing=[], disagreements=[], errors_seen=[], masters=set())
    for path in sorted(out.glob("*-*/summary.json")):
        s = json.loads(path.read_text())
        if not s.get("conform_fraction"):
            continue
        a["chunks"] += 1
        a["runs"] += s["runs"]
        a["seconds"] += s["seconds"]
        a["seeds"].append((s["base_seed"], s["base_seed"] + s["runs"] - 1))
        a["masters"].add(s["master"])
        for row in s["conformance"]:
            for k in COUNTS:
                a[k] += row[k]
            a["outside_reasons"].update(row["outside_reasons"])
            a["errors_seen"] += row["error_examples"]
        a["caught_by_spec"] += sum(m["caught_by_spec"] for m in s["mutants"])
        a["mutant_runs"] += sum(m["runs"] for m in s["mutants"])
        a["failing"] += [f["command"] for f in s["failing_runs"]]
        a["disagreements"] += s["disagreements"]
    return a


def report(a: dict) -> str:
    """The docs/benchmarks.md section of the added-up summaries."""
    kinds = Counter(
        (d["mutant"] or d["protocol"], d["spec"], d["spec_verdict"], d["checker_verdict"]) for d in a["disagreements"]
    )
    example = {}
    for d in a["disagreements"]:
        example.setdefault((d["mutant"] or d["protocol"], d["spec"], d["spec_verdict"], d["checker_verdict"]), d)
    outside = ", ".join(f"{k} {v:,}" for k, v in a["outside_reasons"].most_common()) or "none"
    text = [
        "## TLA+ conformance at scale (`benchmarks/conform_at_scale.py`)",
        "",
        f"{machine()}; `snapcheck validate --conform 1 -p {PROTOCOLS} -w {WORKLOADS}` (their mutants included, "
        f"the default exploration strategy) on {', '.join(sorted(a['masters']))}, in {a['chunks']} campaigns "
        f"(seeds {seed_ranges(a['seeds'])}); campaign time is the sum of the campaigns' own wall-clock times, "
        "on a machine shared with other work.",
        "",
        "| runs | conformed | accepted | rejected | outside | errors | mutant runs | caught by a REJECT | "
        "failing runs of correct protocols | disagreements | campaign time | runs/s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {a['runs']:,} | {a['conformed']:,} | {a['accepted']:,} | {a['rejected']:,} | {a['outside']:,} | "
        f"{a['errors'] + a['no_java'] + a['no_trace'] + a['no_spec']:,} | {a['mutant_runs']:,} | "
        f"{a['caught_by_spec']:,} | {len(a['failing']):,} | {len(a['disagreements']):,} | "
        f"{a['seconds'] / 3600:.1f} h | {a['runs'] / a['seconds']:.2f} |",
        "",
        f"Outside the specifications (an event they do not model): {outside}.",
    ]
    if kinds:
        text += [
            "",
            "Disagreements, by what disagreed (docs/specs.md explains each kind; one reproduction command each):",
            "",
            "| protocol or mutant | specification | its verdict | the checker's | runs | example |",
            "|---|---|---|---|---:|---|",
        ]
        for key, n in kinds.most_common():
            text.append(f"| `{key[0]}` | {key[1]} | {key[2]} | {key[3]} | {n:,} | `{example[key]['command']}` |")
    if a["failing"]:
        text += ["", "Failing runs of correct protocols (reproduction commands):", ""]
        text += [f"    {c}" for c in a["failing"][:20]]
    if a["errors_seen"]:
        text += ["", "Errors (first ones):", "", *[f"    {e}" for e in a["errors_seen"][:10]]]
    return "\n".join(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chunks", type=int, default=40, help="campaigns")
    ap.add_argument("--chunk", type=int, default=2_500, help="runs per campaign")
    ap.add_argument("--seed", type=int, default=7_000_000, help="base seed of the first campaign")
    ap.add_argument("--out", type=Path, default=Path("conform-at-scale"))
    ap.add_argument("--master", default=f"local[{os.cpu_count() or 1}]")
    ap.add_argument("--collect-only", action="store_true", help="only add up the summaries already in --out")
    ap.add_argument("--no-doc", action="store_true", help="print only; do not write docs/benchmarks.md")
    ap.add_argument("--note", default="", help="a paragraph to end the section with (e.g. what became of its findings)")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    if not args.collect_only:
        options = ["--conform", "1", "-p", PROTOCOLS, "-w", WORKLOADS, "--master", args.master, "--no-progress"]
        run_chunks("conform", options, args.chunks, args.chunk, args.out, first=args.seed)
    a = collect(args.out)
    if not a["chunks"]:
        raise SystemExit(f"no --conform campaign summary in {args.out}")
    text = report(a) + (f"\n\n{args.note}" if args.note else "")
    print(text)
    print(f"({time.perf_counter() - start:.0f} s)")
    if not args.no_doc:
        write_section("conform-at-scale", text)
    return 1 if a["failing"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
