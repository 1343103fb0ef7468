"""SQL checks of global checkpoints: orphans, drops and duplicates, with no per-event Python
(the same statements on DuckDB and on Spark, ``sql_engine``).

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
  checkpoint of the round and every barrier between participants arrived, unless the
  header declares ``barriers_delimit_channel_state: false``) and an
  optional explicit cut ``{proc: ckpt | "V"}``. A round whose checkpoints a later
  restore rolled back is judged on the history before that restore (the trace
  prefix of lines below it), as the checker does.
"""

from __future__ import annotations

from dataclasses import dataclass

FULL = 2**62  # history key ("lim") of the whole trace: no line limit
MAX_REPLAY_DEPTH = 64  # replay chains longer than this are not resolved further

_EV_COLS = (
    "trace_id",
    "line",
    "type",
    "proc",
    "idx",
    "ch",
    "mid",
    "seq",
    "kind",
    "round",
    "ckpt",
    "replay_of",
    "part",
    "mids",
    "logged",
    "through_seq",
)


@dataclass
class NativeResult:
    violations: str = "n_violations"  # (trace_id, subject, kind, mid, ch, lines)
    subjects: str = "n_subjects"  # (trace_id, subject, in_transit, recorded)


def _resolve_replays(engine) -> None:
    """``n_orig`` (trace_id, mid, orig): every replayed incarnation mapped to its original message.
    Chains (a replay of a replay) are followed by repeated self-joins until none is left."""
    engine.table("n_orig_0", "SELECT trace_id, mid, replay_of AS orig FROM n_ev WHERE type = 'replay'")
    k = 0
    while k < MAX_REPLAY_DEPTH:
        engine.table(
            f"n_orig_{k + 1}",
            f"""
            SELECT a.trace_id AS trace_id, a.mid AS mid, coalesce(b.orig, a.orig) AS orig, b.mid IS NOT NULL AS moved
            FROM n_orig_{k} a LEFT JOIN n_orig_{k} b ON a.trace_id = b.trace_id AND a.orig = b.mid""",
        )
        k += 1
        if engine.value(f"SELECT count(*) AS n FROM n_orig_{k} WHERE moved") == 0:
            break
    engine.view("n_orig", f"SELECT trace_id, mid, orig FROM n_orig_{k}")


def _effective(source: str) -> str:
    """SQL: effective events (send, recv, checkpoint) of each history ``(trace_id, lim)`` of
    ``source`` with ι."""
    before = "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING"
    return f"""
        SELECT trace_id, lim, line, type, proc, idx, ch, mid, seq, kind, ckpt, logged,
               1 + coalesce(CAST(sum(CASE WHEN type = 'checkpoint' AND ckpt > 0 THEN 1 ELSE 0 END) OVER (
                   PARTITION BY trace_id, lim, proc ORDER BY idx {before}) AS BIGINT), 0) AS iota
        FROM (SELECT *,
                coalesce(max(CASE WHEN type = 'checkpoint' THEN ckpt END) OVER (
                           PARTITION BY trace_id, lim, proc ORDER BY idx {before}),
                         CASE WHEN type = 'checkpoint' AND ckpt = 0 THEN -1 ELSE 0 END) AS lastck,
                min(CASE WHEN type = 'restore' THEN ckpt END) OVER (
                           PARTITION BY trace_id, lim, proc ORDER BY idx DESC {before}) AS minrt
              FROM {source})
        WHERE type IN ('send', 'recv', 'checkpoint') AND (minrt IS NULL OR lastck < minrt)"""


