"""The summary of a validation campaign: per protocol and per mutant, printed and written.

Per correct protocol: runs, events, failing runs and violations (a failing run
of a correct protocol is a bug), useless checkpoints in % of checkpoints
(Netzer–Xu: on a Z-cycle), mean rollback distance (checkpoints rolled back by
the maximal recovery line when every process fails), replayed messages, mean
protocol message overhead ratio (CheckMate §V: (data + protocol bytes) / data
bytes), runs with a domino effect (a recovery line two or more checkpoints
behind) and mutants caught; runs whose every final round was aborted are
counted as inconclusive (``runner``). Per mutant (drawn blind, like its base
protocol): runs, runs that caught it, catch rate, runs until the first catch (in run
order), what the checker reported, and CAUGHT or ESCAPED (no run caught). Per
protocol, the coverage of its situations (``Protocol.situations``: how many runs
reached each) and the situations no run reached — what the campaign did not explore
is said, like what a check did not judge — and the runs whose requested crash never
fired. Every failing run of a correct protocol is listed with the ``snapcheck
simulate`` command that reproduces it.

The campaign fails (exit 1) when a correct protocol has a failing run or a
mutant that ran escaped.
"""

from __future__ import annotations

import os
from collections import Counter

import orjson

from snapcheck.reference.oracle import MUTANT_OPTED_OUT, OPTED_OUT

LIST_MUTANT_RUNS = 3  # reproduction commands listed per mutant (all are in the result table)
PRINT_FAILURES = 20


