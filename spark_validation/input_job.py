"""``snapcheck validate --input traces.parquet``: check external traces in the v1 Parquet form on Spark.

Stages (every row of the input is accounted for: rows in = rows checked + rows
quarantined, verified and reported):

1. **Quarantine** (``parquet_input``, Spark-native): malformed rows and the
   rest of their traces.
2. **Per-trace validation and checker** (``trace_udf``, grouped Arrow UDF):
   each remaining trace is validated completely and checked by
   ``checker.check_trace`` — Z-cycles (useless checkpoints), the recovery line
   for the failure set (and for "all"), observed recoveries, termination. A
   trace the validator rejects is quarantined too. ``native_only`` skips this
   stage (fast, but then only the Spark-native rules guard the input).
3. **Spark-native cut analysis** (``native_check``): orphans, drops,
   duplicates, phantoms, order, wrong channel and aligned-in-flight for every
   complete round and the given cut, with joins and window functions.
4. The native results are compared with the checker's on every checked trace
   (same subjects, same kinds, same counts); a disagreement is reported (it
   would be a bug in one of them).

Written under ``OUT``: ``violations.parquet`` (one row per native violation),
``traces.parquet`` (one row per checked trace: checker verdict, useless
checkpoints, recovery line, native counts), ``quarantine.parquet`` (every
quarantined row with its reason and its trace's first problem),
``summary.md`` and ``summary.json``. Exit code: 1 when a checked trace has a
violation, else 2 when rows were quarantined, else 0.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import orjson

from snapcheck.traces.parquet import SCHEMA

EXAMPLES = 20


@dataclass
class InputResult:
    summary: dict
    exit_code: int


def validate_input(path: str, out_dir: str, *, master: str | None = None, cut: dict | None = None,
                   failures=None, semantics: str = "partial", native_only: bool = False) -> InputResult:
    from pyspark.sql import functions as F

    from snapcheck.spark_validation.native_check import analyse
    from snapcheck.spark_validation.parquet_input import load, materialize, quarantine
    from snapcheck.spark_validation.session import get_session
    from snapcheck.spark_validation.trace_udf import per_trace

    start = time.perf_counter()
    spark = get_session(master)
    parsed = load(spark, path)
    q = quarantine(parsed)
    rows_in = parsed.count()
    traces_in = parsed.where("trace_id IS NOT NULL").select("trace_id").distinct().count()

    if native_only:
        checked = None
        invalid = spark.createDataFrame([], "trace_id string, problem string")
    else:
        checked = materialize(per_trace(q.clean, cut, failures, semantics))
        invalid = checked.where("NOT valid").select("trace_id", "problem")
    rejected = (q.clean.join(invalid, "trace_id")
                .select(*[f.name for f in SCHEMA], F.lit(None).cast("string").alias("reason"),
                        F.concat(F.lit("trace rejected by validation: "), F.col("problem")).alias("trace_reason")))
    quarantined = q.quarantined.unionByName(rejected)
    clean = q.clean.join(invalid, "trace_id", "left_anti")

    native = analyse(q, cut=cut)
    violations = materialize(native.violations.join(invalid, "trace_id", "left_anti"))
    subjects = native.subjects.join(invalid, "trace_id", "left_anti")

    os.makedirs(out_dir, exist_ok=True)
    quarantined.write.mode("overwrite").parquet(os.path.join(out_dir, "quarantine.parquet"))
    violations.write.mode("overwrite").parquet(os.path.join(out_dir, "violations.parquet"))

    rows_checked = clean.count()
    rows_quarantined = spark.read.parquet(os.path.join(out_dir, "quarantine.parquet")).count()
    if rows_in != rows_checked + rows_quarantined:
        raise RuntimeError(f"row accounting broken: {rows_in} in, {rows_checked} checked, "
                           f"{rows_quarantined} quarantined")
    traces_checked = clean.select("trace_id").distinct().count()

    by_kind = {r["kind"]: r["n"] for r in violations.groupBy("kind").agg(F.count("*").alias("n")).collect()}
    native_traces = violations.select("trace_id").distinct().count()
    n_subjects = subjects.count()
    rules = {r["rule"]: r["n"] for r in q.problems.groupBy("rule").agg(F.count("*").alias("n")).collect()}
    rejected_n = invalid.count()
    if rejected_n:
        rules["rejected-by-validator"] = rejected_n
    examples = [f"{r['trace_id']}:{r['line']}: {r['reason']}" for r in
                q.problems.orderBy("trace_id", "line").limit(EXAMPLES).collect()]
    examples += [f"{r['trace_id']}: {r['problem']}" for r in invalid.orderBy("trace_id").limit(EXAMPLES).collect()]

    summary = {
        "schema": "snapcheck-input-validation", "version": 1, "input": path, "master": master or "local[*]",
        "rows_in": rows_in, "rows_checked": rows_checked, "rows_quarantined": rows_quarantined,
        "traces_in": traces_in, "traces_checked": traces_checked, "traces_quarantined": traces_in - traces_checked,
        "quarantine_rules": dict(sorted(rules.items())), "quarantine_examples": examples[:EXAMPLES],
        "subjects_analysed": n_subjects, "native_violations": dict(sorted(by_kind.items())),
        "native_traces_with_violations": native_traces,
    }
    if checked is not None:
        summary.update(_checker_part(checked, violations, out_dir))
    summary["seconds"] = round(time.perf_counter() - start, 2)
    violating = native_traces or summary.get("checker_traces_with_violations", 0)
    summary["ok"] = not violating and rows_quarantined == 0
    code = 1 if violating else 2 if rows_quarantined else 0
    summary["exit_code"] = code
    _write(summary, out_dir)
    return InputResult(summary, code)


def _checker_part(checked, violations, out_dir: str) -> dict:
    """Checker results per trace, written with the native counts; and the native-vs-checker comparison."""
    from pyspark.sql import functions as F

    valid = checked.where("valid")
    native_counts = (violations.groupBy("trace_id", F.concat_ws("|", "subject", "kind").alias("key"))
                     .agg(F.count("*").cast("bigint").alias("native")))
    checker_counts = (valid.select("trace_id", F.explode(F.from_json("subject_counts", "map<string,bigint>"))
                                   .alias("key", "checker")))
    diff = (native_counts.join(checker_counts, ["trace_id", "key"], "full")
            .where("native IS DISTINCT FROM checker"))
    mismatches = diff.select("trace_id").distinct().count()
    diff_examples = [f"{r['trace_id']} {r['key']}: native {r['native'] or 0}, checker {r['checker'] or 0}"
                     for r in diff.orderBy("trace_id", "key").limit(EXAMPLES).collect()]
    per = (valid.join(violations.groupBy("trace_id").agg(F.count("*").alias("native_violations")), "trace_id", "left")
           .fillna(0, ["native_violations"]))
    per.write.mode("overwrite").parquet(os.path.join(out_dir, "traces.parquet"))
    agg = valid.agg(F.count("*").alias("traces"), F.sum(F.when(~F.col("ok"), 1).otherwise(0)).alias("bad"),
                    F.sum("n_useless").alias("useless"), F.sum("checkpoints").alias("checkpoints"),
                    F.sum(F.col("domino").cast("int")).alias("domino")).collect()[0]
    kinds = {}
    for r in valid.where("violation_kinds <> ''").select(
            F.explode(F.split("violation_kinds", ",")).alias("k")).groupBy("k").count().collect():
        kinds[r["k"]] = r["count"]
    ck = agg["checkpoints"] or 0
    return {
        "checker_traces_with_violations": agg["bad"] or 0,
        "checker_kinds": dict(sorted(kinds.items())),
        "useless_checkpoints": agg["useless"] or 0,
        "useless_pct": round(100.0 * (agg["useless"] or 0) / ck, 3) if ck else 0.0,
        "domino_traces": agg["domino"] or 0,
        "native_vs_checker": {"traces_compared": agg["traces"], "traces_disagreeing": mismatches,
                              "examples": diff_examples},
    }


def markdown(s: dict) -> str:
    out = ["# Parquet trace validation", "", f"Input `{s['input']}` on `{s['master']}`, {s['seconds']} s.", "",
           "| | rows | traces |", "|---|---:|---:|",
           f"| in | {s['rows_in']:,} | {s['traces_in']:,} |",
           f"| checked | {s['rows_checked']:,} | {s['traces_checked']:,} |",
           f"| quarantined | {s['rows_quarantined']:,} | {s['traces_quarantined']:,} |", ""]
    if s["quarantine_rules"]:
        out += ["Quarantine (problems by rule):", ""] + [f"- {k}: {v:,}" for k, v in s["quarantine_rules"].items()]
        out += ["", "First problems:", ""] + [f"- `{e}`" for e in s["quarantine_examples"]] + [""]
    out += [f"Spark-native analysis of {s['subjects_analysed']:,} rounds/cuts: "
            f"{sum(s['native_violations'].values()):,} violations in {s['native_traces_with_violations']:,} traces.",
            ""]
    out += [f"- {k}: {v:,}" for k, v in s["native_violations"].items()]
    if "checker_kinds" in s:
        nv = s["native_vs_checker"]
        out += ["", f"Checker (per trace): {s['checker_traces_with_violations']:,} traces with violations; "
                    f"useless checkpoints {s['useless_checkpoints']:,} ({s['useless_pct']} %); "
                    f"domino effect in {s['domino_traces']:,} traces.", ""]
        out += [f"- {k}: {v:,} traces" for k, v in s["checker_kinds"].items()]
        out += ["", f"Native vs checker on the same rounds/cuts: {nv['traces_compared']:,} traces compared, "
                    f"{nv['traces_disagreeing']:,} disagree."]
        out += [f"- {e}" for e in nv["examples"]]
    out += ["", f"Verdict: **{'OK' if s['ok'] else 'violations found' if s['exit_code'] == 1 else 'bad input'}** "
                f"(exit {s['exit_code']})."]
    return "\n".join(out) + "\n"


def _write(s: dict, out_dir: str) -> None:
    with open(os.path.join(out_dir, "summary.json"), "wb") as f:
        f.write(orjson.dumps(s, option=orjson.OPT_INDENT_2))
    with open(os.path.join(out_dir, "summary.md"), "w") as f:
        f.write(markdown(s))
