"""``rescale-state``: the key groups, list-state partitions and checkpoints a rescale
restores, against what the old processes owned at the restored round (definitions and
kinds: ``checker.rescale``)."""

from __future__ import annotations

from snapcheck.checker.report import Violation
from snapcheck.checker.rescale_model import Rescale, expand_ranges, fmt_ranges, to_ranges


def state_violations(rs: Rescale) -> list[Violation]:
    """The ``rescale-state`` violations of one rescale (module docstring): sources of
    another round, then per operator of the new processes its key groups (lost,
    duplicated, taken from a process that did not own them) and its list-state
    partitions, then new processes whose declared key groups differ from those they
    restored. Consecutive key groups with the same problem are one violation. Nothing
    when the restored round is unknown.

    The job is restored with one process that takes only ``A0``'s key groups:

    >>> from snapcheck.checker.rescale_model import two_to_one
    >>> trace = two_to_one([0, 1])
    >>> rs = Rescale.only(trace)
    >>> [(v.kind, v.witness["key_groups"], v.witness["checkpoints"]) for v in state_violations(rs)]
    [('key-group-lost', [[2, 3]], [['A1', 1]])]
    """
    own = rs.own
    out: list[Violation] = []
    if rs.round is None:
        return out
    for e in rs.group:
        for s in rs.sources(e):
            ck = rs.ckpt_ev.get((s["proc"], s["ckpt"]))
            r = rs.ckpt_round.get((s["proc"], s["ckpt"]), 0 if s["ckpt"] == 0 else None)
            if r != rs.round:
                out.append(
                    Violation(
                        "state-wrong-round",
                        "rescale-state",
                        rs.subject,
                        f"{e.proc} restores state from checkpoint {s['proc']}:{s['ckpt']} (restore at line {e.line}), "
                        f"which belongs to round {r}, but {rs.subject} restores round {rs.round}: the restored state "
                        "mixes two rounds.",
                        [e.line] + ([ck.line] if ck else []),
                        {"checkpoints": [[s["proc"], s["ckpt"]]], "round": rs.round},
                    )
                )
    out += _retired_elsewhere(rs)
    ops = sorted({own.operator[p] for p in rs.new})
    for op in ops:
        out += _max_parallelism_violations(rs, op)
        out += _kg_violations(rs, op)
        out += _partition_violations(rs, op)
    out += _key_group_changed(rs, ops)
    for p, e in rs.new.items():
        restored, declared = own.restored_kg.get(p), own.kg.get(p, set())
        if restored is not None and declared != restored:
            extra, missing = to_ranges(list(declared - restored)), to_ranges(list(restored - declared))
            out.append(
                Violation(
                    "key-group-mismatch",
                    "rescale-state",
                    rs.subject,
                    f"{p}'s declared key groups differ from those it restored (restore at line {e.line}): "
                    + "; ".join(
                        x
                        for x in (
                            f"declared, not restored: {fmt_ranges(extra)}" if extra else "",
                            f"restored, not declared: {fmt_ranges(missing)}" if missing else "",
                        )
                        if x
                    )
                    + ".",
                    [e.line],
                    {"process": p, "key_groups": extra or missing, "key_group": (extra or missing)[0][0]},
                )
            )
    return out