def summarize(results: str, meta: dict) -> dict:
    """Aggregate the result table (see ``runner.COLUMNS``) into the summary dict."""
    import pyarrow.dataset as ds

    cols = [
        "run_id",
        "seed",
        "protocol",
        "mutant",
        "verdict",
        "violation_kinds",
        "violations",
        "oracle",
        "error",
        "events",
        "checkpoints",
        "useless",
        "rollback_checkpoints",
        "domino",
        "replayed_messages",
        "overhead_ratio",
        "command",
        "trace_sha256",
        "workload",
        "situations",
        "faults_not_fired",
        "conform",
        "conform_spec",
        "conform_detail",
        "conform_outside",
        "disagreement",
        "protocol_error",
        "unjudged",
    ]
    df = ds.dataset(results, format="parquet").to_table(columns=cols).to_pandas()
    df["spec_reject"] = df["conform"] == "reject"
    df["failing"] = df["verdict"].isin(("violation", "error")) | df["spec_reject"]
    # An error is the kit failing (its simulator, checker or oracle raised: a protocol's own
    # bug is a protocol-error violation instead), never a mutant caught: it fails the
    # campaign like a failing run of a correct protocol.
    df["kit_error"] = df["verdict"] == "error"
    df["catch"] = df["failing"] & ~df["kit_error"]  # a mutant's run that caught it
    correct = df[df["mutant"].isna()]
    mutant = df[df["mutant"].notna()]

    mutants = []
    for name, g in mutant.groupby("mutant", sort=True):
        g = g.sort_values("run_id")
        caught = g[g["catch"]]
        kinds = sorted(
            {k for ks in caught["violation_kinds"].dropna() for k in ks.split(",") if k}
            | ({"oracle"} if caught["oracle"].str.startswith("differs").any() else set())
            | ({SPEC_REJECT} if caught["spec_reject"].any() else set())
        )
        first = int(g["catch"].to_numpy().argmax()) + 1 if len(caught) else None
        expected = _expected_kinds(name)
        as_expected = int(
            caught["violation_kinds"].fillna("").map(lambda ks, e=expected: bool(e & set(ks.split(",")))).sum()
        )
        mutants.append(
            {
                "mutant": name,
                "protocol": g["protocol"].iloc[0],
                "runs": int(len(g)),
                "caught": int(len(caught)),
                "inconclusive": int((g["verdict"] == "inconclusive").sum()),
                "catch_rate": round(len(caught) / len(g), 4),
                "runs_to_first_catch": first,
                "caught_by_spec": int(g["spec_reject"].sum()),
                "expected_kinds": sorted(expected),
                "caught_as_expected": as_expected,
                "reported": kinds,
                "escaped": bool(len(caught) == 0),
                "oracle_not_applied": int(g["oracle"].fillna("").str.startswith(f"skipped: {MUTANT_OPTED_OUT}").sum()),
                "examples": [
                    repro_command(r) for r in caught.sort_values("run_id").head(LIST_MUTANT_RUNS).itertuples()
                ],
                "escaped_runs": [] if len(caught) else g.sort_values("run_id")["command"].tolist(),
            }
        )
    by_base: dict[str, list] = {}
    for m in mutants:
        by_base.setdefault(m["protocol"], []).append(m)

    protocols = []
    for name, g in correct.groupby("protocol", sort=True):
        ck = int(g["checkpoints"].sum())
        ms = by_base.get(name, [])
        protocols.append(
            {
                "protocol": name,
                "runs": int(len(g)),
                "events": int(g["events"].sum()),
                "failing_runs": int(g["failing"].sum()),
                "violations": int(g["violations"].fillna(0).sum()),
                "inconclusive": int((g["verdict"] == "inconclusive").sum()),
                "useless_pct": round(100.0 * int(g["useless"].sum()) / ck, 3) if ck else 0.0,
                "rollback_distance": round(float(g["rollback_checkpoints"].mean()), 3),
                "replayed_messages": int(g["replayed_messages"].fillna(0).sum()),
                "overhead_ratio": round(float(g["overhead_ratio"].mean()), 4)
                if g["overhead_ratio"].notna().any()
                else None,
                "domino": int(g["domino"].eq(True).sum()),  # None (not judged) counts as no domino
                "mutants_caught": f"{sum(not m['escaped'] for m in ms)}/{len(ms)}" if ms else "-",
            }
        )
    for base in sorted(set(by_base) - {p["protocol"] for p in protocols}):
        ms = by_base[base]
        protocols.append(
            {
                "protocol": base,
                "runs": 0,
                "events": 0,
                "failing_runs": 0,
                "violations": 0,
                "inconclusive": 0,
                "useless_pct": None,
                "rollback_distance": None,
                "replayed_messages": 0,
                "overhead_ratio": None,
                "domino": 0,
                "mutants_caught": f"{sum(not m['escaped'] for m in ms)}/{len(ms)}",
            }
        )

    coverage = situation_coverage(correct)
    opted_out = correct[correct["oracle"].fillna("").str.startswith(f"skipped: {OPTED_OUT}")]
    opted = opted_out.groupby("protocol").size().to_dict()
    never = never_judged(correct)
    for p in protocols:
        p["properties_never_judged"] = never.get(p["protocol"], [])
        p["situations_unreached"] = coverage.get(p["protocol"], {}).get("unreached", [])
        p["oracle_not_applied"] = int(opted.get(p["protocol"], 0))
        p["faults_not_fired"] = int(
            correct[correct["protocol"] == p["protocol"]]["faults_not_fired"].fillna(0).astype(bool).sum()
        )
    fails = df[(df["mutant"].isna() & df["failing"]) | df["kit_error"]].sort_values("run_id")
    failing = [
        {
            "run_id": int(r.run_id),
            "seed": int(r.seed),
            "protocol": r.protocol,
            "mutant": r.mutant if isinstance(r.mutant, str) else None,
            "workload": r.workload,
            "verdict": r.verdict,
            "violation_kinds": r.violation_kinds,
            "oracle": r.oracle,
            "error": r.error,
            "protocol_error": r.protocol_error if isinstance(r.protocol_error, str) else None,
            "conform": r.conform,
            "conform_detail": r.conform_detail if r.spec_reject else None,
            "command": repro_command(r),
            "trace_sha256": r.trace_sha256 if isinstance(r.trace_sha256, str) else None,
        }
        for r in fails.itertuples()
    ]
    ok = not failing and not any(m["escaped"] for m in mutants)
    not_run = sorted(set(meta.get("mutants_selected", ())) - {m["mutant"] for m in mutants})
    return {
        "schema": "snapcheck-validation-summary",
        "version": 1,
        "ok": ok,
        **meta,
        "runs": int(len(df)),
        "events": int(df["events"].fillna(0).sum()),
        "protocols": protocols,
        "mutants": mutants,
        "mutants_not_run": not_run,
        "coverage": coverage,
        "failing_runs": failing,
        **conformance(df, meta.get("conform_fraction") or 0.0),
    }


SPEC_REJECT = "TLA+ REJECT"  # what a mutant run whose trace its specification rejects reports


def repro_command(r) -> str:
    """The command that reproduces a failing run ``r`` (a result row) and shows why it failed:
    its ``simulate`` command (with ``--oracle`` when the end-to-end oracle found a
    difference: ``runner.run_one`` adds it), then ``conform`` when its specification
    rejected it.

    >>> from types import SimpleNamespace as Row
    >>> repro_command(Row(command="snapcheck simulate --seed 3 -o run-3.jsonl", seed=3, spec_reject=True))
    'snapcheck simulate --seed 3 -o run-3.jsonl && snapcheck conform run-3.jsonl'
    """
    return conform_command(r.command, int(r.seed)) if r.spec_reject else r.command


