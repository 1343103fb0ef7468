"""Changelog (GIC) checkpoints: the restored state is the state at the checkpoint, and
no artifact a retained checkpoint references is deleted (class P8 of docs/bug-zoo.md,
"Property classes").

Definitions after "Generic Log-based Incremental Checkpoint" (docs/theory.md, "Changelog checkpoints"):
a checkpoint of a task is a *handle* — a materialized snapshot holding the changes
``sqn < upto`` plus changelog ranges — and restoring it applies the snapshot, then
each range. Trace vocabulary (v1 events with ``attrs``; docs/checker.md):

* ``output`` with ``attrs {"artifact": id, "op": "create", "type":
  "materialization" | "changelog", "from": lo, "to": hi}``, by the task whose
  changes ``lo ≤ sqn < hi`` the artifact holds;
* ``output`` with ``attrs {"artifact": id, "op": "delete"}`` (any process; the
  checkpoint store / garbage collector);
* a task's ``checkpoint`` with ``vars {"materialization": id | null, "changelog":
  [[id, from, to], ...], ...}``.

A task's *changes* are its processed data messages, identified by ``(channel, seq)``
(stable across incarnations), in the order of its effective history: a ``restore``
to checkpoint ``c`` resets the sequence to what it was at ``c``. Change ``sqn`` is
position ``sqn`` of that sequence. An artifact's *content* is fixed at its creation
line: the changes ``lo..hi-1`` of the creator's effective history there.

``changelog-restore`` (P8, FLINK-25492): for every checkpoint with a handle, the
changes the handle restores — the materialization's content, then each range's
part of its segment — equal the task's changes at the checkpoint:
``changelog-gap`` (a change at the checkpoint is in neither the snapshot nor a range,
e.g. an inclusive materialization boundary), ``changelog-overlap`` (a change
restored twice: a non-idempotent update applied twice), ``changelog-mismatch`` (the
coverage is exact but the content differs, or the handle claims changes beyond the
checkpoint), ``artifact-unknown`` (the handle names an artifact not created before
the checkpoint, or a range outside its segment). Not judged for a process a restore
at another parallelism created (a note says so): its state starts with what its
sources held.

``artifact-retention`` (P8 / P4, FLINK-7268): the store retains the latest
``retained`` completed rounds (protocol parameter, default 1); at every deletion, no
checkpoint of a retained round references the artifact
(``artifact-deleted-referenced``); no restore reads a handle whose artifact was
already deleted (``restore-missing-artifact``).
"""

from __future__ import annotations

from snapcheck.checker.free_fields import UnreadableField
from snapcheck.checker.report import Violation
from snapcheck.traces.model import MARKERS


def _attr(e, name):
    return e.attrs.get(name) if e.attrs else None


def has_changelog(ix) -> bool:
    """Does the trace (its ``TraceIndex``) have the changelog vocabulary: an artifact
    ``output`` or a checkpoint whose ``vars`` hold a ``changelog`` handle?

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.trace_index import TraceIndex
    >>> has_changelog(TraceIndex(golden("theory_a_zcycle")))
    False
    """
    for e in ix.with_attr("output", "artifact"):
        if e.attrs["artifact"] is not None:
            return True
    for e in ix.of_type("checkpoint"):
        if e.vars and "changelog" in e.vars:
            return True
    return False


class _Artifacts:
    """Artifacts, their contents, deletions and the handles of one trace (its ``TraceIndex``)."""

    def __init__(self, ix):
        key_of: dict[str, tuple] = {}
        barriers: set[str] = set()
        for e in ix.of_type("send"):
            if e.kind in MARKERS:
                barriers.add(e.mid)
            else:
                key_of[e.mid] = (e.ch, e.seq)
        self.created: dict[str, tuple] = {}  # id -> (line, owner, lo, hi, content, type)
        self.deleted: dict[str, int] = {}  # id -> first deletion line
        self.handles: dict[tuple[str, int], tuple] = {}  # (proc, ckpt) -> (line, handle, changes)
        # processes a restore at another parallelism created: their state starts with what
        # their sources held (other tasks' changes and artifacts), which no handle here maps
        self.inherited = {e.proc for e in ix.of_type("restore") if e.sources is not None}
        for proc, events in ix.by_proc.items():
            changes: list[tuple] = []
            saved: dict[int, list] = {0: []}
            for e in events:
                t = e.type
                if t == "recv" and e.mid not in barriers and e.mid in key_of:
                    changes.append(key_of[e.mid])
                elif t == "checkpoint":
                    saved[e.ckpt] = list(changes)
                    if e.vars and "changelog" in e.vars:
                        self.handles[(proc, e.ckpt)] = (e.line, e.vars, saved[e.ckpt])
                elif t == "restore":
                    changes = list(saved.get(e.ckpt, []))
                elif t == "output" and _attr(e, "artifact") is not None:
                    aid = _attr(e, "artifact")
                    if _attr(e, "op") == "delete":
                        self.deleted.setdefault(aid, e.line)
                    elif _attr(e, "op") == "create":
                        lo, hi = int(_attr(e, "from") or 0), int(_attr(e, "to") or 0)
                        self.created.setdefault(aid, (e.line, proc, lo, hi, changes[lo:hi], _attr(e, "type")))

    def referenced(self, handle: dict) -> list[str]:
        out = [handle["materialization"]] if handle.get("materialization") else []
        return out + [r[0] for r in handle.get("changelog", [])]


