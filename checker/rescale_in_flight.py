"""``rescale-in-flight``: every record a rescale's restored round holds as channel state
or in an input log processed exactly once, by its new owner, before the live records of
its channel (definitions and kinds: ``checker.rescale``)."""

from __future__ import annotations

from snapcheck.checker.report import Violation
from snapcheck.checker.rescale_model import Rescale, expand_ranges, fmt_ranges, to_ranges
from snapcheck.traces.model import Event

_ENDS = ("retire", "fail", "restore")  # what ends a process's life (as this rescale began it)


class _Deliveries:
    """Replays and effective receives after a rescale, by original message; the new
    processes whose life ends later in the trace (``ends``: they retire, fail or are
    restored again) and what each of them holds for a later recovery (``owed_later``): a
    record it holds unprocessed is owed by what ends its life (the next rescale hands it
    on, a recovery replays it; each of those is judged on its own)."""

    def __init__(self, h, rs: Rescale, send_of: dict) -> None:
        self.recvs: dict[str, list] = {}
        self.replays: dict[str, list] = {}
        self.ends: set[str] = set()
        # original mid -> the new processes that hold it for a later recovery: received it
        # (the receive rolled back since), recorded it as channel state of a later checkpoint,
        # or (``fed``) had it re-read from an input log, which a later restore re-reads again
        # from the offset its checkpoint holds
        self.held: dict[str, set[str]] = {}
        self.fed: dict[str, set[str]] = {}
        # the new processes this rescale's replays reached, and on which channels
        self.replayed: dict[str, set[tuple[str, str]]] = {}
        ix = h.trace_index
        # the run broke after the restore (a protocol_error ends it): what the new processes
        # had not processed yet by then is not lost, the run just went no further
        self.cut = any(e.line > rs.start for e in ix.of_type("protocol_error"))
        self.replay_lines: dict[tuple[str, str], list[int]] = {}  # (original, new process) -> replay lines
        for e in ix.of_type("replay"):
            dst = ix.channels[e.ch].dst if e.ch in ix.channels else ""
            if e.line > rs.start and dst in rs.new:
                self.replayed.setdefault(h.resolve(e.mid), set()).add((dst, e.ch))
                self.replay_lines.setdefault((h.resolve(e.mid), dst), []).append(e.line)
                if e.source == "source":
                    self.fed.setdefault(h.resolve(e.mid), set()).add(dst)
        # new processes whose checkpoint 0, the state this rescale gave them, a later
        # rescale takes (it hands this rescale's records on and is judged for them), and
        # the line where each new process later restores that checkpoint itself (its
        # recovery owes this rescale's records only if it replays them again: restarted_at)
        self.restarted: set[str] = set()
        self.restarted_at: dict[str, int] = {}
        for e in ix.of_type("restore"):
            for src in e.sources or ():
                p = src.get("proc")
                if p in rs.new and src.get("ckpt") == 0 and e.line > rs.new[p].line:
                    self.restarted.add(p)
        # old channels of this rescale's new processes that a later rescale maps onto channels of
        # its own: it hands their recovered records on (a record replayed on one and not yet
        # processed is owed there, and judged with that rescale)
        self.handed_on: set[str] = set()
        for e in ix.of_type("restore"):
            if e.line > rs.start and e.proc not in rs.new:
                self.handed_on.update(m["old"] for m in e.channels or () if m.get("old"))
        for p, r in rs.new.items():  # every event of p after its restore, rolled back or not
            for e in rs.events_of(p):
                if e.line <= r.line:
                    continue
                if e.type in _ENDS:
                    self.ends.add(p)
                    if e.type == "restore" and e.ckpt == 0:
                        self.restarted_at[p] = e.line
                elif e.type == "recv":
                    self.held.setdefault(h.resolve(e.mid), set()).add(p)
                elif e.type == "record":
                    for mid in e.mids or ():
                        self.held.setdefault(h.resolve(mid), set()).add(p)
        self.first_live: dict[tuple[str, str], Event] = {}  # (process, channel) -> first live recv
        self.live: list[tuple[Event, Event]] = []  # (recv, its send) of records sent after the restore
        for p in rs.new:
            i = h.index.get(p)
            if i is None:
                continue
            for e in h.eff[i]:
                if e.line <= rs.start:
                    continue
                if e.type == "recv":
                    o = h.resolve(e.mid)
                    self.recvs.setdefault(o, []).append(e)
                    s = send_of.get(o)
                    if s is not None and s.line > rs.start:
                        self.first_live.setdefault((p, e.ch), e)
                        self.live.append((e, s))
                elif e.type == "replay":
                    self.replays.setdefault(h.resolve(e.mid), []).append(e)

    def owed_later(self, o: str, holders, from_log: bool = False) -> bool:
        """Do ``holders`` (all of whose lives end later) hold ``o`` unprocessed for what ends
        them? They received it and a later restore rolled that back, or recorded it in a
        later checkpoint's channel state, or (``from_log``) it is a record of an input log
        they were re-reading, or this rescale replayed it to them and a later recovery
        restores them to the state this rescale gave them and replays it again there (a
        later rescale that takes that state hands it on), or replayed it to them on a
        channel that a later rescale hands on (maps onto a channel of its own) before they
        processed it: then that rescale or recovery owes it, and is judged for it. A record
        they never got, or got and dropped — also one that a later restore of their
        checkpoint 0 does not replay again (its recovery does not know the record: that
        checkpoint records no channel state) — is lost here; unless the run broke before
        they processed it (``cut``): nothing after that is judged."""
        if self.cut:
            return True
        holders = set(holders)
        if not holders or not holders <= self.ends:
            return False
        return (
            any(p not in self.restarted_at or self._replayed_again(o, p) for p in holders & self.held.get(o, set()))
            or (from_log and bool(holders & self.fed.get(o, set())))
            or any(
                p in holders and (p in self.restarted or ch in self.handed_on or self._replayed_again(o, p))
                for p, ch in self.replayed.get(o, ())
            )
        )

    def _replayed_again(self, o: str, p: str) -> bool:
        """Did ``p`` restore its checkpoint 0 later and get ``o`` replayed after that?"""
        at = self.restarted_at.get(p)
        return at is not None and any(line > at for line in self.replay_lines.get((o, p), ()))


