"""Recoveries of coordinated protocols — restores at the same or at another
parallelism — as events of the trace specification ``specs/RescaleTrace.tla``
(the restore rules of ``specs/Rescale.tla`` over the trace's own topology).

Spec events are records ``[op, p, c, o, n, k, r, m, g, h]``:

=======================  ==========================================================
trace event              spec event
=======================  ==========================================================
``round_complete``       ``complete``: ``r`` the round
``record`` (of a round   one ``rec`` per record listed: ``o`` the channel it is
a restore restores)      recorded under, ``n`` the identity of its original
                         message, ``k`` its ``key_group`` plus one (0: none), ``r`` the
                         round of the checkpoint (channel state observed at
                         restore: before the first restore of the round)
``restore`` (a task)     ``restore``: ``r`` the round (0: the initial state), ``m``
                         its channel mappings ``<<old, new, key groups, all>>``
                         (a restore without ``channels`` maps each of its input
                         channels onto itself, or, restoring the initial state of
                         a process restored at another parallelism, as that
                         restore did; a rescale taking such a process's
                         checkpoint 0 composes its mappings with that restore's),
                         ``g`` the key groups it owns, of which it keeps
                         the keyed records (the others its key-group filter
                         drops; a record without a key group several
                         filtered mappings keep is processed by one of them)
                         (key groups as ranges ``<<lo, hi>>``, plus one), ``h``
                         the round whose channel state must hold the records
                         still pending at the process (its own ``r``)
(last restore of a       ``restored``: every record of the round was taken
recovery)
``recv`` after the       ``recover`` when it processes a replayed incarnation of a
process's restore        recorded record (``o``, ``n`` as in its ``rec``), else
                         ``live``
(``recv`` of a record    ``stale`` (no behaviour allows it)
its sender sent before
its own restore)
``discard`` of a record  ``drop`` (no behaviour allows it)
replayed by its current
recovery
``retire`` at a          ``retire``: its pending recovered records go with it
checkpoint (of a         (its later steps are undone); ``h`` the round of that
restored process)        checkpoint, whose channel state must hold them (they
                         were in flight there), for the next restores to take
(end of the trace)       ``end``: no recovered record left unprocessed
=======================  ==========================================================

Everything else is counted, not mapped: barriers (an unaligned barrier may
overtake recovered records), the protocol's own steps (
checkpoints, sends, receives before the process's first restore; they are what
the protocol's specification validates in failure-free traces), external input,
control messages, ``output``, ``arrive``, ``fail``, ``finish``, ``retire`` without a
checkpoint.

``h`` = 0 leaves the records pending at a restore or retire unjudged: in a trace whose
channel state is observed at restore (a ``record`` is written only where a restore read
it, so a missing one proves nothing), and at a retire whose round no restore restores
(its records are not mapped).
"""

from __future__ import annotations

from collections import defaultdict
from typing import cast

from snapcheck.checker.observed_recovery import checkpoint_rounds, restored_round
from snapcheck.checker.rounds import completion_fallbacks, find_rounds, is_complete
from snapcheck.checker.tla.trace_events import OutOfScope, Prepared, SpecEvents, causal_order, task_topology
from snapcheck.checker.trace_index import TraceIndex
from snapcheck.traces.model import Trace
from snapcheck.traces.protocol_facts import DeclaredFacts, TlaMapping

RECOVERY = TlaMapping("RescaleTrace", kind="recovery", invariants=(), refinement=None)
MAPPED = ("round_complete", "record", "restore", "recv", "discard")


def _ranges(ranges) -> frozenset:
    """Inclusive key-group ranges as ``<<lo, hi>>`` pairs, each bound plus one (the spec's
    encoding: 0 = no key group); ranges keep the trace module small (max parallelism
    128 would list 128 numbers per mapping)."""
    return frozenset((lo + 1, hi + 1) for lo, hi in ranges or ())


def has_recovery(trace: Trace) -> bool:
    """Whether the trace restores anything (then its recoveries go to RescaleTrace)."""
    return any(e.type == "restore" for e in trace.events)


