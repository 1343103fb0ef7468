"""TLA+ conformance at scale: ``snapcheck validate --conform 1`` on every protocol the
trace specifications cover and every mutant of them, in resumable chunks
(``benchmarks/chunks.py``: chunk ``c`` of ``--chunk`` runs has base seed ``--seed + c *
chunk``). Each finished chunk is kept in the ledger ``benchmarks/ledger/conform-at-scale/``
(one small JSON file per chunk, committed with the code), so a campaign of 100,000 runs
can be spread over sittings and machines; a chunk in the ledger is not run again. Then
every ledger entry is added up — runs, what the specifications said (accepted, rejected,
outside and why, errors), mutant runs caught by a REJECT, failing runs of correct
protocols, and every disagreement between a specification and the checker, grouped by
what disagreed — and written into the section ``conform-at-scale`` of docs/benchmarks.md,
with the commits the chunks ran on.

    python benchmarks/conform_at_scale.py --chunks 40 --chunk 2500 --out DIR   # 100,000 runs
    python benchmarks/conform_at_scale.py --collect-only                        # the ledger only
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

LEDGER = Path(__file__).resolve().parent / "ledger" / "conform-at-scale"
COUNTS = ("chosen", "conformed", "accepted", "rejected", "outside", "no_spec", "no_java", "no_trace", "errors")
KIND = ("subject", "spec", "spec_verdict", "checker_verdict")  # what a disagreement is grouped by


def entry(summary: dict, ran_on: str) -> dict:
    """The ledger's record of one ``--conform`` campaign summary: its totals, its failing
    runs' commands, its disagreements grouped by what disagreed (runs and one command each).

    >>> s = {"base_seed": 5, "runs": 2, "seconds": 1.5, "master": "local[2]", "mutants": [],
    ...      "conformance": [dict.fromkeys(COUNTS, 1) | {"outside_reasons": {"finish": 1},
    ...      "error_examples": []}], "failing_runs": [], "disagreements": [
    ...      {"protocol": "p", "mutant": "m", "spec": "S", "spec_verdict": "REJECT",
    ...       "checker_verdict": "clean", "command": "c1"},
    ...      {"protocol": "p", "mutant": "m", "spec": "S", "spec_verdict": "REJECT",
    ...       "checker_verdict": "clean", "command": "c2"}]}
    >>> e = entry(s, "abc1234")
    >>> e["seeds"], e["accepted"], e["disagreements"]
    ([5, 6], 1, [{'subject': 'm', 'spec': 'S', 'spec_verdict': 'REJECT', 'checker_verdict': 'clean', 'runs': 2, 'example': 'c1'}])
    """
    e: dict = {"seeds": [summary["base_seed"], summary["base_seed"] + summary["runs"] - 1], "commit": ran_on}
    e.update(runs=summary["runs"], seconds=round(summary["seconds"], 1), master=summary["master"])
    e.update({k: sum(row[k] for row in summary["conformance"]) for k in COUNTS})
    e["outside_reasons"] = dict(sum((Counter(row["outside_reasons"]) for row in summary["conformance"]), Counter()))
    e["error_examples"] = [x for row in summary["conformance"] for x in row["error_examples"]]
    e["mutant_runs"] = sum(m["runs"] for m in summary["mutants"])
    e["caught_by_spec"] = sum(m["caught_by_spec"] for m in summary["mutants"])
    e["failing"] = [f["command"] for f in summary["failing_runs"]]
    groups: dict[tuple, dict] = {}
    for d in summary["disagreements"]:
        kind = (d["mutant"] or d["protocol"], d["spec"], d["spec_verdict"], d["checker_verdict"])
        g = groups.setdefault(kind, dict(zip(KIND, kind, strict=True)) | {"runs": 0, "example": d["command"]})
        g["runs"] += 1
    e["disagreements"] = list(groups.values())
    return e


def keep(out: Path) -> None:
    """Put every finished ``--conform`` campaign in ``out`` into the ledger (those not there yet)."""
    LEDGER.mkdir(parents=True, exist_ok=True)
    for path in sorted(out.glob("*-*/summary.json")):
        s = json.loads(path.read_text())
        target = LEDGER / f"seed-{s['base_seed']}.json"
        if not s.get("conform_fraction") or target.exists():
            continue
        stamp = path.parent / "commit.txt"
        ran_on = stamp.read_text().strip() if stamp.exists() else "unknown"
        target.write_text(json.dumps(entry(s, ran_on), indent=1) + "\n")


def kept_seeds(ledger: Path = LEDGER) -> list[tuple[int, int]]:
    """The seed range (first, last) of every campaign in the ledger."""
    return [tuple(json.loads(p.read_text())["seeds"]) for p in ledger.glob("*.json")]


def covered(first: int, size: int, kept: list[tuple[int, int]]) -> bool:
    """Whether the chunk of seeds ``first … first + size - 1`` is in the ledger (``kept``:
    its entries' seed ranges). A chunk that only partly overlaps them is refused: run
    again, its seeds would count twice, and skipped, some would never run.

    >>> covered(10, 5, [(0, 19)]), covered(20, 5, [(0, 19)])
    (True, False)
    >>> covered(15, 10, [(0, 19)])
    Traceback (most recent call last):
    SystemExit: the chunk of seeds 15…24 overlaps the ledger's 0…19: choose --seed and --chunk so that every chunk is wholly in it or wholly outside
    """
    last = first + size - 1
    if any(a <= first and last <= b for a, b in kept):
        return True
    overlap = [(a, b) for a, b in kept if a <= last and first <= b]
    if overlap:
        raise SystemExit(
            f"the chunk of seeds {first:,}…{last:,} overlaps the ledger's {seed_ranges(overlap)}: "
            "choose --seed and --chunk so that every chunk is wholly in it or wholly outside"
        )
    return False


def collect(ledger: Path = LEDGER) -> dict:
    """Every entry of the ledger, added up."""
    a: dict = {"chunks": 0, "runs": 0, "seconds": 0.0, "seeds": [], "caught_by_spec": 0, "mutant_runs": 0}
    a.update({k: 0 for k in COUNTS})
    a.update(outside_reasons=Counter(), failing=[], disagreements=Counter(), examples={}, errors_seen=[])
    a.update(masters=set(), commits=Counter(), notes=[])
    for path in sorted(ledger.glob("*.json")):
        e = json.loads(path.read_text())
        a["chunks"] += e.get("chunks", 1)
        if e.get("note"):
            a["notes"].append(f"Seeds {seed_ranges([tuple(e['seeds'])])}: {e['note']}")
        a["seeds"].append(tuple(e["seeds"]))
        a["masters"].add(e["master"])
        a["commits"][e["commit"]] += e["runs"]
        for k in ("runs", "seconds", "caught_by_spec", "mutant_runs", *COUNTS):
            a[k] += e[k]
        a["outside_reasons"].update(e["outside_reasons"])
        a["errors_seen"] += e["error_examples"]
        a["failing"] += e["failing"]
        for d in e["disagreements"]:
            kind = tuple(d[k] for k in KIND)
            a["disagreements"][kind] += d["runs"]
            a["examples"].setdefault(kind, d["example"])
    return a


def report(a: dict) -> str:
    """The docs/benchmarks.md section of the added-up ledger."""
    kinds, example = a["disagreements"], a["examples"]
    commits = ", ".join(f"{c} ({n:,} runs)" for c, n in sorted(a["commits"].items()))
    outside = ", ".join(f"{k} {v:,}" for k, v in a["outside_reasons"].most_common()) or "none"
    text = [
        "## TLA+ conformance at scale (`benchmarks/conform_at_scale.py`)",
        "",
        f"{machine()}; `snapcheck validate --conform 1 -p {PROTOCOLS} -w {WORKLOADS}` (their mutants included, "
        f"the default exploration strategy) on {', '.join(sorted(a['masters']))}, in {a['chunks']} campaigns "
        f"(seeds {seed_ranges(a['seeds'])}), on the code of commits {commits}; campaign time is the sum of "
        "the campaigns' own wall-clock times, on a machine shared with other work.",
        "",
        "| runs | conformed | accepted | rejected | outside | errors | mutant runs | caught by a REJECT | "
        "failing runs of correct protocols | disagreements | campaign time | runs/s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {a['runs']:,} | {a['conformed']:,} | {a['accepted']:,} | {a['rejected']:,} | {a['outside']:,} | "
        f"{a['errors'] + a['no_java'] + a['no_trace'] + a['no_spec']:,} | {a['mutant_runs']:,} | "
        f"{a['caught_by_spec']:,} | {len(a['failing']):,} | {sum(kinds.values()):,} | "
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
            text.append(f"| `{key[0]}` | {key[1]} | {key[2]} | {key[3]} | {n:,} | `{example[key]}` |")
    if a["failing"]:
        text += ["", "Failing runs of correct protocols (reproduction commands):", ""]
        text += [f"    {c}" for c in a["failing"][:20]]
    if a["errors_seen"]:
        text += ["", "Errors (first ones):", "", *[f"    {e}" for e in a["errors_seen"][:10]]]
    for note in a["notes"]:
        text += ["", note]
    return "\n".join(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chunks", type=int, default=40, help="campaigns")
    ap.add_argument("--chunk", type=int, default=2_500, help="runs per campaign")
    ap.add_argument("--seed", type=int, default=7_000_000, help="base seed of the first campaign")
    ap.add_argument("--out", type=Path, default=Path("conform-at-scale"), help="the campaigns' own directories")
    ap.add_argument("--master", default=f"local[{os.cpu_count() or 1}]")
    ap.add_argument("--collect-only", action="store_true", help="run nothing: keep what --out holds, add up the ledger")
    ap.add_argument("--no-doc", action="store_true", help="print only; do not write docs/benchmarks.md")
    ap.add_argument("--note", default="", help="a paragraph to end the section with (e.g. what became of its findings)")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    if not args.collect_only:
        options = ["--conform", "1", "-p", PROTOCOLS, "-w", WORKLOADS, "--master", args.master, "--no-progress"]
        keep(args.out)
        kept = kept_seeds()
        run_chunks(
            "conform",
            options,
            args.chunks,
            args.chunk,
            args.out,
            first=args.seed,
            done=lambda s: covered(s, args.chunk, kept),
        )
    keep(args.out)
    a = collect()
    if not a["chunks"]:
        raise SystemExit(f"no --conform campaign in the ledger {LEDGER}")
    text = report(a) + (f"\n\n{args.note}" if args.note else "")
    print(text)
    print(f"({time.perf_counter() - start:.0f} s)")
    if not args.no_doc:
        write_section("conform-at-scale", text)
    return 1 if a["failing"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