def _retired_elsewhere(rs: Rescale) -> list[Violation]:
    """Old processes whose state the rescale takes from one checkpoint while their ``retire``
    hands over another (or, retiring without a checkpoint or never retiring, keeps data
    processed or sent after the one taken): what the old process did in between is kept by
    it and done again by the new processes. A process that never retires counts only when
    the rescale takes all of its state (else it may live on with the part it keeps)."""
    own = rs.own
    taken: dict[str, set[int]] = {}
    whole: set[str] = set()  # old processes all of whose state the rescale takes
    kgs: dict[str, set[int]] = {}
    parts: dict[str, set[str]] = {}
    for e in rs.group:
        for s in e.sources or ():
            q = s["proc"]
            taken.setdefault(q, set()).add(s["ckpt"])
            if s.get("key_groups") is None and s.get("partitions") is None:
                whole.add(q)
            kgs.setdefault(q, set()).update(expand_ranges(s.get("key_groups")))
            parts.setdefault(q, set()).update(s.get("partitions") or ())
    whole |= {q for q in taken if own.kg.get(q, set()) <= kgs[q] and own.parts.get(q, set()) <= parts[q]}
    out = []
    for q, cks in taken.items():
        ret = rs.retire.get(q)
        if q in rs.new or (ret is None and q not in whole):  # a process that keeps part of its state lives on
            continue
        if ret is not None and ret.ckpt is not None:
            if ret.ckpt in cks:
                continue
            ck = rs.ckpt_ev.get((q, ret.ckpt))
            kept = f"its checkpoint {ret.ckpt}" + (f" (round {ck.round})" if ck is not None else "")
            after = ""
        else:
            last = max((rs.ckpt_ev[(q, c)].line for c in cks if (q, c) in rs.ckpt_ev), default=None)
            later = rs.data_events(q, last, ret.line if ret is not None else 1 << 62) if last is not None else []
            if not later:
                continue
            kept, after = "its final state", f", after which it processed or sent data (line {later[0].line})"
        which = ", ".join(
            f"{q}:{c}" + (f" (round {rs.ckpt_round[(q, c)]})" if rs.ckpt_round.get((q, c)) is not None else "")
            for c in sorted(cks)
        )
        how = f"retires at line {ret.line} handing over" if ret is not None else "never retires, and so keeps"
        out.append(
            Violation(
                "state-wrong-round",
                "rescale-state",
                rs.subject,
                f"{q} {how} {kept}, but {rs.subject} restores its state from "
                f"{which}{after}: what {q} did in between is kept by the old process and done "
                "again by the new ones.",
                ([ret.line] if ret is not None else [])
                + [rs.ckpt_ev[(q, c)].line for c in cks if (q, c) in rs.ckpt_ev],
                {"process": q, "checkpoints": [[q, c] for c in sorted(cks)], "round": rs.round},
            )
        )
    return out


def _key_group_changed(rs: Rescale, ops: list[str]) -> list[Violation]:
    """A key whose records an operator of the rescale received in one key group before it
    and in another after it, under the same max parallelism: its state was restored where
    its old key group went, and its new records go elsewhere (a key whose hash is not the
    same in every process, e.g. an enum's or an array's identity hash in Java). One
    violation per operator, at the first such key."""
    own = rs.own
    chans = rs.channels
    first: dict[tuple, tuple] = {}  # (operator, max parallelism, key) -> (key group, send)
    out: list[Violation] = []
    flagged: set[str] = set()
    for e in rs.keyed_sends:
        if e.ch not in chans:
            continue
        dst = chans[e.ch].dst
        op = own.operator.get(dst)
        if op not in ops or op in flagged:
            continue
        k = (op, own.max_parallelism.get(dst), repr(e.key))
        seen = first.get(k)
        if seen is None:
            first[k] = (e.key_group, e)
            continue
        g, before = seen
        if g != e.key_group and before.line < rs.start < e.line:
            flagged.add(op)
            out.append(
                Violation(
                    "key-group-changed",
                    "rescale-state",
                    rs.subject,
                    f"key {e.key!r} of operator {op} is in key group {g} before {rs.subject} (sent at line "
                    f"{before.line}) and in key group {e.key_group} after it (sent at line {e.line}), under the same "
                    "max parallelism: its state was restored with key group "
                    f"{g}, and its records now go to the owner of key group {e.key_group}: the key's state is split.",
                    [before.line, e.line],
                    {
                        "operator": op,
                        "key_groups": [[g, g], [e.key_group, e.key_group]],
                        "messages": [before.mid, e.mid],
                    },
                )
            )
    return out


