"""Observed recoveries and exactly-once at trace level (docs/theory.md, "Exactly-once after
recovery" and "Replayed messages keep their identity").

A *recovery* is a group of ``restore`` events: those sharing a ``recovery`` id, or
else a maximal run of restores that ends when a restored process does anything
but restore. For a recovery, each process's state is cut just before its own
restore (restoring processes) or before the group's last restore (the others);
file order is the global time. Its **restored line** ``G`` maps restoring
processes to the checkpoint they restored and the others to their current state.
A process that has failed and not yet restored when the group ends is *down*: its
current state is lost and its component is decided by its own, later restore. It
is counted among the failed processes (for the maximal line), and its receives are
not judged here (they are judged by the recovery in which it restores).

* ``inconsistent-restore``: ``G`` has an orphan (in the history of that moment).
* Compared with the maximal line for the failed processes (RL-FIX with the same
  semantics; restart-all when every process restored), a lower component is an
  *extra rollback*: reported in
  ``report.notes``, not a violation (docs/theory.md, "The lattice of consistent global
  checkpoints": the maximum minimises every
  monotone rollback cost, so a lower line is correct but wasteful).
* exactly-once, in the final effective history (rolled-back segments removed,
  replays mapped to their originals):
  - ``lost``: a message in transit with respect to ``G`` (its receive undone or not
    yet happened, its send kept) is never processed after the recovery — and
    either nothing can replay it (no durable log entry, not in the restored
    checkpoints' channel state, not from an external input log) or, on a FIFO
    channel, a later message of that channel was processed after the recovery
    instead. A replayable message that simply has not been processed when the
    trace ends is a note ("not yet replayed"), not a violation. A message processed
    after the recovery, even if a later restore undid that, is not lost by this
    recovery: it is in transit for the later one, which judges it.
  - ``duplicate-processing``: one logical message — the same original, a replayed
    incarnation of it, or a regenerated copy with the same ``(channel, seq)`` — is
    processed twice.
  - ``phantom``: a message is processed after a recovery although its send was
    rolled back and never regenerated (e.g. replayed from a stale log).
"""

from __future__ import annotations

from collections.abc import Mapping

from snapcheck.checker.cuts import in_transit, orphans
from snapcheck.checker.durability import Durability
from snapcheck.checker.intervals import EXTERNAL, History
from snapcheck.checker.notation import fmt_cut
from snapcheck.checker.recovery_line import bound, rl_fix
from snapcheck.checker.report import Violation
from snapcheck.checker.rounds import fallback_chain
from snapcheck.traces.model import MARKERS, Event, Trace

IN_TRANSIT_LISTED = 100  # message ids a recovery's summary lists (``in_transit_count`` counts them all)


def recovery_groups(trace: Trace) -> list[list]:
    """The observed recoveries of ``trace``: its ``restore`` events grouped by their
    ``recovery`` id, or else into maximal runs that end when a restored process does
    anything but restore (or fail), in file order.

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["A", "B"], [("a2b", "A", "B")])
    >>> rec.fail("A"); rec.fail("B"); rec.restore("A", 0); rec.restore("B", 0)
    >>> _ = rec.send("A", "a2b"); rec.fail("A"); rec.restore("A", 0)
    >>> [[(e.proc, e.line) for e in group] for group in recovery_groups(rec.trace())]
    [[('A', 4), ('B', 5)], [('A', 8)]]
    """
    groups: list[list] = []
    by_id: dict = {}
    current: list = []
    restored: set[str] = set()
    active = False
    for e in trace.events:
        if e.type == "restore":
            if e.recovery is not None:
                g = by_id.get(e.recovery)
                if g is None:
                    g = by_id[e.recovery] = []
                    groups.append(g)
                g.append(e)
                continue
            if not current or e.proc in restored or active:
                current = []
                groups.append(current)
                restored = set()
                active = False
            current.append(e)
            restored.add(e.proc)
        elif e.type != "fail" and e.proc in restored:
            active = True
    return groups


