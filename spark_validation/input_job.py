"""``snapcheck validate --input traces.parquet``: check external traces in the v1 Parquet form,
on DuckDB in this process (local runs) or on Spark (clusters): the same SQL on both (``sql_engine``).

Stages (every row of the input is accounted for: rows in = rows checked + rows
quarantined, verified and reported):

1. **Quarantine** (``parquet_input``, SQL): malformed rows and the rest of
   their traces.
2. **Per-trace validation and checker** (``trace_udf``): each remaining trace
   is validated completely and checked by ``checker.check_trace`` — Z-cycles
   (useless checkpoints), the recovery line for the failure set (and for
   "all"), observed recoveries, termination. A trace the validator rejects is
   quarantined too. ``native_only`` skips this stage (fast, but then only the
   SQL rules guard the input).
3. **SQL cut analysis** (``native_check``): orphans, drops, duplicates,
   phantoms, order, wrong channel and aligned-in-flight for every complete
   round and the given cut, with joins and window functions.
4. The native results are compared with the checker's on every checked trace
   (same subjects, same kinds, same counts); a disagreement is reported (it
   would be a bug in one of them).

Written under ``OUT``: ``violations.parquet`` (one row per native violation),
``traces.parquet`` (one row per checked trace: checker verdict, useless
checkpoints, recovery line, native counts), ``quarantine.parquet`` (every
quarantined row with its reason and its trace's first problem),
``summary.md`` and ``summary.json``. DuckDB writes each ``.parquet`` as one
file, Spark as a directory of part files; both read back the same. Exit code:
1 when a checked trace has a violation, else 2 when rows were quarantined,
else 4 when a checked trace has no verdict (not one property applied to it:
``snapcheck check``'s rule over many traces, ``checker.report.worst_exit``),
else 0.
"""

from __future__ import annotations

import functools
import os
import time
from collections import Counter
from dataclasses import dataclass

import orjson

from snapcheck.checker.report import VERDICT_EXIT, worst_exit
from snapcheck.traces.atomic import write_atomic
from snapcheck.traces.errors import EXIT_BAD_INPUT, EXIT_CLEAN, EXIT_NOT_JUDGED, EXIT_VIOLATION
from snapcheck.traces.parquet import SCHEMA, escaped

OUTPUT_DATASETS = ("quarantine.parquet", "violations.parquet", "traces.parquet")  # under the output directory

EXAMPLES = 20
ENGINES = ("duckdb", "spark")


@dataclass
class InputResult:
    summary: dict
    exit_code: int


def input_engine(master: str | None, engine: str | None = None) -> str:
    """The engine of ``validate --input``: DuckDB for a local master (or none), Spark for a cluster.

    >>> input_engine(None), input_engine("local[2]"), input_engine("spark://h:7077")
    ('duckdb', 'duckdb', 'spark')
    """
    from snapcheck.spark_validation.session import is_local

    if engine in ENGINES:
        return engine
    return "duckdb" if master is None or is_local(master) else "spark"


def open_engine(name: str, master: str | None, **session_options):
    """A ``sql_engine.Engine``: DuckDB with the local master's cores, or Spark on ``master``."""
    from snapcheck.spark_validation.session import DEFAULT_MASTER, is_local, local_cores

    master = master or DEFAULT_MASTER
    if name == "duckdb":
        from snapcheck.spark_validation.sql_engine import DuckEngine

        if not is_local(master):
            from snapcheck.traces.errors import UsageError

            raise UsageError(f"the DuckDB engine runs in this process: it needs a local master, not {master!r}")
        return DuckEngine(local_cores(master), master)
    from snapcheck.spark_validation.session import get_session
    from snapcheck.spark_validation.sql_engine import SparkEngine

    return SparkEngine(get_session(master, **session_options), master)