def conform_command(command: str, seed: int) -> str:
    """The reproduction command of a run the specification rejected: simulate, then conform.

    >>> conform_command("snapcheck simulate --protocol unaligned --seed 3 -o run-3.jsonl", 3)
    'snapcheck simulate --protocol unaligned --seed 3 -o run-3.jsonl && snapcheck conform run-3.jsonl'
    """
    return f"{command} && snapcheck conform run-{seed}.jsonl"


def conformance(df, fraction: float) -> dict:
    """The TLA+ conformance part of the summary (``--conform``): per protocol (correct runs)
    and per mutant, how many runs were chosen and what their specification said, and
    every disagreement between the specification and the checker."""
    if not fraction:
        return {}
    chosen = df[df["conform"].notna()]
    rows = []
    for (protocol, mutant), g in chosen.groupby([chosen["protocol"], chosen["mutant"].fillna("")], sort=True):
        counts = g["conform"].value_counts()
        outside = g[g["conform"] == "outside"]["conform_outside"].fillna("?").value_counts()
        errors = g[g["conform"].isin(("error", "no-java", "no-trace"))]
        rows.append(
            {
                "protocol": protocol,
                "mutant": mutant or None,
                "specs": sorted(set(g["conform_spec"].dropna())),
                "chosen": int(len(g)),
                "conformed": int(counts.get("accept", 0) + counts.get("reject", 0)),
                "accepted": int(counts.get("accept", 0)),
                "rejected": int(counts.get("reject", 0)),
                "outside": int(counts.get("outside", 0)),
                "outside_reasons": {str(k): int(v) for k, v in outside.items()},
                "no_spec": int(counts.get("no-spec", 0)),
                "no_java": int(counts.get("no-java", 0)),
                "no_trace": int(counts.get("no-trace", 0)),
                "errors": int(counts.get("error", 0)),
                "error_examples": [
                    f"run {int(r.run_id)}, seed {int(r.seed)}: {r.conform_detail}"
                    for r in errors.sort_values("run_id").head(3).itertuples()
                ],
                "disagreements": int(g["disagreement"].notna().sum()),
            }
        )
    dis = chosen[chosen["disagreement"].notna()].sort_values("run_id")
    disagreements = [
        {
            "run_id": int(r.run_id),
            "seed": int(r.seed),
            "protocol": r.protocol,
            "mutant": r.mutant,
            "spec": r.conform_spec,
            "spec_verdict": r.conform.upper(),
            "spec_detail": r.conform_detail,
            "checker_verdict": r.violation_kinds or "clean",
            "why": r.disagreement,
            "trace": f"{KEPT_DIR}/run-{int(r.seed)}.jsonl",
            "command": conform_command(r.command, int(r.seed)),
        }
        for r in dis.itertuples()
    ]
    return {"conform_fraction": fraction, "conformance": rows, "disagreements": disagreements}


KEPT_DIR = "traces"  # under the output directory: the traces of disagreements and of rejected correct runs


