"""Spark-native checks of global checkpoints: orphans, drops and duplicates, with no per-event Python.

Definitions (docs/theory.md, "Conventions" to "Complete snapshots: channel state and
logs"; CheckMate, "Evaluating Checkpointing Protocols for Streaming Dataflows", Defs.
4–5), in the conventions of the
checker (``checker.intervals``, ``checker.cuts``, ``checker.rounds``,
``checker.durability``), so the two give the same verdicts:

* **Effective history.** A ``restore`` of checkpoint ``k`` removes the process's
  events after ``C_k``; ``fail`` and ``restore`` are not events of the history.
  An event at position ``i`` is rolled back iff some later restore targets a
  checkpoint before ``i``: ``lastck(e) ≥ min{target(ρ) : ρ after e}``, where
  ``lastck(e)`` is the number of the last checkpoint before ``e`` (checkpoint
  numbers increase along a process, so this is a pair of window functions).
* **Interval index** ``ι(e)`` = number of checkpoints of the process before ``e``
  in the effective history, counting the (implied) initial ``C_{i,0}``; a
  checkpoint's *position* is its ``ι``.
* **Messages** ``(src, s, dst, r)``: effective data sends joined with effective
  receives on ``(trace_id, mid)``; a replayed incarnation (``replay_of``, chains
  resolved) counts as its original; ``r`` is ι of the first receive. Barriers,
  coordinators and messages to external processes are outside the analysis;
  messages from an external input log are always reflected as sent and durable.
* For a global checkpoint ``G``: **orphan** ⟺ ``r ≤ g_dst ∧ s > g_src``;
  **in transit** ⟺ ``s ≤ g_src ∧ (r = ⊥ ∨ r > g_dst)``.
* **Recorded channel state** ``CS(c)``: the ``mids`` of the ``record`` rows
  attached to the cut's checkpoints (input part by the destination, output part
  by the source), examined channel by channel in the order of their first record,
  input part before output part (the recovery order), each in file order; a
  repeat is the later occurrence. **dropped**: in transit, not accepted as
  recorded state of its channel, not in a durable sender log (``send.logged``, a
  logged channel, a ``log`` row, minus ``log_truncate``); **phantom**: recorded
  but not in transit;
  **duplicate-recorded**: recorded twice for one snapshot; **wrong-channel**;
  **order** (FIFO channel state not in send order); **aligned-in-flight** for
  aligned protocols, whose snapshots have no channel state.
* **Subjects**: every *complete* coordinated round (every participant took a
  checkpoint of the round and every barrier between participants arrived) and an
  optional explicit cut ``{proc: ckpt | "V"}``. A round whose checkpoints a later
  restore rolled back is judged on the history before that restore (the trace
  prefix of lines below it), as the checker does.
"""

from __future__ import annotations

from dataclasses import dataclass

from snapcheck.spark_validation.parquet_input import materialize

FULL = 2 ** 62          # history key ("lim") of the whole trace: no line limit

_EV_COLS = ("trace_id", "line", "type", "proc", "idx", "ch", "mid", "seq", "kind", "round", "ckpt",
            "replay_of", "part", "mids", "logged", "through_seq")


@dataclass
class NativeResult:
    violations: object     # DataFrame (trace_id, subject, kind, mid, ch, lines)
    subjects: object       # DataFrame (trace_id, subject, messages, in_transit, recorded)


def _F():
    from pyspark.sql import functions as F
    return F


def _resolve_replays(ev):
    """(trace_id, mid, orig): every replayed incarnation mapped to its original message.
    Chains (a replay of a replay) are followed by repeated self-joins until none is left."""
    F = _F()
    orig = materialize(ev.where("type = 'replay'").select("trace_id", "mid", F.col("replay_of").alias("orig")))
    for _ in range(64):
        step = orig.alias("a").join(orig.alias("b"), (F.col("a.trace_id") == F.col("b.trace_id"))
                                    & (F.col("a.orig") == F.col("b.mid")), "left")
        nxt = step.select(F.col("a.trace_id").alias("trace_id"), F.col("a.mid").alias("mid"),
                          F.coalesce(F.col("b.orig"), F.col("a.orig")).alias("orig"),
                          F.col("b.mid").isNotNull().alias("moved"))
        nxt = materialize(nxt)
        if nxt.where("moved").limit(1).count() == 0:
            return nxt.drop("moved")
        orig = nxt.drop("moved")
    return orig