def validate_input(
    path: str,
    out_dir: str,
    *,
    master: str | None = None,
    engine: str | None = None,
    cut: dict | None = None,
    failures=None,
    semantics: str = "partial",
    native_only: bool = False,
    session_options: dict | None = None,
) -> InputResult:
    """Check the traces of a v1 Parquet file or directory; results under ``out_dir``. ``engine``:
    "duckdb" or "spark" (default: ``input_engine(master)``)."""
    from snapcheck.spark_validation.output_dirs import check_replaceable
    from snapcheck.spark_validation.parquet_input import check_files

    name = input_engine(master, engine)
    start = time.perf_counter()
    check_files(path)
    for dataset in OUTPUT_DATASETS:  # before the work: replacing one never deletes a file of the user's
        check_replaceable(os.path.join(out_dir, dataset))
    eng = open_engine(name, master, **(session_options or {}))
    try:
        summary = _run(eng, path, out_dir, cut, failures, semantics, native_only)
    except Exception as exc:
        from snapcheck.spark_validation.session import executor_environment_error

        err = executor_environment_error(exc, master) if name == "spark" else None
        if err is None:
            raise
        raise err from None
    finally:
        eng.close()
    summary.update(engine=name, seconds=round(time.perf_counter() - start, 2))
    _write(summary, out_dir)
    return InputResult(summary, summary["exit_code"])


