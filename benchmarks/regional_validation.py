"""Regional checkpoints (FLIP-600) under the campaign's random configurations.

* Correct protocols: ``--correct`` runs of each regional protocol exactly as a
  campaign draws them (``spark_validation.configs.draw_config`` under the default
  exploration strategy, base seed ``--seed``), simulated, checked and compared with
  the exactly-once oracle (``spark_validation.runner.run_one``): every verdict must
  be clean, inconclusive (every final round aborted) or a *livelock* — a run the
  regional simulator's livelock guard cut because it made no progress (a region
  restarted at every round), counted apart with the reading it happened in.
* Mutants (``reference.regional.mutants``), drawn blind: ``--mutant-runs`` runs of a
  campaign that selects the mutant alone, under each exploration strategy of
  ``--explore`` (the configuration its correct protocol would get, then the mutant's
  forced ``adjust``; never its demo). A run *catches* the mutant when the checker
  reports one of its ``expect`` kinds; "any" counts any violation or oracle
  difference (a campaign's verdict).

Writes the tables between ``<!-- regional-validation -->`` markers of
docs/protocols.md (``--no-write``: print only; ``--json``: print the figures as JSON).
Usage: ``python benchmarks/regional_validation.py [--correct 1000] [--mutant-runs 300]``
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter
from pathlib import Path

from snapcheck.traces.atomic import write_atomic

DOC = Path(__file__).resolve().parents[1] / "docs" / "protocols.md"
PROTOCOLS = ("regional-aligned", "regional-unaligned")
MARK = "regional-validation"


def correct_runs(spec: str, n: int, seed: int) -> dict:
    """Verdict counts of ``n`` campaign runs of ``spec`` and the first failing commands."""
    from snapcheck.reference import simulate
    from snapcheck.spark_validation.configs import Selection, draw_config
    from snapcheck.spark_validation.runner import run_one

    sel = Selection.of(protocols=(spec,), mutants=())
    verdicts: Counter = Counter()
    livelocks: Counter = Counter()
    failing, stuck = [], []
    for i in range(n):
        cfg = draw_config(i, seed + i, sel)
        row = run_one(i, seed + i, cfg)
        if row["verdict"] == "violation" and simulate(cfg, record=False).metrics.get("truncated"):
            verdicts["livelock"] += 1  # cut by the livelock guard: no progress, not a wrong state
            livelocks[cfg.recovery] += 1
            stuck.append(row["command"])
            continue
        verdicts[row["verdict"]] += 1
        if row["verdict"] in ("violation", "error"):
            failing.append(row["command"])
    return {
        "protocol": spec,
        "runs": n,
        "verdicts": dict(verdicts),
        "livelocks": dict(livelocks),
        "failing": failing[:5],
        "livelocked": stuck[:3],
    }


def mutant_runs(name: str, n: int, seed: int, explore: str) -> dict:
    """How often ``n`` blind campaign runs of mutant ``name`` under ``explore`` catch it."""
    from snapcheck.reference.catalogue import resolve
    from snapcheck.spark_validation.configs import Selection, draw_config
    from snapcheck.spark_validation.runner import run_one

    m = resolve(name, "mutant")
    sel = Selection(protocols=(), mutants=(name,), explore=explore)
    caught = violating = 0
    seen: Counter = Counter()
    first = None
    for i in range(n):
        row = run_one(i, seed + i, draw_config(i, seed + i, sel))
        kinds = set(filter(None, row["violation_kinds"].split(",")))
        seen.update(kinds)
        violating += row["verdict"] == "violation"
        if kinds & set(m.expect):
            caught += 1
            first = first if first is not None else row["command"]
    return {
        "mutant": name,
        "explore": explore,
        "runs": n,
        "caught": caught,
        "violating": violating,
        "kinds": dict(seen.most_common(4)),
        "expect": list(m.expect),
        "first_caught": first,
    }


def tables(correct: list[dict], mutants: list[dict], strategies: tuple[str, ...], cmd: str, seconds: float) -> str:
    lines = [
        "| protocol | campaign runs | clean | inconclusive | livelock (by reading) | violation | error |",
        "|---|---:|---:|---:|---|---:|---:|",
    ]
    for c in correct:
        v = c["verdicts"]
        by = ", ".join(f"{k}: {n}" for k, n in sorted(c["livelocks"].items()))
        lines.append(
            f"| `{c['protocol']}` | {c['runs']} | {v.get('clean', 0)} | {v.get('inconclusive', 0)} | "
            f"{v.get('livelock', 0)}{f' ({by})' if by else ''} | {v.get('violation', 0)} | "
            f"{v.get('error', 0)} |"
        )
    lines += [
        "",
        "| mutant | expected kinds | "
        + " | ".join(f"expected kind (any failure), {s}" for s in strategies)
        + " | kinds reported ("
        + strategies[-1]
        + ") |",
        "|---|---|" + "---:|" * len(strategies) + "---|",
    ]
    by = {(r["mutant"], r["explore"]): r for r in mutants}
    for name in dict.fromkeys(r["mutant"] for r in mutants):
        cells = []
        for s in strategies:
            r = by[(name, s)]
            cells.append(
                f"{r['caught']}/{r['runs']} ({100 * r['caught'] / r['runs']:.0f} %; "
                f"any {100 * r['violating'] / r['runs']:.0f} %)"
            )
        last = by[(name, strategies[-1])]
        kinds = ", ".join(f"{k} ({v})" for k, v in last["kinds"].items())
        lines.append(f"| `{name}` | {', '.join(last['expect'])} | " + " | ".join(cells) + f" | {kinds} |")
    lines += ["", f"(`{cmd}`, {seconds:.0f} s.)"]
    return "\n".join(lines)


def write(table: str, path: Path = DOC) -> None:
    text = path.read_text()
    block = f"<!-- {MARK} -->\n{table}\n<!-- /{MARK} -->"
    text, n = re.subn(rf"<!-- {MARK} -->.*?<!-- /{MARK} -->", lambda _: block, text, flags=re.DOTALL)
    if n != 1:
        raise SystemExit(f"{path}: no {MARK} markers")
    write_atomic(path, text)


def main(argv=None) -> int:
    from snapcheck.reference.catalogue import mutants_of

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--correct", type=int, default=1000, help="campaign runs per correct protocol")
    ap.add_argument("--mutant-runs", type=int, default=300, help="blind campaign runs per mutant and strategy")
    ap.add_argument("--seed", type=int, default=7000, help="base seed")
    ap.add_argument("--explore", default="uniform,targeted", help="exploration strategies (comma-separated)")
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs/protocols.md alone")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON (implies --no-write)")
    args = ap.parse_args(argv)
    strategies = tuple(s for s in args.explore.split(",") if s)
    t0 = time.time()
    correct = [correct_runs(p, args.correct, args.seed) for p in PROTOCOLS]
    mutants = [
        mutant_runs(m.name, args.mutant_runs, args.seed, s)
        for p in PROTOCOLS
        for m in mutants_of(p)
        for s in strategies
    ]
    if args.json:
        print(json.dumps({"correct": correct, "mutants": mutants}, indent=1))
    else:
        cmd = (
            f"python benchmarks/regional_validation.py --correct {args.correct} --mutant-runs "
            f"{args.mutant_runs} --seed {args.seed} --explore {','.join(strategies)}"
        )
        table = tables(correct, mutants, strategies, cmd, time.time() - t0)
        print(table)
        if not args.no_write:
            write(table)
    return 1 if any(c["verdicts"].get("violation") or c["verdicts"].get("error") for c in correct) else 0


if __name__ == "__main__":
    raise SystemExit(main())