def _max_parallelism_violations(rs: Rescale, op: str) -> list[Violation]:
    """Key groups mean the same keys only under one max parallelism: a new process of ``op``
    declaring another number of key groups than the old processes whose key-group state it
    takes (Flink refuses such a restore) restores each key's state under the wrong key
    group. State without key groups (a source's splits, list state) is not keyed: another
    max parallelism changes nothing of it."""
    declared = rs.own.max_parallelism
    out = []
    for p, e in rs.new.items():
        if rs.own.operator[p] != op or declared.get(p) is None:
            continue
        other = sorted(
            (declared[s["proc"]], s["proc"], s["ckpt"])
            for s in rs.sources(e)
            if declared.get(s["proc"]) not in (None, declared[p])
            and (s.get("key_groups") is not None or s["proc"] in rs.own.kg)
        )
        if other:
            m, q, ck = other[0]
            out.append(
                Violation(
                    "max-parallelism-changed",
                    "rescale-state",
                    rs.subject,
                    f"{p} declares max_parallelism {declared[p]} but restores key-group state of {q}, whose operator "
                    f"{op} had max_parallelism {m} (restore at line {e.line}): a key's group depends on the max "
                    "parallelism, so the state restored under each key group belongs to other keys.",
                    [e.line],
                    {"operator": op, "process": p, "max_parallelism": [m, declared[p]], "checkpoints": [[q, ck]]},
                )
            )
    return out


def _kg_violations(rs: Rescale, op: str) -> list[Violation]:
    own = rs.own
    olds = [q for q in [*rs.old_ckpt, *rs.missing] if own.operator.get(q) == op and q in own.kg]
    universe: dict[int, str] = {}
    for q in olds:
        for k in own.kg[q]:
            universe[k] = q
    taken: dict[int, list[tuple]] = {}
    for p, e in rs.new.items():
        if own.operator[p] != op:
            continue
        for s in rs.sources(e):
            kgs = expand_ranges(s["key_groups"]) if s.get("key_groups") is not None else own.kg.get(s["proc"], set())
            for k in kgs:
                taken.setdefault(k, []).append((e, s))
    if not universe and not taken:
        return []
    # no old process of the operator, nor any it takes from, declares key groups: who owned
    # them is unknown (``unjudged_state`` says so), only a key group taken twice is judged
    ownership_known = bool(universe) or any(own.kg.get(s["proc"]) for got in taken.values() for _, s in got)
    out = []
    problems: dict[tuple, list[int]] = {}
    for k in sorted(set(universe) | set(taken)):
        got = taken.get(k, [])
        if k in universe and not got:
            problems.setdefault(("lost", universe[k]), []).append(k)
        if len(got) > 1:
            problems.setdefault(("dup", tuple((e.proc, s["proc"], s["ckpt"]) for e, s in got)), []).append(k)
        for e, s in got:
            if ownership_known and universe.get(k) != s["proc"]:
                problems.setdefault(("wrong", e.proc, s["proc"], s["ckpt"], universe.get(k)), []).append(k)
    for key, ks in problems.items():
        rg = to_ranges(ks)
        what = f"key group{'s' if len(ks) > 1 else ''} {fmt_ranges(rg)} of operator {op}"
        if key[0] == "lost":
            q = key[1]
            out.append(
                Violation(
                    "key-group-lost",
                    "rescale-state",
                    rs.subject,
                    f"{q} owned {what} at round {rs.round} ({_held_at(rs, q)}), but no restore of "
                    f"{rs.subject} takes {'them' if len(ks) > 1 else 'it'}: that state is lost.",
                    [_ckpt_line(rs, q), rs.start],
                    {"operator": op, "key_group": ks[0], "key_groups": rg, "checkpoints": _held_ckpt(rs, q)},
                )
            )
        elif key[0] == "dup":
            who = ", ".join(f"{p} (from {sp}:{sc})" for p, sp, sc in key[1])
            out.append(
                Violation(
                    "key-group-duplicated",
                    "rescale-state",
                    rs.subject,
                    f"{what} {'are' if len(ks) > 1 else 'is'} restored by more than one process: {who}; "
                    "its state would be counted twice.",
                    [rs.new[p].line for p, _, _ in key[1]],
                    {
                        "operator": op,
                        "key_group": ks[0],
                        "key_groups": rg,
                        "checkpoints": [[sp, sc] for _, sp, sc in key[1]],
                        "processes": [p for p, _, _ in key[1]],
                    },
                )
            )
        else:
            _, p, sp, sc, owner = key
            by = f"{owner} owned {'them' if len(ks) > 1 else 'it'}" if owner else "no old process owned them"
            hint = (
                f" ({sp} is not one of the processes this rescale replaces. Its restores carry no recovery id, so "
                "they were taken to end where a restored process first acts: if one rescale's restores are "
                "interleaved with other events, give them one recovery id.)"
                if not owner and rs.group[0].recovery is None and sp not in rs.old_ckpt
                else ""
            )
            out.append(
                Violation(
                    "key-group-wrong-owner",
                    "rescale-state",
                    rs.subject,
                    f"{p} takes {what} from {sp}:{sc} (restore at line {rs.new[p].line}), but {by} at round "
                    f"{rs.round}: {sp} did not hold {'their' if len(ks) > 1 else 'its'} state, so {p} restores "
                    f"the wrong state for {'them' if len(ks) > 1 else 'it'}.{hint}",
                    [rs.new[p].line],
                    {"operator": op, "key_group": ks[0], "key_groups": rg, "checkpoints": [[sp, sc]]},
                )
            )
    return out


