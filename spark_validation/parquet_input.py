"""Loading v1 Parquet traces into Spark and quarantining malformed rows.

The Parquet form (docs/trace-format.md, ``traces/parquet.py``) has one row per
event, many traces per file. Every row of the input ends up in exactly one of
two places: **checked** (its trace is well formed) or **quarantined** (its trace
has at least one problem), so ``rows in = rows checked + rows quarantined``.
A trace is quarantined as a whole, because checking the rest of a trace whose
rows are damaged would silently change verdicts (a lost ``recv`` row hides an
orphan).

The checks here are Spark-native (column expressions, joins, window functions)
and mirror the row-level and referential rules of ``traces.validate``: event
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

from snapcheck.traces.model import EVENT_TYPES
from snapcheck.traces.parquet import SCHEMA

HEADER_DDL = ("struct<format:string,version:bigint,"
              "processes:array<struct<id:string,role:string>>,"
              "channels:array<struct<id:string,src:string,dst:string,fifo:boolean,kind:string,logged:boolean,"
              "back_edge:boolean>>,"
              "protocol:struct<name:string>>")

_TYPES_SQL = ", ".join(f"'{t}'" for t in EVENT_TYPES)
_CH_TYPES = "('send','recv','arrive','discard','replay','record','log','log_truncate')"
_MID_TYPES = "('send','recv','arrive','discard','replay')"

# Each rule: (condition, rule name, reason). The first rule whose condition holds decides.
# Row rules need no other row; ``x`` is ``extra`` parsed as VARIANT, ``hdr`` the header struct.
ROW_RULES = (
    ("type IS NULL", "missing-type", "'missing type'"),
    (f"type <> 'header' AND type NOT IN ({_TYPES_SQL})", "unknown-event-type", "concat('unknown event type ', type)"),
    ("extra IS NOT NULL AND x IS NULL", "malformed-json", "'malformed JSON in column extra'"),
    ("type = 'header' AND (hdr IS NULL OR hdr.format IS DISTINCT FROM 'snapcheck-trace' "
     "OR hdr.version IS DISTINCT FROM 1 OR hdr.processes IS NULL OR size(hdr.processes) = 0 OR hdr.channels IS NULL)",
     "bad-header", "'bad header: not a snapcheck-trace v1 header with processes and channels'"),
    ("type = 'header'", None, None),
    ("proc IS NULL", "missing-field", "'missing field proc'"),
    ("idx IS NULL OR idx < 0", "missing-field", "'missing or negative idx'"),
    (f"type IN {_CH_TYPES} AND ch IS NULL", "missing-field", "concat(type, ': missing field ch')"),
    (f"type IN {_MID_TYPES} AND mid IS NULL", "missing-field", "concat(type, ': missing field mid')"),
    ("type = 'send' AND kind IS NOT NULL AND kind NOT IN ('data', 'barrier')", "bad-field",
     "concat('send: unknown kind ', kind)"),
    ("type = 'send' AND kind = 'barrier' AND round IS NULL", "missing-field", "'send: a barrier needs field round'"),
    ("type = 'send' AND coalesce(kind, 'data') = 'data' AND seq IS NULL", "missing-field",
     "'send: a data message needs field seq'"),
    ("type = 'replay' AND replay_of IS NULL", "missing-field", "'replay: missing field replay_of'"),
    ("type IN ('checkpoint', 'record', 'restore') AND (ckpt IS NULL OR ckpt < 0)", "missing-field",
     "concat(type, ': missing or negative ckpt')"),
    ("type = 'checkpoint' AND ckpt = 0 AND (kind IS DISTINCT FROM 'initial' OR idx <> 0)", "checkpoint-numbering",
     "'ckpt 0 is the initial checkpoint: kind initial, the process''s first event'"),
    ("type = 'checkpoint' AND kind = 'initial' AND ckpt <> 0", "checkpoint-numbering",
     "'an initial checkpoint has ckpt 0'"),
    ("type = 'record' AND part NOT IN ('input', 'output')", "bad-field", "'record: part must be input or output'"),
    ("type IN ('record', 'log') AND NOT coalesce(mids_type IN ('ARRAY<STRING>', 'ARRAY<VOID>'), type = 'log')",
     "bad-field", "concat(type, ': mids must be a list of message ids')"),
    ("type = 'log_truncate' AND through_seq IS NULL", "missing-field", "'log_truncate: missing field through_seq'"),
    ("type IN ('round_start', 'round_complete', 'round_abort') AND round IS NULL", "missing-field",
     "concat(type, ': missing field round')"),
)

# Rules against the header (joined columns: role of proc, src/dst of ch).
REF_RULES = (
    ("role IS NULL", "unknown-process", "concat('unknown process ', proc)"),
    ("ch IS NOT NULL AND src IS NULL", "unknown-channel", "concat('unknown channel ', ch)"),
    ("type IN ('send', 'log', 'log_truncate') AND proc <> src", "wrong-channel-end",
     "concat(type, ' on the wrong channel: ', proc, ' is not the source of ', ch)"),
    ("type IN ('recv', 'arrive', 'discard') AND proc <> dst", "wrong-channel-end",
     "concat(type, ' on the wrong channel: ', proc, ' is not the destination of ', ch)"),
    ("type = 'replay' AND proc <> src AND proc <> dst", "wrong-channel-end",
     "concat('replay on ', ch, ' by ', proc, ', which is neither its source nor its destination')"),
    ("type = 'record' AND part = 'input' AND proc <> dst", "wrong-channel-end",
     "concat('record: ', proc, ' records the input part of ', ch, ' but is not its destination')"),
    ("type = 'record' AND part = 'output' AND proc <> src", "wrong-channel-end",
     "concat('record: ', proc, ' records the output part of ', ch, ' but is not its source')"),
    ("type = 'checkpoint' AND role = 'coordinator'", "coordinator-checkpoint",
     "concat(proc, ' is a coordinator and takes no checkpoints')"),
)

# Per-process order (window columns rn = position, prev_type, prev_ckpt).
SEQ_RULES = (
    ("idx <> rn", "per-process-sequence",
     "concat('out-of-order per-process sequence: ', proc, ' event idx ', idx, ', expected ', rn)"),
    ("prev_type = 'fail' AND type <> 'restore'", "event-after-fail",
     "concat(proc, ' has failed and records ', type, ' before a restore')"),
    ("type = 'checkpoint' AND ckpt <= prev_ckpt", "checkpoint-numbering",
     "concat('checkpoint numbers must increase: ', proc, ' ckpt ', ckpt, ' after ckpt ', prev_ckpt)"),
)


def _case(rules, which: int) -> str:
    """The SQL CASE giving, for the first rule that holds, its name (which=1) or reason (which=2).

    A rule has a name iff it has a reason, so ``name IS NULL`` ⟺ no problem. Compute the name on
    every row and the reason only on the rows that have a name (``_problems``): evaluated on every
    row, the reason CASE with its string concatenations cost ≈ 11 s of CPU per 1.09 M rows, the
    name CASE ≈ 1 s (docs/spark.md, "Where the time goes")."""
    arms = "\n".join(f" WHEN {r[0]} THEN {'NULL' if r[which] is None else (repr(r[1]) if which == 1 else r[2])}"
                      for r in rules)
    return f"CASE\n{arms}\n ELSE NULL\nEND"


def _problems(df, rules):
    """(trace_id, line, rule, reason) of the rows of ``df`` that break one of ``rules`` (first rule wins)."""
    from pyspark.sql import functions as F

    named = df.withColumn("rule", F.expr(_case(rules, 1))).where("rule IS NOT NULL")
    return named.select("trace_id", "line", "rule", F.expr(_case(rules, 2)).alias("reason"))


@dataclass
class Quarantine:
    """The split of an input into checked and quarantined rows, with the accounting."""

    clean: object                 # DataFrame: rows of well-formed traces (columns of ``parsed``)
    quarantined: object           # DataFrame: rows of quarantined traces + reason, trace_reason
    problems: object              # DataFrame: (trace_id, line, rule, reason) — every problem found
    processes: object             # DataFrame: (trace_id, proc, role) of the clean traces
    channels: object              # DataFrame: (trace_id, ch, src, dst, fifo, ch_kind, back_edge, ch_logged)
    protocols: object             # DataFrame: (trace_id, protocol, aligned)
    counts: dict = field(default_factory=dict)


def materialize(df):
    """Compute ``df`` now and cut its lineage: later plans see a leaf, so the optimizer does not
    re-analyse (and the engine does not recompute) the steps that produced it."""
    return df.localCheckpoint(eager=True)


def check_columns(df, path: str) -> None:
    """The file must have the v1 Parquet columns with their types (else exit 2)."""
    from snapcheck.traces.errors import TraceError, TraceErrors

    have = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    want = {"string": "string", "int64": "bigint"}
    problems = []
    for f in SCHEMA:
        if f.name not in have:
            problems.append(f"missing column {f.name!r}")
        elif have[f.name] != want[str(f.type)]:
            problems.append(f"column {f.name!r} has type {have[f.name]}, expected {want[str(f.type)]}")
    if problems:
        raise TraceErrors([TraceError(path, 0, "not a snapcheck Parquet trace file: " + "; ".join(problems))])


def load(spark, path: str):
    """Read a Parquet trace file (or directory) and parse ``extra``: the ``parsed`` DataFrame."""
    from pyspark.sql import functions as F
    from snapcheck.traces.errors import TraceError, TraceErrors

    try:
        df = spark.read.parquet(path)
    except Exception as exc:          # AnalysisException: path missing or not Parquet
        msg = str(exc).splitlines()[0][:300]
        raise TraceErrors([TraceError(path, 0, f"cannot read Parquet: {msg}")]) from None
    check_columns(df, path)
    x = F.expr("try_parse_json(extra)")
    return (df.select(*[f.name for f in SCHEMA])
            .withColumn("x", x)
            .withColumn("replay_of", F.expr("try_variant_get(x, '$.replay_of', 'string')"))
            .withColumn("part", F.expr("coalesce(try_variant_get(x, '$.part', 'string'), 'input')"))
            .withColumn("mids_type", F.expr("schema_of_variant(variant_get(x, '$.mids'))"))
            .withColumn("mids", F.expr("try_variant_get(x, '$.mids', 'array<string>')"))
            .withColumn("logged", F.expr("coalesce(try_variant_get(x, '$.logged', 'boolean'), false)"))
            .withColumn("through_seq", F.expr("try_variant_get(x, '$.through_seq', 'bigint')"))
            .withColumn("hdr", F.expr(f"CASE WHEN type = 'header' THEN from_json(extra, '{HEADER_DDL}') END")))


def quarantine(parsed) -> Quarantine:
    """Split ``parsed`` rows into clean and quarantined ones (see the module docstring)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rows = materialize(parsed.withColumn("row_rule", F.expr(_case(ROW_RULES, 1))).drop("x"))
    ok_headers = rows.where("type = 'header' AND row_rule IS NULL AND trace_id IS NOT NULL")
    procs = ok_headers.select("trace_id", F.explode("hdr.processes").alias("p")).select(
        "trace_id", F.col("p.id").alias("proc"), F.coalesce(F.col("p.role"), F.lit("task")).alias("role"))
    chans = ok_headers.select("trace_id", F.explode("hdr.channels").alias("c")).select(
        "trace_id", F.col("c.id").alias("ch"), F.col("c.src").alias("src"), F.col("c.dst").alias("dst"),
        F.coalesce(F.col("c.fifo"), F.lit(True)).alias("fifo"),
        F.coalesce(F.col("c.kind"), F.lit("data")).alias("ch_kind"),
        F.coalesce(F.col("c.back_edge"), F.lit(False)).alias("back_edge"),
        F.coalesce(F.col("c.logged"), F.lit(False)).alias("ch_logged"))
    # Aligned protocols promise empty channel state: the header's params.aligned, as for the checker
    # (snapcheck.traces.protocol_facts; never decided from the protocol's name).
    protocols = ok_headers.select(
        "trace_id", F.col("hdr.protocol.name").alias("protocol"),
        F.expr("coalesce(get_json_object(extra, '$.protocol.params.aligned') = 'true', false)").alias("aligned"))

    ev = rows.where("type <> 'header' AND trace_id IS NOT NULL AND row_rule IS NULL")
    # Referential rules against the header: known process and channel, the right channel end.
    ref = (ev.join(procs.select("trace_id", "proc", "role"), ["trace_id", "proc"], "left")
           .join(chans.select("trace_id", "ch", "src", "dst"), ["trace_id", "ch"], "left"))
    ref_problems = _problems(ref, REF_RULES)

    # Per-process order: idx = 0, 1, 2, …; checkpoint numbers increase; nothing between fail and restore.
    w = Window.partitionBy("trace_id", "proc").orderBy("idx")
    seq = (ev.select("trace_id", "proc", "idx", "line", "type", "ckpt")
           .withColumn("rn", F.row_number().over(w) - 1)
           .withColumn("prev_type", F.lag("type").over(w))
           .withColumn("prev_ckpt", F.max(F.when(F.col("type") == "checkpoint", F.col("ckpt"))).over(
               w.rowsBetween(Window.unboundedPreceding, -1))))
    seq_problems = _problems(seq, SEQ_RULES)

    # Restores and records refer to checkpoints that were taken (0 = the initial one).
    taken = ev.where("type = 'checkpoint'").select("trace_id", "proc", "ckpt")
    ck_refs = ev.where("type IN ('restore', 'record') AND ckpt > 0").select("trace_id", "proc", "ckpt", "line", "type")
    ck_problems = ck_refs.join(taken, ["trace_id", "proc", "ckpt"], "left_anti").select(
        "trace_id", "line", F.lit("unknown-checkpoint").alias("rule"),
        F.expr("concat(type, ' refers to checkpoint ', ckpt, ' of ', proc, ', which it has not taken')").alias("reason"))

    # Message identity: each mid defined once (send or replay); every reference resolves.
    defs = ev.where("type IN ('send', 'replay')").select("trace_id", "mid", "line")
    dup_defs = (defs.withColumn("first", F.min("line").over(Window.partitionBy("trace_id", "mid")))
                .where("line <> first")
                .select("trace_id", "line", F.lit("duplicate-identity").alias("rule"),
                        F.expr("concat('duplicate message identity: mid ', mid, ' was already sent at line ', first)")
                        .alias("reason")))
    refs = ev.where("type IN ('recv', 'arrive', 'discard')").select(
        "trace_id", "line", "mid", F.concat(F.col("type"), F.lit(" of a message never sent: ")).alias("what"))
    refs = refs.unionByName(ev.where("type = 'replay'").select(
        "trace_id", "line", F.col("replay_of").alias("mid"), F.lit("replay of a message never sent: ").alias("what")))
    refs = refs.unionByName(ev.where("type IN ('record', 'log') AND mids IS NOT NULL").select(
        "trace_id", "line", F.explode("mids").alias("mid"),
        F.concat(F.col("type"), F.lit(" of a message never sent: ")).alias("what")))
    ref_mid_problems = (refs.join(defs.select("trace_id", "mid").distinct(), ["trace_id", "mid"], "left_anti")
                        .select("trace_id", "line", F.lit("message-never-sent").alias("rule"),
                                F.concat("what", "mid").alias("reason")))

    # Exactly one header per trace.
    header_problems = (rows.where("trace_id IS NOT NULL").groupBy("trace_id")
                       .agg(F.sum(F.when(F.col("type") == "header", 1).otherwise(0)).alias("h"),
                            F.min("line").alias("line"))
                       .where("h <> 1")
                       .select("trace_id", "line", F.lit("header-count").alias("rule"), F.expr(
                           "CASE WHEN h = 0 THEN 'trace has no header row' "
                           "ELSE concat('trace has ', h, ' header rows') END").alias("reason")))

    own = _problems(rows.where("row_rule IS NOT NULL").withColumn("x", F.expr("try_parse_json(extra)")), ROW_RULES)
    problems = materialize(own.unionByName(ref_problems).unionByName(seq_problems).unionByName(ck_problems)
                           .unionByName(dup_defs).unionByName(ref_mid_problems).unionByName(header_problems))

    first = F.min(F.struct(F.coalesce("line", F.lit(0)).alias("line"), F.col("reason"))).alias("first")
    bad = materialize(problems.where("trace_id IS NOT NULL").groupBy("trace_id")
                      .agg(first, F.count("*").alias("n_problems")))
    row_problem = problems.groupBy("trace_id", "line").agg(F.min("reason").alias("reason"))

    quarantined = (rows.join(bad, "trace_id", "left_semi").unionByName(rows.where("trace_id IS NULL"))
                   .join(row_problem, ["trace_id", "line"], "left")
                   .join(bad.select("trace_id", F.expr("concat('line ', first.line, ': ', first.reason, "
                                                       "CASE WHEN n_problems > 1 THEN concat(' (and ', n_problems - 1, "
                                                       "' more problem(s))') ELSE '' END)").alias("trace_reason")),
                         "trace_id", "left")
                   .select(*[f.name for f in SCHEMA], "reason",
                           F.coalesce("trace_reason", F.lit("missing trace_id")).alias("trace_reason")))
    clean = materialize(rows.where("trace_id IS NOT NULL").join(bad, "trace_id", "left_anti")
                        .drop("row_rule"))
    good = clean.select("trace_id").distinct()
    q = Quarantine(clean=clean, quarantined=quarantined, problems=problems,
                   processes=procs.join(good, "trace_id", "left_semi"),
                   channels=chans.join(good, "trace_id", "left_semi"),
                   protocols=protocols.join(good, "trace_id", "left_semi"))
    return q
