"""How fast does a blind campaign find each mutant, under each exploration strategy?

For every mutant of the catalogue, every strategy of ``spark_validation.strategies``
and each of ``--campaigns`` independent campaign seeds: draw the mutant's runs exactly
as a campaign does (``configs.draw_config`` with the mutant alone selected: blind, its
base protocol's random configurations), simulate and check them one after another
(``runner.run_one``, with the exactly-once oracle), and stop at the first run that
catches it (a violation; a run the kit raised an error on is no catch: the benchmark
stops and names it), or after ``--cap`` runs (then it counts as ``>cap``). Reported per mutant
and strategy: the median and worst number of runs to the first catch, the median the
catch rate per run pooled over the campaigns implies (``pooled_median``) and the median
CPU seconds; per strategy: runs per second, how many mutants have a median <= 10,
and for the rarest quarter of mutants under ``uniform`` the speed-up of each strategy:
the ratio of the sums of their medians and the geometric mean of the per-mutant ratios
of medians, each mutant's ratio listed, censored medians (``>cap``) said as such. With ``--correct N``: N runs of the correct protocols under
each strategy, which must not fail (a targeted fault must not invent violations).

    python benchmarks/bench_hunt.py                     # 20 campaigns, cap 1000, writes docs/benchmarks.md
    python benchmarks/bench_hunt.py --campaigns 5 --mutants aligned-no-cancel,abs-cyclic-as-printed --no-doc
"""

from __future__ import annotations

import argparse
import math
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
        if row["verdict"] == "error":  # the kit failed: no catch, and a defect to fix before measuring
            raise RuntimeError(f"the kit raised on a run of {mutant}: {row['error']}\n  {row['command']}")
        if row["verdict"] == "violation":
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


def pooled_median(results: list[int | None], cap: int) -> int | None:
    """The median runs to the first catch implied by the catch rate per run pooled over
    every campaign of a mutant and strategy (``None``: no campaign caught it).

    A campaign's runs are independent draws (each run's configuration is a function of
    its own seed), so the runs to the first catch are geometric with the per-run catch
    probability ``p``, whose maximum-likelihood estimate from campaigns stopped at their
    first catch or censored at ``cap`` runs is the number of campaigns that caught it
    over the number of runs of all of them. The geometric distribution's median is the
    least ``k`` with ``1 - (1 - p)^k >= 1/2``. It estimates the same median as the
    sample median of the campaigns, with less noise: it uses every run, not the middle
    order statistics only.

    >>> pooled_median([1, 1, 1], 100), pooled_median([10, 10, None], 100), pooled_median([None], 100)
    (1, 42, None)
    """
    caught = sum(r is not None for r in results)
    if not caught:
        return None
    p = caught / sum(cap if r is None else r for r in results)
    return 1 if p >= 1 else math.ceil(math.log(0.5) / math.log1p(-p) - 1e-9)


def _speedup(theirs: float, ours: float, cap: int) -> str:
    """``theirs / ours`` with its censoring said: a median above ``cap`` (counted as
    ``cap + 1``) makes the ratio a lower bound when it is ``theirs`` and an upper bound
    when it is ``ours`` (unknown when both are).

    >>> _speedup(101, 6.5, 100), _speedup(8, 9, 100), _speedup(20, 101, 100), _speedup(101, 101, 100)
    ('>=15.5x', '0.89x', '<=0.20x', '?')
    """
    lower, upper = theirs > cap, ours > cap
    if lower and upper:
        return "?"
    return f"{'>=' if lower else '<=' if upper else ''}{theirs / ours:.{1 if theirs >= ours else 2}f}x"


def _geomean_speedup(pairs: list[tuple[float, float]], cap: int) -> str:
    """The geometric mean of the per-mutant speed-ups ``theirs / ours`` over ``pairs``
    of medians, censored ones counted as ``cap + 1``, with how many of the ratios are
    lower or upper bounds.

    >>> _geomean_speedup([(101, 6.5), (8, 9), (4, 1)], 100)
    '3.8x (1 of 3 a lower bound)'
    >>> _geomean_speedup([(8, 2), (2, 8)], 100)
    '1.0x'
    """
    ratios = [theirs / ours for theirs, ours in pairs]
    notes = []
    lower = sum(theirs > cap and ours <= cap for theirs, ours in pairs)
    upper = sum(ours > cap and theirs <= cap for theirs, ours in pairs)
    both = sum(ours > cap and theirs > cap for theirs, ours in pairs)
    if lower:
        notes.append(f"{lower} of {len(pairs)} a lower bound")
    if upper:
        notes.append(f"{upper} of {len(pairs)} an upper bound")
    if both:
        notes.append(f"{both} of {len(pairs)} unknown, counted as 1")
    return f"{statistics.geometric_mean(ratios):.1f}x" + (f" ({'; '.join(notes)})" if notes else "")