def _effective(core):
    """Effective events (send, recv, checkpoint) of each history ``(trace_id, lim)`` with ι."""
    from pyspark.sql import Window
    F = _F()
    part = ("trace_id", "lim", "proc")
    w = Window.partitionBy(*part).orderBy("idx")
    before = w.rowsBetween(Window.unboundedPreceding, -1)
    later = Window.partitionBy(*part).orderBy(F.desc("idx")).rowsBetween(Window.unboundedPreceding, -1)
    is_ck = F.col("type") == "checkpoint"
    flagged = (core
               .withColumn("lastck", F.coalesce(F.max(F.when(is_ck, F.col("ckpt"))).over(before),
                                                F.when(is_ck & (F.col("ckpt") == 0), F.lit(-1)).otherwise(F.lit(0))))
               .withColumn("minrt", F.min(F.when(F.col("type") == "restore", F.col("ckpt"))).over(later)))
    eff = flagged.where("type IN ('send', 'recv', 'checkpoint') AND (minrt IS NULL OR lastck < minrt)")
    n_before = F.sum(F.when(is_ck & (F.col("ckpt") > 0), 1).otherwise(0)).over(before)
    return eff.withColumn("iota", 1 + F.coalesce(n_before, F.lit(0))).drop("lastck", "minrt")


