"""The validation campaign as one call: the CLI's ``snapcheck validate --traces`` and the README main job.

``run_validation(n, out_dir, …)`` runs the campaign (``campaign``), summarizes it
(``summary``), prints the tables and the failing runs, writes ``summary.md`` and
``summary.json`` next to the result table (with ``--conform``, the traces of
disagreements and of correct runs the specification rejected under ``traces/``),
and returns the summary dict
(``summary["ok"]`` is False when a correct protocol failed or a mutant escaped).

``run_default(out_dir)`` is the main job's default size: DEFAULT_TRACES runs
of every default protocol and every mutant: with 47 mutants, every second run
is a mutant run (``configs.mutant_period``), 30 or more per mutant, and the other
half runs the correct protocols; a few minutes on 2 cores (docs/benchmarks.md,
sections ``spark`` and ``hunt``).
"""

from __future__ import annotations

import os

from snapcheck.spark_validation.campaign import run_campaign
from snapcheck.spark_validation.configs import Selection
from snapcheck.spark_validation.summary import keep_traces, print_summary, summarize, write

DEFAULT_TRACES = 3000


def located_here(spec: str) -> bool:
    """Does a protocol spec find its module from the current directory: a relative
    ``FILE.py:CLASS`` or a ``MODULE:CLASS`` (then the campaign's reproduction commands
    work from the directory it ran in, which its summary says)?

    >>> located_here("abs-aligned"), located_here("mine.py:Mine"), located_here("/home/me/mine.py:Mine")
    (False, True, False)
    """
    where = spec.rpartition(":")[0]
    return bool(where) and not os.path.isabs(where)


def run_validation(
    n: int,
    out_dir: str,
    *,
    protocols=None,
    workloads=None,
    mutants=None,
    failures: bool = True,
    oracle: bool = True,
    conform: float = 0.0,
    seed: int = 0,
    master: str | None = None,
    engine: str = "spark",
    progress: bool = True,
    console=None,
    explore: str | None = None,
    session_options: dict | None = None,
) -> dict:
    """Run a campaign of ``n`` runs and summarize it. ``protocols`` and ``mutants``: catalogue
    names, ``MODULE:CLASS`` / ``FILE.py:CLASS`` specs or ``Protocol`` classes (also the
    user's own), or one string listing them with commas, like ``workloads``, or one class;
    ``mutants=None``: every mutant of a selected protocol, ``"none"`` (or ``[]``): none. ``explore``: the
    exploration strategy (``spark_validation.strategies``; default the best measured).
    ``conform``: the fraction of runs also validated against their TLA+ specification
    (``conformance``).
    ``session_options``: Spark session settings (``session.get_session``)."""
    from rich.console import Console

    from snapcheck.reference.catalogue import as_list, as_spec
    from snapcheck.traces.errors import UsageError

    console = console or Console(highlight=False, emoji=False)
    # one string is a comma list, as on the command line ("abs-aligned,unaligned"); one class a list of one
    protocols, workloads = as_list(protocols, "protocols"), as_list(workloads, "workloads")
    mutants = [] if (mutants := as_list(mutants, "mutants")) == ["none"] else mutants  # as --mutants none
    if mutants and "none" in mutants:
        raise UsageError(f"mutants {', '.join(map(str, mutants))}: 'none' selects no mutant; give it alone")
    sel = Selection.of(
        [as_spec(p) for p in protocols] if protocols else None,
        workloads,
        [as_spec(m, "mutant") for m in mutants] if mutants else mutants,
        failures,
        oracle,
        explore,
        conform=conform,
        runs=n,
    )
    res = run_campaign(
        n,
        sel,
        out_dir,
        base_seed=seed,
        engine=engine,
        master=master,
        progress=progress,
        session_options=session_options,
    )
    meta = {
        "engine": res.engine,
        "master": res.master if engine == "spark" else None,
        "tasks": res.tasks,
        "seconds": round(res.seconds, 2),
        "base_seed": seed,
        "protocols_selected": list(sel.protocols),
        "workloads_selected": list(sel.workloads),
        "mutants_selected": list(sel.mutants),
        "oracle": sel.oracle,
        "explore": sel.explore,
        "mutant_every": sel.mutant_every,
        "conform_fraction": sel.conform,
        "results": res.results,
        "runs_per_second": round(n / res.seconds, 2) if res.seconds else None,
        "workdir": os.getcwd() if any(located_here(s) for s in (*sel.protocols, *sel.mutants)) else None,
    }
    summary = summarize(res.results, meta)
    print_summary(summary, console)
    md, js = write(summary, out_dir)
    if sel.conform:
        kept = keep_traces(res.results, out_dir)
        if kept:
            console.print(
                f"kept {len(kept)} trace(s) (disagreements, rejected correct runs) in {out_dir}/traces/", markup=False
            )
    console.print(
        f"{n:,} runs in {res.seconds:.1f} s ({meta['runs_per_second']} runs/s); results {res.results}; "
        f"summary {md}, {js}; verdict {'OK' if summary['ok'] else 'FAILED'}",
        markup=False,
    )
    return summary


def run_default(out_dir: str, traces: int = DEFAULT_TRACES, master: str | None = None, console=None) -> dict:
    """The README main job's validation: ``traces`` runs on Spark local mode; returns the summary."""
    return run_validation(traces, out_dir, master=master, console=console)
