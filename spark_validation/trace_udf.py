"""Per-trace analyses that need a graph: each trace rebuilt from its Parquet rows and checked.

Z-cycles (useless checkpoints), recovery lines and every other property of
``checker.check_trace`` work on the whole trace, so the rows of each trace are
grouped (``sql_engine``: on Spark ``groupBy("trace_id").applyInArrow``, the
grouped-map UDF mechanism with Arrow tables, which keep 64-bit integers exact
where pandas would turn nullable columns into floats; on DuckDB the rows sorted
by trace and cut into chunks of whole traces for a pool of processes), put back
in line order, validated
with ``traces.TraceValidator`` (every rule of the format, including
happened-before cycles, which the SQL quarantine cannot see) and
checked with the protocol facts of the trace header completed by the
catalogue's (``header_facts``), exactly as ``snapcheck check`` does. One result
row per trace: its ``verdict`` (``clean``, ``violation`` or ``not-judged`` when
not one property applied, as ``snapcheck check`` says), ``ok`` (the verdict is
clean), the properties ``judged`` and those ``not_judged`` with the reason (JSON,
as in ``check --json``); a trace the validator rejects is reported with its first
problem and quarantined by the caller.
"""

from __future__ import annotations

from dataclasses import replace

import orjson


def native_cannot_judge(v) -> bool:
    """Whether violation ``v`` of a round or cut is one the SQL engines' own analysis does
    not look for: an orphan whose send a restore undid (``witness.undone``; the engines
    judge cuts on the effective history, which no longer has the send). The checker's
    verdict has it; the native-vs-checker comparison leaves it out.

    >>> from snapcheck.checker.report import Violation
    >>> native_cannot_judge(Violation("orphan", "consistency", "round 1", "...", [3], {"messages": ["m"], "undone": 9}))
    True
    """
    return (v.witness or {}).get("undone") is not None


ROUND_KINDS = ("orphan", "dropped", "phantom", "order", "duplicate-recorded", "wrong-channel", "aligned-in-flight")

RESULT_SCHEMA = (
    "trace_id string, events bigint, valid boolean, problem string, problems bigint, verdict string, "
    "ok boolean, judged string, not_judged string, violation_kinds string, violations bigint, useless string, n_useless bigint, checkpoints bigint, "
    "recovery_line string, rollback_checkpoints bigint, domino boolean, subject_counts string, "
    "notes string"
)


OPTIONS_UNFIT = "options not applicable: "  # how a trace's notes begin when --cut or --failures did not fit it


def check_rows(rows: list[dict], trace_id: str, cut: dict | None, failures, semantics: str) -> dict:
    """Validate and check one trace given as Parquet rows (any order); the result row."""
    from snapcheck.checker import CheckOptions, check_trace
    from snapcheck.checker.free_fields import UnreadableField
    from snapcheck.checker.options import CheckerUsageError
    from snapcheck.reference.catalogue import header_facts
    from snapcheck.traces.model import Trace
    from snapcheck.traces.parquet import dict_of, line_problem, typed_fields
    from snapcheck.traces.validate import TraceValidator

    rows.sort(key=lambda r: (r["line"] is None, r["line"] or 0))
    out = dict.fromkeys(n.split()[0] for n in RESULT_SCHEMA.split(", "))
    out.update(trace_id=trace_id, events=len(rows) - 1, valid=False, problems=0)
    v = TraceValidator(trace_id)
    events = []
    header = None
    last = 0
    for r in rows:
        problem, read = line_problem(r["line"], last)
        if problem is not None:
            v.error(r["line"] or last, problem)
        if not read:
            continue
        line = last = r["line"]
        try:
            obj, is_header = dict_of(r)
        except orjson.JSONDecodeError as exc:
            v.refuse(line, f"malformed JSON in column 'extra': {exc}", typed_fields(r))
            continue
        if is_header:
            if header is not None:
                v.error(line, "a second header row (a trace has one header, its first row)")
                continue
            header = v.header(obj, line)
            continue
        if header is None:
            v.error(line, "event before the header row")
            break
        ev = v.event(obj, line)
        if ev is not None:
            events.append(ev)
    if header is not None:
        v.finish()
    if not v.ok or header is None:
        first = v.errors[0] if v.errors else None
        out.update(
            problem=f"line {first.line}: {first.reason}" if first else "no header row", problems=max(1, v.total_errors)
        )
        return out
    trace = Trace(header, events, trace_id)
    facts = header_facts(header.protocol)
    opts = CheckOptions(
        cut=cut,
        failures=failures,
        semantics=semantics,
        crosscheck=False,
        max_witnesses=1,
        max_per_result=10**9,
        facts=facts,
    )
    notes = []
    try:
        try:
            report = check_trace(trace, opts)
        except UnreadableField:
            raise
        except CheckerUsageError as exc:  # the cut or failure set does not fit this trace (traces of other jobs)
            notes.append(f"{OPTIONS_UNFIT}{exc}")
            report = check_trace(trace, replace(opts, cut=None, failures=None))
    except CheckerUsageError as exc:  # a field it cannot read: bad input of this trace, as `snapcheck check` says
        out.update(problem=str(exc)[:500], problems=1)  # (it ended the whole job with a traceback)
        return out
    except Exception as exc:  # a trace the checker cannot analyse is a problem of this trace
        out.update(problem=f"checker: {type(exc).__name__}: {exc}"[:500], problems=1)
        return out
    counts: dict[str, int] = {}
    for v_ in report.violations:
        if (
            v_.kind in ROUND_KINDS
            and (v_.subject.startswith("round ") or v_.subject.startswith("cut "))
            and not native_cannot_judge(v_)
        ):
            key = f"{'cut' if v_.subject.startswith('cut ') else v_.subject}|{v_.kind}"
            counts[key] = counts.get(key, 0) + 1
    rec = report.recovery.get("all", {})
    line = report.recovery_lines.get("all")
    out.update(
        valid=True,
        verdict=report.verdict,
        ok=report.verdict == "clean",
        judged=",".join(report.judged),
        not_judged=orjson.dumps(report.not_judged_json()).decode(),
        violation_kinds=",".join(sorted(report.kinds)),
        violations=sum(len(r.violations) + r.omitted for r in report.results),
        useless=",".join(f"{p}:{c}" for p, c in report.useless),
        n_useless=len(report.useless),
        checkpoints=report.stats.get("checkpoints", 0),
        recovery_line=orjson.dumps(line, option=orjson.OPT_SORT_KEYS).decode() if line is not None else None,
        rollback_checkpoints=rec.get("distance", {}).get("checkpoints_rolled_back"),
        domino=bool(rec.get("domino", False)),
        subject_counts=orjson.dumps(counts, option=orjson.OPT_SORT_KEYS).decode(),
        notes="; ".join(notes + report.notes)[:2000] or None,
    )
    return out


def arrow_result_schema():
    import pyarrow as pa

    types = {"string": pa.string(), "bigint": pa.int64(), "boolean": pa.bool_()}
    return pa.schema([(n, types[t]) for n, t in (f.split() for f in RESULT_SCHEMA.split(", "))])