def in_flight_violations(run, rs: Rescale) -> list[Violation]:
    """The ``rescale-in-flight`` violations of the rescale ``rs`` in a ``check_trace``
    run (module docstring): every record the restored round recorded as channel state
    of an old channel is processed once by its new owner, on a channel its old channel
    is mapped onto, before the records sent after the restore; and every record of an
    input log that the old holder had not processed is processed once by the new
    holder. Nothing when the restored round is unknown.

    ``A`` recorded ``m`` as in-flight state of ``s2a`` in round 1; ``N`` replaces ``A``,
    and the restore maps ``s2a`` onto ``s2n``. Unless ``N`` replays and processes ``m``,
    it is lost:

    >>> from snapcheck.checker import CheckOptions, check_trace
    >>> from snapcheck.traces import TraceRecorder
    >>> def rescaled(replayed):
    ...     rec = TraceRecorder(["S", {"id": "A", "operator": "agg"}, {"id": "N", "operator": "agg", "appears": True}],
    ...                         [("s2a", "S", "A"), ("s2n", "S", "N")])
    ...     m = rec.send("S", "s2a", value="x")
    ...     _ = rec.checkpoint("S", round=1); _ = rec.checkpoint("A", round=1)
    ...     rec.record("A", 1, "s2a", [m])                   # m is in-flight state of round 1
    ...     rec.retire("A", 1)
    ...     rec.restore("N", 0, recovery=1, round=1, sources=[{"proc": "A", "ckpt": 1}],
    ...                 channels=[{"old": "s2a", "new": "s2n"}])
    ...     if replayed:
    ...         rec.recv("N", rec.replay("N", m, source="channel_state", ch="s2n"))
    ...     return rec.trace()
    >>> only = CheckOptions(properties=["rescale-in-flight"])
    >>> check_trace(rescaled(True), only).violations
    []
    >>> [v.message for v in check_trace(rescaled(False), only).violations]
    ['Round 1 recorded s2a:1 as in-flight state of old channel s2a; after rescale at line 7 (recovery 1) it must be processed by its new channel s2n, but it never is: s2a is mapped onto s2n, but the record is never replayed there. It is lost.']
    """
    h, ix, own = run.h, run.ix, rs.own
    if rs.round is None:
        return []
    chans = ix.channels
    send_of = {e.mid: e for e in ix.of_type("send") if e.kind != "barrier"}
    dv = _Deliveries(h, rs, send_of)
    mapping: dict[str, list[tuple[str, set[int] | None, Event]]] = {}
    for e in rs.group:
        for m in e.channels or ():
            mapping.setdefault(m["old"], []).append(
                (m["new"], expand_ranges(m["key_groups"]) if m.get("key_groups") is not None else None, e)
            )
    recorded = _recorded(ix, rs)
    new_of_op: dict[str, list[str]] = {}
    for p in rs.new:
        new_of_op.setdefault(own.operator[p], []).append(p)
    out: list[Violation] = []
    unkeyed: list[str] = []  # records without a key group whose owner among filtered channels is not judged
    reach: dict[str, set[str]] = {}  # record -> every new channel a copy of it may be processed on
    for c, mids in recorded.items():  # (copies of broadcast state recorded on several old channels)
        for mid in mids:
            o = h.resolve(mid)
            snd = send_of.get(o)
            reach.setdefault(o, set()).update(_targets(mapping.get(c, []), snd.key_group if snd else None))
    for c, mids in recorded.items():
        ch = chans[c]
        op = own.operator[ch.dst]  # a channel joins declared processes
        owners: dict[int, list[str]] = {}
        for p in new_of_op.get(op, ()):
            for k in own.kg.get(p, ()):
                owners.setdefault(k, []).append(p)
        for mid in mids:
            o = h.resolve(mid)
            snd = send_of.get(o)
            kg = snd.key_group if snd is not None else None
            got = dv.recvs.get(o, [])
            if kg is not None and owners:
                target = owners.get(kg, [])
                out += _judge(
                    rs,
                    o,
                    c,
                    kg,
                    got,
                    lambda e, t=target: e.proc in t,
                    f"{' or '.join(target)}, the new owner of key group {kg}"
                    if target
                    else f"the new owner of key group {kg} (no new process of {op} owns it)",
                    mapping.get(c, []),
                    dv,
                    target,
                )
                stray = [e for e in got if e.ch not in reach[o]]  # the restore's own filter keeps it off there
                if stray and mapping.get(c):
                    out.append(_off_mapping(rs, o, c, kg, stray[0], mapping[c]))
            else:
                maps = mapping.get(c, [])
                targets = _targets(maps, kg)
                if not targets and maps and kg is None:
                    continue  # every mapping filters it out: discarded on purpose
                # without a key group, the channels that filter by key group share the record: one of them owns it
                shared = [new for new, keep, _ in maps if keep and kg is None]
                shared = shared if len(shared) > 1 else []
                if not targets:
                    out += _judge(rs, o, c, kg, got, lambda e: False, f"a new owner (no restore maps {c})", [], dv, [])
                for t in targets:
                    if t not in shared:
                        out += _judge(
                            rs,
                            o,
                            c,
                            kg,
                            [e for e in got if e.ch == t],
                            lambda e: True,
                            f"its new channel {t}",
                            maps,
                            dv,
                            [chans[t].dst],
                        )
                if shared:
                    unkeyed.append(o)
                    out += _judge(
                        rs,
                        o,
                        c,
                        kg,
                        [e for e in got if e.ch in shared],
                        lambda e: True,
                        f"one of its new channels {', '.join(shared)} (the one whose key-group filter keeps its key)",
                        maps,
                        dv,
                        [chans[t].dst for t in shared],
                    )
                stray = [e for e in got if e.ch not in reach[o]]  # no copy of it was mapped there
                if stray and targets:
                    out.append(_off_mapping(rs, o, c, kg, stray[0], maps))
            out += _after_live(rs, o, c, kg, got, dv)
    if unkeyed:
        run.report.notes.append(
            f"{rs.subject}: {len(unkeyed)} recovered record(s) without a key_group (e.g. {unkeyed[0]}) on channels "
            "mapped onto several new channels filtered by key group: each must be processed exactly once on one of "
            "them, but which one owns it is not judged (the send names no key_group)."
        )
    out += _live_misrouted(rs, dv)
    out += _input_violations(run, rs, dv)
    return out