def _partition_violations(rs: Rescale, op: str) -> list[Violation]:
    own = rs.own
    universe = {
        part: q for q in [*rs.old_ckpt, *rs.missing] if own.operator.get(q) == op for part in own.parts.get(q, ())
    }
    taken: dict[str, list] = {}
    for p, e in rs.new.items():
        if own.operator[p] != op:
            continue
        for s in rs.sources(e):
            parts = s.get("partitions")
            if parts is None and s.get("key_groups") is None:
                parts = own.parts.get(s["proc"], ())
            for part in parts or ():
                taken.setdefault(part, []).append((e, s))
    out = []
    for part in sorted(set(universe) | set(taken)):
        got = taken.get(part, [])
        q = universe.get(part)
        if q is not None and not got:
            out.append(
                Violation(
                    "partition-lost",
                    "rescale-state",
                    rs.subject,
                    f"{q} held partition {part!r} of operator {op} at round {rs.round} ({_held_at(rs, q)}), but no "
                    f"restore of {rs.subject} takes it: its state (e.g. an input offset) is lost.",
                    [_ckpt_line(rs, q)],
                    {"operator": op, "partition": part, "checkpoints": _held_ckpt(rs, q)},
                )
            )
        if len(got) > 1:
            out.append(
                Violation(
                    "partition-duplicated",
                    "rescale-state",
                    rs.subject,
                    f"partition {part!r} of operator {op} is restored by "
                    + ", ".join(f"{e.proc} (line {e.line})" for e, _ in got)
                    + ".",
                    [e.line for e, _ in got],
                    {"operator": op, "partition": part},
                )
            )
        for e, s in got:
            if q != s["proc"]:
                out.append(
                    Violation(
                        "partition-wrong-owner",
                        "rescale-state",
                        rs.subject,
                        f"{e.proc} takes partition {part!r} from {s['proc']}:{s['ckpt']} (line {e.line}), but "
                        f"{q or 'no old process'} held it at round {rs.round}.",
                        [e.line],
                        {"operator": op, "partition": part, "checkpoints": [[s["proc"], s["ckpt"]]]},
                    )
                )
    return out


def _ckpt_line(rs: Rescale, q: str) -> int:
    """The line of ``q``'s checkpoint of the rescaled round (0, which a witness omits: none),
    or, when it has none, the line where that round started."""
    ev = rs.ckpt_ev.get((q, rs.old_ckpt.get(q)))
    return ev.line if ev is not None else rs.missing.get(q, 0)