def restored_round(e: Event, ckpt_round: dict, fallback: Mapping[int, Mapping[str, int]] | None = None) -> int | None:
    """The round restore ``e`` goes back to, judged by the checkpoints it takes (its
    ``sources``, or its own checkpoint ``ckpt``): their round, a checkpoint 0 holding
    round 0 (the initial state) unless ``ckpt_round`` gives it another (a process a
    rescale created); None when they do not say or disagree. Its ``round`` stands where
    it names the round of the state those checkpoints hold: the same round, or a round
    whose completion keeps that older state for each of their processes (a regional
    fallback, chains followed: ``fallback``, round -> its completion's fallback map);
    or where the checkpoints say no round. A ``round`` that names another state than
    the one restored does not count. ``ckpt_round``: (process, checkpoint) -> that
    checkpoint's round.

    >>> from snapcheck.traces.model import Event
    >>> def restore(proc, ckpt, **more): return Event.from_dict({"type": "restore", "proc": proc, "idx": 0, "ckpt": ckpt, **more})
    >>> rounds = {("A", 3): 2, ("B", 1): 2, ("A", 1): 1}
    >>> restored_round(restore("A", 3), rounds), restored_round(restore("N", 0, sources=[{"proc": "B", "ckpt": 1}]), rounds)
    (2, 2)
    >>> restored_round(restore("A", 0), rounds), restored_round(restore("N", 0, sources=[]), rounds)
    (0, None)
    >>> restored_round(restore("A", 0, round=1), rounds)                   # the empty state, whatever it says
    0
    >>> restored_round(restore("A", 1, round=2), rounds, {2: {"A": 1}})    # round 2 keeps A's state of round 1
    2
    """
    taken: list[dict] = e.sources if e.sources is not None else [{"proc": e.proc, "ckpt": e.ckpt}]
    rounds = {ckpt_round.get((s.get("proc"), s.get("ckpt")), 0 if s.get("ckpt") == 0 else None) for s in taken}
    if len(rounds) > 1:
        return None
    held = rounds.pop() if rounds else None
    if held is None:
        return e.round
    if e.round is None or e.round == held:
        return held
    fb = fallback or {}
    chains = [fallback_chain(lambda n: fb.get(n, {}), e.round, s["proc"]) for s in taken]
    return e.round if all(c[-1] == held and held not in c[:-1] for c in chains) else held


def checkpoint_rounds(ix) -> dict[tuple[str, int], int | None]:
    """(process, checkpoint) -> the round it belongs to: a ``checkpoint`` event's round; and
    the checkpoint 0 of a process a rescale created (a restore with ``sources``), which
    holds the round that restore restored: after two rescales the second takes the
    first's new processes' checkpoint 0, which is not the empty initial state. ``ix``: the
    trace's ``TraceIndex``.

    >>> from snapcheck.checker.rescale_model import two_to_one
    >>> from snapcheck.checker.trace_index import TraceIndex
    >>> sorted(checkpoint_rounds(TraceIndex(two_to_one([0, 1], [2, 3]))).items())
    [(('A0', 1), 1), (('A1', 1), 1), (('N', 0), 1)]
    """
    rounds: dict[tuple[str, int], int | None] = {(e.proc, e.ckpt): e.round for e in ix.of_type("checkpoint")}
    for e in ix.of_type("restore"):  # in trace order: a later rescale may take an earlier one's
        if e.sources is not None and e.ckpt == 0 and (e.proc, 0) not in rounds:
            rounds[(e.proc, 0)] = restored_round(e, rounds)
    return rounds


