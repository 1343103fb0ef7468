"""Compare checkpoint interval policies in the reference simulator and write the
section ``<!-- results:intervals -->`` … ``<!-- /results:intervals -->`` of
docs/results.md (the rest of the file is left alone), with plots in docs/img/.

    .venv/bin/python scripts/make_interval_results.py [--seeds 5] [--quick]

Setup: aligned ABS on workload q1 (parallelism 2, 400 records per source), a
checkpoint costs ``t_chpt`` = snapshot 150 + barrier 5 ticks per task; crashes of a
random non-source task arrive as a Poisson process of mean ``MTBF`` (seeded); every
policy sees the same crash times for a given (MTBF, seed). Measured per run: the
checkpoints taken, checkpoint overhead (checkpoints × t_chpt), mean recovery time
(crash → caught up), replayed work (records re-read or re-injected).
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from snapcheck.reference import SimConfig, simulate  # noqa: E402
from snapcheck.reference.intervals import CaStream, CaStreamOptimal, Daly, FaultAware, Fixed, IntervalABS, Young  # noqa: E402
from snapcheck.reference.intervals.policies import ca_stream_optimum, efficiency  # noqa: E402
from snapcheck.traces.atomic import write_atomic  # noqa: E402

BASE = dict(workload="q1", parallelism=2, records=400, snapshot_cost=150, barrier_cost=5)
T_CHPT = 155
T_RS = 300  # detect_delay 100 + restart_delay 200 (SimConfig defaults)
MTBFS = (None, 60000, 20000, 8000)
START, END = "<!-- results:intervals -->", "<!-- /results:intervals -->"


def crashes(mtbf, horizon: int, seed: int, tasks: list[str]) -> tuple:
    if mtbf is None:
        return ()
    rng = random.Random(f"intervals/{mtbf}/{seed}")
    out, t = [], 0.0
    while True:
        t += rng.expovariate(1 / mtbf)
        if t >= horizon:
            return tuple(out)
        out.append((rng.choice(tasks), int(t)))


def policies(mtbf, v_bar: float, v_m: float) -> list:
    m = mtbf or 10**7  # no failures: the formulas' MTBF is "very long"
    window = 5 * 600
    return [
        Fixed(600),
        Fixed(2400),
        Young(T_CHPT, m),
        Daly(T_CHPT, m),
        CaStreamOptimal(T_CHPT, m, T_RS, v_m, v_bar),
        FaultAware(600, ci_min=T_CHPT, ci_max=4800, window=window),
        CaStream(T_CHPT, m, T_RS, v_m, v_bar, window),
    ]


def label(p) -> str:
    return f"{p.name}({int(p.ci0)})" if p.name == "fixed" else p.name


def run(seeds: int):
    probe = simulate(SimConfig(protocol=IntervalABS(Fixed(600)), seed=0, **BASE), record=False)
    v_bar, v_m, horizon = probe.metrics["input_rate"], probe.metrics["capacity"], probe.metrics["sim_time"]
    tasks = [p.id for p in probe.header.processes if p.role in ("task", "sink")]
    rows = []
    for mtbf in MTBFS:
        for pol_index in range(len(policies(mtbf, v_bar, v_m))):
            acc = []
            for seed in range(seeds):
                pol = policies(mtbf, v_bar, v_m)[pol_index]
                cfg = SimConfig(
                    protocol=IntervalABS(pol),
                    seed=seed,
                    failures=crashes(mtbf, int(horizon * 1.3), seed, tasks),
                    **BASE,
                )
                acc.append(simulate(cfg, record=False).metrics)
            pol = policies(mtbf, v_bar, v_m)[pol_index]

            def mean(key, xs=acc):
                vals = [x[key] for x in xs if x[key] is not None]
                return statistics.mean(vals) if vals else None

            rows.append(
                {
                    "mtbf": mtbf,
                    "policy": label(pol),
                    "ci0": pol.ci0,
                    "interval": mean("intervals_mean"),
                    "checkpoints": mean("rounds_started"),
                    "overhead": mean("checkpoint_overhead"),
                    "failures": mean("failures"),
                    "recovery": mean("recovery_time_mean"),
                    "replayed": mean("replayed_messages"),
                    "stuck": any(x["stuck"] for x in acc),
                }
            )
    return rows, v_bar, v_m, horizon


def plot(rows, out_dir: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r["policy"] for r in rows))
    files = []
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    xs = [m for m in MTBFS if m]
    for name in names:
        sel = [r for r in rows if r["policy"] == name and r["mtbf"]]
        axes[0].plot([r["overhead"] for r in sel], [r["recovery"] or 0 for r in sel], marker="o", label=name)
        axes[1].plot(xs, [r["replayed"] for r in sel], marker="o", label=name)
        axes[2].plot(xs, [r["checkpoints"] for r in sel], marker="o", label=name)
    axes[0].set_xlabel("checkpoint overhead (ticks)")
    axes[0].set_ylabel("mean recovery time (ticks)")
    axes[0].set_title("overhead vs recovery (points: MTBF)")
    axes[1].set_xlabel("MTBF (ticks)")
    axes[1].set_ylabel("replayed records (total)")
    axes[1].set_xscale("log")
    axes[1].set_title("replayed work")
    axes[2].set_xlabel("MTBF (ticks)")
    axes[2].set_ylabel("checkpoints taken")
    axes[2].set_xscale("log")
    axes[2].set_yscale("log")
    axes[2].set_title("checkpoint frequency")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    path = out_dir / "intervals_tradeoff.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    files.append(path.name)
    return files


def fmt(x, nd=0) -> str:
    return "–" if x is None else f"{x:.{nd}f}"


def section(rows, v_bar, v_m, horizon, seeds, images) -> str:
    lines = [
        START,
        "",
        "## Checkpoint interval policies",
        "",
        "Generated by `scripts/make_interval_results.py` (do not edit by hand). Policies:",
        "`reference/intervals/policies.py`; they run in the reference simulator",
        "(`reference/intervals/engine.py`: the engine's coordinator asks the policy for the time to",
        "its next trigger). Setup: aligned ABS, workload q1, parallelism 2, 400 records per source,",
        f"t_chpt = {T_CHPT} ticks per task checkpoint, t_rs = {T_RS} ticks (detection + restart);",
        f"measured input rate v̄ = {v_bar:.4f} and capacity v_m = {v_m:.4f} records/tick; failure-free",
        f"run length ≈ {horizon} ticks. Crashes of a random non-source task form a Poisson process of",
        f"mean MTBF (the same crash times for every policy); means over {seeds} seeds.",
        "",
        "| MTBF | policy | first interval | mean interval | checkpoints | overhead (ticks) | crashes |"
        " recovery time | replayed records |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['mtbf'] or 'none'} | {r['policy']} | {fmt(r['ci0'])} | {fmt(r['interval'])} | "
            f"{fmt(r['checkpoints'], 1)} | {fmt(r['overhead'])} | {fmt(r['failures'], 1)} | "
            f"{fmt(r['recovery'])} | {fmt(r['replayed'], 1)}{' (stuck)' if r['stuck'] else ''} |"
        )
    lines += [
        "",
        "Time lost = checkpoint overhead + crashes × mean recovery time (the two costs the",
        "interval trades); the cheapest policy per failure rate:",
        "",
    ]
    for mtbf in MTBFS:
        sel = [r for r in rows if r["mtbf"] == mtbf]
        for r in sel:
            r["lost"] = r["overhead"] + (r["failures"] or 0) * (r["recovery"] or 0)
        best = min(sel, key=lambda r: r["lost"])
        ranking = ", ".join(f"{r['policy']} {r['lost']:.0f}" for r in sorted(sel, key=lambda r: r["lost"]))
        lines.append(f"* MTBF {mtbf or 'none'}: **{best['policy']}** ({ranking}).")
    lines += [
        "",
        *[f"![interval policies](img/{f})" for f in images],
        "",
        "Reading the figures. With frequent crashes a short fixed interval wins on recovery time and",
        "replayed work but pays the largest overhead; Young, Daly and the eq. 11 optimum sit close",
        "together (eq. 11 is Young's formula scaled by the input-rate ratio v_m/v̄ and shifted by",
        "t_rs) and track the failure rate, which a fixed interval cannot. Algorithm 1 starts at the",
        "short interval and grows it by a factor 2 − fr (≥ 1.0 up to 1.75) after every failure-free",
        "checkpoint, so between crashes it drifts to long intervals and replays more after the next",
        "crash; the combined policy starts from the eq. 11 optimum and grows from there, so it has",
        "the least overhead and the most replayed work. In this model a crash costs little (detection",
        "+ restart ≈ t_rs plus re-reading a few records) compared with a checkpoint's t_chpt per task,",
        "which is why long intervals win on time lost unless failures are frequent.",
        "Algorithms 2 and 4 do not fire in this setup (no task exceeds the CPU threshold, no",
        "stragglers); `tests/intervals/` exercises them on the engine with stragglers and with",
        "synthetic observations.",
        "",
    ]
    m = 20000
    opt = max(range(200, 20000, 10), key=lambda ci: efficiency(ci, T_CHPT, m, T_RS, v_bar, v_m))
    lines += [
        f"Cross-check of eq. 11: at MTBF {m}, the closed form gives "
        f"{ca_stream_optimum(T_CHPT, m, T_RS, v_bar, v_m):.0f} ticks and a grid search of the efficiency "
        f"u_k of eq. 5 (step 10 ticks) peaks at {opt} ticks.",
        "",
    ]
    return "\n".join(lines) + END


def write(text: str, path: Path) -> None:
    old = path.read_text() if path.exists() else "# Results\n"
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    new = pattern.sub(lambda _: text, old) if pattern.search(old) else old.rstrip("\n") + "\n\n" + text + "\n"
    write_atomic(path, new)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "docs" / "results.md"))
    args = ap.parse_args()
    rows, v_bar, v_m, horizon = run(args.seeds)
    out = Path(args.out)
    img = out.parent / "img"
    img.mkdir(parents=True, exist_ok=True)
    images = plot(rows, img)
    text = section(rows, v_bar, v_m, horizon, args.seeds, images)
    write(text, out)
    print(text)


if __name__ == "__main__":
    main()
