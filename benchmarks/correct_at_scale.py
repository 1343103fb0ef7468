"""Do targeted faults invent violations? Correct protocols at scale, per exploration strategy.

Runs ``snapcheck validate --mutants none --explore STRATEGY`` (every correct protocol of
the catalogue, the campaign's configuration distribution, crashes and the end-to-end
exactly-once oracle on) in chunks of ``--chunk`` runs, chunk ``c`` with base seed
``c * chunk`` — so the runs of one strategy are seeds ``0 … chunks * chunk - 1`` and each
chunk is one ordinary, resumable campaign whose ``summary.json`` stays in ``--out``. A
chunk whose summary exists is not run again, so an interrupted measurement continues
where it stopped. Then every summary found is added up per strategy — runs, events,
failing runs (their reproduction commands, which must not exist), inconclusive runs (the
oracle could not compare) and campaign seconds — and written into docs/benchmarks.md; a
strategy with no summary in ``--out`` keeps the row the section already has for it (a
strategy whose draws changed is measured again on its own, the others stay).

    python benchmarks/correct_at_scale.py --strategies uniform,targeted --chunks 10     # 100,000 runs each
    python benchmarks/correct_at_scale.py --collect-only --out /tmp/big                  # summaries only
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchdoc import machine, read_section, write_section  # noqa: E402
from chunks import run_chunks, seed_ranges  # noqa: E402


def collect(out: Path) -> dict[str, dict]:
    """Every chunk's summary in ``out``, added up per strategy."""
    per: dict[str, dict] = {}
    for path in sorted(out.glob("*-*/summary.json")):
        s = json.loads(path.read_text())
        if s.get("mutants_selected") or s.get("schema") != "snapcheck-validation-summary":
            continue
        a = per.setdefault(
            s["explore"],
            {"chunks": 0, "runs": 0, "events": 0, "seconds": 0.0, "inconclusive": 0, "failing": [], "seeds": []},
        )
        a["chunks"] += 1
        a["runs"] += s["runs"]
        a["events"] += s["events"]
        a["seconds"] += s["seconds"]
        a["inconclusive"] += sum(p.get("inconclusive", 0) for p in s["protocols"])
        a["failing"] += [f["command"] for f in s["failing_runs"]]
        a["seeds"].append((s["base_seed"], s["base_seed"] + s["runs"] - 1))
        a["master"] = s["master"]
    return per


def report(per: dict[str, dict], kept: dict[str, str] | None = None) -> str:
    """The docs/benchmarks.md section of the summaries, with the rows ``kept`` (strategy ->
    its row as the section had it) of strategies measured earlier."""
    kept = {k: v for k, v in (kept or {}).items() if k not in per}
    rows = [
        "| strategy | runs | seeds | events | failing runs | inconclusive | campaign time | runs/s |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for name, a in sorted(per.items(), key=lambda kv: -kv[1]["runs"]):
        rows.append(
            f"| {name} | {a['runs']:,} | {seed_ranges(a['seeds'])} | {a['events']:,} | {len(a['failing']):,} | "
            f"{a['inconclusive']:,} | {a['seconds'] / 60:.0f} min | {a['runs'] / a['seconds']:.1f} |"
        )
    rows += list(kept.values())
    failing = [c for a in per.values() for c in a["failing"]]
    masters = sorted({a["master"] for a in per.values()})
    sizes = sorted({f"{b - a + 1:,}" for x in per.values() for a, b in x["seeds"]})
    text = [
        "## Correct protocols at scale (`benchmarks/correct_at_scale.py`)",
        "",
        f"{machine()}; `snapcheck validate --mutants none --explore STRATEGY` on {', '.join(masters)}, in "
        f"campaigns of {', '.join(sizes)} runs (every correct catalogue protocol, the campaign's configuration "
        "distribution, crashes and the end-to-end exactly-once oracle on); campaign time is the sum of the "
        "campaigns' own wall-clock times, on a machine shared with other work. A failing run is a violation or error of a correct protocol "
        "(a fault placed by the strategy that invents a violation would be one); an inconclusive run is one "
        "the end-to-end oracle could not compare (its final rounds never completed).",
        "",
        *rows,
    ]
    if kept:
        text += [
            "",
            f"Measured on {date.today().isoformat()}: {', '.join(sorted(per))}; the rows of "
            f"{', '.join(sorted(kept))} are from an earlier measurement (their draws have not changed since).",
        ]
    if failing:
        text += ["", "Failing runs (reproduction commands):", "", *[f"    {c}" for c in failing[:20]]]
    return "\n".join(text)


def _rows(section: str) -> dict[str, str]:
    """The table rows of a section this script wrote, by strategy.

    >>> _rows("| strategy | runs |\\n|---|---:|\\n| uniform | 100,000 |\\n\\nFailing runs")
    {'uniform': '| uniform | 100,000 |'}
    """
    out = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and cells[0] != "strategy":
            out[cells[0]] = line
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--strategies", default="uniform,targeted")
    ap.add_argument("--chunks", type=int, default=10, help="campaigns per strategy")
    ap.add_argument("--chunk", type=int, default=10_000, help="runs per campaign")
    ap.add_argument("--out", type=Path, default=Path("correct-at-scale"))
    ap.add_argument("--master", default=f"local[{os.cpu_count() or 1}]")
    ap.add_argument("--collect-only", action="store_true", help="only add up the summaries already in --out")
    ap.add_argument("--no-doc", action="store_true", help="print only; do not write docs/benchmarks.md")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    if not args.collect_only:
        for s in args.strategies.split(","):
            options = ["--mutants", "none", "--explore", s, "--master", args.master]
            run_chunks(s, options, args.chunks, args.chunk, args.out)
    per = collect(args.out)
    if not per:
        raise SystemExit(f"no campaign summary in {args.out}")
    text = report(per, _rows(read_section("correct-at-scale")))
    print(text)
    print(f"({time.perf_counter() - start:.0f} s)")
    if not args.no_doc:
        write_section("correct-at-scale", text)
    return 1 if any(a["failing"] for a in per.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