def analyse(q, cut: dict | None = None) -> NativeResult:
    """Violations of every complete round (and of ``cut``, if given) of the clean traces of ``q``."""
    from pyspark.sql import Window
    F = _F()

    ev = materialize(q.clean.where("type <> 'header'").select(*_EV_COLS))
    procs, chans = q.processes, q.channels
    participants = procs.where("role NOT IN ('coordinator', 'external')").select("trace_id", "proc")
    externals = procs.where("role = 'external'").select("trace_id", "proc")
    n_part = participants.groupBy("trace_id").agg(F.count("*").alias("n_part"))
    # Analysed channels: destination a participant, source a participant or an external input log.
    achans = materialize(chans.join(participants.select("trace_id", F.col("proc").alias("dst")), ["trace_id", "dst"])
              .join(procs.select("trace_id", F.col("proc").alias("src"), F.col("role").alias("src_role")),
                    ["trace_id", "src"])
              .where("src_role <> 'coordinator'")
              .select("trace_id", "ch", "src", "dst", (F.col("src_role") == "external").alias("ext"),
                      "fifo", "back_edge", "ch_logged"))
    orig = _resolve_replays(ev)

    # -- histories: the whole trace, plus one prefix per line limit needed by a rolled-back round ----
    core = ev.where("type IN ('send', 'recv', 'checkpoint', 'restore')").select(
        "trace_id", "line", "type", "proc", "idx", "ch", "mid", "seq", "kind", "ckpt", "logged")
    full = _effective(core.withColumn("lim", F.lit(FULL)))
    rnd_ck, complete, limits = _rounds(ev, core, participants, n_part, chans)
    core_pre = core.join(F.broadcast(limits), "trace_id").where("line < lim")
    eff = materialize(full.unionByName(_effective(core_pre)))

    ckpts = eff.where("type = 'checkpoint'").select(
        "trace_id", "lim", "proc", "ckpt", F.when(F.col("ckpt") == 0, 0).otherwise(F.col("iota")).alias("x"))
    L = (eff.where("type = 'checkpoint' AND ckpt > 0").groupBy("trace_id", "lim", "proc")
         .agg(F.count("*").alias("L")))
    hists = eff.select("trace_id", "lim").distinct()
    plen = (hists.join(participants, "trace_id").join(L, ["trace_id", "lim", "proc"], "left")
            .select("trace_id", "lim", "proc", F.coalesce("L", F.lit(0)).alias("L")))

    # g of each complete round: positions of its checkpoints in the history it is judged on.
    G = (complete.join(rnd_ck, ["trace_id", "round"])
         .join(ckpts, ["trace_id", "lim", "proc", "ckpt"])
         .select("trace_id", "lim", F.concat(F.lit("round "), F.col("round")).alias("subject"),
                 "proc", "x", F.col("ckpt").alias("gck")))
    if cut is not None:
        G = G.unionByName(_cut_subject(q.clean.sparkSession, cut, ckpts, plen))
    G = materialize(G)

    # -- messages (src, s, dst, r) per history ----------------------------------------------------
    sends = (eff.where("type = 'send' AND coalesce(kind, 'data') <> 'barrier'")
             .join(achans, ["trace_id", "ch"])
             .select("trace_id", "lim", "mid", "ch", "seq", "src", "dst", "ext", "fifo", "back_edge",
                     F.when(F.col("ext"), 0).otherwise(F.col("iota")).alias("s"),
                     F.col("line").alias("send_line"),
                     (F.col("logged") | F.col("ch_logged") | F.col("ext")).alias("logged_at_send")))
    recvs = (eff.where("type = 'recv'").join(achans.select("trace_id", "ch"), ["trace_id", "ch"])
             .join(orig, ["trace_id", "mid"], "left")
             .select("trace_id", "lim", F.coalesce("orig", "mid").alias("mid"), "iota", "line", "idx")
             .groupBy("trace_id", "lim", "mid")
             .agg(F.min("iota").alias("r"), F.min_by("line", "idx").alias("recv_line")))
    sends = materialize(sends)
    msgs = sends.join(recvs, ["trace_id", "lim", "mid"], "left")

    # -- orphans and in-transit messages of every subject ----------------------------------------
    gs = G.select("trace_id", "lim", "subject", F.col("proc").alias("src"), F.col("x").alias("g_src"))
    gd = G.select("trace_id", "lim", "subject", F.col("proc").alias("dst"), F.col("x").alias("g_dst"))
    per = (msgs.join(gd, ["trace_id", "lim", "dst"])
           .join(gs, ["trace_id", "lim", "subject", "src"], "left"))   # external sources have no g
    per = materialize(per)
    orphan = per.where("NOT ext AND r IS NOT NULL AND r <= g_dst AND s > g_src")
    transit = per.where("(ext OR s <= g_src) AND (r IS NULL OR r > g_dst)")

    # -- recorded channel state of every subject (recovery order; first occurrence wins) ----------
    records = (ev.where("type = 'record'")
               .select("trace_id", "proc", "ckpt", F.col("ch").alias("rch"), "part", F.col("line").alias("rline"),
                       F.posexplode("mids").alias("pos", "rmid"))
               .join(orig.withColumnRenamed("mid", "rmid"), ["trace_id", "rmid"], "left")
               .withColumn("o", F.coalesce("orig", "rmid")).drop("orig"))
    stable = (G.join(plen, ["trace_id", "lim", "proc"]).where("x <= L")
              .select("trace_id", "lim", "subject", "proc", F.col("gck").alias("ckpt")))
    entries = (stable.join(records, ["trace_id", "proc", "ckpt"]).where("rline < lim")
               .withColumn("part_rank", F.when(F.col("part") == "input", 0).otherwise(1)))
    per_channel = Window.partitionBy("trace_id", "lim", "subject", "rch")
    entries = entries.withColumn("ch_first", F.min("rline").over(per_channel))
    by_mid = Window.partitionBy("trace_id", "lim", "subject", "o").orderBy("ch_first", "part_rank", "rline", "pos")
    entries = materialize(entries.withColumn("occ", F.row_number().over(by_mid)))
    dup_rec = entries.where("occ > 1").select("trace_id", "lim", "subject", F.lit("duplicate-recorded").alias("kind"),
                                              F.col("o").alias("mid"), F.col("rch").alias("ch"),
                                              F.array("rline").alias("lines"))
    firsts = entries.where("occ = 1")
    aligned = q.protocols.select("trace_id", "aligned")
    transit_ids = transit.select("trace_id", "lim", "subject", F.col("mid").alias("o"), F.lit(True).alias("in_transit"))
    judged = (firsts.join(aligned, "trace_id")
              .join(chans.select("trace_id", F.col("ch").alias("rch"), F.col("back_edge").alias("rch_back"),
                                 F.col("fifo").alias("rch_fifo")), ["trace_id", "rch"], "left")
              .join(sends.select("trace_id", "lim", F.col("mid").alias("o"), F.col("ch").alias("mch"),
                                 F.col("seq").alias("mseq"), F.col("send_line").alias("mline")),
                    ["trace_id", "lim", "o"], "left")
              .join(transit_ids, ["trace_id", "lim", "subject", "o"], "left")
              .withColumn("kind", F.expr("""
                  CASE WHEN aligned AND NOT coalesce(rch_back, false) THEN 'aligned-in-flight'
                       WHEN mch IS NULL THEN 'phantom'
                       WHEN mch <> rch THEN 'wrong-channel'
                       WHEN in_transit IS NULL THEN 'phantom'
                  END""")))
    rec_bad = judged.where("kind IS NOT NULL").select(
        "trace_id", "lim", "subject", "kind", F.col("o").alias("mid"), F.col("rch").alias("ch"),
        F.expr("array_compact(array(rline, mline))").alias("lines"))
    in_order = judged.where("kind IS NULL")
    ch_order = Window.partitionBy("trace_id", "lim", "subject", "rch").orderBy("part_rank", "rline", "pos")
    order_bad = (in_order.where("rch_fifo").withColumn("prev_seq", F.lag("mseq").over(ch_order))
                 .withColumn("prev_mid", F.lag("o").over(ch_order))
                 .withColumn("prev_line", F.lag("rline").over(ch_order))
                 .where("mseq < prev_seq")
                 .withColumn("k", F.row_number().over(ch_order)).where("k = 1")
                 .select("trace_id", "lim", "subject", F.lit("order").alias("kind"), F.col("prev_mid").alias("mid"),
                         F.col("rch").alias("ch"),
                         F.array_sort(F.array_distinct(F.array("prev_line", "rline"))).alias("lines")))

    # -- dropped: in transit, not accepted as recorded channel state, not durably logged ----------
    accepted = in_order.select("trace_id", "lim", "subject", F.col("o").alias("mid"))
    candidates = (transit.where("NOT ext")
                  .join(accepted, ["trace_id", "lim", "subject", "mid"], "left_anti")
                  .join(aligned, "trace_id"))
    aif = candidates.where("aligned AND NOT back_edge").select(
        "trace_id", "lim", "subject", F.lit("aligned-in-flight").alias("kind"), "mid", "ch",
        F.expr("array_compact(array(send_line, recv_line))").alias("lines"))
    unlogged = candidates.where("NOT (aligned AND NOT back_edge)")
    durable = _durable(ev, orig, sends, unlogged.select("trace_id", "lim", "mid", "ch", "seq").distinct(), externals)
    dropped = (unlogged.join(durable, ["trace_id", "lim", "mid"], "left_anti")
               .select("trace_id", "lim", "subject", F.lit("dropped").alias("kind"), "mid", "ch",
                       F.expr("array_compact(array(send_line, recv_line))").alias("lines")))
    orphans = orphan.select("trace_id", "lim", "subject", F.lit("orphan").alias("kind"), "mid", "ch",
                            F.array("send_line", "recv_line").alias("lines"))

    violations = (orphans.unionByName(dropped).unionByName(aif).unionByName(rec_bad)
                  .unionByName(dup_rec).unionByName(order_bad).drop("lim"))
    counts = (per.groupBy("trace_id", "subject").agg(
        F.sum(F.expr("CASE WHEN (ext OR s <= g_src) AND (r IS NULL OR r > g_dst) THEN 1 ELSE 0 END")).alias("in_transit")))
    rec_counts = entries.groupBy("trace_id", "subject").agg(F.count("*").alias("recorded"))
    subj = (G.select("trace_id", "subject").distinct()
            .join(counts, ["trace_id", "subject"], "left").join(rec_counts, ["trace_id", "subject"], "left")
            .fillna(0, ["in_transit", "recorded"]))
    return NativeResult(violations=violations, subjects=subj)


