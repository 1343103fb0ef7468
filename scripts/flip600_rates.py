"""Measure, on the campaign's random configurations, how often the checker catches
each mutant of the regional-checkpoint family blind, and that the correct
protocols stay clean; write the table into ``docs/flip-600.md`` (between
``<!-- rates:flip600 -->`` and ``<!-- /rates:flip600 -->``; the rest of the
file is left alone).

    .venv/bin/python scripts/flip600_rates.py                    # 200 runs per mutant, 2000 per protocol
    .venv/bin/python scripts/flip600_rates.py --runs 20 --clean-runs 50 --no-write

Run ``i`` of a protocol or mutant uses seed ``i`` and the configuration the
campaign draws for it (``Protocol.random_config``: slices, records, interval,
declines, timeouts, reading, crashes), the mutant applied on top (with its
forced configuration change, ``adjust``), exactly as ``snapcheck validate``
runs them. A mutant run is *caught* when the checker reports a violation; the
end-to-end oracle is not counted (mutants that change the job — agreed state, an
edge between slices — differ from the correct protocol's failure-free run by
construction). A correct run must be clean for the checker *and* the oracle
(``spark_validation.runner.run_one``). Runs whose every final round was aborted
are inconclusive and listed apart.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import time
from collections import Counter
from dataclasses import replace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from snapcheck.checker import CheckOptions, check_trace  # noqa: E402
from snapcheck.reference import simulate  # noqa: E402
from snapcheck.reference.catalogue import mutants_of, resolve  # noqa: E402
from snapcheck.spark_validation.runner import run_one  # noqa: E402

DOC = os.path.join(ROOT, "docs", "flip-600.md")
BEGIN, END = "<!-- rates:flip600 -->", "<!-- /rates:flip600 -->"
PROTOCOLS = ("regional-aligned", "regional-unaligned")


def config(spec: str, seed: int, mutant: str | None = None):
    cfg = resolve(spec).random_config(spec, seed, random.Random(seed), True)
    return replace(cfg, mutant=mutant) if mutant else cfg


def mutant_rate(name: str, runs: int) -> dict:
    m = resolve(name, "mutant")
    c: Counter = Counter()
    for seed in range(runs):
        res = simulate(config(m.mutant_of, seed, name))
        report = check_trace(res.trace(), CheckOptions(crosscheck=False, max_witnesses=1, max_per_result=1))
        kinds = report.kinds
        c["caught"] += bool(kinds)
        c["expected"] += any(k in m.expect for k in kinds)
        c["regional"] += res.metrics["regional_completions"] > 0
        c["truncated"] += bool(res.metrics["truncated"])
    return {"name": name, "runs": runs, **c, "expect": m.expect}


def clean_rate(spec: str, runs: int) -> dict:
    c: Counter = Counter()
    bad = []
    for seed in range(runs):
        row = run_one(seed, seed, config(spec, seed))
        c[row["verdict"]] += 1
        if row["verdict"] in ("violation", "error"):
            bad.append(row["command"])
    return {"name": spec, "runs": runs, **c, "bad": bad[:5]}


def table(clean: list[dict], rates: list[dict], seconds: float) -> str:
    lines = ["| protocol | random runs | clean | violation | error | inconclusive (final rounds aborted) |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in clean:
        lines.append(f"| `{r['name']}` | {r['runs']} | {r.get('clean', 0)} | {r.get('violation', 0)} | "
                     f"{r.get('error', 0)} | {r.get('inconclusive', 0)} |")
    lines += ["", "| mutant | random runs | caught (any violation) | caught with its kind | expected kinds | "
                  "runs with a regional completion | truncated (livelock) |",
              "|---|---:|---:|---:|---|---:|---:|"]
    for r in rates:
        n = r["runs"]
        lines.append(f"| `{r['name']}` | {n} | {r.get('caught', 0)} ({100 * r.get('caught', 0) / n:.0f} %) | "
                     f"{r.get('expected', 0)} ({100 * r.get('expected', 0) / n:.0f} %) | "
                     f"{', '.join(r['expect'])} | {r.get('regional', 0)} | {r.get('truncated', 0)} |")
    lines += ["", f"Measured by `scripts/flip600_rates.py` in {seconds:.0f} s (seeds 0 … runs−1)."]
    return "\n".join(lines)


def write(text: str, path: str = DOC) -> None:
    with open(path) as f:
        doc = f.read()
    if BEGIN not in doc or END not in doc:
        raise SystemExit(f"{path}: markers {BEGIN} … {END} not found")
    new = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: f"{BEGIN}\n{text}\n{END}", doc, flags=re.S)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(new)
    os.replace(tmp, path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=200, help="random runs per mutant")
    ap.add_argument("--clean-runs", type=int, default=2000, help="random runs per correct protocol")
    ap.add_argument("--no-write", action="store_true", help="print the table, leave docs/flip-600.md alone")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    clean = [clean_rate(p, args.clean_runs) for p in PROTOCOLS]
    rates = [mutant_rate(m.name, args.runs) for p in PROTOCOLS for m in mutants_of(p)]
    text = table(clean, rates, time.perf_counter() - start)
    print(text)
    for r in clean:
        for cmd in r["bad"]:
            print(f"FAILING correct run of {r['name']}: {cmd}", file=sys.stderr)
    if not args.no_write:
        write(text)
    return 1 if any(r.get("violation") or r.get("error") for r in clean) else 0


if __name__ == "__main__":
    raise SystemExit(main())