def _run(eng, path, out_dir, cut, failures, semantics, native_only) -> dict:
    from snapcheck.spark_validation.native_check import analyse
    from snapcheck.spark_validation.parquet_input import load, quarantine
    from snapcheck.spark_validation.trace_udf import check_rows

    cols = ", ".join(f.name for f in SCHEMA)
    load(eng, path)
    q = quarantine(eng)
    rows_in = eng.value("SELECT count(*) AS n FROM q_input")
    traces_in = eng.value(f"SELECT count(DISTINCT trace_id) AS n FROM {q.rows} WHERE trace_id IS NOT NULL")

    if native_only:
        eng.view(
            "i_invalid",
            "SELECT trace_id, problem FROM (SELECT CAST(NULL AS STRING) AS trace_id, "
            "CAST(NULL AS STRING) AS problem) WHERE false",
        )
    else:
        eng.checked(
            "i_checked", q.clean, functools.partial(check_rows, cut=cut, failures=failures, semantics=semantics)
        )
        eng.view("i_invalid", "SELECT trace_id, problem FROM i_checked WHERE NOT valid")
    eng.view(
        "i_quarantined",
        f"""
        SELECT * FROM {q.quarantined}
        UNION ALL
        SELECT {cols}, CAST(NULL AS STRING) AS reason, 'trace rejected by validation: ' || problem AS trace_reason
        FROM {q.clean} JOIN i_invalid USING (trace_id)""",
    )
    eng.view("i_clean", f"SELECT * FROM {q.clean} ANTI JOIN i_invalid USING (trace_id)")

    native = analyse(eng, q, cut=cut)
    eng.table("i_violations", f"SELECT * FROM {native.violations} ANTI JOIN i_invalid USING (trace_id)")
    eng.view("i_subjects", f"SELECT * FROM {native.subjects} ANTI JOIN i_invalid USING (trace_id)")

    os.makedirs(out_dir, exist_ok=True)
    q_path = os.path.join(out_dir, OUTPUT_DATASETS[0])
    eng.write_parquet("SELECT * FROM i_quarantined", q_path)
    eng.write_parquet("SELECT * FROM i_violations", os.path.join(out_dir, OUTPUT_DATASETS[1]))

    rows_checked = eng.value("SELECT count(*) AS n FROM i_clean")
    eng.read_parquet("i_quarantine_back", q_path)
    rows_quarantined = eng.value("SELECT count(*) AS n FROM i_quarantine_back")
    if rows_in != rows_checked + rows_quarantined:
        raise RuntimeError(
            f"row accounting broken: {rows_in} in, {rows_checked} checked, {rows_quarantined} quarantined"
        )
    traces_checked = eng.value("SELECT count(DISTINCT trace_id) AS n FROM i_clean")

    by_kind = {r["kind"]: r["n"] for r in eng.rows("SELECT kind, count(*) AS n FROM i_violations GROUP BY kind")}
    native_traces = eng.value("SELECT count(DISTINCT trace_id) AS n FROM i_violations")
    n_subjects = eng.value("SELECT count(*) AS n FROM i_subjects")
    rules = {r["rule"]: r["n"] for r in eng.rows(f"SELECT rule, count(*) AS n FROM {q.problems} GROUP BY rule")}
    rejected_n = eng.value("SELECT count(*) AS n FROM i_invalid")
    if rejected_n:
        rules["rejected-by-validator"] = rejected_n
    examples = [
        f"{r['trace_id']}:{r['line']}: {r['reason']}"
        for r in eng.rows(
            f"SELECT trace_id, line, reason FROM {q.problems} ORDER BY trace_id NULLS FIRST, line NULLS FIRST, "
            f"reason NULLS FIRST LIMIT {EXAMPLES}"
        )
    ]
    examples += [
        f"{r['trace_id']}: {r['problem']}"
        for r in eng.rows(f"SELECT trace_id, problem FROM i_invalid ORDER BY trace_id LIMIT {EXAMPLES}")
    ]

    summary = {
        "schema": "snapcheck-input-validation",
        "version": 2,  # 2: exit code 4 (a checked trace with nothing judged), ok = exit code 0
        "input": path,
        "master": eng.master,
        "rows_in": rows_in,
        "rows_checked": rows_checked,
        "rows_quarantined": rows_quarantined,
        "traces_in": traces_in,
        "traces_checked": traces_checked,
        "traces_quarantined": traces_in - traces_checked,
        "quarantine_rules": dict(sorted(rules.items())),
        "quarantine_examples": examples[:EXAMPLES],
        "subjects_analysed": n_subjects,
        "native_violations": dict(sorted(by_kind.items())),
        "native_traces_with_violations": native_traces,
        "native_violation_examples": [
            f"{r['trace_id']}: {r['kinds']}"
            for r in eng.rows(
                f"SELECT trace_id, {eng.dialect.joined('kind')} AS kinds FROM i_violations "
                f"GROUP BY trace_id ORDER BY trace_id LIMIT {EXAMPLES}"
            )
        ],
    }
    codes = [EXIT_VIOLATION if native_traces else EXIT_CLEAN]
    if native_only:  # only the SQL rules judge: a trace with no complete round (and no --cut) has no verdict
        unjudged = "SELECT DISTINCT trace_id FROM i_clean ANTI JOIN i_subjects USING (trace_id)"
        summary["native_traces_not_judged"] = n_unjudged = eng.value(f"SELECT count(*) AS n FROM ({unjudged})")
        summary["not_judged_examples"] = [
            r["trace_id"] for r in eng.rows(f"SELECT trace_id FROM ({unjudged}) ORDER BY trace_id LIMIT {EXAMPLES}")
        ]
        codes += [EXIT_NOT_JUDGED] if n_unjudged else []
    else:
        summary.update(_checker_part(eng, out_dir))
        codes += [VERDICT_EXIT[r["verdict"]] for r in eng.rows("SELECT DISTINCT verdict FROM i_valid")]
    exit_code = worst_exit(codes)  # over the checked traces, as snapcheck check: violation, then nothing judged
    if rows_quarantined and exit_code != EXIT_VIOLATION:  # a violation found outweighs rows not checked
        exit_code = EXIT_BAD_INPUT
    unfit = summary.get("options_not_applicable", 0)
    if unfit and unfit == summary.get("traces_checked") and exit_code != EXIT_VIOLATION:
        exit_code = EXIT_BAD_INPUT  # --cut or --failures fits no trace: a mistake of the command, not a verdict
    summary["ok"] = exit_code == EXIT_CLEAN
    summary["exit_code"] = exit_code
    return summary