def _held_at(rs: Rescale, q: str) -> str:
    """Where the old process ``q``'s state of the rescaled round is, in words."""
    if q in rs.old_ckpt:
        return f"checkpoint {q}:{rs.old_ckpt[q]}"
    return f"it belonged to the job when the round started at line {rs.missing[q]}, but took no checkpoint of it"


def _held_ckpt(rs: Rescale, q: str) -> list[list]:
    """The witness's checkpoints of ``q`` for the rescaled round (none when it took none)."""
    return [[q, rs.old_ckpt[q]]] if q in rs.old_ckpt else []


def _undeclared_max_parallelism(rs: Rescale) -> list[str]:
    """New processes that restore key-group state but declare no ``max_parallelism``: whether
    they keep the old one (``max-parallelism-changed``) is not judged for them.

    >>> from snapcheck.checker.rescale_model import two_to_one
    >>> _undeclared_max_parallelism(Rescale.only(two_to_one([0, 3])))
    []
    """
    own, declared = rs.own, rs.own.max_parallelism
    out = []
    for p, e in sorted(rs.new.items()):
        keyed = [s for s in rs.sources(e) if s.get("key_groups") is not None or s["proc"] in own.kg]
        if keyed and declared.get(p) is None:
            out.append(
                f"{rs.subject}: {p} restores key-group state of {keyed[0]['proc']}:{keyed[0]['ckpt']} but declares no "
                "max_parallelism (header): whether it keeps its operator's is not judged (max-parallelism-changed)."
            )
    return out


def unjudged_state(rs: Rescale) -> list[str]:
    """What ``rescale-state`` cannot judge in the rescale ``rs``: new processes restoring
    key-group state without a declared max parallelism, then, one sentence per operator,
    state restored whole (a source naming neither key groups nor partitions) from old
    processes that own neither. Such state may be union or broadcast state (every new
    process, or any, takes a copy; a downscale may drop copies), state kept at the same
    parallelism (one each), or none (a stateless operator's checkpoints); the trace does
    not say which, so who must take it is not judged. The sentence names the checkpoints
    of the restored round of that operator's old processes that no restore takes: were
    it split state, theirs would be lost.

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["U0", "U1", {"id": "N", "appears": True, "operator": "U1"}], [])
    >>> _ = rec.checkpoint("U0", round=1); _ = rec.checkpoint("U1", round=1)
    >>> rec.retire("U0", 1); rec.retire("U1", 1)
    >>> rec.restore("N", 0, recovery=1, round=1, sources=[{"proc": "U1", "ckpt": 1}])
    >>> trace = rec.trace()
    >>> unjudged_state(Rescale.only(trace))  # doctest: +ELLIPSIS
    ['rescale at line 6 (recovery 1): operator U1 restores state whole from U1:1, whose ...is not judged...']

    With ``U0`` and ``U1`` of one operator, ``U0``'s checkpoint is taken by no restore:

    >>> rec = TraceRecorder([{"id": "U0", "operator": "U"}, {"id": "U1", "operator": "U"},
    ...                      {"id": "N", "appears": True, "operator": "U"}], [])
    >>> _ = rec.checkpoint("U0", round=1); _ = rec.checkpoint("U1", round=1)
    >>> rec.retire("U0", 1); rec.retire("U1", 1)
    >>> rec.restore("N", 0, recovery=1, round=1, sources=[{"proc": "U1", "ckpt": 1}])
    >>> unjudged_state(Rescale.only(rec.trace()))  # doctest: +ELLIPSIS
    ['... is not judged: no restore takes U0:1, whose state is lost if it is split state (declare ...']
    """
    own = rs.own
    whole: dict[str, set[str]] = {}
    for p, e in rs.new.items():
        for s in e.sources or ():
            q = s["proc"]
            if (
                s.get("key_groups") is None
                and s.get("partitions") is None
                and not own.kg.get(q)
                and not own.parts.get(q)
            ):
                whole.setdefault(own.operator[p], set()).add(f"{q}:{s['ckpt']}")
    taken = {s["proc"] for e in rs.new.values() for s in e.sources or ()} | {
        p for p, e in rs.new.items() if e.sources is None
    }  # (a process restored in place takes its own)
    untaken = {
        op: sorted(f"{q}:{c}" for q, c in rs.old_ckpt.items() if q not in taken and own.operator.get(q) == op)
        for op in whole
    }
    empty = {  # new processes of the operator that take nothing: without a copy if it is union state
        op: sorted(p for p, e in rs.new.items() if e.sources == [] and own.operator.get(p) == op) for op in whole
    }
    return (
        _undeclared_max_parallelism(rs)
        + [
            f"{rs.subject}: operator {op} restores state whole from {', '.join(sorted(cks))}, whose processes declare "
            "neither key groups nor partitions: whether it is union or broadcast state (each new process takes a copy) "
            "or split state (each old state taken once), and so whether any of it is lost or duplicated, is not judged"
            + (
                f": no restore takes {', '.join(untaken[op])}, whose state is lost if it is split state"
                if untaken[op]
                else ""
            )
            + (
                f"{';' if untaken[op] else ':'} {', '.join(empty[op])} take(s) nothing (sources: []), so "
                "it has no copy if that is union or broadcast state"
                if empty[op]
                else ""
            )
            + " (declare the partitions of split list state in the header to have it judged; union state, which "
            "every new process takes whole, cannot be)."
            for op, cks in sorted(whole.items())
        ]
        + _taken_by_none(rs, whole, taken)
        + _undeclared_key_groups(rs)
    )