def analyse(engine, q, cut: dict | None = None) -> NativeResult:
    """Violations of every complete round (and of ``cut``, if given) of the clean traces of ``q``."""
    d = engine.dialect
    engine.table("n_ev", f"SELECT {', '.join(_EV_COLS)} FROM {q.clean} WHERE type <> 'header'")
    engine.view(
        "n_participants", f"SELECT trace_id, proc FROM {q.processes} WHERE role NOT IN ('coordinator', 'external')"
    )
    engine.view("n_externals", f"SELECT trace_id, proc FROM {q.processes} WHERE role = 'external'")
    engine.view("n_part", "SELECT trace_id, count(*) AS n_part FROM n_participants GROUP BY trace_id")
    # Analysed channels: destination a participant, source a participant or an external input log.
    engine.table(
        "n_achans",
        f"""
        SELECT c.trace_id AS trace_id, c.ch AS ch, c.src AS src, c.dst AS dst, s.role = 'external' AS ext,
               c.fifo AS fifo, c.back_edge AS back_edge, c.ch_logged AS ch_logged
        FROM {q.channels} c
        JOIN n_participants p ON p.trace_id = c.trace_id AND p.proc = c.dst
        JOIN {q.processes} s ON s.trace_id = c.trace_id AND s.proc = c.src
        WHERE s.role <> 'coordinator'""",
    )
    _resolve_replays(engine)

    # -- histories: the whole trace, plus one prefix per line limit needed by a rolled-back round ----
    engine.view(
        "n_core",
        "SELECT trace_id, line, type, proc, idx, ch, mid, seq, kind, ckpt, logged FROM n_ev "
        "WHERE type IN ('send', 'recv', 'checkpoint', 'restore')",
    )
    _rounds(engine, q)
    engine.table(
        "n_eff",
        _effective(f"""(
        SELECT *, CAST({FULL} AS BIGINT) AS lim FROM n_core
        UNION ALL
        SELECT n_core.*, l.lim AS lim FROM n_core JOIN n_limits l ON n_core.trace_id = l.trace_id
        WHERE n_core.line < l.lim)"""),
    )

    engine.view(
        "n_ckpts",
        "SELECT trace_id, lim, proc, ckpt, CASE WHEN ckpt = 0 THEN 0 ELSE iota END AS x "
        "FROM n_eff WHERE type = 'checkpoint'",
    )
    engine.view(
        "n_plen",
        """
        SELECT trace_id, lim, proc, coalesce(n_ck, 0) AS n_ck
        FROM (SELECT DISTINCT trace_id, lim FROM n_eff) JOIN n_participants USING (trace_id)
        LEFT JOIN (SELECT trace_id, lim, proc, count(*) AS n_ck FROM n_eff WHERE type = 'checkpoint' AND ckpt > 0
                   GROUP BY trace_id, lim, proc) USING (trace_id, lim, proc)""",
    )

    # g of each complete round: positions of its checkpoints in the history it is judged on.
    subjects = [
        """
        SELECT trace_id, lim, 'round ' || CAST(round AS STRING) AS subject, proc, x, ckpt AS gck
        FROM n_complete JOIN n_rnd_ck USING (trace_id, round) JOIN n_ckpts USING (trace_id, lim, proc, ckpt)"""
    ]
    if cut is not None:
        subjects.append(_cut_subject(cut))
    engine.table(
        "n_g", "\nUNION ALL\n".join(f"SELECT trace_id, lim, subject, proc, x, gck FROM ({s})" for s in subjects)
    )

    # -- messages (src, s, dst, r) per history ----------------------------------------------------
    engine.table(
        "n_sends",
        """
        SELECT trace_id, lim, mid, ch, seq, src, dst, ext, fifo, back_edge,
               CASE WHEN ext THEN 0 ELSE iota END AS s, line AS send_line,
               (logged OR ch_logged OR ext) AS logged_at_send
        FROM (SELECT * FROM n_eff WHERE type = 'send' AND coalesce(kind, 'data') <> 'barrier')
        JOIN n_achans USING (trace_id, ch)""",
    )
    engine.view(
        "n_recvs",
        """
        SELECT trace_id, lim, mid, min(iota) AS r, min_by(line, idx) AS recv_line
        FROM (SELECT e.trace_id AS trace_id, e.lim AS lim, coalesce(o.orig, e.mid) AS mid, e.iota AS iota,
                     e.line AS line, e.idx AS idx
              FROM n_eff e JOIN n_achans a ON a.trace_id = e.trace_id AND a.ch = e.ch
              LEFT JOIN n_orig o ON o.trace_id = e.trace_id AND o.mid = e.mid
              WHERE e.type = 'recv')
        GROUP BY trace_id, lim, mid""",
    )

    # -- orphans and in-transit messages of every subject ----------------------------------------
    engine.table(
        "n_per",
        """
        SELECT * FROM n_sends LEFT JOIN n_recvs USING (trace_id, lim, mid)
        JOIN (SELECT trace_id, lim, subject, proc AS dst, x AS g_dst FROM n_g) USING (trace_id, lim, dst)
        LEFT JOIN (SELECT trace_id, lim, subject, proc AS src, x AS g_src FROM n_g)
             USING (trace_id, lim, subject, src)""",
    )  # external sources have no g
    engine.view("n_transit", "SELECT * FROM n_per WHERE (ext OR s <= g_src) AND (r IS NULL OR r > g_dst)")

    # -- recorded channel state of every subject (recovery order; first occurrence wins) ----------
    engine.table(
        "n_entries",
        f"""
        SELECT *, row_number() OVER (PARTITION BY trace_id, lim, subject, o
                                     ORDER BY ch_first, part_rank, rline, pos) AS occ
        FROM (SELECT *, min(rline) OVER (PARTITION BY trace_id, lim, subject, rch) AS ch_first
              FROM (SELECT st.trace_id AS trace_id, st.lim AS lim, st.subject AS subject, st.proc AS proc,
                           st.ckpt AS ckpt, rc.rch AS rch, rc.part AS part, rc.rline AS rline, rc.pos AS pos,
                           coalesce(og.orig, rc.rmid) AS o,
                           CASE WHEN rc.part = 'input' THEN 0 ELSE 1 END AS part_rank
                    FROM (SELECT trace_id, lim, subject, proc, gck AS ckpt
                          FROM n_g JOIN n_plen USING (trace_id, lim, proc) WHERE x <= n_ck) st
                    JOIN (SELECT trace_id, proc, ckpt, ch AS rch, part, line AS rline,
                                 {d.posexplode("mids", "pos", "rmid")}
                          FROM n_ev WHERE type = 'record') rc
                      ON rc.trace_id = st.trace_id AND rc.proc = st.proc AND rc.ckpt = st.ckpt
                    LEFT JOIN n_orig og ON og.trace_id = rc.trace_id AND og.mid = rc.rmid
                    WHERE rc.rline < st.lim))""",
    )
    engine.view(
        "n_judged",
        f"""
        SELECT *, CASE WHEN aligned AND NOT coalesce(rch_back, false) THEN 'aligned-in-flight'
                       WHEN mch IS NULL THEN 'phantom'
                       WHEN mch <> rch THEN 'wrong-channel'
                       WHEN in_transit IS NULL THEN 'phantom'
                  END AS kind
        FROM (SELECT * FROM n_entries WHERE occ = 1)
        JOIN (SELECT trace_id, aligned FROM {q.protocols}) USING (trace_id)
        LEFT JOIN (SELECT trace_id, ch AS rch, back_edge AS rch_back, fifo AS rch_fifo FROM {q.channels})
             USING (trace_id, rch)
        LEFT JOIN (SELECT trace_id, lim, mid AS o, ch AS mch, seq AS mseq, send_line AS mline FROM n_sends)
             USING (trace_id, lim, o)
        LEFT JOIN (SELECT trace_id, lim, subject, mid AS o, true AS in_transit FROM n_transit)
             USING (trace_id, lim, subject, o)""",
    )
    ch_order = "PARTITION BY trace_id, lim, subject, rch ORDER BY part_rank, rline, pos"
    order_bad = f"""
        SELECT trace_id, lim, subject, 'order' AS kind, prev_mid AS mid, rch AS ch,
               {d.sorted_set("prev_line", "rline")} AS lines
        FROM (SELECT *, row_number() OVER ({ch_order}) AS k
              FROM (SELECT *, lag(mseq) OVER ({ch_order}) AS prev_seq, lag(o) OVER ({ch_order}) AS prev_mid,
                           lag(rline) OVER ({ch_order}) AS prev_line
                    FROM n_judged WHERE kind IS NULL AND rch_fifo)
              WHERE mseq < prev_seq)
        WHERE k = 1"""

    # -- dropped: in transit, not accepted as recorded channel state, not durably logged ----------
    engine.view(
        "n_candidates",
        f"""
        SELECT * FROM (SELECT * FROM n_transit WHERE NOT ext)
        ANTI JOIN (SELECT trace_id, lim, subject, o AS mid FROM n_judged
                   WHERE kind IS NULL OR kind = 'aligned-in-flight')  -- reported once, as recorded
             USING (trace_id, lim, subject, mid)
        JOIN (SELECT trace_id, aligned FROM {q.protocols}) USING (trace_id)""",
    )
    engine.view("n_unlogged", "SELECT * FROM n_candidates WHERE NOT (aligned AND NOT back_edge)")
    _durable(engine)
    lines2 = d.compact("send_line", "recv_line")
    parts = [
        f"SELECT trace_id, lim, subject, 'orphan' AS kind, mid, ch, {d.array('send_line', 'recv_line')} AS lines "
        "FROM n_per WHERE NOT ext AND r IS NOT NULL AND r <= g_dst AND s > g_src",
        f"SELECT trace_id, lim, subject, 'dropped' AS kind, mid, ch, {lines2} AS lines "
        "FROM n_unlogged ANTI JOIN n_durable USING (trace_id, lim, mid)",
        f"SELECT trace_id, lim, subject, 'aligned-in-flight' AS kind, mid, ch, {lines2} AS lines "
        "FROM n_candidates WHERE aligned AND NOT back_edge",
        f"SELECT trace_id, lim, subject, kind, o AS mid, rch AS ch, {d.compact('rline', 'mline')} AS lines "
        "FROM n_judged WHERE kind IS NOT NULL",
        f"SELECT trace_id, lim, subject, 'duplicate-recorded' AS kind, o AS mid, rch AS ch, "
        f"{d.array('rline')} AS lines FROM n_entries WHERE occ > 1",
        order_bad,
    ]
    engine.view(
        "n_violations",
        "\nUNION ALL\n".join(f"SELECT trace_id, subject, kind, mid, ch, lines FROM ({p})" for p in parts),
    )
    engine.view(
        "n_subjects",
        """
        SELECT trace_id, subject, coalesce(in_transit, 0) AS in_transit, coalesce(recorded, 0) AS recorded
        FROM (SELECT DISTINCT trace_id, subject FROM n_g)
        LEFT JOIN (SELECT trace_id, subject, CAST(sum(CASE WHEN (ext OR s <= g_src) AND (r IS NULL OR r > g_dst)
                                                      THEN 1 ELSE 0 END) AS BIGINT) AS in_transit
                   FROM n_per GROUP BY trace_id, subject) USING (trace_id, subject)
        LEFT JOIN (SELECT trace_id, subject, count(*) AS recorded FROM n_entries GROUP BY trace_id, subject)
             USING (trace_id, subject)""",
    )
    return NativeResult()


