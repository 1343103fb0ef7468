"""Output commit, control-channel delivery and recovery lineage (classes P4, P5 and P2 on
control channels of docs/bug-zoo.md, "Property classes"; docs/theory.md, "Output commit and
two-phase commit").

Trace vocabulary (trace format v1, carried in ``attrs``; docs/checker.md):

* a sink's ``output`` with ``attrs {"txn": n, "phase": "pre-commit"}`` seals
  transaction ``n`` into the checkpoint event just before it;
  ``{"txn": n, "phase": "commit"}`` publishes it; ``{"phase": "end"}`` is the sink's
  end of stream (it publishes nothing after);
* a coordinator ``send`` with ``attrs {"notify": m}`` is the completion
  notification of round ``m``; ``attrs {"event": id}`` is an operator event
  (state handed from the coordinator to a task, e.g. a split assignment).

Properties:

``output-commit`` (P5; Carbone et al. 2017 "State Management in Apache Flink" §4
two-phase commit; FLINK-10377, FLINK-21080, FLINK-38614):

* ``premature-commit`` — transaction ``n`` is published before the sink knows
  that a round ``m ≥ n`` completed: no notification ``m ≥ n`` sent after the
  coordinator's ``round_complete m`` was received by the sink before, and no
  earlier ``restore`` of the sink to a round ``m ≥ n`` that had completed;
* ``duplicate-commit`` — a transaction is published twice;
* ``rolled-back-commit`` — the sink publishes a transaction that is not in its
  effective state: a restore took it out (it was pre-committed into a checkpoint the
  restore went back behind, e.g. of an aborted round) and it was not pre-committed
  again since. Its records, processed again after the restore, go out in a later
  transaction too. (A restored checkpoint that holds it keeps it staged: recovery
  commits it.)
* ``uncommitted`` — at the end of the trace a transaction in the sink's effective
  state (pre-committed and not undone by a later restore) is covered by a
  completed round and was never published: a lost or late notification was not
  subsumed, or the final notification never arrived (the sink waits forever);
* ``eos-before-commit`` — the sink ended its stream while such a transaction was
  still unpublished.

A sink that ``retire``s at a checkpoint (restored at another parallelism) hands that
checkpoint's unpublished transactions to its successors; a successor publishes one with
``attrs {"txn": n, "phase": "commit", "of": OLD_SINK}``, and each handed transaction must
be published exactly once (else ``uncommitted`` or ``duplicate-commit``).

``control-delivery`` (P2 for control channels; FLINK-21996): for every completed
round ``n`` and every operator event first sent before ``round_start n``, the
destination task's effective history at its checkpoint of round ``n`` contains
the event's receipt; otherwise the event is in neither the coordinator's snapshot
(it was handed out) nor the task's: ``control-dropped``.

``recovery-lineage`` (P4; Wallaroo #3032, FLINK-34518, RisingWave #10907): every
recovery of a coordinated trace restores the latest round that completed before
it, and all of its restores restore the same round: ``restore-aborted`` (the round
restored never completed, or was aborted), ``restore-stale`` (an older round or the
empty initial state although a later round had completed), ``restore-mixed``. A
restore restores the round of the checkpoint it takes; its ``round`` counts only where
that round's completion keeps that checkpoint's state (``observed_recovery.restored_round``).

"Effective state" follows restores: a ``restore`` to checkpoint ``c`` resets a
process's state to what it was at checkpoint ``c`` (the events in between are undone).
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import accumulate

from snapcheck.checker.observed_recovery import checkpoint_rounds, restored_round
from snapcheck.checker.report import Violation
from snapcheck.checker.rounds import completion_fallbacks


def _attr(e, name):
    return e.attrs.get(name) if e.attrs else None


class _Coordination:
    """Round completions and notifications: what the coordinator decided, and when."""

    def __init__(self, ix):
        self.complete_line: dict[int, int] = {}
        self.abort_line: dict[int, int] = {}
        self.start_line: dict[int, int] = {}
        self.valid_notify: dict[str, int] = {}  # mid -> round, for notifications sent after completion
        self.ckpt_round = checkpoint_rounds(ix)
        self.fallback = completion_fallbacks(ix.of_type("round_complete"))
        for e in ix.of_type("round_complete"):
            self.complete_line.setdefault(e.round, e.line)
        for e in ix.of_type("round_abort"):
            self.abort_line.setdefault(e.round, e.line)
        for e in ix.of_type("round_start"):
            self.start_line.setdefault(e.round, e.line)
        for e in ix.with_attr("send", "notify"):
            m = e.attrs["notify"]
            if m is not None and self.complete_line.get(m, e.line) < e.line:
                self.valid_notify[e.mid] = m
        self._rounds = sorted(self.complete_line)  # completed rounds, ascending
        self._lines = sorted((ln, r) for r, ln in self.complete_line.items())  # completions in file order
        self._latest = list(accumulate((r for _, r in self._lines), max))  # latest round completed so far

    def completed_before(self, line: int) -> int:
        """The latest round completed before ``line`` (0: none)."""
        k = bisect_left(self._lines, (line,))
        return self._latest[k - 1] if k else 0

    def covering(self, n: int) -> int:
        """The first completed round ``>= n`` (the one whose completion covers transaction ``n``)."""
        return self._rounds[bisect_left(self._rounds, n)]


def output_commit_violations(ix, coord: _Coordination) -> list[Violation]:
    """``output-commit`` violations of every two-phase-commit sink (a process with
    ``output`` events that carry a ``phase``; module docstring): ``premature-commit``,
    ``duplicate-commit``, ``rolled-back-commit``, ``uncommitted``, ``eos-before-commit``. ``ix``: the trace's
    ``TraceIndex``; ``coord``: its round completions and notifications.

    A sink that retires at a checkpoint (a job restored at another parallelism) hands
    the unpublished transactions of that checkpoint to its successors, which publish
    them with ``attrs {"of": OLD_SINK}`` (recover-and-commit); each must be published
    exactly once, by one of them.

    A sink that publishes its transaction without waiting for the round to complete:

    >>> from snapcheck.traces import TraceRecorder
    >>> from snapcheck.checker.trace_index import TraceIndex
    >>> rec = TraceRecorder([{"id": "S", "role": "sink"}], [])
    >>> _ = rec.checkpoint("S", round=1)
    >>> rec.output("S", [], attrs={"txn": 1, "phase": "pre-commit"})
    >>> rec.output("S", [], attrs={"txn": 1, "phase": "commit"})
    >>> ix = TraceIndex(rec.trace())
    >>> [(v.kind, v.subject) for v in output_commit_violations(ix, _Coordination(ix))]
    [('premature-commit', 'sink S')]
    """
    last_round = max(coord.complete_line, default=0)
    sinks = {e.proc for e in ix.with_attr("output", "phase") if e.attrs["phase"]}
    out: list[Violation] = []
    handed: dict[str, dict[int, int]] = {}  # retired sink -> txn -> pre-commit line
    inherited: dict[tuple[str, int], list[int]] = {}  # (retired sink, txn) -> commit lines
    own: dict[str, dict[int, int]] = {}  # sink -> txn -> the line where the sink itself published it
    for proc, events in ix.by_proc.items():
        if proc in sinks:
            out.extend(_sink(proc, events, coord, last_round, handed, inherited, own))
    for (old, n), lines in sorted(inherited.items()):
        if n not in handed.get(old, {}):
            out.append(_not_handed(old, n, lines, handed, own.get(old, {}).get(n)))
        elif len(lines) > 1:
            out.append(
                Violation(
                    "duplicate-commit",
                    "output-commit",
                    f"sink {old}",
                    f"transaction {n} of {old}, handed over when it retired, is published {len(lines)} times "
                    f"(lines {', '.join(map(str, lines))}).",
                    [handed[old][n], *lines],
                    {"txn": n},
                )
            )
    for old, txns in sorted(handed.items()):
        for n, ln in sorted(txns.items()):
            if n <= last_round and (old, n) not in inherited:
                out.append(_uncommitted(old, n, ln, coord, " when it retired, and none of its successors published it"))
    return out


def _not_handed(old: str, n: int, lines: list[int], handed: dict, published: int | None) -> Violation:
    """``duplicate-commit``: transaction ``n`` of sink ``old`` published by successors, as
    ``old``'s, at ``lines``, although ``old`` handed over no such pending transaction: it
    published ``n`` itself (at line ``published``), or never pre-committed it, or never
    retired at a checkpoint and so handed over nothing."""
    retired = old in handed
    if published is not None:
        text = (
            f"transaction {n} of {old} is published twice: by {old} itself at line {published}, and as {old}'s "
            f"by a successor at line {lines[0]}; "
            + (
                f"{old} had published it before it retired, so it handed it over as done, not pending."
                if retired
                else f"{old} never retired at a checkpoint: it kept running after its state was taken over."
            )
        )
        return Violation(
            "duplicate-commit", "output-commit", f"sink {old}", text, sorted([published, *lines]), {"txn": n}
        )
    why = "it never pre-committed it" if retired else "it never retired at a checkpoint, so it handed over nothing"
    text = (
        f"transaction {n} of {old} is published as {old}'s by a successor at line {lines[0]}, but {old} "
        f"handed over no such pending transaction: {why}."
    )
    return Violation("duplicate-commit", "output-commit", f"sink {old}", text, lines, {"txn": n})


def _uncommitted(proc, n, ln, coord, how="") -> Violation:
    return Violation(
        "uncommitted",
        "output-commit",
        f"sink {proc}",
        f"transaction {n} of {proc} (pre-committed at line {ln}) is covered by completed round "
        f"{coord.covering(n)} but never published{how}: a lost notification was not subsumed by a "
        f"later one, or the final notification never arrived.",
        [ln],
        {"txn": n},
    )


def _sink(proc, events, coord, last_round, handed, inherited, own) -> list[Violation]:
    out: list[Violation] = []
    staged: dict[int, int] = {}  # effective, unpublished txn -> pre-commit line
    undone: dict[int, tuple[int, int]] = {}  # txn a restore took out of staged -> (its pre-commit, restore) lines
    snaps: dict[int, dict] = {0: {}}  # checkpoint -> its staged transactions, for those a restore or retire reads
    read = {e.ckpt for e in events if e.type in ("restore", "retire")}  # (a copy per checkpoint was quadratic)
    published: dict[int, int] = {}  # txn -> line (the external system: survives restores)
    known = 0  # latest round known complete
    last_ckpt = 0
    ended = None
    for e in events:
        t = e.type
        if t == "checkpoint":
            last_ckpt = e.ckpt
            if e.ckpt in read:
                snaps[e.ckpt] = dict(staged)
        elif t == "restore":
            kept = {n: ln for n, ln in snaps.get(e.ckpt, {}).items() if n not in published}
            undone.update({n: (ln, e.line) for n, ln in staged.items() if n not in kept})
            staged = kept
            if e.round is not None and coord.complete_line.get(e.round, e.line) < e.line:
                known = max(known, e.round)
        elif t == "retire" and e.ckpt is not None:  # its state lives on in its successors
            handed[proc] = {n: ln for n, ln in snaps.get(e.ckpt, {}).items() if n not in published}
            staged = {}
        elif t == "recv":
            m = coord.valid_notify.get(e.mid)
            if m is not None:
                known = max(known, m)
        elif t == "output":
            phase = _attr(e, "phase")
            n = _attr(e, "txn")
            if phase == "pre-commit":
                staged[n] = e.line
                undone.pop(n, None)
                if last_ckpt in snaps:
                    snaps[last_ckpt][n] = e.line
            elif phase == "commit" and _attr(e, "of") is not None and _attr(e, "of") != proc:
                inherited.setdefault((_attr(e, "of"), n), []).append(e.line)
                if n > known:
                    out.append(_premature(proc, n, e.line, known, None))
            elif phase == "commit":
                if n in published:
                    out.append(
                        Violation(
                            "duplicate-commit",
                            "output-commit",
                            f"sink {proc}",
                            f"{proc} publishes transaction {n} at line {e.line}, already published at line "
                            f"{published[n]}: a repeated or late notification was applied twice.",
                            [published[n], e.line],
                            {"txn": n},
                        )
                    )
                else:
                    if n in undone and n not in staged:
                        out.append(_rolled_back(proc, n, e, undone[n]))
                    if n > known:
                        out.append(_premature(proc, n, e.line, known, staged.get(n)))
                published.setdefault(n, e.line)
                staged.pop(n, None)
            elif phase == "end" and ended is None:
                ended = e.line
                for n, ln in sorted(staged.items()):
                    if n <= last_round:
                        out.append(
                            Violation(
                                "eos-before-commit",
                                "output-commit",
                                f"sink {proc}",
                                f"{proc} ends its stream at line {e.line} while transaction {n} (pre-committed "
                                f"at line {ln}, covered by completed round {coord.covering(n)}) is unpublished: "
                                f"its final commit is lost.",
                                [ln, e.line],
                                {"txn": n},
                            )
                        )
    if ended is None:
        for n, ln in sorted(staged.items()):
            if n <= last_round:
                out.append(_uncommitted(proc, n, ln, coord))
    own[proc] = published
    return out


def _premature(proc, n, line, known, staged_line) -> Violation:
    return Violation(
        "premature-commit",
        "output-commit",
        f"sink {proc}",
        f"{proc} publishes transaction {n} at line {line} before it knows that a round "
        f">= {n} completed (latest known: {known or 'none'}); the output of a checkpoint "
        f"that may still abort becomes visible.",
        [staged_line, line],
        {"txn": n},
    )


def _rolled_back(proc, n, e, lines: tuple[int, int]) -> Violation:
    """``rolled-back-commit``: sink ``proc`` publishes transaction ``n`` (output ``e``)
    that its restore at ``lines[1]`` took out of its effective state (pre-committed at
    ``lines[0]`` into a checkpoint the restore went back behind), not staged again since."""
    pre, restore = lines
    return Violation(
        "rolled-back-commit",
        "output-commit",
        f"sink {proc}",
        f"{proc} publishes transaction {n} at line {e.line}, pre-committed at line {pre} but rolled back by its "
        f"restore at line {restore} (the checkpoint restored does not hold it) and not pre-committed again since: "
        "the restored state processes its records again, and a later transaction publishes them again.",
        [pre, restore, e.line],
        {"txn": n},
    )


def control_delivery_violations(ix, coord: _Coordination) -> list[Violation]:
    """``control-dropped`` (property ``control-delivery``): an operator event
    (``attrs.event``) sent to a task before round ``n`` started, which the task's
    checkpoint of the completed round ``n`` does not reflect, so that it is in neither
    snapshot (FLINK-21996). ``ix``: the trace's ``TraceIndex``; ``coord``: its rounds.

    >>> from snapcheck.traces import TraceRecorder
    >>> from snapcheck.checker.trace_index import TraceIndex
    >>> rec = TraceRecorder(["T", {"id": "C", "role": "coordinator"}],
    ...                     [{"id": "c2t", "src": "C", "dst": "T", "kind": "control"}])
    >>> _ = rec.send("C", "c2t", attrs={"event": "split-1"})          # never received by T
    >>> rec.round_start("C", 1); _ = rec.checkpoint("T", round=1); rec.round_complete("C", 1)
    >>> ix = TraceIndex(rec.trace())
    >>> [(v.kind, v.subject, v.witness["event"]) for v in control_delivery_violations(ix, _Coordination(ix))]
    [('control-dropped', 'round 1', 'split-1')]
    """
    first_send: dict[tuple[str, str], int] = {}  # (destination, event id) -> line
    event_of: dict[str, str] = {}  # mid -> event id
    chans = ix.channels
    for e in ix.with_attr("send", "event"):
        k = e.attrs["event"]
        if k is not None:
            event_of[e.mid] = k
            first_send.setdefault((chans[e.ch].dst, k), e.line)
    if not first_send:
        return []
    out: list[Violation] = []
    for proc, events in ix.by_proc.items():
        mine = {k: ln for (p, k), ln in first_send.items() if p == proc}
        if not mine:
            continue
        have: set[str] = set()
        snaps: dict[int, frozenset] = {0: frozenset()}
        for e in events:
            t = e.type
            if t == "recv" and e.mid in event_of:
                have.add(event_of[e.mid])
            elif t == "restore":
                have = set(snaps.get(e.ckpt, ()))
            elif t == "checkpoint":
                snaps[e.ckpt] = frozenset(have)
                n = e.round
                if n is None or n not in coord.complete_line or n not in coord.start_line:
                    continue
                for k, ln in sorted(mine.items(), key=lambda kv: kv[1]):
                    if ln < coord.start_line[n] and k not in have:
                        out.append(
                            Violation(
                                "control-dropped",
                                "control-delivery",
                                f"round {n}",
                                f"operator event {k} was sent to {proc} at line {ln}, before round {n} started "
                                f"(line {coord.start_line[n]}), but {proc}'s checkpoint of round {n} (line {e.line}) "
                                f"does not reflect it and round {n} completed (line {coord.complete_line[n]}): "
                                f"the event is in neither snapshot.",
                                [ln, e.line, coord.complete_line[n]],
                                {"event": k, "checkpoints": [[proc, e.ckpt]]},
                            )
                        )
    return out


def recovery_lineage_violations(groups, coord: _Coordination) -> list[Violation]:
    """``recovery-lineage`` violations of the observed recoveries ``groups`` (groups of
    ``restore`` events, ``observed_recovery.recovery_groups``): each must restore the
    latest round completed before it, the same on every process (``restore-aborted``,
    ``restore-stale``, ``restore-mixed``; module docstring).

    A task that restores its initial state after round 1 completed:

    >>> from snapcheck.traces import TraceRecorder
    >>> from snapcheck.checker.observed_recovery import recovery_groups
    >>> from snapcheck.checker.trace_index import TraceIndex
    >>> rec = TraceRecorder(["T", {"id": "C", "role": "coordinator"}], [])
    >>> rec.round_start("C", 1); _ = rec.checkpoint("T", round=1); rec.round_complete("C", 1)
    >>> rec.fail("T"); rec.restore("T", 0)
    >>> t = rec.trace()
    >>> vs = recovery_lineage_violations(recovery_groups(t), _Coordination(TraceIndex(t)))
    >>> [(v.kind, v.witness) for v in vs]
    [('restore-stale', {'round': 0, 'latest': 1})]
    """
    out: list[Violation] = []
    for i, group in enumerate(groups, 1):
        first = min(e.line for e in group)
        latest = coord.completed_before(first)
        # a restore goes back to the round of what it takes (its ``round`` only where the
        # completion of that round keeps that state); one that says nothing (a new subtask
        # given no state) is no evidence either way
        restores: dict[int, list[int]] = {}  # round -> the lines of the restores going back to it
        for e in group:
            if (r := restored_round(e, coord.ckpt_round, coord.fallback)) is not None:
                restores.setdefault(r, []).append(e.line)
        rounds = set(restores)
        lines = [e.line for e in group]
        subject = f"recovery {i}"
        if len(rounds) > 1:
            out.append(
                Violation(
                    "restore-mixed",
                    "recovery-lineage",
                    subject,
                    f"recovery {i} restores different rounds ({', '.join(str(r) for r in sorted(rounds, key=str))}) "
                    f"on different processes.",
                    lines,
                )
            )
        for r in sorted(rounds):
            if r and coord.complete_line.get(r, first) >= first:
                why = f"was aborted at line {coord.abort_line[r]}" if r in coord.abort_line else "never completed"
                out.append(
                    Violation(
                        "restore-aborted",
                        "recovery-lineage",
                        subject,
                        f"recovery {i} (line {restores[r][0]}) restores round {r}, which {why} before it: a "
                        f"participant may have aborted that checkpoint (its outputs and offsets disagree).",
                        restores[r],
                        {"round": r},
                    )
                )
            elif r < latest:
                what = f"round {r}" if r else "the empty initial state"
                out.append(
                    Violation(
                        "restore-stale",
                        "recovery-lineage",
                        subject,
                        f"recovery {i} (line {restores[r][0]}) restores {what} although round {latest} completed at line "
                        f"{coord.complete_line[latest]}: the job goes back behind a completed checkpoint, so what it did "
                        "after that checkpoint is done again (output committed since is published twice).",
                        restores[r] + [coord.complete_line[latest]],
                        {"round": r, "latest": latest},
                    )
                )
    return out


def check_output_properties(run) -> None:
    """Add ``output-commit``, ``control-delivery`` and ``recovery-lineage`` to a
    ``check_trace`` run, each where the trace has its vocabulary and when selected (the
    default: all):
    sink outputs with a ``phase``, operator events (``attrs.event``), and rounds
    (``round_start``) with recoveries.

    Round 1 completes, but the sink is never notified and never publishes its transaction:

    >>> from snapcheck.checker import check_trace
    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder([{"id": "S", "role": "sink"}, {"id": "C", "role": "coordinator"}], [])
    >>> _ = rec.checkpoint("S", round=1)
    >>> rec.output("S", [], attrs={"txn": 1, "phase": "pre-commit"})
    >>> rec.round_complete("C", 1)
    >>> check_trace(rec.trace()).kinds
    {'uncommitted'}
    """
    ix = run.ix
    coord = None
    has_phase = any(e.attrs["phase"] for e in ix.with_attr("output", "phase"))
    if has_phase and run.want("output-commit"):
        coord = coord or _Coordination(ix)
        found = output_commit_violations(ix, coord)
        broke = next(iter(ix.of_type("protocol_error")), None)
        if broke is not None:  # the run ended there: a publication still to come is not owed yet
            late = [v for v in found if v.kind == "uncommitted"]
            if late:
                found = [v for v in found if v.kind != "uncommitted"]
                run.report.notes.append(
                    f"output-commit: {len(late)} transaction(s) covered by a completed round and unpublished when "
                    f"the protocol broke at line {broke.line} (e.g. {late[0].subject}) are not judged: the run ended "
                    "there, before their notification could arrive."
                )
        run.add("output-commit", "trace", found)
    has_events = any(e.attrs["event"] is not None for e in ix.with_attr("send", "event"))
    if has_events and run.want("control-delivery"):
        coord = coord or _Coordination(ix)
        run.add("control-delivery", "trace", control_delivery_violations(ix, coord))
    if run.want("recovery-lineage") and ix.has("round_start") and (groups := run.recovery_groups()):
        coord = coord or _Coordination(ix)
        run.add("recovery-lineage", "trace", recovery_lineage_violations(groups, coord))