def restorable(hp: History, U: list[int], before: int) -> list[int]:
    """``U`` lowered, process by process, to the latest checkpoint a recovery at line
    ``before`` may restore: in a trace whose coordinator declares round outcomes
    (``round_complete``), a checkpoint of a round not declared complete before that line
    (aborted, or still in flight) is a snapshot nobody keeps, so the maximal line the
    report compares the restore with never contains it.

    >>> from snapcheck.traces import TraceRecorder
    >>> from snapcheck.checker.intervals import History
    >>> rec = TraceRecorder(["A", {"id": "C", "role": "coordinator"}], [])
    >>> _ = rec.checkpoint("A", round=1); rec.round_complete("C", 1)
    >>> _ = rec.checkpoint("A", round=2); rec.round_abort("C", 2)
    >>> rec.fail("A"); rec.restore("A", 1)
    >>> hp = History(rec.trace(), per_proc_limit={"A": 7, "C": 7})  # the history as the restore at line 7 meets it
    >>> restorable(hp, [2], before=7)  # A's checkpoint 2 (of round 2, aborted) is not restorable
    [1]
    """
    completions = hp.trace_index.of_type("round_complete")
    if not completions:
        return U
    done = {e.round for e in completions if e.line < before}

    def kept(ev) -> bool:  # a checkpoint a recovery may restore
        return ev is None or ev.round is None or ev.round in done

    out = list(U)
    for i in range(hp.n):
        top = x = min(out[i], hp.L[i])
        while x > 0 and not kept(hp.ckpt_ev[i][x]):
            x -= 1
        if x < top:
            out[i] = x
    return out