def _targets(maps, kg: int | None) -> list[str]:
    """The new channels a record of key group ``kg`` (None: unknown) recovered from an old
    channel with mappings ``maps`` goes to: those without a key-group filter, and those
    whose filter keeps ``kg`` (any non-empty filter when ``kg`` is unknown).

    >>> _targets([("n0", None, None), ("n1", {1, 2}, None), ("n2", set(), None)], 2)
    ['n0', 'n1']
    """
    return [new for new, keep, _ in maps if keep is None or (kg in keep if kg is not None else keep)]


def _live_misrouted(rs: Rescale, dv: _Deliveries) -> list[Violation]:
    """Records sent after the restore with a ``key_group`` that a new process owning key
    groups processes although it does not own theirs (a sender still routing by the old
    parallelism or another max parallelism): one violation per process, naming the key
    groups and the first such record."""
    wrong: dict[str, list[tuple[Event, Event, int]]] = {}
    for e, s in dv.live:
        mine, g = rs.own.kg.get(e.proc), s.key_group
        if mine and g is not None and g not in mine:
            wrong.setdefault(e.proc, []).append((e, s, g))
    out = []
    for p, found in wrong.items():
        e, s, _ = found[0]
        rg = to_ranges([g for _, _, g in found])
        out.append(
            Violation(
                "live-misrouted",
                "rescale-in-flight",
                rs.subject,
                f"{p} owns key groups {fmt_ranges(to_ranges(list(rs.own.kg[p])))} after {rs.subject}, but processes "
                f"{len(found)} record(s) sent after it of key group{'s' if len(rg) > 1 or rg[0][0] != rg[0][1] else ''} "
                f"{fmt_ranges(rg)}, first {s.mid} (sent at line {s.line}, processed at line {e.line}): their state "
                "grows in a process that does not own it and is lost or split at the next restore.",
                [s.line, e.line],
                {"messages": [s.mid], "key_group": s.key_group, "key_groups": rg, "process": p},
            )
        )
    return out