def _completed_without_coordinator(trace: Trace, procs) -> dict[int, list[int]]:
    """In a trace without ``round_complete`` events (no coordinator records them), the
    rounds complete by their checkpoints and barriers alone (``checker.rounds.is_complete``),
    each at the line of the last checkpoint or barrier receipt that completes it: line ->
    those rounds. ``{}`` for a trace with a ``round_complete``: its completions are its own.

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["A", "B"], [("ab", "A", "B")])
    >>> _ = rec.checkpoint("A", round=1); rec.recv("B", rec.barrier("A", "ab", round=1))
    >>> _ = rec.checkpoint("B", round=1)
    >>> _completed_without_coordinator(rec.trace(), ["A", "B"])
    {5: [1]}
    """
    if any(e.type == "round_complete" for e in trace.events):
        return {}
    out: dict[int, list[int]] = {}
    for r, info in sorted(find_rounds(trace, set(procs)).items()):
        if is_complete(info, list(procs)):
            lines = [c.line for c in info.ckpts.values()] + [b.recv.line for b in info.barriers.values() if b.recv]
            out.setdefault(max(lines), []).append(r)
    return out


def prepare_recovery(trace: Trace, protocol: str, family: TlaMapping) -> Prepared:
    """Map the recoveries of a coordinated protocol's trace (``family`` is the
    protocol's own mapping; the recoveries are validated against RescaleTrace)."""
    roles, procs, data_chans = task_topology(trace)
    data = set(data_chans)
    chans = {c.id: c for c in trace.header.channels}
    tasks = set(procs)
    # mid -> the incarnation it replays (a replay names both)
    parent = cast(dict[str, str], {e.mid: e.replay_of for e in trace.events if e.type == "replay"})

    def resolve(mid: str) -> str:
        seen = set()
        while mid in parent and mid not in seen:
            seen.add(mid)
            mid = parent[mid]
        return mid

    send_of = {e.mid: e for e in trace.events if e.type == "send" and e.kind != "barrier"}
    replay_line = {e.mid: e.line for e in trace.events if e.type == "replay"}
    owned = {p.id: _ranges(p.key_groups) for p in trace.header.processes if p.key_groups}
    for e in trace.events:
        if e.type == "restore" and e.sources and e.proc not in owned:
            kgs = [r for s in e.sources if s.get("key_groups") is not None for r in s["key_groups"]]
            if kgs:
                owned[e.proc] = _ranges(kgs)
    last_of_group: dict = {}
    for e in trace.events:
        if e.type == "restore" and e.proc in tasks:
            last_of_group[e.recovery if e.recovery is not None else ("line", e.line)] = e.line
    group_end = set(last_of_group.values())
    ckpt_round = checkpoint_rounds(TraceIndex(trace))  # (a rescaled process's checkpoint 0 too)
    fallback = completion_fallbacks(trace.events)

    def round_of(e) -> int:
        """The round restore ``e`` restores (``observed_recovery.restored_round``; 0: the
        initial state, or a round that no checkpoint it takes says)."""
        return restored_round(e, ckpt_round, fallback) or 0

    restored_rounds = {round_of(e) for e in trace.events if e.type == "restore" and e.proc in tasks}
    ident: dict[str, int] = {}
    rec_channel: dict[tuple[int, int], str] = {}  # (round, record) -> channel it is recorded under
    round_restored: dict[str, int] = {}
    restored_line: dict[str, int] = {}
    first_maps: dict[str, frozenset] = {}  # process restored at another parallelism -> its mappings
    out = SpecEvents()
    n: int | None  # a record's identity in the specification

    def add(e, text, op, p="", c="", o="", n=0, k=0, r=0, m=frozenset(), g=frozenset(), h=0) -> None:
        out.add(e.line if e is not None else 0, text, op=op, p=p, c=c, o=o, n=n, k=k, r=r, m=set(m), g=set(g), h=h)

    def meet(f1: frozenset, all1: int, f2: frozenset, all2: int) -> tuple[frozenset, int]:
        """The filter of two mappings one after the other (``all`` = 1: no filter)."""
        if all1 and all2:
            return frozenset(), 1
        if all1 or all2:
            return (f2, 0) if all1 else (f1, 0)
        both = ((max(a, c), min(b, d)) for a, b in f1 for c, d in f2)
        return frozenset((lo, hi) for lo, hi in both if lo <= hi), 0

    def handed_on(maps: frozenset, r: int) -> frozenset:
        """A rescale that restores round ``r`` from the checkpoint 0 of processes an earlier
        rescale created (no round completed in between: they restore the same round) takes
        the records that earlier rescale recovered onto their input channels: those
        records are recorded under the channels of the round (older ones), so each of its
        mappings of such a channel goes on from the earlier mappings onto that channel,
        with both filters."""
        out: set[tuple] = set()
        for old, new, f, a in maps:
            q = chans[old].dst if old in chans else None
            if q in first_maps and ckpt_round.get((q, 0)) == r:
                out.update((o1, new, *meet(f1, a1, f, a)) for o1, n1, f1, a1 in first_maps[q] if n1 == old)
        return frozenset(out)

    def recorded_round(e) -> int | None:
        """The restored round whose channel state record ``e`` holds (None: another round's)."""
        r = ckpt_round.get((e.proc, e.ckpt or 0))
        return r if r is not None and r in restored_rounds else None

    def recorded(e) -> None:
        """The ``rec`` events of a record of a restored round."""
        r = recorded_round(e)
        assert r is not None  # (callers pass such records only)
        assert e.mids is not None  # required of a record
        for mid in e.mids:
            o = resolve(mid)
            n = ident.setdefault(o, len(ident) + 1)
            snd = send_of.get(o)
            k = snd.key_group + 1 if snd is not None and snd.key_group is not None else 0
            rec_channel[(r, n)] = e.ch
            add(e, f"{mid!r} recorded as channel state of {e.ch!r} in round {r}", "rec", o=e.ch, n=n, k=k, r=r)

    # Channel state observed at restore: a record is written when a restore reads it, after
    # that restore, yet it is the channel state of the round restored: its rec events go
    # before the first restore of the round.
    observed: dict[int, list] = defaultdict(list)
    observed_at_restore = DeclaredFacts.of(trace.header.protocol).observed_at_restore
    if observed_at_restore:
        for e in trace.events:
            if e.type == "record" and e.ch in data and (r := recorded_round(e)) is not None:
                observed[r].append(e)
    hoisted = {id(e) for records in observed.values() for e in records}

    completed_at = _completed_without_coordinator(trace, procs)
    for e in causal_order(trace):
        t = e.type
        for r in completed_at.get(e.line, ()):
            add(e, f"round {r} is complete: every task took its checkpoint and every barrier arrived", "complete", r=r)
        if t == "round_complete":
            add(e, f"round {e.round} completes", "complete", r=e.round)
        elif t == "record" and e.ch in data and recorded_round(e) is not None:
            if id(e) not in hoisted:
                recorded(e)
        elif t == "restore" and e.proc in tasks:
            r = round_of(e)
            for rec in observed.pop(r, ()):
                recorded(rec)
            if e.channels:
                maps = frozenset(
                    (m["old"], m["new"], _ranges(m.get("key_groups")), 0 if m.get("key_groups") is not None else 1)
                    for m in e.channels
                )
                maps |= handed_on(maps, r)
                if e.sources:
                    first_maps[e.proc] = maps
            elif e.ckpt == 0 and e.proc in first_maps:  # its initial state is its restore at another
                maps = first_maps[e.proc]  # parallelism, recovered records included
            else:
                maps = frozenset((c, c, frozenset(), 1) for c in data_chans if chans[c].dst == e.proc)
            before = e.proc in round_restored  # it holds recovered records of an earlier restore
            round_restored[e.proc] = r
            restored_line[e.proc] = e.line
            add(
                e,
                f"restore of {e.proc} from round {r}: it must be the latest completed round; the "
                "records of the channels it maps become its pending input (keyed ones of the key groups "
                "it owns; one without a key group shared by the filtered mappings that keep it)"
                + (
                    f"; those still pending from its earlier restore must be channel state of round {r}"
                    if before and not observed_at_restore
                    else ""
                ),
                "restore",
                p=e.proc,
                r=r,
                m=maps,
                g=owned.get(e.proc, frozenset()),
                h=0 if observed_at_restore else r,
            )
            if e.line in group_end:
                add(
                    e,
                    f"the restores of round {r} are complete: every record the round recorded must "
                    "have been taken by one of them",
                    "restored",
                    r=r,
                )
        elif (
            t == "recv"
            and e.ch in data
            and e.proc in round_restored
            and e.mid is not None  # (required of a recv)
            and resolve(e.mid) in send_of
        ):
            o = resolve(e.mid)
            n = ident.get(o)
            r = round_restored[e.proc]
            snd = send_of.get(e.mid)
            if e.mid in parent and n is not None and (r, n) in rec_channel:
                add(
                    e,
                    f"{e.proc} processes the recovered {e.mid!r} on {e.ch!r}",
                    "recover",
                    p=e.proc,
                    c=e.ch,
                    o=rec_channel[(r, n)],
                    n=n,
                    r=r,
                )
            elif snd is not None and snd.line < restored_line.get(snd.proc, 0):
                add(
                    e,
                    f"{e.proc} processes {e.mid!r} on {e.ch!r}, sent by {snd.proc} at line {snd.line}, "
                    "before its restore undid it: a record of the failed epoch",
                    "stale",
                    p=e.proc,
                    c=e.ch,
                )
            else:
                add(
                    e,
                    f"{e.proc} processes {e.mid!r} on {e.ch!r}, sent after its restore: every record "
                    "recovered on that channel must come first",
                    "live",
                    p=e.proc,
                    c=e.ch,
                )
        elif (
            t == "discard"
            and e.ch in data
            and e.mid is not None  # (required of a discard)
            and e.mid in parent
            and replay_line[e.mid] > restored_line.get(e.proc, 0)
            and ident.get(resolve(e.mid))
        ):
            add(
                e,
                f"{e.proc} discards the recovered {e.mid!r} on {e.ch!r}: a recovered record must be "
                "processed, not dropped",
                "drop",
                p=e.proc,
                c=e.ch,
                n=ident[resolve(e.mid)],
            )
        elif t == "retire" and e.ckpt is not None and e.proc in round_restored:
            h = ckpt_round.get((e.proc, e.ckpt)) or 0  # the round of that checkpoint (0: not judged)
            if h not in restored_rounds or observed_at_restore:
                h = 0
            add(
                e,
                f"{e.proc} leaves the job at its checkpoint {e.ckpt}: its input lives on in the restores "
                "naming it"
                + (f"; every recovered record still pending there must be channel state of round {h}" if h else ""),
                "retire",
                p=e.proc,
                h=h,
            )
        elif t in ("restore", "recv", "discard", "record"):
            out.ignored[f"{t} (before any restore, or not between tasks)"] += 1
        else:
            out.ignored[t] += 1
    if not round_restored:
        raise OutOfScope("the trace restores no task")
    out.add(
        0,
        "end of trace: every recovered record was processed",
        op="end",
        p="",
        c="",
        o="",
        n=0,
        k=0,
        r=0,
        m=set(),
        g=set(),
        h=0,
    )
    return Prepared(
        trace.path,
        protocol,
        RECOVERY,
        (RECOVERY,),
        [],
        {},
        out.events,
        out.lines,
        out.descr,
        out.ignored,
        [
            f"recoveries validated against {RECOVERY.module} (the restore rules of "
            "Rescale.tla); the protocol's own steps are not mapped in traces with "
            "restores",
            *(
                [
                    "the state each restore at another parallelism takes (its sources: "
                    "checkpoints, key groups, partitions) is not judged: the specification "
                    "gives a key group's state to its owner by construction; snapcheck check "
                    "judges it (rescale-state)"
                ]
                if any(e.type == "restore" and e.sources for e in trace.events)
                else []
            ),
        ],
    )