def _rounds(engine, q) -> None:
    """``n_complete`` (trace_id, round, lim): complete rounds (checker.rounds.is_complete) with the
    line limit of the history each is judged on; ``n_rnd_ck``: each round's checkpoints;
    ``n_limits``: the line limits of rounds whose checkpoints a later restore rolled back."""
    engine.view(
        "n_rnd_ck_all",
        """
        SELECT trace_id, round, proc, ckpt, idx FROM (
          SELECT trace_id, round, proc, ckpt, idx,
                 row_number() OVER (PARTITION BY trace_id, round, proc ORDER BY line) AS k
          FROM n_ev JOIN n_participants USING (trace_id, proc)
          WHERE type = 'checkpoint' AND round IS NOT NULL)
        WHERE k = 1""",
    )
    engine.view(
        "n_bsend",
        f"""
        SELECT e.trace_id AS trace_id, e.round AS round, e.ch AS ch, e.mid AS mid
        FROM n_ev e JOIN (SELECT c.trace_id AS trace_id, c.ch AS ch FROM {q.channels} c
                          JOIN n_participants s ON s.trace_id = c.trace_id AND s.proc = c.src
                          JOIN n_participants t ON t.trace_id = c.trace_id AND t.proc = c.dst
                          WHERE c.ch_kind <> 'control') p ON p.trace_id = e.trace_id AND p.ch = e.ch
        JOIN (SELECT trace_id FROM {q.protocols} WHERE barriers_delimit) d ON d.trace_id = e.trace_id
        WHERE e.type = 'send' AND e.kind = 'barrier'""",
    )
    engine.view("n_brecv", "SELECT DISTINCT trace_id, mid FROM n_ev WHERE type IN ('arrive', 'recv')")
    engine.view(
        "n_pending",
        """
        SELECT DISTINCT trace_id, round FROM (
          SELECT trace_id, round, ch FROM n_bsend ANTI JOIN n_brecv USING (trace_id, mid))
        ANTI JOIN (SELECT DISTINCT trace_id, round, ch FROM n_bsend SEMI JOIN n_brecv USING (trace_id, mid))
             USING (trace_id, round, ch)""",
    )
    engine.table(
        "n_complete0",
        """
        SELECT trace_id, round FROM (
          SELECT trace_id, round FROM (SELECT trace_id, round, count(*) AS n FROM n_rnd_ck_all GROUP BY trace_id, round)
          JOIN n_part USING (trace_id) WHERE n = n_part)
        ANTI JOIN n_pending USING (trace_id, round)""",
    )
    # A round checkpoint is rolled back by the first later restore (same process) of an earlier checkpoint.
    engine.view(
        "n_undone",
        """
        SELECT trace_id, round, min(r_line) AS lim FROM (
          SELECT trace_id, round, proc, min_by(r_line, r_idx) AS r_line
          FROM n_rnd_ck_all JOIN n_complete0 USING (trace_id, round)
          JOIN (SELECT trace_id, proc, idx AS r_idx, ckpt AS target, line AS r_line FROM n_core
                WHERE type = 'restore') USING (trace_id, proc)
          WHERE r_idx > idx AND target < ckpt
          GROUP BY trace_id, round, proc)
        GROUP BY trace_id, round""",
    )
    engine.table(
        "n_complete",
        f"""
        SELECT trace_id, round, coalesce(lim, CAST({FULL} AS BIGINT)) AS lim
        FROM n_complete0 LEFT JOIN n_undone USING (trace_id, round)""",
    )
    engine.table("n_limits", "SELECT DISTINCT trace_id, lim FROM n_undone")
    engine.view("n_rnd_ck", "SELECT trace_id, round, proc, ckpt FROM n_rnd_ck_all")