def _recorded(ix, rs: Rescale) -> dict[str, list[str]]:
    """Old channel -> recorded mids of the restored round (input part, then output part;
    each once).

    A checkpoint 0 that an earlier restore gave a process (a rescale's, with no checkpoint
    since) records nothing itself: its channel state is what that restore replayed to the
    process, on the process's input channels, which this rescale maps in turn. Those
    records are this rescale's to deliver again (the earlier one deferred them to it)."""
    chans = ix.channels
    parts: dict[str, list[list[str]]] = {}
    for e in ix.of_type("record"):
        if rs.old_ckpt.get(e.proc) != e.ckpt or e.proc in rs.new:
            continue
        ch = chans.get(e.ch)
        if ch is None or ch.kind == "control":
            continue
        slot = parts.setdefault(e.ch, [[], []])
        slot[0 if (e.part or "input") == "input" else 1].extend(e.mids)
    given = {q for q, k in rs.old_ckpt.items() if k == 0 and q not in rs.new}
    seen: set[tuple[str, str]] = set()
    for e in ix.of_type("replay"):
        ch = chans.get(e.ch)
        if ch is None or ch.dst not in given or e.line > rs.start or e.source != "channel_state":
            continue
        if (e.ch, e.replay_of or e.mid) not in seen:  # (replayed again by a restart of that checkpoint 0)
            seen.add((e.ch, e.replay_of or e.mid))
            parts.setdefault(e.ch, [[], []])[0].append(e.mid)
    # a record in both parts is one recorded twice (channel-state's duplicate-recorded), one record here
    return {c: list(dict.fromkeys(inp + outp)) for c, (inp, outp) in parts.items()}