class ObservedRecovery:
    """Recovery number ``number`` of ``trace``, the group ``restores`` (module docstring):
    its restored line ``g`` (``line`` with trace checkpoint numbers), the ``failed`` and
    ``down`` processes, the maximal line ``gmax`` for them (RL-FIX under ``semantics``,
    restart-all when every process restored), its ``orphans`` and the messages
    ``in_transit``, all in ``hp``, the effective history at that moment.

    ``A`` restores a checkpoint taken before it sent ``m``, which ``B`` keeps as processed:

    >>> from snapcheck.traces import TraceRecorder
    >>> from snapcheck.checker.intervals import History
    >>> rec = TraceRecorder(["A", "B"], [("a2b", "A", "B")])
    >>> _ = rec.checkpoint("A"); m = rec.send("A", "a2b"); rec.recv("B", m)
    >>> rec.fail("A"); rec.restore("A", 1)
    >>> t = rec.trace()
    >>> recovery = ObservedRecovery(t, History(t), 1, recovery_groups(t)[0], "partial")
    >>> recovery.line, recovery.summary()["maximal_line"], [v.kind for v in recovery.violations()]
    ({'A': 1, 'B': 'V'}, {'A': 1, 'B': 0}, ['inconsistent-restore'])
    """

    _durability: Durability  # built on first use (``durability``)

    def __init__(self, trace: Trace, h: History, number: int, restores: list, semantics: str):
        self.number = number
        self.subject = f"recovery {restores[0].recovery if restores[0].recovery is not None else number}"
        last = max(e.line for e in restores)
        limits = {p.id: last for p in trace.processes}
        for e in restores:
            limits[e.proc] = e.line
        hp = History(trace, per_proc_limit=limits, index=h.trace_index)
        self.hp = hp
        self.restores = restores
        self.restore_line = {e.proc: e.line for e in restores}
        failed = []
        for p in self.restore_line:
            i = hp.index.get(p)
            evs = hp.raw[p]
            if i is not None and evs and evs[-1].type == "fail":
                failed.append(i)
        self.down = [
            i
            for i, p in enumerate(hp.procs)
            if p not in self.restore_line and hp.raw[p] and hp.raw[p][-1].type == "fail"
        ]
        failed += self.down
        self.failed = failed
        g = [hp.V(i) for i in range(hp.n)]
        self.resurrecting: dict[str, tuple] = {}  # proc -> (its restore of a checkpoint an earlier
        # restore rolled back, the checkpoint number of the current history it keeps)
        for e in restores:
            i = hp.index.get(e.proc)
            if i is None:
                continue
            x = hp.pos_of[i].get(e.ckpt)
            if x is None:
                base = h.resurrection_base.get(id(e))
                if base is None:  # a restore a later one of the same process in this group rolled back
                    continue  # (the later one is what the process restored)
                self.resurrecting[e.proc] = (e, base)  # it brings back a rolled-back history: of the
                x = hp.pos_of[i][base]  # current one it keeps what the two share, up to a checkpoint of both
            g[i] = x
        self.g = g
        self.line = hp.line_to_dict(g)
        if all(p in self.restore_line for p in hp.procs):
            semantics = "restart-all"  # everyone restarted: compare with the restart-all line
        self.semantics = semantics
        U = restorable(hp, bound(hp, failed, semantics), last)
        self.U = U
        self.gmax, _, _ = rl_fix(hp, U)
        down = set(self.down)
        self.orphans = [m for m in orphans(hp, g) if m.dst not in down]
        self.in_transit = in_transit(hp, g)

    @property
    def durability(self) -> Durability:
        """Logs and recorded channel state of the history at this recovery (built once)."""
        try:
            return self._durability
        except AttributeError:
            self._durability = Durability(self.hp)
            return self._durability

    def violations(self) -> list[Violation]:
        """``inconsistent-restore``: the orphans of the restored line, and the restored
        checkpoints that reflect a receive whose send an earlier restore undid."""
        hp = self.hp
        out = []
        for m in self.orphans:
            src, dst = hp.procs[m.src], hp.procs[m.dst]
            ws = _where(hp, self.g, m.src)
            wd = _where(hp, self.g, m.dst)
            rl = [self.restore_line[p] for p in (src, dst) if p in self.restore_line]
            out.append(
                Violation(
                    "inconsistent-restore",
                    "observed-recovery",
                    self.subject,
                    f"Let G = {fmt_cut(self.line)} be the line restored by {self.subject} (restore at line(s) "
                    f"{', '.join(map(str, sorted(set(rl))))}). Then {m.mid} on {m.ch} is processed by {dst} at line "
                    f"{m.recv_line}, before {wd}, but {hp.sent_by(m)} at line {m.send_line}, after {ws}: the restored "
                    f"state reflects a receive whose send was undone — an orphan, a contradiction with consistency."
                    + self._resurrected_note(src),
                    sorted({m.send_line, m.recv_line, *rl}),
                    {"messages": [m.mid], "cut": self.line},
                )
            )
        out += self._undone_sends_reflected()
        return out

    def _resurrected_note(self, proc: str) -> str:
        """What the line means for ``proc`` when its restore brings back a checkpoint an
        earlier restore rolled back (``resurrecting``)."""
        if proc not in self.resurrecting:
            return ""
        e, kept = self.resurrecting[proc]
        return (
            f" ({proc} restores at line {e.line} its checkpoint {e.ckpt}, which an earlier restore had rolled "
            f"back: it brings that history back, and keeps of its current one only what checkpoint {kept} holds.)"
        )

    def _undone_sends_reflected(self) -> list[Violation]:
        """Orphans whose send no longer exists: a restored checkpoint reflects the processing of
        a message whose send an earlier restore rolled back and that its sender has not
        regenerated (no message with the same channel and seq in the history). This is how a
        process that was down during that earlier recovery meets the orphan."""
        hp = self.hp
        regenerated = {(m.ch, m.seq) for m in hp.msgs}
        out = []
        for e in hp.ghost_recvs:
            i = hp.index.get(e.proc)
            if i is None or e.proc not in self.restore_line or self.g[i] > hp.L[i]:
                continue
            x = self.g[i]
            ck = hp.ckpt_ev[i][x]
            if ck is None or e.line > ck.line:
                continue
            assert e.mid is not None  # a receive names its message
            sent = hp.sent_ever(hp.resolve(e.mid))
            undone = hp.rolled_back.get(id(sent)) if sent is not None else None
            if sent is None or undone is None or (sent.ch, sent.seq) in regenerated:
                continue
            out.append(
                Violation(
                    "inconsistent-restore",
                    "observed-recovery",
                    self.subject,
                    f"{self.subject} restores checkpoint {hp.ckpt_name(i, x)} of {e.proc} (line "
                    f"{self.restore_line[e.proc]}), which reflects the processing of {e.mid} at line {e.line}; but its "
                    f"send (line {sent.line}) was undone by the restore at line {undone} and not regenerated since: the "
                    f"restored state reflects a receive whose send was undone — an orphan.",
                    sorted({sent.line, e.line, undone, self.restore_line[e.proc]}),
                    {"messages": [e.mid], "cut": self.line},
                )
            )
        return out

    def notes(self) -> list[str]:
        """Extra rollback w.r.t. the maximal line; when the restored line is exactly the
        maximal *loss-free* line (no in-transit message that nothing can replay), say so."""
        hp = self.hp
        extra = self._extra()
        if not extra or self.orphans:
            return []
        from snapcheck.checker.recovery_report import never_recoverable

        gl, _, _ = rl_fix(hp, self.U, never_recoverable(hp, self.durability))
        if gl == self.g:
            return [
                f"{self.subject}: restored {fmt_cut(self.line)}, the maximal line that loses no message; the "
                f"maximal consistent line {fmt_cut(hp.line_to_dict(self.gmax))} would leave messages in "
                f"transit that nothing can replay."
            ]
        parts = ", ".join(
            f"{hp.procs[i]} restored {hp.label(i, self.g[i])} where {hp.label(i, self.gmax[i])} was possible"
            for i in extra
        )
        return [
            f"{self.subject}: extra rollback beyond the maximal recovery line "
            f"{fmt_cut(hp.line_to_dict(self.gmax))}: {parts}."
        ]

    def _extra(self) -> list[int]:
        """Processes restored below the maximal line (not those restored at another
        parallelism: their restored state is built from others' checkpoints)."""
        hp = self.hp
        rescaled = {e.proc for e in self.restores if e.sources is not None}
        return [i for i in range(hp.n) if self.g[i] < self.gmax[i] and hp.procs[i] not in rescaled]

    def summary(self) -> dict:
        """The recovery as it appears in the report's ``observed_recoveries``."""
        hp = self.hp
        return {
            "subject": self.subject,
            "restored_line": self.line,
            "failed": [hp.procs[i] for i in self.failed],
            "down": [hp.procs[i] for i in self.down],
            "semantics": self.semantics,
            "maximal_line": hp.line_to_dict(self.gmax),
            "extra_rollback": bool(self._extra()),
            "consistent": not self.orphans,
            "in_transit": [m.mid for m in self.in_transit[:IN_TRANSIT_LISTED]],
            "in_transit_count": len(self.in_transit),
        }