def _cut_subject(cut: dict) -> str:
    """SQL: the explicit cut as positions, {proc: ckpt number or "V"} → (trace_id, lim, subject, proc,
    x, gck). Traces whose participants differ from the cut's processes, or lack a named checkpoint,
    are not analysed for the cut (they appear without a cut subject)."""

    def lit(p: str) -> str:
        return "'" + str(p).replace("'", "''") + "'"

    values = ", ".join(
        f"({lit(p)}, CAST({'NULL' if str(v).upper() == 'V' else int(v)} AS BIGINT))" for p, v in cut.items()
    )
    named = ", ".join(lit(p) for p in cut)
    joined = f"""
        SELECT f.trace_id AS trace_id, f.lim AS lim, f.proc AS proc, f.n_ck AS n_ck, w.ckpt AS ckpt, k.x AS x,
               w.ckpt IS NULL AS is_v, f.proc IN ({named}) AS named
        FROM (SELECT * FROM n_plen WHERE lim = {FULL}) f
        LEFT JOIN (SELECT * FROM (VALUES {values}) AS want(proc, ckpt)) w ON w.proc = f.proc
        LEFT JOIN (SELECT * FROM n_ckpts WHERE lim = {FULL}) k
               ON k.trace_id = f.trace_id AND k.proc = f.proc AND k.ckpt = w.ckpt"""
    return f"""
        SELECT trace_id, lim, 'cut' AS subject, proc,
               CASE WHEN is_v THEN n_ck + 1 WHEN ckpt = 0 THEN 0 ELSE x END AS x, ckpt AS gck
        FROM ({joined}) j
        SEMI JOIN (SELECT trace_id FROM ({joined}) GROUP BY trace_id
                   HAVING count(*) = {len(cut)}
                      AND sum(CASE WHEN named THEN 1 ELSE 0 END) = count(*)
                      AND sum(CASE WHEN named AND (is_v OR ckpt = 0 OR x IS NOT NULL) THEN 1 ELSE 0 END) = count(*))
             USING (trace_id)"""