def _fmt(key) -> str:
    return f"{key[0]}#{key[1]}"


def restore_violations(arts: _Artifacts) -> list[Violation]:
    """``changelog-restore`` violations: checkpoints whose handle (materialized snapshot
    plus changelog ranges) does not restore exactly the task's changes at the checkpoint
    (``changelog-gap``, ``changelog-overlap``, ``changelog-mismatch``,
    ``artifact-unknown``; module docstring). ``arts``: the trace's artifacts.

    A task processes two changes (sqn 0 and 1) and checkpoints a materialization that
    holds only ``0 ≤ sqn < 1``, with no changelog range for the rest:

    >>> from snapcheck.traces import TraceRecorder
    >>> from snapcheck.checker.trace_index import TraceIndex
    >>> rec = TraceRecorder(["S", "T"], [("s2t", "S", "T")])
    >>> rec.recv("T", rec.send("S", "s2t")); rec.recv("T", rec.send("S", "s2t"))
    >>> rec.output("T", [], attrs={"artifact": "M", "op": "create", "type": "materialization",
    ...                              "from": 0, "to": 1})
    >>> _ = rec.checkpoint("T", vars={"materialization": "M", "changelog": []})
    >>> [(v.kind, v.witness["sqn"]) for v in restore_violations(_Artifacts(TraceIndex(rec.trace())))]
    [('changelog-gap', [1])]
    """
    out = []
    for (proc, ckpt), (line, h, state) in sorted(arts.handles.items(), key=lambda kv: kv[1][0]):
        if proc in arts.inherited:  # not judged (``check_changelog`` says so)
            continue
        subject = f"checkpoint {proc}:{ckpt}"
        pieces = []  # (lo, hi, content, artifact line)
        bad = False
        for aid, lo, hi in ([(h["materialization"], None, None)] if h.get("materialization") else []) + [
            tuple(r) for r in h.get("changelog", [])
        ]:
            a = arts.created.get(aid)
            if a is None or a[0] > line or a[1] != proc:
                why = "never created by this task" if a is None or a[1] != proc else f"created later (line {a[0]})"
                out.append(
                    Violation(
                        "artifact-unknown",
                        "changelog-restore",
                        subject,
                        f"checkpoint {proc}:{ckpt} (line {line}) references artifact {aid}, {why}.",
                        [line] + ([a[0]] if a else []),
                        {"artifacts": [aid], "checkpoints": [[proc, ckpt]]},
                    )
                )
                bad = True
                continue
            alo, ahi, content = a[2], a[3], a[4]
            lo, hi = (alo, ahi) if lo is None else (int(lo), int(hi))
            if lo < alo or hi > ahi or lo > hi:
                out.append(
                    Violation(
                        "artifact-unknown",
                        "changelog-restore",
                        subject,
                        f"checkpoint {proc}:{ckpt} (line {line}) restores changes {lo}..{hi - 1} of "
                        f"{aid}, which holds {alo}..{ahi - 1} (line {a[0]}).",
                        [line, a[0]],
                        {"artifacts": [aid], "checkpoints": [[proc, ckpt]]},
                    )
                )
                bad = True
                continue
            pieces.append((lo, hi, content[lo - alo : hi - alo], a[0], aid))
        if bad:
            continue
        cover = [0] * max([len(state)] + [p[1] for p in pieces])
        for lo, hi, *_ in pieces:
            for s in range(lo, hi):
                cover[s] += 1
        gap = [s for s in range(len(state)) if cover[s] == 0]
        over = [s for s, c in enumerate(cover) if c > 1]
        lines = [line] + [p[3] for p in pieces]
        wit = {"checkpoints": [[proc, ckpt]], "artifacts": [p[4] for p in pieces]}
        bounds = ", ".join(f"{p[4]}[{p[0]},{p[1]})" for p in pieces) or "nothing"
        if gap:
            s = gap[0]
            out.append(
                Violation(
                    "changelog-gap",
                    "changelog-restore",
                    subject,
                    f"checkpoint {proc}:{ckpt} (line {line}) holds {len(state)} changes, but its handle "
                    f"({bounds}) restores no change at sqn {s} (message {_fmt(state[s])})"
                    f"{f' and {len(gap) - 1} more' if len(gap) > 1 else ''}: the restored state misses "
                    f"it.",
                    lines,
                    {**wit, "sqn": gap[:20]},
                )
            )
        elif over:
            s = over[0]
            out.append(
                Violation(
                    "changelog-overlap",
                    "changelog-restore",
                    subject,
                    f"checkpoint {proc}:{ckpt} (line {line}): its handle ({bounds}) restores change sqn {s} "
                    f"{cover[s]} times{f' and {len(over) - 1} more' if len(over) > 1 else ''}: a "
                    f"non-idempotent update is applied twice.",
                    lines,
                    {**wit, "sqn": over[:20]},
                )
            )
        elif len(cover) > len(state) or (restored := [c for p in sorted(pieces) for c in p[2]]) != state:
            if len(cover) > len(state):
                what = f"claims change sqn {len(state)}, which the task had not made at the checkpoint"
            else:
                first = next(i for i, (a, b) in enumerate(zip(restored, state)) if a != b)
                what = (
                    f"restores {_fmt(restored[first])} as change sqn {first}, where the task's is {_fmt(state[first])}"
                )
            out.append(
                Violation(
                    "changelog-mismatch",
                    "changelog-restore",
                    subject,
                    f"checkpoint {proc}:{ckpt} (line {line}) holds {len(state)} change{'s' if len(state) != 1 else ''}; "
                    f"its handle ({bounds}) {what}.",
                    lines,
                    wit,
                )
            )
    return out


