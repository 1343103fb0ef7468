"""Regenerate the pictures of docs/debugging.md from the golden traces and the simulator.

    .venv/bin/python docs/img/make_debugging_images.py

Writes, next to this script: the space-time diagrams of CheckMate's Figures 2(a)-(d),
4 and 5 and of worked example A of docs/theory.md (``golden-*.png``), the diagram of a shrunk
counterexample, and terminal screenshots of the stepper (``stepper-*.svg``, rich's
SVG export of exactly what the terminal shows).
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from snapcheck.debug.findings import check_findings, check_options
from snapcheck.debug.render import RenderOptions, render
from snapcheck.debug.stepper import Stepper
from snapcheck.traces import read_trace

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
EXAMPLES = ROOT / "traces" / "examples"

GOLDEN = [  # (trace, image, properties to select, recovery line to draw)
    ("checkmate_fig2a_consistent", "golden-fig2a.png", None, "auto"),
    ("checkmate_fig2b_orphan", "golden-fig2b.png", None, "auto"),
    ("checkmate_fig2c_dropped", "golden-fig2c.png", None, "auto"),
    ("checkmate_fig2d_channel_state", "golden-fig2d.png", None, "auto"),
    ("checkmate_fig4_rollback_propagation", "golden-fig4.png", None, "all"),
    ("checkmate_fig5_domino_cyclic", "golden-fig5.png", None, "all"),
    ("theory_a_zcycle", "golden-theory-a.png", {"z-cycles"}, None),
]


def golden_diagrams() -> None:
    for name, image, props, line in GOLDEN:
        trace = read_trace(str(EXAMPLES / f"{name}.jsonl"))
        opts = check_options(trace, properties=props)
        _, findings = check_findings(trace, opts)
        render(
            trace,
            str(HERE / image),
            findings,
            RenderOptions(recovery_line=line, title=_title(trace, name), cut=opts.cut),
        )
        print("wrote", HERE / image)


def _title(trace, name: str) -> str:
    src = trace.header.metadata.get("source", name)
    return src.split(", ", 1)[-1] if src.startswith("CheckMate") else src


def stepper_screenshots() -> None:
    shots = [
        ("checkmate_fig2b_orphan", ["v"], "stepper-orphan.svg", "snapcheck replay checkmate_fig2b_orphan.jsonl  (v)"),
        (
            "checkmate_fig5_domino_cyclic",
            ["b ckpt O3", "c", "c"],
            "stepper-breakpoint.svg",
            "snapcheck replay checkmate_fig5_domino_cyclic.jsonl  (b ckpt O3, c, c)",
        ),
    ]
    for name, commands, image, title in shots:
        trace = read_trace(str(EXAMPLES / f"{name}.jsonl"))
        _, findings = check_findings(trace)
        console = Console(record=True, width=118, file=open("/dev/null", "w"))
        s = Stepper(trace, findings, console=console)
        for c in commands:
            s.execute(c)
        s.show()
        console.save_svg(str(HERE / image), title=title)
        print("wrote", HERE / image)
    # barriers: an aligned-checkpoint simulation, at the moment a task blocks an input
    from snapcheck.debug.shrink_sim import simulate_config

    trace = simulate_config(
        {"protocol": "abs-aligned", "workload": "q12", "parallelism": 2, "seed": 1, "records": 12, "gap": 20}
    )
    console = Console(record=True, width=150, file=open("/dev/null", "w"))
    s = Stepper(trace, console=console)
    best = (0, 0)
    for n in range(len(trace.events) + 1):  # the moment with the most blocked inputs and data behind them
        st = s.replay.goto(n)
        for v in st.processes.values():
            if v.blocked:
                waiting = sum(m.kind == "data" for c in st.channels.values() if c.dst == v.id for m in c.in_flight)
                best = max(best, (len(v.blocked) * 10 + waiting, n))
    s.replay.goto(best[1])
    s.show()
    console.save_svg(
        str(HERE / "stepper-blocked.svg"),
        title="snapcheck replay (aligned ABS simulation): a task blocks its inputs until every barrier",
    )
    print("wrote", HERE / "stepper-blocked.svg")


def shrunk_example() -> None:
    """A failing simulation of the mutant 'abs-aligned-no-block', shrunk, then drawn."""
    from snapcheck.checker import CheckOptions
    from snapcheck.debug.findings import findings_from_report, run_checker
    from snapcheck.debug.shrink import CheckerPredicate, shrink_trace
    from snapcheck.debug.shrink_sim import shrink_config

    config = {
        "mutant": "abs-aligned-no-block",
        "workload": "q12",
        "parallelism": 3,
        "records": 12,
        "gap": 60,
        "seed": 3,
    }
    violates = CheckerPredicate("consistency", "orphan", lambda d: CheckOptions(properties={"consistency"}, **d))
    small = shrink_config(config, lambda t: violates(t, {}))
    before = small.trace
    res = shrink_trace(before, violates, {}, "orphan", "consistency")
    findings = findings_from_report(res.trace, run_checker(res.trace, CheckOptions(properties={"consistency"})))
    render(
        res.trace,
        str(HERE / "shrunk-no-block.png"),
        findings,
        RenderOptions(
            title=f"abs-aligned-no-block, seed 3: {len(before.events)} events shrunk to "
            f"{len(res.trace.events)} ({res.tests} checker runs)"
        ),
    )
    print("wrote", HERE / "shrunk-no-block.png")


if __name__ == "__main__":
    golden_diagrams()
    stepper_screenshots()
    shrunk_example()