def _durable(engine) -> None:
    """``n_durable`` (trace_id, lim, mid): candidate messages in a durable log at the end of their
    history (``checker.durability``): logged from a send with ``logged``, a logged channel or an
    external sender, or from a ``log`` row; un-logged by a later ``log_truncate`` (by a non-external
    process) of the channel through the message's seq, unless logged again afterwards."""
    d = engine.dialect
    engine.view("n_cand", "SELECT DISTINCT trace_id, lim, mid, ch, seq FROM n_unlogged")
    engine.view(
        "n_log_rows",
        f"""
        SELECT lr.trace_id AS trace_id, lr.start AS start, coalesce(og.orig, lr.lmid) AS mid
        FROM (SELECT trace_id, line AS start, {d.explode("mids", "lmid")} FROM n_ev
              WHERE type = 'log' AND mids IS NOT NULL) lr
        LEFT JOIN n_orig og ON og.trace_id = lr.trace_id AND og.mid = lr.lmid""",
    )
    engine.view(
        "n_logged",
        """
        SELECT * FROM (
          SELECT trace_id, lim, mid, max(start) AS start FROM (
            SELECT trace_id, lim, mid, send_line AS start FROM n_cand
              JOIN (SELECT trace_id, lim, mid, send_line FROM n_sends WHERE logged_at_send) USING (trace_id, lim, mid)
            UNION ALL
            SELECT trace_id, lim, mid, start FROM n_cand JOIN n_log_rows USING (trace_id, mid) WHERE start < lim)
          GROUP BY trace_id, lim, mid)
        JOIN n_cand USING (trace_id, lim, mid)""",
    )
    engine.view(
        "n_durable",
        """
        SELECT trace_id, lim, mid FROM n_logged
        ANTI JOIN (SELECT DISTINCT trace_id, lim, mid FROM n_logged
                   JOIN (SELECT trace_id, ch, through_seq, line AS t_line FROM (
                           SELECT * FROM n_ev WHERE type = 'log_truncate') ANTI JOIN n_externals USING (trace_id, proc))
                     USING (trace_id, ch)
                   WHERE t_line > start AND t_line < lim AND seq <= through_seq)
             USING (trace_id, lim, mid)""",
    )