def _checker_part(eng, out_dir: str) -> dict:
    """Checker results per trace, written with the native counts; and the native-vs-checker comparison."""
    d = eng.dialect
    eng.view("i_valid", "SELECT * FROM i_checked WHERE valid")
    eng.table(
        "i_diff",
        f"""
        SELECT trace_id, key, native, checker FROM (
          SELECT trace_id, key, count(*) AS native
          FROM (SELECT trace_id, subject || '|' || kind AS key FROM i_violations) GROUP BY trace_id, key)
        FULL OUTER JOIN (SELECT trace_id, {d.explode_counts("subject_counts", "key", "checker")} FROM i_valid)
             USING (trace_id, key)
        WHERE native IS DISTINCT FROM checker""",
    )
    mismatches = eng.value("SELECT count(DISTINCT trace_id) AS n FROM i_diff")
    diff_examples = [
        f"{r['trace_id']} {r['key']}: native {r['native'] or 0}, checker {r['checker'] or 0}"
        for r in eng.rows(f"SELECT * FROM i_diff ORDER BY trace_id, key LIMIT {EXAMPLES}")
    ]
    eng.write_parquet(
        """
        SELECT v.*, coalesce(nv.n, 0) AS native_violations FROM i_valid v
        LEFT JOIN (SELECT trace_id, count(*) AS n FROM i_violations GROUP BY trace_id) nv
               ON nv.trace_id = v.trace_id""",
        os.path.join(out_dir, OUTPUT_DATASETS[2]),
    )
    agg = eng.rows("""
        SELECT count(*) AS traces, CAST(sum(CASE WHEN verdict = 'violation' THEN 1 ELSE 0 END) AS BIGINT) AS bad,
               CAST(sum(CASE WHEN verdict = 'not-judged' THEN 1 ELSE 0 END) AS BIGINT) AS not_judged,
               CAST(sum(n_useless) AS BIGINT) AS useless, CAST(sum(checkpoints) AS BIGINT) AS checkpoints,
               CAST(sum(CASE WHEN domino THEN 1 ELSE 0 END) AS BIGINT) AS domino
        FROM i_valid""")[0]
    kinds: Counter = Counter()
    for r in eng.rows(
        "SELECT violation_kinds, count(*) AS n FROM i_valid WHERE violation_kinds <> '' GROUP BY violation_kinds"
    ):
        for k in r["violation_kinds"].split(","):
            kinds[k] += r["n"]
    from snapcheck.spark_validation.trace_udf import OPTIONS_UNFIT

    ck = agg["checkpoints"] or 0
    unfit = eng.rows(
        f"SELECT trace_id, notes FROM i_valid WHERE notes LIKE '{OPTIONS_UNFIT}%' ORDER BY trace_id"
    )  # (few: a --cut or --failures given for traces of other jobs)
    not_judged = [
        r["trace_id"]
        for r in eng.rows(
            f"SELECT trace_id FROM i_valid WHERE verdict = 'not-judged' ORDER BY trace_id LIMIT {EXAMPLES}"
        )
    ]
    failing = [
        f"{r['trace_id']}: {r['violation_kinds']}"
        for r in eng.rows(
            "SELECT trace_id, violation_kinds FROM i_valid WHERE verdict = 'violation' "
            f"ORDER BY trace_id LIMIT {EXAMPLES}"
        )
    ]
    return {
        "checker_traces_with_violations": agg["bad"] or 0,
        "violation_examples": failing,
        "checker_traces_not_judged": agg["not_judged"] or 0,
        "not_judged_examples": not_judged,
        "checker_kinds": dict(sorted(kinds.items())),
        "useless_checkpoints": agg["useless"] or 0,
        "useless_pct": round(100.0 * (agg["useless"] or 0) / ck, 3) if ck else 0.0,
        "domino_traces": agg["domino"] or 0,
        "options_not_applicable": len(unfit),
        "options_not_applicable_examples": [
            f"{r['trace_id']}: {r['notes'].split(';')[0][len(OPTIONS_UNFIT) :]}" for r in unfit[:EXAMPLES]
        ],
        "native_vs_checker": {
            "traces_compared": agg["traces"],
            "traces_disagreeing": mismatches,
            "examples": diff_examples,
        },
    }


VERDICT_WORDS = {
    EXIT_CLEAN: "OK",
    EXIT_VIOLATION: "violations found",
    EXIT_BAD_INPUT: "bad input",
    EXIT_NOT_JUDGED: "NOTHING JUDGED",
}