def _where(h, g, i) -> str:
    x = g[i]
    if x > h.L[i]:
        return f"{h.procs[i]}'s current state"
    return f"checkpoint {h.ckpt_name(i, x)}"


def delivery_violations(rec: ObservedRecovery, h: History, trace, notes: list[str]) -> list[Violation]:
    """``lost`` (property ``exactly-once``): messages in transit with respect to the line
    restored by ``rec`` that are never processed after it in ``trace`` (``h``: its final
    effective history). A processing after ``rec`` that a later restore undid counts as
    processed here: the later recovery has the message in transit and judges it, so a
    loss is blamed on the recovery after which it is really lost. Replayable messages
    not yet processed when the trace ends are added to ``notes``.

    A message that had reached the receiver (arrived or processed) before the
    receiver's restore must be replayed; one still in the network is pending, not
    lost — unless, on a FIFO channel, a later message is processed after the
    recovery while it never is.

    ``B`` processed ``m``, then restores its initial checkpoint; nothing logged ``m``:

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["A", "B"], [("a2b", "A", "B")])
    >>> m = rec.send("A", "a2b"); _ = rec.checkpoint("A"); rec.recv("B", m)
    >>> rec.fail("B"); rec.restore("B", 0)
    >>> t = rec.trace(); h = History(t)
    >>> recovery = ObservedRecovery(t, h, 1, recovery_groups(t)[0], "partial")
    >>> [(v.kind, v.witness) for v in delivery_violations(recovery, h, t, notes=[])]
    [('lost', {'messages': ['a2b:1'], 'cut': {'A': 'V', 'B': 0}})]
    """
    hp = rec.hp
    dur = rec.durability
    recorded: set = set()  # (``History.identities``)
    for e in rec.restores:
        for r in dur.records.get((e.proc, e.ckpt), ()):
            assert r.mids is not None  # required of a record
            recorded.update(x for mid in r.mids for x in hp.identities(mid))
    reached: dict[str, set] = {}
    for p in rec.restore_line:
        reached[p] = {x for e in hp.raw.get(p, ()) if e.type in ("arrive", "recv") for x in hp.identities(e.mid)}
    processed_after: dict[str, set] = {}  # receiver -> what it processed after this recovery
    discarded_after: dict[str, dict] = {}  # receiver -> message -> its first discard after it
    later: list[set] = []  # computed when first needed

    def processed_later() -> set[str]:
        """The messages any process processes after this recovery's first restore."""
        if not later:
            first = min(rec.restore_line.values(), default=0)
            later.append({x for e in h.trace_index.of_type("recv") if e.line > first for x in h.identities(e.mid)})
        return later[0]

    out = []
    pending: dict[bool, list[str]] = {True: [], False: []}  # must it be replayed? -> messages not judged
    for m in rec.in_transit:
        moved = hp.moved.get(m.mid) is m  # a record a rescale recovered onto a new channel
        if (h.moved if moved else h.by_mid).get(m.mid) is None:  # its send was undone by a later recovery
            continue
        ident = (hp.resolve(m.mid), m.ch) if moved else m.mid  # (``History.identities``)
        dst = hp.procs[m.dst]
        after = rec.restore_line.get(dst, max(rec.restore_line.values()))
        if dst not in processed_after:
            evs = h.raw[dst]
            start = len(h.trace_index.proc_prefix(dst, after + 1))
            processed: set = set()
            discarded: dict = {}
            processed_after[dst], discarded_after[dst] = processed, discarded
            for e in evs[start:]:
                if e.type == "recv":
                    processed.update(h.identities(e.mid))
                elif e.type == "discard":
                    for x in h.identities(e.mid):
                        discarded.setdefault(x, e)
        if ident in processed_after[dst]:
            # processed after this recovery: if a later restore undid that, the later
            # recovery's line has it in transit, and that recovery judges whether it is lost
            continue
        skipped = _fifo_successor(h, m, dst, after, moved)
        dropped = discarded_after[dst].get(ident)
        if dropped is not None and (
            any(e.type == "restore" and e.line > dropped.line for e in h.raw[dst])  # that recovery judges it
            or ident in processed_later()  # a copy reached another process (a rescale's new task)
        ):
            dropped = None
        must_replay = ident in reached.get(dst, ())
        replayable = m.src == EXTERNAL or ident in recorded or dur.durable(m.mid, after)
        if skipped is not None:
            why = f"{dst} processes the later {skipped.mid} of the FIFO channel at line {skipped.line} instead"
        elif dropped is not None:
            reason = f" (as {dropped.reason})" if dropped.reason else ""
            why = f"{dst} discards {dropped.mid} at line {dropped.line}{reason}, though it never processed the message"
        elif must_replay and not replayable:
            why = "nothing can replay it (no durable log entry, not in the restored channel state)"
        elif not must_replay and (dst not in rec.restore_line or ident in processed_later()):
            continue  # a receiver this recovery did not restore (it retired: a rescale's records are
            # judged by rescale-in-flight; or it lives on, and the message may still reach it), or
            # a copy that reached another process
        else:
            pending[must_replay].append(f"{m.mid} on {m.ch}")
            continue
        lines = sorted(
            {
                m.send_line,
                *(x for x in (m.recv_line, skipped.line if skipped else None, dropped.line if dropped else None) if x),
                *rec.restore_line.values(),
            }
        )
        undone = f"its processing at line {m.recv_line} was undone" if m.recv_line else "it was not yet processed"
        out.append(
            Violation(
                "lost",
                "exactly-once",
                rec.subject,
                f"Let G = {fmt_cut(rec.line)} be the line restored by {rec.subject}. Message {m.mid} on {m.ch} is "
                f"{hp.sent_by(m)} at line {m.send_line} and kept by the restore, but {undone}; after the "
                f"recovery it is never processed: {why}. It is lost.",
                lines,
                {"messages": [m.mid], "cut": rec.line},
            )
        )
    for must_replay, which in pending.items():
        if which:
            state = "replayable, but" if must_replay else "still in the network and"
            notes.append(
                f"{rec.subject}: not judged whether {_some(which)} is lost: in transit w.r.t. the restored line "
                f"and {state} not yet processed when the trace ends (what comes after the trace decides: a replay "
                "delivers it, a source that skipped it loses it)."
            )
    return out