def retained_rounds(protocol: dict | None) -> int:
    """How many of the latest completed rounds stay restorable (``protocol.params.retained``,
    default 1): a whole number of at least 1, else ``UnreadableField`` (bad input).

    >>> retained_rounds({"params": {"retained": 2}}), retained_rounds({})
    (2, 1)
    >>> retained_rounds({"params": {"retained": "2"}})
    Traceback (most recent call last):
    ...
    snapcheck.checker.free_fields.UnreadableField: line 1: params.retained must be a whole number of at least 1 (the completed rounds kept restorable), not '2'
    """
    keep = ((protocol or {}).get("params") or {}).get("retained", 1)
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise UnreadableField(
            f"line 1: params.retained must be a whole number of at least 1 (the completed rounds kept "
            f"restorable), not {keep!r}"
        )
    return keep


def retention_violations(ix, arts: _Artifacts) -> list[Violation]:
    """``artifact-retention`` violations: an artifact deleted while a checkpoint of one of
    the latest ``retained`` completed rounds references it
    (``artifact-deleted-referenced``), a restore of a handle whose artifact is already
    deleted (``restore-missing-artifact``). ``ix``: the trace's ``TraceIndex``; ``arts``:
    its artifacts.

    >>> from snapcheck.traces import TraceRecorder
    >>> from snapcheck.checker.trace_index import TraceIndex
    >>> rec = TraceRecorder(["S", "T", {"id": "C", "role": "coordinator"}], [("s2t", "S", "T")])
    >>> rec.recv("T", rec.send("S", "s2t"))
    >>> rec.output("T", [], attrs={"artifact": "M", "op": "create", "type": "materialization",
    ...                              "from": 0, "to": 1})
    >>> _ = rec.checkpoint("T", round=1, vars={"materialization": "M", "changelog": []})
    >>> rec.round_complete("C", 1)
    >>> rec.output("C", [], attrs={"artifact": "M", "op": "delete"})    # round 1 is still retained
    >>> ix = TraceIndex(rec.trace())
    >>> [(v.kind, v.subject) for v in retention_violations(ix, _Artifacts(ix))]
    [('artifact-deleted-referenced', 'artifact M')]
    """
    keep = retained_rounds(ix.trace.header.protocol)
    completed = [(e.line, e.round) for e in ix.of_type("round_complete")]
    round_ckpts: dict[int, list] = {}
    for e in ix.of_type("checkpoint"):
        if e.round is not None and (e.proc, e.ckpt) in arts.handles:
            round_ckpts.setdefault(e.round, []).append((e.proc, e.ckpt))
    out = []
    for cline, r in completed:  # a round that completes with a handle already unreadable
        for p, c in round_ckpts.get(r, []):
            hline, h, _ = arts.handles[(p, c)]
            unreadable = sorted((arts.deleted[a], a) for a in arts.referenced(h) if arts.deleted.get(a, cline) < cline)
            if unreadable:
                dline, aid = unreadable[0]
                out.append(
                    Violation(
                        "artifact-deleted-referenced",
                        "artifact-retention",
                        f"artifact {aid}",
                        f"round {r} completes at line {cline} with checkpoint {p}:{c} (line {hline}), which "
                        f"references artifact {aid}, deleted at line {dline}: the completed checkpoint cannot "
                        "be restored.",
                        [dline, hline, cline],
                        {"artifacts": [a for _, a in unreadable], "checkpoints": [[p, c]]},
                    )
                )
    for aid, dline in sorted(arts.deleted.items(), key=lambda kv: kv[1]):
        retained = [r for ln, r in completed if ln < dline][-keep:]
        for r in retained:
            users = [(p, c) for p, c in round_ckpts.get(r, []) if aid in arts.referenced(arts.handles[(p, c)][1])]
            if users:
                p, c = users[0]
                hline = arts.handles[(p, c)][0]
                out.append(
                    Violation(
                        "artifact-deleted-referenced",
                        "artifact-retention",
                        f"artifact {aid}",
                        f"artifact {aid} is deleted at line {dline} although round {r}, a retained "
                        f"completed checkpoint, references it (checkpoint {p}:{c}, line {hline}): "
                        f"recovery from round {r} cannot read it.",
                        [dline, hline],
                        {"artifacts": [aid], "checkpoints": [[p, c]]},
                    )
                )
                break
    for e in ix.of_type("restore"):
        if (e.proc, e.ckpt) in arts.handles:
            hline, h, _ = arts.handles[(e.proc, e.ckpt)]
            gone = [a for a in arts.referenced(h) if arts.deleted.get(a, e.line) < e.line]
            if gone:
                out.append(
                    Violation(
                        "restore-missing-artifact",
                        "artifact-retention",
                        f"restore {e.proc}:{e.ckpt}",
                        f"{e.proc} restores checkpoint {e.ckpt} at line {e.line}, whose handle (line "
                        f"{hline}) references {', '.join(gone)}, deleted at line "
                        f"{arts.deleted[gone[0]]}.",
                        [e.line, hline, arts.deleted[gone[0]]],
                        {"artifacts": gone, "checkpoints": [[e.proc, e.ckpt]]},
                    )
                )
    return out