def markdown(s: dict) -> str:
    out = [
        "# Parquet trace validation",
        "",
        f"Input `{s['input']}` on {_engine_label(s)}, {s['seconds']} s.",
        "",
        "| | rows | traces |",
        "|---|---:|---:|",
        f"| in | {s['rows_in']:,} | {s['traces_in']:,} |",
        f"| checked | {s['rows_checked']:,} | {s['traces_checked']:,} |",
        f"| quarantined | {s['rows_quarantined']:,} | {s['traces_quarantined']:,} |",
        "",
    ]
    if s["quarantine_rules"]:
        out += ["Quarantine (problems by rule):", ""] + [f"- {k}: {v:,}" for k, v in s["quarantine_rules"].items()]
        out += ["", "First problems:", ""] + [f"- `{e}`" for e in s["quarantine_examples"]] + [""]
    out += [
        f"SQL analysis of {s['subjects_analysed']:,} rounds/cuts: "
        f"{sum(s['native_violations'].values()):,} violations in {s['native_traces_with_violations']:,} traces.",
        "",
    ]
    out += [f"- {k}: {v:,}" for k, v in s["native_violations"].items()]
    out += _named_traces(s["native_traces_with_violations"], s["native_violation_examples"], "with violations")
    if s.get("native_traces_not_judged"):
        n = s["native_traces_not_judged"]
        out += _bold_list(
            n,
            s["not_judged_examples"],
            f"**Nothing judged** in {n:,} checked traces: with `--native-only` only the SQL analysis judges, and "
            "they have no complete round (and no `--cut` was given), so they have no verdict",
        )
    if "checker_kinds" in s:
        nv = s["native_vs_checker"]
        out += [
            "",
            f"Checker (per trace): {s['checker_traces_with_violations']:,} traces with violations; "
            f"useless checkpoints {s['useless_checkpoints']:,} ({s['useless_pct']} %); "
            f"domino effect in {s['domino_traces']:,} traces.",
            "",
        ]
        out += [f"- {k}: {v:,} traces" for k, v in s["checker_kinds"].items()]
        if s.get("options_not_applicable"):
            n = s["options_not_applicable"]
            out += _bold_list(
                n,
                s["options_not_applicable_examples"],
                f"**Options not applied** to {n:,} of the {s['traces_checked']:,} checked traces: the `--cut` or "
                "`--failures` given names a process or checkpoint they do not have, so the checker judged them "
                "without it" + (" (it fits no trace: exit 2)" if n == s["traces_checked"] else ""),
            )
        out += _named_traces(s["checker_traces_with_violations"], s["violation_examples"], "with violations")
        if s["checker_traces_not_judged"]:
            n = s["checker_traces_not_judged"]
            out += _bold_list(
                n,
                s["not_judged_examples"],
                f"**Nothing judged** in {n:,} checked traces: not one property applied to them, so they have no "
                "verdict, neither clean nor a violation (traces.parquet: `verdict` not-judged, `not_judged` "
                "says why)",
            )
        out += [
            "",
            f"Native vs checker on the same rounds/cuts: {nv['traces_compared']:,} traces compared, "
            f"{nv['traces_disagreeing']:,} disagree.",
        ]
        out += [f"- {e}" for e in nv["examples"]]
    out += [
        "",
        f"Verdict: **{VERDICT_WORDS[s['exit_code']]}** (exit {s['exit_code']}).",
    ]
    return "\n".join(escaped(line) for line in out) + "\n"


def _bold_list(n: int, shown: list[str], head: str) -> list[str]:
    """Markdown lines: a paragraph ``head`` about ``n`` items, then the ``shown`` ones (the
    first ``len(shown)`` of ``n``), each as code."""
    return ["", head + (f"; the first {len(shown)}:" if len(shown) < n else ":"), ""] + [f"- `{t}`" for t in shown]


def _named_traces(n: int, shown: list[str], what: str) -> list[str]:
    """Markdown lines naming the traces ``what`` (the first ``len(shown)`` of ``n``)."""
    if not n:
        return []
    head = f"Traces {what}" + (f" (the first {len(shown)} of {n:,}):" if len(shown) < n else ":")
    return ["", head, ""] + [f"- `{t}`" for t in shown]


def _engine_label(s: dict) -> str:
    return f"DuckDB (`{s['master']}`)" if s.get("engine") == "duckdb" else f"Spark `{s['master']}`"


def _write(s: dict, out_dir: str) -> None:
    """summary.json and summary.md, each written whole or not at all."""
    for name, data in (
        ("summary.json", orjson.dumps(s, option=orjson.OPT_INDENT_2)),
        ("summary.md", markdown(s).encode()),
    ):
        write_atomic(os.path.join(out_dir, name), data)
