"""Loading v1 Parquet traces and quarantining malformed rows, in SQL (DuckDB or Spark).

The Parquet form (docs/trace-format.md, ``traces/parquet.py``) has one row per
event, many traces per file. Every row of the input ends up in exactly one of
two places: **checked** (its trace is well formed) or **quarantined** (its trace
has at least one problem), so ``rows in = rows checked + rows quarantined``.
A trace is quarantined as a whole, because checking the rest of a trace whose
rows are damaged would silently change verdicts (a lost ``recv`` row hides an
orphan).

The checks here are SQL statements that either engine runs (``sql_engine``:
DuckDB or Spark; joins and window functions). They mirror the row-level and
referential rules of ``traces.validate``: event
type, required typed columns per type, JSON in ``extra``, known process and
channel, the right end of the channel, per-process ``idx`` = 0, 1, 2, …,
increasing checkpoint numbers, a restore or record of a checkpoint that was
taken, no event between ``fail`` and ``restore``, unique message ids, and no
reference to a message never sent. Whole-trace rules that need a graph
(happened-before cycles) are left to the per-trace validation stage
(``trace_udf``), whose rejections are quarantined the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from snapcheck.traces.model import EVENT_TYPES, MARKERS
from snapcheck.traces.parquet import SCHEMA, check_columns, scan

_TYPES_SQL = ", ".join(f"'{t}'" for t in EVENT_TYPES)
_CH_TYPES = "('send','recv','arrive','discard','replay','record','log','log_truncate')"
_MID_TYPES = "('send','recv','arrive','discard','replay')"
_MARKERS_SQL = ", ".join(f"'{k}'" for k in sorted(MARKERS))  # barrier, cancel

# Each rule: (condition, rule name, reason). The first rule whose condition holds decides.
# Row rules need no other row; ``json_ok``: ``extra`` is JSON (or NULL), ``hdr`` the header struct,
# ``hdr_v1`` its version is 1, ``mids_ok`` ``extra.mids`` is a list of strings (NULL when absent).
ROW_RULES = (
    ("type IS NULL", "missing-type", "'missing type'"),
    (f"type <> 'header' AND type NOT IN ({_TYPES_SQL})", "unknown-event-type", "concat('unknown event type ', type)"),
    ("NOT json_ok", "malformed-json", "'malformed JSON in column extra'"),
    (
        "type = 'header' AND (hdr IS NULL OR hdr.format IS DISTINCT FROM 'snapcheck-trace' "
        "OR NOT hdr_v1 OR hdr.processes IS NULL OR cardinality(hdr.processes) = 0 OR hdr.channels IS NULL)",
        "bad-header",
        "'bad header: not a snapcheck-trace v1 header with processes and channels'",
    ),
    ("type = 'header'", None, None),
    ("proc IS NULL", "missing-field", "'missing field proc'"),
    ("idx IS NULL OR idx < 0", "missing-field", "'missing or negative idx'"),
    (f"type IN {_CH_TYPES} AND ch IS NULL", "missing-field", "concat(type, ': missing field ch')"),
    (f"type IN {_MID_TYPES} AND mid IS NULL", "missing-field", "concat(type, ': missing field mid')"),
    (
        f"type = 'send' AND kind IS NOT NULL AND kind NOT IN ('data', {_MARKERS_SQL})",
        "bad-field",
        "concat('send: unknown kind ', kind)",
    ),
    (
        f"type = 'send' AND kind IN ({_MARKERS_SQL}) AND round IS NULL",
        "missing-field",
        "concat('send: a ', kind, ' marker needs field round')",
    ),
    (
        "type = 'send' AND coalesce(kind, 'data') = 'data' AND seq IS NULL",
        "missing-field",
        "'send: a data message needs field seq'",
    ),
    ("type = 'replay' AND replay_of IS NULL", "missing-field", "'replay: missing field replay_of'"),
    (
        "type IN ('checkpoint', 'record', 'restore') AND (ckpt IS NULL OR ckpt < 0)",
        "missing-field",
        "concat(type, ': missing or negative ckpt')",
    ),
    (
        "type = 'checkpoint' AND ckpt = 0 AND (kind IS DISTINCT FROM 'initial' OR idx <> 0)",
        "checkpoint-numbering",
        "'ckpt 0 is the initial checkpoint: kind initial, the first event of its process'",
    ),
    (
        "type = 'checkpoint' AND kind = 'initial' AND ckpt <> 0",
        "checkpoint-numbering",
        "'an initial checkpoint has ckpt 0'",
    ),
    ("type = 'record' AND part NOT IN ('input', 'output')", "bad-field", "'record: part must be input or output'"),
    (
        "type IN ('record', 'log') AND NOT coalesce(mids_ok, type = 'log')",
        "bad-field",
        "concat(type, ': mids must be a list of message ids')",
    ),
    ("type = 'log_truncate' AND through_seq IS NULL", "missing-field", "'log_truncate: missing field through_seq'"),
    (
        "type IN ('round_start', 'round_complete', 'round_abort') AND round IS NULL",
        "missing-field",
        "concat(type, ': missing field round')",
    ),
)

# Rules against the header (joined columns: role of proc, src/dst of ch).
REF_RULES = (
    ("role IS NULL", "unknown-process", "concat('unknown process ', proc)"),
    ("ch IS NOT NULL AND src IS NULL", "unknown-channel", "concat('unknown channel ', ch)"),
    (
        "type IN ('send', 'log', 'log_truncate') AND proc <> src",
        "wrong-channel-end",
        "concat(type, ' on the wrong channel: ', proc, ' is not the source of ', ch)",
    ),
    (
        "type IN ('recv', 'arrive', 'discard') AND proc <> dst",
        "wrong-channel-end",
        "concat(type, ' on the wrong channel: ', proc, ' is not the destination of ', ch)",
    ),
    (
        "type = 'replay' AND proc <> src AND proc <> dst",
        "wrong-channel-end",
        "concat('replay on ', ch, ' by ', proc, ', which is neither its source nor its destination')",
    ),
    (
        "type = 'record' AND part = 'input' AND proc <> dst",
        "wrong-channel-end",
        "concat('record: ', proc, ' records the input part of ', ch, ' but is not its destination')",
    ),
    (
        "type = 'record' AND part = 'output' AND proc <> src",
        "wrong-channel-end",
        "concat('record: ', proc, ' records the output part of ', ch, ' but is not its source')",
    ),
    (
        "type = 'checkpoint' AND role = 'coordinator'",
        "coordinator-checkpoint",
        "concat(proc, ' is a coordinator and takes no checkpoints')",
    ),
    (
        "type IN ('fail', 'restore') AND role = 'coordinator'",
        "coordinator-failover",
        "concat(proc, ' is a coordinator and ', type, 's: a coordinator failover is not an event of the format')",
    ),
)

# Per-process order (window columns expected_idx = the idx after the previous event's, prev_type, prev_ckpt).
SEQ_RULES = (
    (
        "idx <> expected_idx",
        "per-process-sequence",
        "concat('out-of-order per-process sequence: ', proc, ' event idx ', idx, ', expected ', expected_idx)",
    ),
    (
        "prev_type = 'fail' AND type NOT IN ('restore', 'retire')",  # a failure rescale retires the failed task
        "event-after-fail",
        "concat(proc, ' has failed and records ', type, ' before a restore')",
    ),
    (
        "type = 'checkpoint' AND ckpt <= prev_ckpt",
        "checkpoint-numbering",
        "concat('checkpoint numbers must increase: ', proc, ' ckpt ', ckpt, ' after ckpt ', prev_ckpt)",
    ),
)


def _case(rules, which: int) -> str:
    """The SQL CASE giving, for the first rule that holds, its name (which=1) or reason (which=2).

    A rule has a name iff it has a reason, so ``name IS NULL`` ⟺ no problem. Compute the name on
    every row and the reason only on the rows that have a name (``_problems``): evaluated on every
    row, the reason CASE with its string concatenations cost ≈ 11 s of CPU per 1.09 M rows, the
    name CASE ≈ 1 s (docs/spark.md, "Where the time goes")."""
    arms = "\n".join(
        f" WHEN {r[0]} THEN {'NULL' if r[which] is None else (repr(r[1]) if which == 1 else r[2])}" for r in rules
    )
    return f"CASE\n{arms}\n ELSE NULL\nEND"


def _problems(source: str, rules) -> str:
    """SQL: (trace_id, line, rule, reason) of the rows of ``source`` that break one of ``rules``
    (the first rule that holds decides)."""
    return (
        f"SELECT trace_id, line, rule, {_case(rules, 2)} AS reason "
        f"FROM (SELECT *, {_case(rules, 1)} AS rule FROM {source}) WHERE rule IS NOT NULL"
    )


@dataclass
class Quarantine:
    """Names of the relations that split an input into checked and quarantined rows."""

    clean: str = "q_clean"  # rows of well-formed traces (input columns + parsed ``extra`` fields)
    quarantined: str = "q_quarantined"  # rows of quarantined traces + reason, trace_reason
    problems: str = "q_problems"  # (trace_id, line, rule, reason): every problem found
    processes: str = "q_processes"  # (trace_id, proc, role) of the clean traces
    channels: str = "q_channels"  # (trace_id, ch, src, dst, fifo, ch_kind, back_edge, ch_logged)
    protocols: str = "q_protocols"  # (trace_id, protocol, aligned, barriers_delimit)
    rows: str = "q_rows"  # every input row with its parsed fields and row rule
    columns: tuple = field(default=("replay_of", "part", "mids", "logged", "through_seq"))


def check_files(path: str) -> None:
    """Read every file of a local input and check its columns and rows (``traces.parquet.scan``:
    the columns as ``snapcheck check`` checks them, every page readable, every string UTF-8),
    before any engine starts: an engine looks at one file's footer and columns and fails on
    another file, or on a damaged page, in the middle of the work, without naming the file
    or row. Bad input is ``TraceErrors`` naming each bad file and why. So is a Parquet file of the directory that no engine would read,
    its name (or a folder's) starting with ``_`` or ``.`` (``sql_engine.unread_parquet``):
    leaving its traces out would change the verdict silently. So is an input without a
    single row (empty files, or none with a row group). A cluster's file system
    (``hdfs://``, ``s3a://``) is read by Spark alone; ``load`` checks the columns it sees, and a
    damaged page there stops the job with Spark's own error."""
    from snapcheck.spark_validation.sql_engine import parquet_files, unread_parquet
    from snapcheck.traces.errors import TraceError, TraceErrors

    if "://" in path:
        return
    errors = [
        TraceError(
            f,
            0,
            "a Parquet file named (or in a folder named) with a leading '_' or '.' is not read: Spark and the "
            "kit take such names for bookkeeping, not data; rename it, or move it out of the input",
        )
        for f in unread_parquet(path)
    ]
    rows = 0
    for f in parquet_files(path):
        try:
            rows += scan(f)
        except TraceErrors as exc:
            errors += exc.errors
    if not errors and not rows:  # a verdict on no trace at all would read as a clean one
        errors.append(TraceError(path, 0, "empty input: no row in any Parquet file, so no trace to validate"))
    if errors:
        raise TraceErrors(errors)


def load(engine, path: str) -> None:
    """Read a Parquet trace file (or directory) as ``q_input`` and parse ``extra`` (``q_parsed``)."""
    from snapcheck.traces.errors import TraceError, TraceErrors

    try:
        engine.read_parquet("q_input", path)
    except Exception as exc:  # missing path, not Parquet
        msg = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        raise TraceErrors([TraceError(path, 0, f"cannot read Parquet: {msg}")]) from None
    check_columns(engine.columns("q_input"), path)
    d = engine.dialect
    cols = ", ".join(f.name for f in SCHEMA)
    engine.view(
        "q_parsed",
        f"""
        SELECT *, {d.version_is_1("hdr")} AS hdr_v1 FROM (
          SELECT {cols},
            {d.jstr("x", "replay_of")} AS replay_of,
            coalesce({d.jstr("x", "part")}, 'input') AS part,
            {d.jis_str_list("x", "mids")} AS mids_ok,
            {d.jstr_list("x", "mids")} AS mids,
            coalesce({d.jbool("x", "logged")}, false) AS logged,
            {d.jint("x", "through_seq")} AS through_seq,
            {d.json_ok("extra", "x")} AS json_ok,
            CASE WHEN type = 'header' THEN {d.header("extra")} END AS hdr
          FROM (SELECT *, {d.parse("extra")} AS x FROM q_input))""",
    )


def quarantine(engine) -> Quarantine:
    """Split the loaded rows (``load``) into clean and quarantined ones (see the module docstring)."""
    d = engine.dialect
    q = Quarantine()
    cols = [f.name for f in SCHEMA]
    parsed_cols = ", ".join(
        cols + ["replay_of", "part", "mids_ok", "mids", "logged", "through_seq", "json_ok", "hdr", "hdr_v1"]
    )
    engine.table("q_rows", f"SELECT {parsed_cols}, {_case(ROW_RULES, 1)} AS row_rule FROM q_parsed")
    engine.view(
        "q_ok_headers", "SELECT * FROM q_rows WHERE type = 'header' AND row_rule IS NULL AND trace_id IS NOT NULL"
    )
    engine.view(
        "q_procs",
        f"""
        SELECT trace_id, p.id AS proc, coalesce(p.role, 'task') AS role
        FROM (SELECT trace_id, {d.explode("hdr.processes", "p")} FROM q_ok_headers)""",
    )
    engine.view(
        "q_chans",
        f"""
        SELECT trace_id, c.id AS ch, c.src AS src, c.dst AS dst, coalesce(c.fifo, true) AS fifo,
               coalesce(c.kind, 'data') AS ch_kind, coalesce(c.back_edge, false) AS back_edge,
               coalesce(c.logged, false) AS ch_logged
        FROM (SELECT trace_id, {d.explode("hdr.channels", "c")} FROM q_ok_headers)""",
    )
    # Aligned protocols promise empty channel state: the header's params.aligned completed by the
    # catalogue's facts for a protocol it knows by name, as for the checker (never the name alone).
    engine.table(
        "q_all_protocols",
        "SELECT trace_id, hdr.protocol.name AS protocol, coalesce(aligned_of(extra), false) AS aligned, "
        "coalesce(barriers_delimit_of(extra), true) AS barriers_delimit FROM q_ok_headers",
    )

    engine.view("q_ev", "SELECT * FROM q_rows WHERE type <> 'header' AND trace_id IS NOT NULL AND row_rule IS NULL")
    # Referential rules against the header: known process and channel, the right channel end.
    engine.view(
        "q_ref",
        """
        SELECT * FROM q_ev LEFT JOIN (SELECT trace_id, proc, role FROM q_procs) USING (trace_id, proc)
                           LEFT JOIN (SELECT trace_id, ch, src, dst FROM q_chans) USING (trace_id, ch)""",
    )
    # Per-process order: idx = 0, 1, 2, …; checkpoint numbers increase; nothing between fail and restore.
    # Each break of the idx sequence is one problem, reported where it happens (the event after a
    # missing or repeated idx is compared with its predecessor, not with its position: the JSONL
    # reader resynchronises alike); and a row refused by a row rule keeps its place in its
    # process's sequence when it has a process and an idx no other row of the process has (as
    # ``traces.validate`` does, ``_count_rejected``), so one bad row is one problem.
    engine.view(
        "q_seq",
        """
        SELECT trace_id, proc, idx, line, type, ckpt, expected_idx,
               lag(type) OVER (PARTITION BY trace_id, proc ORDER BY idx, line NULLS FIRST) AS prev_type,
               max(CASE WHEN type = 'checkpoint' THEN ckpt END) OVER (
                   PARTITION BY trace_id, proc ORDER BY idx, line NULLS FIRST
                   ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_ckpt
        FROM (
          SELECT *, coalesce(lag(idx) OVER (PARTITION BY trace_id, proc ORDER BY idx, line NULLS FIRST) + 1, 0)
                    AS expected_idx
          FROM (SELECT trace_id, proc, idx, line, type, ckpt, false AS refused FROM q_ev
                UNION ALL
                SELECT trace_id, proc, idx, line, type, ckpt, true AS refused
                FROM (SELECT trace_id, proc, idx, line, type, ckpt FROM q_rows
                      WHERE row_rule IS NOT NULL AND type IS DISTINCT FROM 'header' AND trace_id IS NOT NULL
                        AND proc IS NOT NULL AND idx >= 0)
                ANTI JOIN (SELECT trace_id, proc, idx FROM q_ev) USING (trace_id, proc, idx)))
        WHERE NOT refused""",
    )
    # Restores and records refer to checkpoints that were taken (0 = the initial one).
    ck_problems = """
        SELECT trace_id, line, 'unknown-checkpoint' AS rule,
               type || ' refers to checkpoint ' || CAST(ckpt AS STRING) || ' of ' || proc
                    || ', which it has not taken' AS reason
        FROM (SELECT trace_id, proc, ckpt, line, type FROM q_ev WHERE type IN ('restore', 'record') AND ckpt > 0)
        ANTI JOIN (SELECT trace_id, proc, ckpt FROM q_ev WHERE type = 'checkpoint') USING (trace_id, proc, ckpt)"""
    # Message identity: each mid defined once (send or replay); every reference resolves.
    dup_defs = """
        SELECT trace_id, line, 'duplicate-identity' AS rule,
               'duplicate message identity: mid ' || mid || ' was already sent at line '
                    || CAST(first_line AS STRING) AS reason
        FROM (SELECT trace_id, mid, line, min(line) OVER (PARTITION BY trace_id, mid) AS first_line
              FROM q_ev WHERE type IN ('send', 'replay'))
        WHERE line <> first_line"""
    engine.view(
        "q_refs",
        f"""
        SELECT trace_id, line, mid, type || ' of a message never sent: ' AS what
          FROM q_ev WHERE type IN ('recv', 'arrive', 'discard') OR (type = 'output' AND mid IS NOT NULL)
        UNION ALL
        SELECT trace_id, line, replay_of AS mid, 'replay of a message never sent: ' AS what
          FROM q_ev WHERE type = 'replay'
        UNION ALL
        SELECT trace_id, line, mid, type || ' of a message never sent: ' AS what
          FROM (SELECT trace_id, line, type, {d.explode("mids", "mid")} FROM q_ev
                WHERE type IN ('record', 'log') AND mids IS NOT NULL)""",
    )
    ref_mid_problems = """
        SELECT trace_id, line, 'message-never-sent' AS rule, what || mid AS reason
        FROM q_refs ANTI JOIN (SELECT DISTINCT trace_id, mid FROM q_ev WHERE type IN ('send', 'replay'))
             USING (trace_id, mid)"""
    # Exactly one header per trace.
    header_problems = """
        SELECT trace_id, line, 'header-count' AS rule,
               CASE WHEN h = 0 THEN 'trace has no header row'
                    ELSE 'trace has ' || CAST(h AS STRING) || ' header rows (traces that share a trace_id, in '
                         || 'one file or several, are one trace to these checks: give each its own)' END AS reason
        FROM (SELECT trace_id, CAST(sum(CASE WHEN type = 'header' THEN 1 ELSE 0 END) AS BIGINT) AS h,
                     min(line) AS line
              FROM q_rows WHERE trace_id IS NOT NULL GROUP BY trace_id)
        WHERE h <> 1"""
    # A protocol_error ends the run: nothing follows it (as ``traces.validate`` has it).
    after_error = """
        SELECT trace_id, line, 'after-protocol-error' AS rule,
               'nothing follows the protocol_error at line ' || CAST(ended AS STRING) || ': the run ended there'
                    AS reason
        FROM (SELECT trace_id, line,
                     min(CASE WHEN type = 'protocol_error' THEN line END) OVER (PARTITION BY trace_id) AS ended
              FROM q_ev)
        WHERE line > ended"""
    parts = [
        _problems("(SELECT * FROM q_rows WHERE row_rule IS NOT NULL)", ROW_RULES),
        _problems("q_ref", REF_RULES),
        _problems("q_seq", SEQ_RULES),
        ck_problems,
        after_error,
        dup_defs,
        ref_mid_problems,
        header_problems,
    ]
    engine.table("q_problems", "\nUNION ALL\n".join(f"SELECT trace_id, line, rule, reason FROM ({p})" for p in parts))

    engine.table(
        "q_bad",
        """
        SELECT trace_id, first_line, first_reason, n_problems FROM (
          SELECT trace_id, coalesce(line, 0) AS first_line, reason AS first_reason,
                 count(*) OVER (PARTITION BY trace_id) AS n_problems,
                 row_number() OVER (PARTITION BY trace_id ORDER BY coalesce(line, 0), reason NULLS FIRST) AS k
          FROM q_problems WHERE trace_id IS NOT NULL)
        WHERE k = 1""",
    )
    listed = ", ".join(f"r.{c}" for c in cols)
    engine.view(
        "q_quarantined",
        f"""
        SELECT {listed}, rp.reason AS reason, coalesce(b.trace_reason, 'missing trace_id') AS trace_reason
        FROM (SELECT * FROM q_rows SEMI JOIN q_bad USING (trace_id)
              UNION ALL SELECT * FROM q_rows WHERE trace_id IS NULL) r
        LEFT JOIN (SELECT trace_id, line, min(reason) AS reason FROM q_problems GROUP BY trace_id, line) rp
               ON r.trace_id = rp.trace_id AND r.line = rp.line
        LEFT JOIN (SELECT trace_id, 'line ' || CAST(first_line AS STRING) || ': ' || first_reason
                          || CASE WHEN n_problems > 1 THEN ' (and ' || CAST(n_problems - 1 AS STRING)
                                  || ' more problem(s))' ELSE '' END AS trace_reason FROM q_bad) b
               ON r.trace_id = b.trace_id""",
    )
    engine.table(
        "q_clean",
        f"""
        SELECT * FROM (SELECT {", ".join(cols + list(q.columns))} FROM q_rows WHERE trace_id IS NOT NULL)
        ANTI JOIN q_bad USING (trace_id)""",
    )
    engine.view("q_good", "SELECT DISTINCT trace_id FROM q_clean")
    for name, source in (("q_processes", "q_procs"), ("q_channels", "q_chans"), ("q_protocols", "q_all_protocols")):
        engine.view(name, f"SELECT * FROM {source} SEMI JOIN q_good USING (trace_id)")
    return q
