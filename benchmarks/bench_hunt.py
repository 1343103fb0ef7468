"""How fast does a blind campaign find each mutant, under each exploration strategy?

For every mutant of the catalogue, every strategy of ``spark_validation.strategies``
and each of ``--campaigns`` independent campaign seeds: draw the mutant's runs exactly
as a campaign does (``configs.draw_config`` with the mutant alone selected: blind, its
base protocol's random configurations), simulate and check them one after another
(``runner.run_one``, with the exactly-once oracle), and stop at the first run that
catches it, or after ``--cap`` runs (then it counts as ``>cap``). Reported per mutant
and strategy: the median and worst number of runs to the first catch and the median
CPU seconds; per strategy: runs per second, how many mutants have a median <= 10,
and for the rarest quarter of mutants under ``uniform`` the speed-up of each strategy
(ratio of median runs). With ``--correct N``: N runs of the correct protocols under
each strategy, which must not fail (a targeted fault must not invent violations).

    python benchmarks/bench_hunt.py                     # 20 campaigns, cap 200, writes docs/benchmarks.md
    python benchmarks/bench_hunt.py --campaigns 5 --mutants aligned-no-cancel,abs-cyclic-as-printed --no-doc
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchdoc import machine, write_section  # noqa: E402

CAMPAIGN_SEED_STRIDE = 1_000_003  # campaign c draws its runs from seeds c * stride + i


def first_catch(args) -> tuple[str, str, int, int | None, float]:
    """(mutant, strategy, campaign, runs to the first catch or None, CPU seconds)."""
    mutant, strategy, campaign, cap = args
    from snapcheck.spark_validation.configs import Selection, draw_config
    from snapcheck.spark_validation.runner import run_one

    sel = Selection(protocols=(), mutants=(mutant,), explore=strategy)
    base = campaign * CAMPAIGN_SEED_STRIDE
    start = time.process_time()
    for i in range(cap):
        row = run_one(i, base + i, draw_config(i, base + i, sel))
        if row["verdict"] in ("violation", "error"):
            return mutant, strategy, campaign, i + 1, time.process_time() - start
    return mutant, strategy, campaign, None, time.process_time() - start


def correct_runs(args) -> tuple[str, int, int, list, float]:
    """(strategy, runs, failing runs, first failing commands, CPU seconds) of a slice of runs."""
    strategy, a, b = args
    from snapcheck.spark_validation.configs import Selection, draw_config
    from snapcheck.spark_validation.runner import run_one

    sel = Selection.of(mutants=(), explore=strategy)
    start = time.process_time()
    failing = []
    for i in range(a, b):
        row = run_one(i, i, draw_config(i, i, sel))
        if row["verdict"] in ("violation", "error"):
            failing.append(row["command"])
    return strategy, b - a, len(failing), failing[:5], time.process_time() - start


def _med(xs):
    return statistics.median(xs) if xs else None


def main(argv: list[str] | None = None) -> int:
    from snapcheck.reference.catalogue import MUTANTS
    from snapcheck.spark_validation.configs import DEFAULT_STRATEGY
    from snapcheck.spark_validation.strategies import STRATEGIES

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--campaigns", type=int, default=20)
    ap.add_argument("--cap", type=int, default=200, help="runs per campaign before giving up on a mutant")
    ap.add_argument("--mutants", default=None, help="comma-separated (default: every catalogue mutant)")
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--correct", type=int, default=0, help="also run N correct-protocol runs per strategy")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--no-doc", action="store_true", help="print only; do not write docs/benchmarks.md")
    args = ap.parse_args(argv)
    mutants = args.mutants.split(",") if args.mutants else list(MUTANTS)
    strategies = args.strategies.split(",")

    jobs = [(m, s, c, args.cap) for m in mutants for s in strategies for c in range(args.campaigns)]
    found: dict[tuple[str, str], list] = {}
    wall = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        for m, s, _, runs, cpu in pool.map(first_catch, jobs, chunksize=4):
            found.setdefault((m, s), []).append((runs, cpu))
        correct = {}
        if args.correct:
            step = max(1, args.correct // (4 * args.workers))
            slices = [(s, a, min(a + step, args.correct)) for s in strategies for a in range(0, args.correct, step)]
            for s, n, bad, cmds, cpu in pool.map(correct_runs, slices):
                c = correct.setdefault(s, {"runs": 0, "failing": 0, "commands": [], "cpu": 0.0})
                c["runs"] += n
                c["failing"] += bad
                c["commands"] += cmds
                c["cpu"] += cpu
    wall = time.perf_counter() - wall

    def runs_of(m, s):
        return [args.cap + 1 if r is None else r for r, _ in found[(m, s)]]

    table = {}
    for m in mutants:
        for s in strategies:
            rs = runs_of(m, s)
            table[(m, s)] = {
                "median": _med(rs),
                "worst": max(rs),
                "cpu": _med([c for _, c in found[(m, s)]]),
                "escaped": sum(r is None for r, _ in found[(m, s)]),
            }
    speed = {}
    for s in strategies:
        n_runs = sum(r if r is not None else args.cap for m in mutants for r, _ in found[(m, s)])
        cpu = sum(c for m in mutants for _, c in found[(m, s)])
        speed[s] = n_runs / cpu if cpu else None
    rarest = (
        sorted(mutants, key=lambda m: -table[(m, "uniform")]["median"])[: max(1, len(mutants) // 4)]
        if "uniform" in strategies
        else []
    )

    def fmt(v):
        if v is None:
            return "-"
        if v > args.cap:
            return f">{args.cap}"
        return f"{v:g}" if isinstance(v, float) else str(v)

    head = [
        "| mutant | " + " | ".join(f"{s} median (worst)" for s in strategies) + " |",
        "|---|" + "---:|" * len(strategies),
    ]
    rows = [
        f"| `{m}` | "
        + " | ".join(f"{fmt(table[(m, s)]['median'])} ({fmt(table[(m, s)]['worst'])})" for s in strategies)
        + " |"
        for m in mutants
    ]
    summary = [
        "| strategy | runs/s (CPU) | mutants with median <= 10 | worst median | "
        "rarest quarter: median runs / uniform's |",
        "|---|---:|---:|---:|---:|",
    ]
    for s in strategies:
        good = sum(table[(m, s)]["median"] <= 10 for m in mutants)
        worst = max(table[(m, s)]["median"] for m in mutants)
        ratio = "-"
        if rarest and s != "uniform":
            ours = sum(table[(m, s)]["median"] for m in rarest)
            theirs = sum(table[(m, "uniform")]["median"] for m in rarest)
            ratio = f"{ours / theirs:.3f} ({theirs / ours:.1f}x faster)"
        summary.append(
            f"| {s}{' (default)' if s == DEFAULT_STRATEGY else ''} | "
            f"{speed[s]:.0f} | {good}/{len(mutants)} | {fmt(worst)} | {ratio} |"
        )
    corr = []
    if correct:
        corr = [
            "",
            "Correct protocols (every catalogue protocol, campaign distribution, no mutants):",
            "",
            "| strategy | runs | failing runs | runs/s (CPU) |",
            "|---|---:|---:|---:|",
        ]
        for s, c in correct.items():
            corr.append(f"| {s} | {c['runs']:,} | {c['failing']} | {c['runs'] / c['cpu']:.0f} |")
        for s, c in correct.items():
            corr += [f"- {s}: `{cmd}`" for cmd in c["commands"]]
    md = "\n".join(
        [
            "## Hunting mutants blind (`benchmarks/bench_hunt.py`)",
            "",
            f"Machine: {machine()}. {args.campaigns} independent campaign seeds per mutant and strategy; each "
            f"campaign runs the mutant under its base protocol's random configurations (blind) until the first run "
            f"that catches it, at most {args.cap} runs (`>{args.cap}`: none did). Figures are runs to the first "
            f"catch, median (worst). Wall time {wall:.0f} s on {args.workers} worker(s).",
            "",
            *summary,
            "",
            *head,
            *rows,
            *corr,
        ]
    )
    print(md)
    if not args.no_doc:
        write_section("hunt", md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