def _some(items: list[str], shown: int = 5) -> str:
    """``items`` named in a note: all of them, or the first ``shown`` and how many more (a
    note per message made a report quadratic in a trace's recoveries).

    >>> _some(["a:1 on a"]), _some([f"a:{i} on a" for i in range(1, 8)], shown=2)
    ('a:1 on a', 'any of 7 messages (a:1 on a, a:2 on a and 5 more)')
    """
    if len(items) == 1:
        return items[0]
    named = ", ".join(items[:shown])
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return f"any of {len(items)} messages ({named}{more})"


def _fifo_successor(h: History, m, dst: str, after: int, moved: bool = False):
    """A recv after ``after`` of a later message of m's FIFO channel, if any: one with a
    higher seq or, for a record a rescale recovered onto the channel (``moved``), any
    message first sent on the channel.

    Only messages first sent on that channel compare by seq: a record a rescale carried
    over from an old channel (its original sent on the old channel, with the old
    channel's numbering) is restored channel state, ahead of every send on the new
    channel whatever its number."""
    chan = h.channels.get(m.ch)
    if chan is None or not chan.fifo or (m.seq is None and not moved):
        return None
    for e in h.eff[h.index[dst]]:
        if e.line > after and e.type == "recv" and e.ch == m.ch:
            assert e.mid is not None  # a receive names its message
            o = h.by_mid.get(h.resolve(e.mid))
            if o is not None and o.ch == m.ch and o.seq is not None and (moved or o.seq > m.seq):
                return e
    return None