def keep_traces(results: str, out_dir: str) -> list[str]:
    """Write the traces the result table keeps (``runner.COLUMNS``: ``trace``) as
    ``OUT/traces/run-SEED.jsonl``; the paths written."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    from snapcheck.traces.atomic import write_atomic

    data = ds.dataset(results, format="parquet")
    kept = data.to_table(columns=["seed", "trace"], filter=pc.field("trace").is_valid()).to_pylist()
    paths = []
    for r in kept:
        os.makedirs(os.path.join(out_dir, KEPT_DIR), exist_ok=True)
        path = os.path.join(out_dir, KEPT_DIR, f"run-{r['seed']}.jsonl")
        write_atomic(path, r["trace"])
        paths.append(path)
    return paths


def never_judged(runs) -> dict[str, list[dict]]:
    """Per protocol: the properties some of its runs could be judged for (``runner.judgeable``:
    ``unjudged`` maps each to why it was not, or null when it was) that not one of its runs
    was, each with why (the reason most of its runs give): a protocol whose rounds never
    complete is never judged for consistency, one whose runs never recover for exactly-once,
    and it passes a campaign without them unless told. Runs the kit raised on (no report)
    are left out.

    >>> import pandas as pd
    >>> runs = pd.DataFrame({"protocol": ["p", "p"], "unjudged": [
    ...     '{"consistency": "no round completed", "exactly-once": "no restore"}',
    ...     '{"consistency": "no round completed", "exactly-once": null}']})
    >>> never_judged(runs)
    {'p': [{'property': 'consistency', 'reason': 'no round completed'}]}
    """
    out: dict[str, list[dict]] = {}
    for name, g in runs.groupby("protocol", sort=True):
        reasons: dict[str, Counter] = {}
        judged: set[str] = set()
        for js in g["unjudged"].dropna():
            for p, why in orjson.loads(js).items():
                if why is None:
                    judged.add(p)
                else:
                    reasons.setdefault(p, Counter())[why] += 1
        never = [
            {"property": p, "reason": c.most_common(1)[0][0]} for p, c in sorted(reasons.items()) if p not in judged
        ]
        if never:
            out[name] = never
    return out


def situation_coverage(runs) -> dict:
    """Per protocol: in how many runs each situation it declares relevant was reached
    (``reached``), and which no run reached (``unreached``)."""
    from snapcheck.reference.catalogue import resolve

    out = {}
    for name, g in runs.groupby("protocol", sort=True):
        counts: dict[str, int] = {}
        for js in g["situations"].dropna():
            for k in orjson.loads(js):
                counts[k] = counts.get(k, 0) + 1
        try:
            relevant = tuple(resolve(name).situations)
        except ValueError:  # a protocol the result table names but this process cannot load
            relevant = ()
        out[name] = {
            "runs": int(len(g)),
            "reached": dict(sorted(counts.items())),
            "unreached": [s for s in relevant if s not in counts],
        }
    return out


def _fmt(v, suffix: str = "") -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.3f}".rstrip("0").rstrip(".") + suffix
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


PROTOCOL_COLUMNS = (
    ("protocol", "protocol"),
    ("runs", "runs"),
    ("events", "events"),
    ("failing_runs", "failing runs"),
    ("violations", "violations"),
    ("inconclusive", "inconclusive"),
    ("useless_pct", "useless %"),
    ("rollback_distance", "rollback distance"),
    ("replayed_messages", "replayed msgs"),
    ("overhead_ratio", "overhead ratio"),
    ("domino", "domino"),
    ("mutants_caught", "mutants caught"),
)


def rich_tables(s: dict):
    """(protocol table, mutant table) for the console."""
    from rich.markup import escape
    from rich.table import Table

    t = Table(
        title=f"Validation: {s['runs']:,} runs, {s['events']:,} events ({s.get('engine')}, "
        f"{s.get('seconds', 0):.1f} s)",
        title_justify="left",
    )
    for _, head in PROTOCOL_COLUMNS:
        t.add_column(head, justify="left" if head == "protocol" else "right", no_wrap=head == "protocol")
    for p in s["protocols"]:
        cells = [_fmt(p[k]) for k, _ in PROTOCOL_COLUMNS]
        cells[0] = escape(cells[0])  # a user's protocol spec (a path may hold "[")
        if p["failing_runs"]:
            cells[3] = f"[red]{cells[3]}[/]"
        t.add_row(*cells)
    m = Table(title=f"Mutants ({_mutant_share(s)})", title_justify="left")
    for head in (
        "mutant",
        "protocol",
        "runs",
        "caught",
        "inconclusive",
        "catch rate",
        "first catch",
        "as expected",
        "checker reports",
        "verdict",
    ):
        m.add_column(
            head,
            justify="right" if head in ("runs", "caught", "inconclusive", "catch rate", "first catch") else "left",
            no_wrap=head == "mutant",
        )
    for x in s["mutants"]:
        m.add_row(
            escape(x["mutant"]),
            escape(x["protocol"]),
            _fmt(x["runs"]),
            _fmt(x["caught"]),
            _fmt(x.get("inconclusive", 0)),
            f"{100 * x['catch_rate']:.1f} %",
            _fmt(x["runs_to_first_catch"]),
            escape(_as_expected(x)),
            ", ".join(x["reported"]) or "-",
            "[red]ESCAPED[/]" if x["escaped"] else "[green]caught[/]",
        )
    return t, m


def _inconclusive_note(x: dict) -> str:
    """How many of an escaped mutant's runs judged nothing ('' when all were judged).

    >>> _inconclusive_note({"runs": 30, "inconclusive": 4}), _inconclusive_note({"runs": 3, "inconclusive": 0})
    (' (4 of them inconclusive: every final round aborted, nothing to judge)', '')
    """
    n = x.get("inconclusive", 0)
    return f" ({n} of them inconclusive: every final round aborted, nothing to judge)" if n else ""


def _expected_kinds(mutant: str) -> set[str]:
    """The kinds the mutant declares the checker reports (``expect``; empty when its class
    cannot be loaded here)."""
    from snapcheck.reference.catalogue import resolve
    from snapcheck.traces.errors import UsageError

    try:
        return set(resolve(mutant, "mutant").expect or ())
    except UsageError:
        return set()


def _as_expected(x: dict) -> str:
    """How many of a mutant's catching runs reported a kind it expects, and which kinds."""
    if not x.get("expected_kinds"):
        return "-"
    return f"{x['caught_as_expected']:,} ({' or '.join(x['expected_kinds'])})"