def _judge(rs, o, c, kg, got, is_owner, owner_text, maps, dv, owner_procs: list[str]) -> list[Violation]:
    """The in-flight verdict of the recovered record ``o`` of old channel ``c`` (key group ``kg``):
    of its receives ``got``, those ``is_owner`` accepts must be exactly one (``owner_text``
    names the owner); the others are misrouted. ``owner_procs``, the processes that may own
    it, and the mappings ``maps`` of ``c`` explain a loss."""
    mine = [e for e in got if is_owner(e)]
    deferred = not mine and dv.owed_later(o, owner_procs)
    out = []
    for e in got:
        if not is_owner(e):
            out.append(_misrouted(rs, o, c, kg, e, f"by {e.proc}, not by {owner_text}"))
    wit = {"messages": [o], "old_channel": c}
    if kg is not None:
        wit["key_group"] = kg
    kgt = f" (key group {kg})" if kg is not None else ""
    if not mine and not deferred:
        if not owner_procs:
            why = "no restore maps it onto an input of a new owner: its channel state was not redistributed"
        else:
            owner_proc = " or ".join(owner_procs)
            onto = [new for new, _, e in maps if e.proc in owner_procs]
            reps = dv.replays.get(o, [])
            undone = next((p for p in owner_procs if p in dv.held.get(o, ()) and p in dv.restarted_at), None)
            if not onto:
                why = (
                    f"no restore maps {c} onto an input of {owner_proc}: its channel state was not "
                    "redistributed to the owner"
                )
            elif undone is not None and not mine:
                why = (
                    f"{undone} received it, then restored at line {dv.restarted_at[undone]} the state this rescale "
                    "gave it (its checkpoint 0, which records no channel state), and it is never replayed there again"
                )
            elif not reps:
                why = f"{c} is mapped onto {', '.join(onto)}, but the record is never replayed there"
            elif len(got) > len(mine):
                x = next(e for e in got if not is_owner(e))
                why = f"it is processed by {x.proc} on {x.ch} at line {x.line} instead (misrouted)"
            else:
                r = reps[0]
                why = f"it is replayed as {r.mid} on {r.ch} at line {r.line}, but never processed (dropped)"
        out.append(
            Violation(
                "in-flight-lost",
                "rescale-in-flight",
                rs.subject,
                f"Round {rs.round} recorded {o} as in-flight state of old channel {c}{kgt}; after {rs.subject} it must "
                f"be processed by {owner_text}, but it never is: {why}. It is lost.",
                [rs.start] + [r.line for r in dv.replays.get(o, [])[:1]],
                wit,
            )
        )
    elif len(mine) > 1:
        out.append(
            Violation(
                "in-flight-duplicated",
                "rescale-in-flight",
                rs.subject,
                f"Round {rs.round} recorded {o} as in-flight state of old channel {c}{kgt}; after {rs.subject} it is "
                f"processed {len(mine)} times by {owner_text} (lines {', '.join(str(e.line) for e in mine)}).",
                [e.line for e in mine],
                dict(wit, messages=[o] + [e.mid for e in mine]),
            )
        )
    return out


def _off_mapping(rs, o, c, kg, e, maps) -> Violation:
    """Record ``o`` recovered from old channel ``c`` (``maps``: its mappings) processed by
    ``e`` on a new channel no mapping of ``c`` sends it to: none maps ``c`` there, or only
    for other key groups (the trace contradicts its own mapping)."""
    kept = [fmt_ranges(to_ranges(sorted(keep))) for new, keep, _ in maps if new == e.ch and keep is not None]
    if kept:
        how = f"on {e.ch}, onto which the restore maps {c} only for key groups {', '.join(kept)}: the trace contradicts its own mapping"
    else:
        how = f"on {e.ch}, which no restore maps {c} onto"
    return _misrouted(rs, o, c, kg, e, how)