def _undeclared_key_groups(rs: Rescale) -> list[str]:
    """One sentence per operator whose new processes take key groups (named in their
    sources) that no old process of the operator, nor any they take from, declares: who
    owned them is unknown, so key groups taken from the wrong process or lost are not
    judged (``_kg_violations``)."""
    own = rs.own
    out = []
    for op in sorted({own.operator[p] for p in rs.new}):
        olds = [q for q in [*rs.old_ckpt, *rs.missing] if own.operator.get(q) == op]
        sources = [s for p, e in rs.new.items() if own.operator[p] == op for s in rs.sources(e)]
        named = [r for s in sources for r in s.get("key_groups") or ()]
        if named and not any(own.kg.get(q) for q in olds) and not any(own.kg.get(s["proc"]) for s in sources):
            out.append(
                f"{rs.subject}: operator {op} restores key groups {fmt_ranges(to_ranges(sorted(expand_ranges(named))))} "
                "but none of its old processes declares key_groups in the header, so whether each was taken "
                "from its owner, and whether any was lost, is not judged (a key group taken twice is)."
            )
    return out


def _taken_by_none(rs: Rescale, whole: dict, taken: set) -> list[str]:
    """One sentence per operator whose new processes all take nothing (``sources: []``) while
    checkpoints of the restored round of its old processes, which own neither key groups
    nor partitions, are taken by no restore: a stateless operator's, or all of an
    operator's state lost (union state dropped by every new process); which is not judged."""
    own = rs.own
    new_of: dict[str, list] = {}
    for p, e in rs.new.items():
        new_of.setdefault(own.operator[p], []).append(e)
    out = []
    for op, events in sorted(new_of.items()):
        if op in whole or any(e.sources is None or e.sources for e in events):
            continue
        untaken = sorted(
            f"{q}:{c}"
            for q, c in rs.old_ckpt.items()
            if q not in taken and own.operator.get(q) == op and not own.kg.get(q) and not own.parts.get(q)
        )
        if untaken:
            out.append(
                f"{rs.subject}: operator {op}'s new processes take no state (sources: []), and no restore takes "
                f"{', '.join(untaken)}: whether the operator is stateless or all of its state is lost (union or "
                "broadcast state every new process must take) is not judged (declare its key groups or partitions "
                "in the header to have it judged)."
            )
    return out