def _mutant_share(s: dict) -> str:
    """How the campaign shared its runs with the mutants (``configs.mutant_period``)."""
    every = s.get("mutant_every")
    if not every or not s.get("protocols"):
        return "drawn blind, taking turns"
    return f"drawn blind, taking turns: every {'second third fourth fifth'.split()[every - 2]} run is a mutant run"


def _workdir_note(s: dict) -> str:
    return (
        f"The commands name your protocol as the campaign was given it: run them from {s['workdir']} "
        "(or give its file's absolute path)."
    )


def markdown(s: dict) -> str:
    out = [
        "# Validation summary",
        "",
        f"{s['runs']:,} runs (seeds {s.get('base_seed', 0)}…{s.get('base_seed', 0) + s['runs'] - 1}), "
        f"{s['events']:,} events, engine {s.get('engine')}"
        + (f" (master {s['master']})" if s.get("master") else "")
        + f", {s.get('seconds', 0):.1f} s. "
        f"Verdict: **{'OK' if s['ok'] else 'FAILED'}**.",
        "",
    ]
    out += [f"**Warning:** {w}." for w in judged_little(s)] + ([""] if judged_little(s) else [])
    if s.get("workdir"):
        out += [_workdir_note(s), ""]
    out.append("| " + " | ".join(h for _, h in PROTOCOL_COLUMNS) + " |")
    out.append("|" + "|".join("---" if k == "protocol" else "---:" for k, _ in PROTOCOL_COLUMNS) + "|")
    for p in s["protocols"]:
        out.append("| " + " | ".join(_fmt(p[k]) for k, _ in PROTOCOL_COLUMNS) + " |")
    if s["mutants"]:
        out += [
            "",
            "## Mutants (drawn blind)",
            "",
            _mutant_share(s)[0].upper() + _mutant_share(s)[1:] + ".",
            "",
            "| mutant | protocol | runs | caught | inconclusive | catch rate | runs to first catch | as expected | "
            "checker reports | verdict |",
            "|---|---|---:|---:|---:|---:|---:|---|---|---|",
        ]
        for x in s["mutants"]:
            out.append(
                f"| {x['mutant']} | {x['protocol']} | {x['runs']:,} | {x['caught']:,} | {x.get('inconclusive', 0):,} | "
                f"{100 * x['catch_rate']:.1f} % | {_fmt(x['runs_to_first_catch'])} | {_as_expected(x)} | "
                f"{', '.join(x['reported']) or '-'} | {'ESCAPED' if x['escaped'] else 'caught'} |"
            )
        out += [
            "",
            "A mutant is caught by any failing run; *as expected* counts the runs that reported one of "
            "the kinds it declares (`expect`): a mutant caught only otherwise may be caught for "
            "another reason than its bug. An *inconclusive* run (every final round aborted, or its "
            "failure-free twin's) caught nothing and showed nothing: an escaped mutant had fewer "
            "judged runs than it ran.",
        ]
    never = [p for p in s["protocols"] if p.get("properties_never_judged")]
    if never:
        out += [
            "",
            "## Properties no run judged",
            "",
            "A protocol passes a campaign only on what its runs were judged for: these properties, "
            "which its runs could be judged for, were judged in none of them (why: the reason most runs give).",
            "",
        ]
        for p in never:
            out += [f"- {p['protocol']}: {x['property']}: {x['reason']}" for x in p["properties_never_judged"]]
    cov = s.get("coverage") or {}
    if cov:
        out += [
            "",
            "## Coverage of situations",
            "",
            "Runs that reached each protocol-relevant situation; a situation no run reached was not explored. "
            "A requested crash whose moment never came (its task was down or had left the job, the run "
            "ended first) tested no recovery: the last column counts the runs with one.",
            "",
            "| protocol | runs | reached (runs) | never reached | runs with a crash that never fired |",
            "|---|---:|---|---|---:|",
        ]
        unfired = {p["protocol"]: p.get("faults_not_fired", 0) for p in s["protocols"]}
        for name, c in cov.items():
            reached = ", ".join(f"{k} {v:,}" for k, v in c["reached"].items()) or "-"
            out.append(
                f"| {name} | {c['runs']:,} | {reached} | {', '.join(c['unreached']) or '-'} | {unfired.get(name, 0):,} |"
            )
    if s["mutants_not_run"]:
        out += ["", f"Mutants selected but not run (campaign too small): {', '.join(s['mutants_not_run'])}."]
    unjudged = oracle_not_judged(s)
    if unjudged:
        out += ["", "## Not judged by the exactly-once oracle", ""] + [f"- {line}" for line in unjudged]
    out += conformance_markdown(s)
    out += ["", "## Failing runs of correct protocols, and runs the kit failed on", ""]
    if s["failing_runs"]:
        for f in s["failing_runs"]:
            why = _why(f)
            out += [
                f"- run {f['run_id']}, seed {f['seed']} ({_subject(f)}, {f['workload']}): {f['verdict']}: {why}",
                "",
                "  ```",
                f"  {f['command']}",
                "  ```",
            ]
            if f.get("trace_sha256"):
                out += [
                    f"  The trace it writes has SHA-256 `{f['trace_sha256']}` (`sha256sum run-{f['seed']}.jsonl`).",
                    "",
                ]
    else:
        out.append("None.")
    out += [f"\n{h}" for h in rescale_hints(s)]
    examples = [(x["mutant"], c) for x in s["mutants"] for c in (x["escaped_runs"] or x["examples"])]
    if examples:
        out += ["", "## Mutant runs (reproduction commands; every run's command is in the result table)", ""]
        for name, c in examples:
            out.append(f"- {name}: `{c}`")
    return "\n".join(out) + "\n"


