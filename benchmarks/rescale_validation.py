"""Rescaling and finished sources under the campaign's random configurations.

* Correct protocols: the first ``--correct`` runs of a campaign over every protocol
  (``spark_validation.configs.draw_config``, base seed ``--seed``) in which a rescale
  or finishing sources were drawn, each simulated, checked and compared with the
  oracle exactly as a campaign does (``spark_validation.runner.run_one``): the
  verdicts must all be clean.
* Mutants (``reference.coordinated.rescale_mutants``): ``--mutant-runs`` random
  configurations of each mutant's correct protocol (the same draw; not the mutant's
  demo), with the mutant applied (its ``adjust`` adds a rescale, or finishing
  sources, when none was drawn); a run *catches* the mutant when the checker
  reports one of its ``expect`` kinds.

Writes the table between ``<!-- rescale-validation -->`` markers of docs/protocols.md
(``--no-write``: print only). Usage:
``python benchmarks/rescale_validation.py [--correct 2000] [--mutant-runs 120] [--seed 7000]``
"""

from __future__ import annotations

import argparse
import re
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

from snapcheck.traces.atomic import write_atomic

DOC = Path(__file__).resolve().parents[1] / "docs" / "protocols.md"
MUTANTS = ("rescale-race", "rescale-skip-stateless", "rescale-undispatched", "final-notify-lost")


def correct_runs(n: int, seed: int) -> tuple[Counter, Counter, list, Counter]:
    from snapcheck.spark_validation.configs import Selection, draw_config
    from snapcheck.spark_validation.runner import run_one

    sel = Selection.of(mutants=())
    verdicts, kinds, failing, unjudged = Counter(), Counter(), [], Counter()
    i = 0
    while sum(kinds.values()) < n:
        cfg = draw_config(i, seed + i, sel)
        i += 1
        if not (cfg.rescale or cfg.finish_sources):
            continue
        kinds["rescale" if cfg.rescale else "finish"] += 1
        row = run_one(i - 1, seed + i - 1, cfg)
        verdicts[row["verdict"]] += 1
        why = row.get("violation_kinds") or row.get("error") or row.get("oracle")
        if row["verdict"] == "inconclusive":
            unjudged[re.sub(r"\s*\(.*", "", str(why))] += 1  # the reason without its run's figures
        elif row["verdict"] != "clean":
            failing.append((i - 1, why))
    return verdicts, kinds, failing, unjudged


def mutant_runs(name: str, n: int, seed: int) -> tuple[int, int, Counter]:
    from snapcheck.reference.catalogue import resolve
    from snapcheck.spark_validation.configs import Selection, draw_config
    from snapcheck.spark_validation.runner import run_one

    m = resolve(name, "mutant")
    sel = Selection.of(protocols=(m.mutant_of,), mutants=())
    caught, seen = 0, Counter()
    for i in range(n):
        cfg = replace(draw_config(i, seed + i, sel), mutant=name)
        row = run_one(i, seed + i, cfg, oracle=False)
        ks = set(filter(None, (row.get("violation_kinds") or "").split(",")))
        seen.update(ks)
        caught += bool(ks & set(m.expect))
    return caught, n, seen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--correct", type=int, default=2000)
    ap.add_argument("--mutant-runs", type=int, default=120)
    ap.add_argument("--seed", type=int, default=7000)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    t0 = time.time()
    verdicts, kinds, failing, unjudged = correct_runs(args.correct, args.seed)
    lines = [
        f"Correct protocols, {sum(kinds.values())} random campaign runs with a rescale ({kinds['rescale']}) "
        f"or finishing sources ({kinds['finish']}) drawn (base seed {args.seed}): "
        + ", ".join(f"{v} {k}" for k, v in sorted(verdicts.items()))
        + (f"; failing (run, kinds): {failing[:5]}" if failing else "; no failing run")
        + ".",
        "",
        *(
            [
                "Inconclusive runs are checked, but the end-to-end oracle could not compare their "
                "output with a failure-free run: "
                + ", ".join(f"{v} {k}" for k, v in unjudged.most_common())
                + " (rounds declined or timed out until the run gave up committing its final output)."
            ]
            if unjudged
            else []
        ),
        "",
        "| mutant | caught | runs | rate | kinds reported |",
        "|---|---|---|---|---|",
    ]
    for name in MUTANTS:
        caught, n, seen = mutant_runs(name, args.mutant_runs, args.seed)
        top = ", ".join(f"{k} ({v})" for k, v in seen.most_common(4))
        lines.append(f"| `{name}` | {caught} | {n} | {100 * caught / n:.0f} % | {top} |")
    lines.append("")
    lines.append(
        f"(`python benchmarks/rescale_validation.py --correct {args.correct} --mutant-runs "
        f"{args.mutant_runs} --seed {args.seed}`, {time.time() - t0:.0f} s.)"
    )
    table = "\n".join(lines)
    print(table)
    if not args.no_write:
        text = DOC.read_text()
        block = f"<!-- rescale-validation -->\n{table}\n<!-- /rescale-validation -->"
        text, n = re.subn(r"<!-- rescale-validation -->.*?<!-- /rescale-validation -->", block, text, flags=re.S)
        if n != 1:
            raise SystemExit("docs/protocols.md has no rescale-validation markers")
        write_atomic(DOC, text)


if __name__ == "__main__":
    main()