def check_changelog(run) -> None:
    """Add ``changelog-restore`` and ``artifact-retention`` to a ``check_trace`` run
    where the trace has the changelog vocabulary (``has_changelog``), when selected (the
    default: all); otherwise the report lists them as not judged.

    A handle whose materialization holds change 0 and whose changelog range holds
    change 1 restores the task's state exactly:

    >>> from snapcheck.checker import check_trace
    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["S", "T"], [("s2t", "S", "T")])
    >>> rec.recv("T", rec.send("S", "s2t"))
    >>> rec.output("T", [], attrs={"artifact": "M", "op": "create", "type": "materialization",
    ...                              "from": 0, "to": 1})
    >>> rec.recv("T", rec.send("S", "s2t"))
    >>> rec.output("T", [], attrs={"artifact": "L", "op": "create", "type": "changelog",
    ...                              "from": 0, "to": 2})
    >>> _ = rec.checkpoint("T", vars={"materialization": "M", "changelog": [["L", 1, 2]]})
    >>> [(r.property, r.ok) for r in check_trace(rec.trace()).results]
    [('changelog-restore', True), ('artifact-retention', True)]
    """
    present = has_changelog(run.ix)
    want_restore = present and run.want("changelog-restore")
    want_retention = present and run.want("artifact-retention")
    if not (want_restore or want_retention):
        return
    arts = _Artifacts(run.ix)
    if want_restore:
        run.add("changelog-restore", "trace", restore_violations(arts))
        skipped = sorted({p for p, _ in arts.handles if p in arts.inherited})
        if skipped:
            run.report.notes.append(
                f"changelog-restore: the handles of {', '.join(skipped)} are not judged: a restore at another "
                "parallelism created them, and their state starts with the changes and artifacts of the tasks "
                "they restored from, which a handle of theirs may reference and this check does not map."
            )
    if want_retention:
        run.add("artifact-retention", "trace", retention_violations(run.ix, arts))