def oracle_not_judged(s: dict) -> list[str]:
    """What the end-to-end exactly-once oracle did not judge in campaign summary ``s``:
    every run if it was off, else the runs of protocols and of mutants that opt out of it.

    >>> oracle_not_judged({"oracle": True, "protocols": [{"protocol": "mine.py:Mine", "runs": 30, "oracle_not_applied": 30}],
    ...                    "mutants": [{"mutant": "m", "runs": 4, "oracle_not_applied": 4}]})
    ['mine.py:Mine: 30 of 30 runs (the protocol declares failure_free_oracle = False)', 'mutant m: 4 of 4 runs (the mutant declares failure_free_oracle = False)']
    """
    if s.get("oracle") is False:
        return ["every run: the oracle was off (--no-oracle)"]
    return [
        f"{p['protocol']}: {p['oracle_not_applied']:,} of {p['runs']:,} runs ({OPTED_OUT})"
        for p in s["protocols"]
        if p.get("oracle_not_applied")
    ] + [
        f"mutant {m['mutant']}: {m['oracle_not_applied']:,} of {m['runs']:,} runs ({MUTANT_OPTED_OUT})"
        for m in s.get("mutants", [])
        if m.get("oracle_not_applied")
    ]


def _subject(f: dict) -> str:
    """What a failing run ran: its protocol, or the mutant (a run the kit failed on).

    >>> _subject({"protocol": "unaligned", "mutant": None}), _subject({"protocol": "unc", "mutant": "unc-no-logging"})
    ('unaligned', 'mutant unc-no-logging of unc')
    """
    return f"mutant {f['mutant']} of {f['protocol']}" if f.get("mutant") else f["protocol"]


def judged_little(s: dict) -> list[str]:
    """For each correct protocol at least half of whose runs were inconclusive (every final
    round aborted, or no end state for the exactly-once oracle to compare), a warning: its
    runs judged little, whatever the verdict says (a protocol under which no round ever
    completes passes every safety check).

    >>> judged_little({"protocols": [{"protocol": "mine.py:Mine", "runs": 6, "inconclusive": 6}]})  # doctest: +ELLIPSIS
    ['mine.py:Mine: 6 of its 6 runs were inconclusive (every final round aborted, ...']
    """
    return [
        f"{p['protocol']}: {p['inconclusive']:,} of its {p['runs']:,} runs were inconclusive (every final round "
        "aborted, or the exactly-once oracle had no end state to compare): they judged little, whatever the "
        "verdict says; a protocol under which no round completes passes every safety check"
        for p in s["protocols"]
        if p.get("inconclusive", 0) and 2 * p["inconclusive"] >= p["runs"]
    ]