def _rounds(ev, core, participants, n_part, chans):
    """Complete rounds (checker.rounds.is_complete), each round's checkpoints, and the line
    limits of rounds whose checkpoints a later restore rolled back."""
    from pyspark.sql import Window
    F = _F()
    first = Window.partitionBy("trace_id", "round", "proc").orderBy("line")
    rnd_ck = (ev.where("type = 'checkpoint' AND round IS NOT NULL")
              .join(participants.select("trace_id", "proc"), ["trace_id", "proc"])
              .withColumn("k", F.row_number().over(first)).where("k = 1")
              .select("trace_id", "round", "proc", "ckpt", "idx", F.col("line").alias("ck_line")))
    pchans = (chans.where("ch_kind <> 'control'")
              .join(participants.select("trace_id", F.col("proc").alias("src")), ["trace_id", "src"])
              .join(participants.select("trace_id", F.col("proc").alias("dst")), ["trace_id", "dst"])
              .select("trace_id", "ch"))
    bsend = (ev.where("type = 'send' AND kind = 'barrier'").join(pchans, ["trace_id", "ch"])
             .select("trace_id", "round", "ch", "mid"))
    brecv = ev.where("type IN ('arrive', 'recv')").select("trace_id", "mid").distinct()
    pending = (bsend.join(brecv, ["trace_id", "mid"], "left_anti")
               .join(bsend.join(brecv, ["trace_id", "mid"]).select("trace_id", "round", "ch").distinct(),
                     ["trace_id", "round", "ch"], "left_anti")
               .select("trace_id", "round").distinct())
    complete = (rnd_ck.groupBy("trace_id", "round").agg(F.count("*").alias("n"))
                .join(n_part, "trace_id").where("n = n_part")
                .join(pending, ["trace_id", "round"], "left_anti").select("trace_id", "round"))
    # A round checkpoint is rolled back by the first later restore (same process) of an earlier checkpoint.
    restores = core.where("type = 'restore'").select("trace_id", "proc", F.col("idx").alias("r_idx"),
                                                      F.col("ckpt").alias("target"), F.col("line").alias("r_line"))
    undone = (rnd_ck.join(complete, ["trace_id", "round"])
              .join(restores, ["trace_id", "proc"])
              .where("r_idx > idx AND target < ckpt")
              .groupBy("trace_id", "round", "proc").agg(F.min_by("r_line", "r_idx").alias("r_line"))
              .groupBy("trace_id", "round").agg(F.min("r_line").alias("lim")))
    complete = (complete.join(undone, ["trace_id", "round"], "left")
                .withColumn("lim", F.coalesce("lim", F.lit(FULL))))
    limits = undone.select("trace_id", "lim").distinct()
    return rnd_ck.drop("idx", "ck_line"), complete, limits