def _misrouted(rs, o, c, kg, e, how) -> Violation:
    wit = {"messages": [o, e.mid], "old_channel": c}
    if kg is not None:
        wit["key_group"] = kg
    return Violation(
        "in-flight-misrouted",
        "rescale-in-flight",
        rs.subject,
        f"Round {rs.round} recorded {o} as in-flight state of old channel {c}"
        f"{f' (key group {kg})' if kg is not None else ''}; after {rs.subject} it is processed at line {e.line} "
        f"{how}.",
        [e.line],
        wit,
    )


def _after_live(rs, o, c, kg, got, dv) -> list[Violation]:
    """A recovered record processed after a record its new channel carried after the restore."""
    out = []
    for e in got:
        x = dv.first_live.get((e.proc, e.ch))
        if x is None or x.line > e.line:
            continue
        wit = {"messages": [o, x.mid], "old_channel": c}
        if kg is not None:
            wit["key_group"] = kg
        out.append(
            Violation(
                "in-flight-after-live",
                "rescale-in-flight",
                rs.subject,
                f"{e.proc} processes {x.mid}, sent after {rs.subject} on {e.ch}, at line {x.line}, before the "
                f"recovered {o} of old channel {c} (processed at line {e.line}): recovered in-flight data of a "
                "channel must be delivered before any record sent on it after the restore.",
                [x.line, e.line],
                wit,
            )
        )
    return out


def _input_violations(run, rs: Rescale, dv: _Deliveries) -> list[Violation]:
    """Records of an input log (a partition named after an external process) that the old
    holder had not processed at its checkpoint are processed once by the new holder."""
    h, own = run.h, rs.own
    externals = {p.id for p in run.trace.header.processes if p.role == "external"}
    out = []
    new_holders: dict[str, list[str]] = {}  # a partition restored twice has two holders, each reading it
    for p in rs.new:
        for part in own.parts.get(p, ()):
            new_holders.setdefault(part, []).append(p)
    into: dict[int, list] = {}
    for m in h.msgs:
        if m.src == -1 and m.ch in h.ch_ends:
            into.setdefault(m.dst, []).append(m)
    for q in rs.old_ckpt:
        for part in own.parts.get(q, ()):
            if part not in externals:
                continue
            holders = new_holders.get(part, [])
            holder = " and ".join(holders)
            seen: set[str] = set()
            for m in into.get(h.index.get(q), ()):
                # an incarnation (``m.mid``: e.g. a record an earlier rescale re-read) is judged
                # by its original, under which its receives are filed
                o = h.resolve(m.mid)
                if h.trace_index.channels[m.ch].src != part or o in seen:
                    continue
                seen.add(o)
                kept = [e for e in h.recvs.get(o, ()) if e.proc == q]
                if kept:
                    continue
                got = [e for e in dv.recvs.get(o, ()) if e.proc in holders]
                if len(got) == 1:
                    continue
                if not got and dv.owed_later(o, holders, from_log=True):
                    continue
                if not got:
                    out.append(
                        Violation(
                            "input-lost",
                            "rescale-in-flight",
                            rs.subject,
                            f"{m.mid} of input log {part} (sent at line {m.send_line}) was not processed by {q} at its "
                            f"checkpoint of round {rs.round}; after {rs.subject} the new holder of {part}, "
                            f"{holder or '(none)'}, never processes it. It is lost.",
                            [m.send_line, rs.start],
                            {"messages": [m.mid], "partition": part},
                        )
                    )
                else:
                    out.append(
                        Violation(
                            "in-flight-duplicated",
                            "rescale-in-flight",
                            rs.subject,
                            f"{m.mid} of input log {part} is processed {len(got)} times by {holder} after {rs.subject} "
                            f"(lines {', '.join(str(e.line) for e in got)}).",
                            [e.line for e in got],
                            {"messages": [m.mid] + [e.mid for e in got], "partition": part},
                        )
                    )
    return out