def rescale_hints(s: dict) -> list[str]:
    """For each protocol all of whose failing runs (two or more) were restored at another
    parallelism, a hint that its failures may be about rescales alone: a protocol that is
    not meant to survive one declares ``rescalable = False``.

    >>> run = {"protocol": "mine.py:Mine", "mutant": None, "command": "snapcheck simulate --rescale restart@900:3"}
    >>> rescale_hints({"failing_runs": [run, run]})  # doctest: +ELLIPSIS
    ['mine.py:Mine: all 2 of its failing runs were restored at another parallelism (--rescale); ...']
    """
    failing: dict[str, list[bool]] = {}
    for f in s["failing_runs"]:
        if not f.get("mutant"):
            failing.setdefault(f["protocol"], []).append(" --rescale " in f["command"] + " ")
    return [
        f"{name}: all {len(runs)} of its failing runs were restored at another parallelism (--rescale); "
        "if it is not meant to survive a rescale, declare rescalable = False (docs/protocols.md, "
        '"A protocol under a rescale")'
        for name, runs in sorted(failing.items())
        if len(runs) >= 2 and all(runs)
    ]


def _why(f: dict) -> str:
    """Why a failing run failed: its error, the checker's kinds, the oracle, or the specification."""
    reject = f"TLA+ REJECT: {f['conform_detail']}" if f.get("conform") == "reject" else ""
    broke = f"the protocol broke {f['protocol_error']}" if f.get("protocol_error") else ""
    return "; ".join(x for x in (f["error"] or f["violation_kinds"] or "", broke, reject) if x) or f["oracle"]


CONFORM_COLUMNS = (
    ("chosen", "chosen"),
    ("conformed", "conformed"),
    ("accepted", "accepted"),
    ("rejected", "rejected"),
    ("outside", "outside"),
    ("no_spec", "no spec"),
    ("no_java", "no java"),
    ("errors", "errors"),
    ("disagreements", "disagreements"),
)


def _reasons(c: dict) -> str:
    return ", ".join(f"{k} {v:,}" for k, v in c["outside_reasons"].items()) or "-"


def _share(fraction: float) -> str:
    """The share of a campaign's runs ``--conform`` chose, in words.

    >>> _share(1), _share(0.01)
    ('every run', '0.01 of the runs')
    """
    return "every run" if fraction >= 1 else f"{fraction:g} of the runs"


def conformance_table(s: dict):
    """The conformance table for the console."""
    from rich.markup import escape
    from rich.table import Table

    t = Table(title=f"TLA+ conformance ({_share(s['conform_fraction'])})", title_justify="left")
    t.add_column("protocol / mutant", no_wrap=True)
    t.add_column("spec")
    for _, head in CONFORM_COLUMNS:
        t.add_column(head, justify="right")
    t.add_column("outside: first unmodelled event")
    for c in s["conformance"]:
        cells = [_fmt(c[k]) for k, _ in CONFORM_COLUMNS]
        if c["disagreements"]:
            cells[-1] = f"[red]{cells[-1]}[/]"
        t.add_row(escape(c["mutant"] or c["protocol"]), ", ".join(c["specs"]) or "-", *cells, escape(_reasons(c)))
    return t


def conformance_markdown(s: dict) -> list[str]:
    if not s.get("conformance"):
        return []
    out = [
        "",
        f"## TLA+ conformance ({_share(s['conform_fraction'])})",
        "",
        "Chosen runs validated against their protocol's trace specification; a mutant's REJECT is a catch, "
        "a correct run's REJECT a failing run. Outside: the first event the specification does not model.",
        "",
        "| protocol / mutant | spec | " + " | ".join(h for _, h in CONFORM_COLUMNS) + " | outside: events |",
        "|---|---|" + "---:|" * len(CONFORM_COLUMNS) + "---|",
    ]
    for c in s["conformance"]:
        out.append(
            f"| {c['mutant'] or c['protocol']} | {', '.join(c['specs']) or '-'} | "
            + " | ".join(_fmt(c[k]) for k, _ in CONFORM_COLUMNS)
            + f" | {_reasons(c)} |"
        )
    errors = [e for c in s["conformance"] for e in c["error_examples"]]
    if errors:
        out += ["", "Not conformed (errors, no Java, no trace), first examples:", ""]
        out += [f"- {e}" for e in errors]
    out += ["", "## Disagreements between the specification and the checker", ""]
    if not s["disagreements"]:
        out.append("None.")
    for d in s["disagreements"]:
        out += [
            f"- run {d['run_id']}, seed {d['seed']} ({d['mutant'] or d['protocol']}, {d['spec']}): {d['why']}",
            f"  - specification: {d['spec_verdict']} {d['spec_detail'] or ''}".rstrip(),
            f"  - checker: {d['checker_verdict']}",
            f"  - trace: {d['trace']}",
            "",
            "  ```",
            f"  {d['command']}",
            "  ```",
        ]
    return out