def main(argv: list[str] | None = None) -> int:
    from snapcheck.reference.catalogue import MUTANTS
    from snapcheck.spark_validation.configs import DEFAULT_STRATEGY
    from snapcheck.spark_validation.strategies import STRATEGIES

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--campaigns", type=int, default=20)
    ap.add_argument(
        "--cap",
        type=int,
        default=1000,
        help="runs per campaign before giving up on a mutant (high: a censored median"
        " under uniform would understate every speed-up over it)",
    )
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
                "pooled": pooled_median([r for r, _ in found[(m, s)]], args.cap) or args.cap + 1,
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
        "| mutant | " + " | ".join(f"{s} median (worst; pooled)" for s in strategies) + " |",
        "|---|" + "---:|" * len(strategies),
    ]
    rows = [
        f"| `{m}` | "
        + " | ".join(
            f"{fmt(table[(m, s)]['median'])} ({fmt(table[(m, s)]['worst'])}; {fmt(table[(m, s)]['pooled'])})"
            for s in strategies
        )
        + " |"
        for m in mutants
    ]
    summary = [
        "| strategy | runs/s (CPU) | mutants with median <= 10 | worst median | "
        "rarest quarter: sum of medians / uniform's | rarest quarter: geometric mean speed-up | "
        "pooled: mutants with median <= 10 | pooled: worst median | pooled: rarest quarter, sum / uniform's |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in strategies:
        cells = []
        for key in ("median", "pooled"):
            good = sum(table[(m, s)][key] <= 10 for m in mutants)
            worst = max(table[(m, s)][key] for m in mutants)
            ratio = "-"
            if rarest and s != "uniform":
                ours = sum(table[(m, s)][key] for m in rarest)
                theirs = sum(table[(m, "uniform")][key] for m in rarest)
                ratio = f"{ours / theirs:.3f} ({theirs / ours:.1f}x faster)"
            cells.append((f"{good}/{len(mutants)}", fmt(worst), ratio))
        geo = "-"
        if rarest and s != "uniform":
            geo = _geomean_speedup(
                [(table[(m, "uniform")]["median"], table[(m, s)]["median"]) for m in rarest], args.cap
            )
        (good, worst, ratio), pooled = cells
        summary.append(
            f"| {s}{' (default)' if s == DEFAULT_STRATEGY else ''} | "
            f"{speed[s]:.0f} | {good} | {worst} | {ratio} | {geo} | {' | '.join(pooled)} |"
        )
    quarter = []
    others = [s for s in strategies if s != "uniform"]
    if rarest and others:
        quarter = [
            "",
            f"The rarest quarter ({len(rarest)} mutant(s) with the largest median under `uniform`): per-mutant "
            "speed-up = uniform's median / the strategy's median. A median of `>cap` (more than half the "
            "campaigns found nothing within the cap) is counted as cap+1 in both summary columns, so a speed-up "
            "over a censored uniform median is a lower bound (`>=`), one over a censored median of the strategy an "
            "upper bound (`<=`). The sum-of-medians column is dominated by the largest medians; the geometric "
            "mean weighs every mutant alike. The quarter is chosen by uniform's medians on these same seeds, which "
            "favours the speed-up (a mutant that was unlucky under uniform is more likely chosen).",
            "",
            "| mutant | uniform median | " + " | ".join(f"{s} median | speed-up" for s in others) + " |",
            "|---|---:|" + "---:|---:|" * len(others),
        ]
        for m in rarest:
            u = table[(m, "uniform")]["median"]
            cells = [
                f"{fmt(table[(m, s)]['median'])} | {_speedup(u, table[(m, s)]['median'], args.cap)}" for s in others
            ]
            quarter.append(f"| `{m}` | {fmt(u)} | " + " | ".join(cells) + " |")
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
            f"catch, median (worst; pooled). *Pooled* is the median the catch rate per run implies, pooled over "
            f"the {args.campaigns} campaigns (campaigns that caught it / their runs; the runs to a first catch "
            f"are geometric): the same median estimated from every run, less noisy than the sample median of "
            f"{args.campaigns} campaigns, which rests on their middle order statistics. Wall time {wall:.0f} s "
            f"on {args.workers} worker(s).",
            "",
            *summary,
            *quarter,
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