def _cut_subject(spark, cut: dict, ckpts, plen):
    """The explicit cut as positions: {proc: ckpt number or "V"} → (proc, x, gck) per trace.
    Traces whose participants differ from the cut's processes, or lack a named checkpoint,
    are not analysed for the cut (they appear without a cut subject)."""
    F = _F()
    rows = [(p, None if str(v).upper() == "V" else int(v)) for p, v in cut.items()]
    want = spark.createDataFrame(rows, "proc string, ckpt bigint")
    full_len = plen.where(F.col("lim") == FULL)
    joined = (full_len.join(F.broadcast(want), "proc", "left")
              .join(ckpts.where(F.col("lim") == FULL), ["trace_id", "lim", "proc", "ckpt"], "left")
              .select("trace_id", "lim", "proc", "L", "ckpt", "x",
                      F.col("ckpt").isNull().alias("is_v"), F.col("proc").isin(list(cut)).alias("named")))
    fits = (joined.groupBy("trace_id").agg(
        F.count("*").alias("n"), F.sum(F.col("named").cast("int")).alias("n_named"),
        F.sum(F.expr("CASE WHEN named AND (is_v OR ckpt = 0 OR x IS NOT NULL) THEN 1 ELSE 0 END")).alias("n_ok"))
        .where(f"n = {len(cut)} AND n_named = n AND n_ok = n").select("trace_id"))
    return (joined.join(fits, "trace_id")
            .select("trace_id", "lim", F.lit("cut").alias("subject"), "proc",
                    F.when(F.col("is_v"), F.col("L") + 1).when(F.col("ckpt") == 0, 0).otherwise(F.col("x")).alias("x"),
                    F.col("ckpt").alias("gck")))


def _durable(ev, orig, sends, cand, externals):
    """(trace_id, lim, mid) of candidate messages in a durable log at the end of their history
    (``checker.durability``): logged from a send with ``logged``, a logged channel or an external
    sender, or from a ``log`` row; un-logged by a later ``log_truncate`` (by a non-external
    process) of the channel through the message's seq, unless logged again afterwards."""
    F = _F()
    at_send = (sends.where("logged_at_send").select("trace_id", "lim", "mid", F.col("send_line").alias("start")))
    log_rows = (ev.where("type = 'log' AND mids IS NOT NULL")
                .select("trace_id", F.col("line").alias("start"), F.explode("mids").alias("lmid"))
                .join(orig.withColumnRenamed("mid", "lmid"), ["trace_id", "lmid"], "left")
                .select("trace_id", "start", F.coalesce("orig", "lmid").alias("mid")))
    starts = (cand.join(at_send, ["trace_id", "lim", "mid"]).select("trace_id", "lim", "mid", "start")
              .unionByName(cand.join(log_rows, ["trace_id", "mid"]).where("start < lim")
                           .select("trace_id", "lim", "mid", "start"))
              .groupBy("trace_id", "lim", "mid").agg(F.max("start").alias("start")))
    truncs = (ev.where("type = 'log_truncate'").join(externals, ["trace_id", "proc"], "left_anti")
              .select("trace_id", "ch", "through_seq", F.col("line").alias("t_line")))
    logged = starts.join(cand, ["trace_id", "lim", "mid"])
    cut_off = (logged.join(truncs, ["trace_id", "ch"])
               .where("t_line > start AND t_line < lim AND seq <= through_seq")
               .select("trace_id", "lim", "mid").distinct())
    return logged.join(cut_off, ["trace_id", "lim", "mid"], "left_anti").select("trace_id", "lim", "mid")