def write(s: dict, out_dir: str) -> tuple[str, str]:
    """summary.md and summary.json under ``out_dir``, each written whole or not at all."""
    from snapcheck.traces.atomic import write_atomic

    md = os.path.join(out_dir, "summary.md")
    js = os.path.join(out_dir, "summary.json")
    write_atomic(md, markdown(s))
    write_atomic(js, orjson.dumps(s, option=orjson.OPT_INDENT_2))
    return md, js


def print_summary(s: dict, console) -> None:
    from rich.markup import escape

    t, m = rich_tables(s)
    console.print(t)
    if s["mutants"]:
        console.print(m)
    if s["mutants_not_run"]:
        console.print(
            f"[yellow]mutants selected but not run (campaign too small):[/] {escape(', '.join(s['mutants_not_run']))}",
            emoji=False,
        )
    if s.get("conformance"):
        console.print(conformance_table(s))
    for d in s.get("disagreements", ())[:PRINT_FAILURES]:
        console.print(
            f"[red]DISAGREEMENT[/] run {d['run_id']}, seed {d['seed']} ({escape(d['mutant'] or d['protocol'])}): "
            f"{escape(d['why'])}\n"
            f"  spec {d['spec_verdict']}: {escape(str(d['spec_detail'] or '-'))}\n  checker: {escape(d['checker_verdict'])}"
            f"\n  {escape(d['command'])}",
            highlight=False,
            emoji=False,  # FILE:end: is a location
        )
    if s.get("workdir") and (s["failing_runs"] or any(x["escaped"] for x in s["mutants"])):
        console.print(_workdir_note(s), markup=False, highlight=False)
    for f in s["failing_runs"][:PRINT_FAILURES]:
        why = _why(f)
        console.print(
            f"[red]FAILING[/] run {f['run_id']}, seed {f['seed']} ({escape(_subject(f))}): {escape(str(why))}\n"
            f"  {escape(f['command'])}",
            highlight=False,
            emoji=False,
        )
    if len(s["failing_runs"]) > PRINT_FAILURES:
        console.print(f"… and {len(s['failing_runs']) - PRINT_FAILURES} more (see summary.md)")
    for hint in rescale_hints(s):
        console.print(f"[yellow]hint[/] {escape(hint)}", highlight=False, emoji=False)
    for warning in judged_little(s):
        console.print(f"[yellow]warning[/] {escape(warning)}", highlight=False, emoji=False)
    for x in s["mutants"]:
        if x["escaped"]:
            console.print(
                f"[red]ESCAPED[/] mutant {escape(x['mutant'])}: {x['runs']} run(s), none caught"
                f"{_inconclusive_note(x)}; e.g.\n  "
                f"{escape(x['escaped_runs'][0])}",
                highlight=False,
                emoji=False,
            )
    for p in s["protocols"]:
        if p.get("properties_never_judged"):
            props = ", ".join(x["property"] for x in p["properties_never_judged"])
            console.print(
                f"[yellow]not judged[/] {escape(p['protocol'])}: no run was judged for {escape(props)} "
                "(summary.md, 'Properties no run judged')",
                highlight=False,
                emoji=False,
            )
    for name, c in (s.get("coverage") or {}).items():
        if c["unreached"]:
            console.print(
                f"[yellow]not explored[/] {escape(name)}: no run reached {escape(', '.join(c['unreached']))}",
                emoji=False,
            )
    for p in s["protocols"]:
        if p.get("faults_not_fired"):
            console.print(
                f"[yellow]not fired[/] {escape(p['protocol'])}: {p['faults_not_fired']:,} of {p['runs']:,} runs had a "
                "requested crash whose moment never came (no recovery from it tested; results: faults_not_fired)",
                highlight=False,
                emoji=False,
            )
    for line in oracle_not_judged(s):
        console.print(f"[yellow]not judged[/] {escape(line)}", highlight=False, emoji=False)