def duplicate_violations(h: History, restores_judged: bool = True) -> list[Violation]:
    """``duplicate-processing`` and ``phantom`` in the final effective history.

    A receive of a message whose send a later restore rolled back is the restored line's
    orphan, ``observed-recovery``'s ``inconsistent-restore``; it is a ``phantom`` here
    only when ``restores_judged`` is false (that property not selected), so that it is
    reported once but never passed.

    A data message's logical identity is its ``(channel, seq)``: the original, its
    replayed incarnations and a copy regenerated after a restore are one message; a
    record recovered after a restore at another parallelism is one message per new
    channel it is recovered on (``rescale-in-flight`` judges which channels own it).

    >>> from snapcheck.traces import TraceRecorder

    A sender rolled back and sent the message again (the same ``seq``), after the
    receiver had processed it; the receiver processes the copy too:

    >>> rec = TraceRecorder(["A", "B"], [("a2b", "A", "B")])
    >>> m = rec.send("A", "a2b"); rec.recv("B", m); rec.fail("A"); rec.restore("A", 0)
    >>> rec.recv("B", rec.send("A", "a2b"))
    >>> [(v.kind, v.lines) for v in duplicate_violations(History(rec.trace()))]
    [('duplicate-processing', [3, 7])]

    A replay from the sender's log after the receiver's rollback is the same message,
    processed once in the effective history:

    >>> rec = TraceRecorder(["A", "B"], [{"id": "a2b", "src": "A", "dst": "B", "logged": True}])
    >>> m = rec.send("A", "a2b"); rec.recv("B", m); rec.fail("B"); rec.restore("B", 0)
    >>> rec.recv("B", rec.replay("A", m))
    >>> duplicate_violations(History(rec.trace()))
    []

    A receive the sender's restore then undoes the send of is left to observed-recovery,
    unless that property is not judged:

    >>> rec = TraceRecorder(["A", "B"], [("a2b", "A", "B")])
    >>> rec.recv("B", rec.send("A", "a2b")); rec.fail("A"); rec.restore("A", 0)
    >>> h = History(rec.trace())
    >>> duplicate_violations(h), [v.kind for v in duplicate_violations(h, restores_judged=False)]
    ([], ['phantom'])
    """
    effective = {(m.ch, m.seq) for m in h.msgs if m.seq is not None}
    seen: dict[tuple, Event] = {}
    recovered: list[tuple[tuple, Event]] = []  # (the original's identity, a copy recovered on a new channel)
    out = []
    for i, eff in enumerate(h.eff):
        for e in eff:
            if e.type != "recv" or e.ch not in h.ch_ends:
                continue
            assert e.mid is not None  # a receive names its message
            o = h.resolve(e.mid)
            m = h.by_mid.get(o)
            key: tuple  # the message's identity: (channel, seq), or (channel, original mid) without a seq
            if m is not None:
                key = (m.ch, m.seq) if m.seq is not None else (m.ch, o)
                if m.dst != i and h.moved:  # recovered on a new channel after a rescale:
                    mv = h.moved_of(e.mid)  # once per new channel (each copy of broadcast state)
                    if mv is not None:
                        recovered.append((key, e))
                        key = (mv.ch, o)
            else:
                sent = h.sent_ever(o)
                if sent is None or sent.kind in MARKERS:
                    continue
                key = (sent.ch, sent.seq)
                if key not in effective:
                    undone = h.rolled_back.get(id(sent))
                    # before the restore: observed-recovery's inconsistent restore, when it is judged
                    if undone is None or e.line > undone or not restores_judged:
                        out.append(
                            Violation(
                                "phantom",
                                "exactly-once",
                                "effective history",
                                f"{e.proc} processes {e.mid} at line {e.line}, but the send of {o} (line {sent.line}) "
                                + (f"was rolled back by the restore at line {undone} and " if undone else "")
                                + "is not regenerated: a message that no longer exists is processed.",
                                sorted({e.line, sent.line, *([undone] if undone else [])}),
                                {"messages": [e.mid]},
                            )
                        )
                    continue
            first = seen.get(key)
            if first is None:
                seen[key] = e
                continue
            out.append(
                Violation(
                    "duplicate-processing",
                    "exactly-once",
                    "effective history",
                    f"{h.procs[i]} processes message {key[0]}#{key[1]} twice in the effective history: as {first.mid} at "
                    f"line {first.line} and as {e.mid} at line {e.line} (neither is rolled back).",
                    [first.line, e.line],
                    {"messages": [first.mid, e.mid]},
                )
            )
    for key, e in recovered:  # its original receiver had processed it, and that processing stands
        first = seen.get(key)
        if first is not None:
            out.append(
                Violation(
                    "duplicate-processing",
                    "exactly-once",
                    "effective history",
                    f"{e.proc} processes {e.mid} at line {e.line}, a copy of {first.mid} recovered on {e.ch} after a "
                    f"rescale, but {first.proc} had processed {first.mid} at line {first.line} and that is not "
                    "rolled back: the record was counted in the restored state and is processed again.",
                    sorted([first.line, e.line]),
                    {"messages": [first.mid, e.mid]},
                )
            )
    return out
