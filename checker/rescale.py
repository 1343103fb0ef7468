"""Rescaling: state and in-flight records redistributed at another parallelism.

A *rescale* is a recovery (a group of ``restore`` events, ``observed_recovery``)
in which at least one restore has a ``sources`` field, even an empty one (Flink: a job stopped, or failed,
and restarted at another parallelism from a checkpoint or savepoint): the job is restored at another
parallelism from round ``r`` (the round of the sources' checkpoints). Its *old
processes* are the processes outside the group that took a checkpoint of round
``r``, and those owning key groups or partitions that belonged to the job when round
``r`` started but took no checkpoint of it (their state of round ``r`` does not
exist, so a restore can take it from nowhere); its *new processes* the restoring ones. A process *owns* the key groups
(and list-state partitions) the header declares for it, or else those its own
restore took (all of a source's when the restore names neither). Key groups belong to an operator (the header's ``operator``).

``rescale-state`` (each rescale; Flink's key-group assignment, "StateAssignment"):
every key group an old process of operator ``X`` owned at round ``r`` is taken
by exactly one new process of ``X``, from the checkpoint of round ``r`` of the
old process that owned it. Kinds: ``key-group-lost`` (taken by no restore: its
state is gone), ``key-group-duplicated`` (taken twice: its state is counted
twice), ``key-group-wrong-owner`` (taken from a process that did not own it, so
the state restored for it is not its state), ``state-wrong-round`` (a source
checkpoint of another round, or an old process that retires handing over another
checkpoint than the one taken, or never retires although all its state was taken, so
that what it did in between is kept and done again), ``key-group-mismatch`` (a new process declares key groups other than those
it restored), ``max-parallelism-changed`` (a new process declares another max
parallelism than the process it takes state from: key groups then name other keys);
the same for list-state partitions (``partition-lost``, ``partition-duplicated``,
``partition-wrong-owner``). State restored whole from processes that declare neither
key groups nor partitions (union, broadcast or split state: the trace does not say
which) is not judged, and a note says so (``unjudged_state``).

``rescale-in-flight`` (each rescale; unaligned checkpoints' channel state, and
the input logs): every record the restored round recorded as channel state of an
old channel ``c`` (input part by ``c``'s destination, output part by its source)
is processed after the restore exactly once by each of its new owners: for a
record with a ``key_group``, when some new process of ``c``'s destination operator
owns key groups, the one that owns the record's key group; otherwise each new
channel a restore maps ``c`` onto whose key-group filter keeps it (a record without a
key group, when several mappings of ``c`` filter by key group: exactly one of those
channels, which one not judged and noted). It must be processed before any record that the same
new channel carried after the restore (recovered data first). Kinds:
``in-flight-lost`` (never processed by its owner: the explanation says whether no
restore mapped ``c``, or it was mapped and not replayed, or replayed and dropped),
``in-flight-duplicated``, ``in-flight-misrouted`` (processed by a process that
does not own its key group, or on a channel ``c`` is not mapped onto),
``in-flight-after-live``; and a record sent after the restore with a ``key_group`` is
processed by a new process that owns it, when the receiver owns key groups
(``live-misrouted``: a sender still routing by the old parallelism). A record without a key group that every mapping of ``c``
filters out (an empty ``key_groups``) is discarded on purpose: Flink drops the extra
copies of broadcast channel state on a downscale. A partition named after an ``external`` process is that
input log's split: each record the log sent to the old holder and the old holder
had not processed at its checkpoint must be processed exactly once by the new
holder (``input-lost``; twice is ``in-flight-duplicated``). Witnesses name the key
group and the old channel.
"""

from __future__ import annotations

from snapcheck.checker.lifetimes import Lifetimes
from snapcheck.checker.report import Violation
from snapcheck.traces.model import Event, Trace


def _ranges(values: list[int]) -> list[list[int]]:
    """Sorted integers as inclusive ranges.

    >>> _ranges([1, 2, 3, 7, 9, 10])
    [[1, 3], [7, 7], [9, 10]]
    """
    out: list[list[int]] = []
    for v in sorted(set(values)):
        if out and out[-1][1] == v - 1:
            out[-1][1] = v
        else:
            out.append([v, v])
    return out


def _expand(ranges) -> set[int]:
    return {k for lo, hi in ranges or () for k in range(lo, hi + 1)}


def _fmt(ranges: list[list[int]]) -> str:
    return ", ".join(str(lo) if lo == hi else f"{lo}..{hi}" for lo, hi in ranges)


class Ownership:
    """Key groups and partitions owned by each process (module docstring): ``kg`` and
    ``parts`` map a process to what it owns, its header declaration if it has one, else
    what its restore took from its sources (``restores_with_sources``: the restores
    that name sources, in trace order); a source that names neither key groups nor
    partitions gives all of its process's. ``restored_kg`` keeps what the restores
    took, to compare with the declarations; ``operator`` maps each process to its operator (its
    own id when the header names none).

    ``A0`` and ``A1`` own key groups 0..1 and 2..3 of operator ``agg``; the job is
    restored with one process ``N`` that takes both ranges:

    >>> from snapcheck.traces import TraceRecorder
    >>> agg = {"operator": "agg", "max_parallelism": 4}
    >>> rec = TraceRecorder([dict(agg, id="A0", key_groups=[[0, 1]]), dict(agg, id="A1", key_groups=[[2, 3]]),
    ...                      dict(agg, id="N", appears=True)], [])
    >>> _ = rec.checkpoint("A0", round=1); _ = rec.checkpoint("A1", round=1)
    >>> rec.retire("A0", 1); rec.retire("A1", 1)
    >>> rec.restore("N", 0, recovery=1, round=1, sources=[{"proc": "A0", "ckpt": 1, "key_groups": [[0, 1]]},
    ...                                                  {"proc": "A1", "ckpt": 1, "key_groups": [[2, 3]]}])
    >>> trace = rec.trace()
    >>> own = Ownership(trace, [e for e in trace.events if e.type == "restore"])
    >>> own.operator["N"], own.kg["A1"], own.kg["N"], own.restored_kg
    ('agg', {2, 3}, {0, 1, 2, 3}, {'N': {0, 1, 2, 3}})
    """

    def __init__(self, trace: Trace, restores_with_sources: list) -> None:
        self.operator = {p.id: p.operator or p.id for p in trace.header.processes}
        self.max_parallelism = {p.id: p.max_parallelism for p in trace.header.processes}
        self.kg: dict[str, set[int]] = {}
        self.parts: dict[str, set[str]] = {}
        declared_kg = {p.id: p.key_groups for p in trace.header.processes if p.key_groups is not None}
        declared_parts = {p.id: p.partitions for p in trace.header.processes if p.partitions is not None}
        for e in restores_with_sources:
            kgs: set[int] = set()
            parts: set[str] = set()
            for s in e.sources:
                if s.get("key_groups") is not None:
                    kgs |= _expand(s["key_groups"])
                if s.get("partitions") is not None:
                    parts |= set(s["partitions"])
                if s.get("key_groups") is None and s.get("partitions") is None:  # all of that state
                    q = s["proc"]
                    kgs |= _expand(declared_kg[q]) if q in declared_kg else self.kg.get(q, set())
                    parts |= set(declared_parts[q]) if q in declared_parts else self.parts.get(q, set())
            if kgs:
                self.kg[e.proc] = kgs
            if parts:
                self.parts[e.proc] = parts
        self.restored_kg = dict(self.kg)
        for p, r in declared_kg.items():
            self.kg[p] = _expand(r)
        for p, ps in declared_parts.items():
            self.parts[p] = set(ps)


class Rescale:
    """One rescale: the restores ``group`` of a recovery of which some name sources
    (``trace`` and its ``TraceIndex`` ``ix``; ``own``: the ``Ownership`` of the trace).
    ``round`` is the restored round (the restores' ``round``, else the round of their
    sources' checkpoints, 0 when they are all initial states; None if neither says), ``new`` maps each restoring process to
    its restore, ``old_ckpt`` each old process (outside the group, with a checkpoint of
    ``round``) to that checkpoint, ``missing`` each process that owned key groups or
    partitions and belonged to the job when that round started but has no checkpoint of it
    (to the line where the round started), ``start`` is the line of the first restore and
    ``subject`` names the rescale in the report.

    >>> from snapcheck.traces import TraceRecorder
    >>> agg = {"operator": "agg", "max_parallelism": 4}
    >>> rec = TraceRecorder([dict(agg, id="A0", key_groups=[[0, 1]]), dict(agg, id="A1", key_groups=[[2, 3]]),
    ...                      dict(agg, id="N", appears=True)], [])
    >>> _ = rec.checkpoint("A0", round=1); _ = rec.checkpoint("A1", round=1)
    >>> rec.retire("A0", 1); rec.retire("A1", 1)
    >>> rec.restore("N", 0, recovery=1, round=1, sources=[{"proc": "A0", "ckpt": 1, "key_groups": [[0, 1]]},
    ...                                                  {"proc": "A1", "ckpt": 1, "key_groups": [[2, 3]]}])
    >>> trace = rec.trace()
    >>> from snapcheck.checker.observed_recovery import recovery_groups
    >>> from snapcheck.checker.trace_index import TraceIndex
    >>> [group] = recovery_groups(trace)
    >>> rs = Rescale(trace, TraceIndex(trace), group, Ownership(trace, group))
    >>> rs.subject, rs.round, list(rs.new), rs.old_ckpt
    ('rescale at line 6 (recovery 1)', 1, ['N'], {'A0': 1, 'A1': 1})
    """

    def __init__(self, trace: Trace, ix, group: list, own: Ownership) -> None:
        self.group = group
        self.own = own
        self.start = min(e.line for e in group)
        self.new = {e.proc: e for e in group}
        self.subject = f"rescale at line {self.start}" + (
            f" (recovery {group[0].recovery})" if group[0].recovery is not None else ""
        )
        self.ckpt_ev = {(e.proc, e.ckpt): e for e in ix.of_type("checkpoint")}
        self.retire = {e.proc: e for e in ix.of_type("retire")}
        self._by_proc = ix.by_proc
        self._markers = {e.mid for e in ix.of_type("send") if e.kind in ("barrier", "cancel")}
        rounds = [e.round for e in group if e.round is not None]
        if not rounds:
            rounds = [
                self.ckpt_ev[(s["proc"], s["ckpt"])].round
                for e in group
                for s in e.sources or ()
                if (s["proc"], s["ckpt"]) in self.ckpt_ev
            ]
        named = [s["ckpt"] for e in group for s in e.sources or ()]
        if not rounds and named and not any(named):  # every source is an initial state: round 0
            rounds = [0]
        self.round = rounds[0] if rounds else None
        self.old_ckpt: dict[str, int] = {}  # old process -> its checkpoint of the restored round
        self.missing: dict[str, int] = {}  # old process without one -> line where the round started
        if self.round == 0:  # every process present from the start has its initial checkpoint
            self.old_ckpt = {
                p.id: 0
                for p in trace.header.processes
                if not p.appears and p.id not in self.new and p.role not in ("coordinator", "external")
            }
        elif self.round is not None:
            started = [e.line for e in ix.of_type("checkpoint") if e.round == self.round]
            started += [e.line for e in ix.of_type("round_start") if e.round == self.round]
            for e in ix.of_type("checkpoint"):
                if e.round == self.round and e.proc not in self.new and e.proc not in self.old_ckpt:
                    self.old_ckpt[e.proc] = e.ckpt
            stateful = [
                p.id
                for p in trace.header.processes
                if (own.kg.get(p.id) or own.parts.get(p.id)) and p.id not in self.new and p.id not in self.old_ckpt
            ]
            if started and stateful:
                line = min(started)
                self.missing = {q: line for q in Lifetimes(trace, ix).members(stateful, line)}

    def data_events(self, p: str, after: int, before: int) -> list[Event]:
        """The events of process ``p`` between two lines that send, process or re-inject
        data (barriers and cancellation markers are not data)."""
        return [
            x
            for x in self._by_proc.get(p, [])
            if after < x.line < before and x.mid is not None and x.mid not in self._markers
        ]

    def sources(self, e) -> list[dict]:
        """A restore's sources; a restore without a ``sources`` field takes all of its own
        checkpoint, one with an empty list (a new subtask given no state) takes nothing."""
        if e.sources is not None:
            return e.sources
        return [{"proc": e.proc, "ckpt": e.ckpt}]


def rescale_groups(run) -> list[Rescale]:
    """The rescales of a ``check_trace`` run, in recovery order: its recovery groups in
    which some restore names sources, sharing one ``Ownership``. Each is one subject of
    ``rescale-state`` and ``rescale-in-flight``:

    >>> from snapcheck.checker import check_trace
    >>> from snapcheck.traces import TraceRecorder
    >>> agg = {"operator": "agg", "max_parallelism": 4}
    >>> rec = TraceRecorder([dict(agg, id="A0", key_groups=[[0, 1]]), dict(agg, id="A1", key_groups=[[2, 3]]),
    ...                      dict(agg, id="N", appears=True)], [])
    >>> _ = rec.checkpoint("A0", round=1); _ = rec.checkpoint("A1", round=1)
    >>> rec.retire("A0", 1); rec.retire("A1", 1)
    >>> rec.restore("N", 0, recovery=1, round=1, sources=[{"proc": "A0", "ckpt": 1, "key_groups": [[0, 1]]},
    ...                                                  {"proc": "A1", "ckpt": 1, "key_groups": [[2, 3]]}])
    >>> trace = rec.trace()
    >>> [(r.property, r.subject, r.ok) for r in check_trace(trace).results if r.property.startswith("rescale")]
    [('rescale-state', 'rescale at line 6 (recovery 1)', True), ('rescale-in-flight', 'rescale at line 6 (recovery 1)', True)]
    """
    groups = [g for g in run.recovery_groups() if any(e.sources is not None for e in g)]
    if not groups:
        return []
    own = Ownership(run.trace, [e for g in groups for e in g if e.sources is not None])
    return [Rescale(run.trace, run.ix, g, own) for g in groups]


# -- rescale-state ------------------------------------------------------------------------
def state_violations(rs: Rescale) -> list[Violation]:
    """The ``rescale-state`` violations of one rescale (module docstring): sources of
    another round, then per operator of the new processes its key groups (lost,
    duplicated, taken from a process that did not own them) and its list-state
    partitions, then new processes whose declared key groups differ from those they
    restored. Consecutive key groups with the same problem are one violation. Nothing
    when the restored round is unknown.

    The job is restored with one process that takes only ``A0``'s key groups:

    >>> from snapcheck.traces import TraceRecorder
    >>> agg = {"operator": "agg", "max_parallelism": 4}
    >>> rec = TraceRecorder([dict(agg, id="A0", key_groups=[[0, 1]]), dict(agg, id="A1", key_groups=[[2, 3]]),
    ...                      dict(agg, id="N", appears=True)], [])
    >>> _ = rec.checkpoint("A0", round=1); _ = rec.checkpoint("A1", round=1)
    >>> rec.retire("A0", 1); rec.retire("A1", 1)
    >>> rec.restore("N", 0, recovery=1, round=1, sources=[{"proc": "A0", "ckpt": 1, "key_groups": [[0, 1]]}])
    >>> trace = rec.trace()
    >>> from snapcheck.checker.observed_recovery import recovery_groups
    >>> from snapcheck.checker.trace_index import TraceIndex
    >>> [group] = recovery_groups(trace)
    >>> rs = Rescale(trace, TraceIndex(trace), group, Ownership(trace, group))
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
            r = ck.round if ck is not None else (0 if s["ckpt"] == 0 else None)
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
    for p, e in rs.new.items():
        restored = own.restored_kg.get(p)
        if restored is not None and own.kg.get(p) != restored:
            extra, missing = _ranges(list(own.kg[p] - restored)), _ranges(list(restored - own.kg[p]))
            out.append(
                Violation(
                    "key-group-mismatch",
                    "rescale-state",
                    rs.subject,
                    f"{p} declares key groups it did not restore (restore at line {e.line}): "
                    + "; ".join(
                        x
                        for x in (
                            f"declared, not restored: {_fmt(extra)}" if extra else "",
                            f"restored, not declared: {_fmt(missing)}" if missing else "",
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
            kgs.setdefault(q, set()).update(_expand(s.get("key_groups")))
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
        which = ", ".join(f"{q}:{c}" for c in sorted(cks))
        how = f"retires at line {ret.line} handing over" if ret is not None else "never retires, and so keeps"
        out.append(
            Violation(
                "state-wrong-round",
                "rescale-state",
                rs.subject,
                f"{q} {how} {kept}, but {rs.subject} restores its state from "
                f"{which} (round {rs.round}){after}: what {q} did in between is kept by the old process and done "
                "again by the new ones.",
                ([ret.line] if ret is not None else [])
                + [rs.ckpt_ev[(q, c)].line for c in cks if (q, c) in rs.ckpt_ev],
                {"process": q, "checkpoints": [[q, c] for c in sorted(cks)], "round": rs.round},
            )
        )
    return out


def _max_parallelism_violations(rs: Rescale, op: str) -> list[Violation]:
    """Key groups mean the same keys only under one max parallelism: a new process of ``op``
    declaring another number of key groups than the old processes whose state it takes
    (Flink refuses such a restore) restores each key's state under the wrong key group."""
    declared = rs.own.max_parallelism
    out = []
    for p, e in rs.new.items():
        if rs.own.operator[p] != op or declared.get(p) is None:
            continue
        other = sorted(
            (declared[s["proc"]], s["proc"], s["ckpt"])
            for s in rs.sources(e)
            if declared.get(s["proc"]) not in (None, declared[p])
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
            kgs = _expand(s["key_groups"]) if s.get("key_groups") is not None else own.kg.get(s["proc"], set())
            for k in kgs:
                taken.setdefault(k, []).append((e, s))
    if not universe and not taken:
        return []
    out = []
    problems: dict[tuple, list[int]] = {}
    for k in sorted(set(universe) | set(taken)):
        got = taken.get(k, [])
        if k in universe and not got:
            problems.setdefault(("lost", universe[k]), []).append(k)
        if len(got) > 1:
            problems.setdefault(("dup", tuple((e.proc, s["proc"], s["ckpt"]) for e, s in got)), []).append(k)
        for e, s in got:
            if universe.get(k) != s["proc"]:
                problems.setdefault(("wrong", e.proc, s["proc"], s["ckpt"], universe.get(k)), []).append(k)
    for key, ks in problems.items():
        rg = _ranges(ks)
        what = f"key group{'s' if len(ks) > 1 else ''} {_fmt(rg)} of operator {op}"
        if key[0] == "lost":
            q = key[1]
            out.append(
                Violation(
                    "key-group-lost",
                    "rescale-state",
                    rs.subject,
                    f"{q} owned {what} at round {rs.round} ({_held_at(rs, q)}), but no restore of "
                    f"{rs.subject} takes {'them' if len(ks) > 1 else 'it'}: that state is lost.",
                    [_ckpt_line(rs, q)] + [e.line for e in rs.group],
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
                    },
                )
            )
        else:
            _, p, sp, sc, owner = key
            by = f"{owner} owned {'them' if len(ks) > 1 else 'it'}" if owner else "no old process owned them"
            out.append(
                Violation(
                    "key-group-wrong-owner",
                    "rescale-state",
                    rs.subject,
                    f"{p} takes {what} from {sp}:{sc} (restore at line {rs.new[p].line}), but {by} at round "
                    f"{rs.round}: the state restored for {'them' if len(ks) > 1 else 'it'} is not theirs.",
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


def unjudged_state(rs: Rescale) -> list[str]:
    """What ``rescale-state`` cannot judge in the rescale ``rs``, one sentence per operator:
    state restored whole (a source naming neither key groups nor partitions) from old
    processes that own neither. Such state may be union or broadcast state (every new
    process, or any, takes a copy) or state kept at the same parallelism (one each); the
    trace does not say which, so who must take it is not judged.

    >>> from snapcheck.traces import TraceRecorder
    >>> from snapcheck.checker.observed_recovery import recovery_groups
    >>> from snapcheck.checker.trace_index import TraceIndex
    >>> rec = TraceRecorder(["U0", "U1", {"id": "N", "appears": True, "operator": "U1"}], [])
    >>> _ = rec.checkpoint("U0", round=1); _ = rec.checkpoint("U1", round=1)
    >>> rec.retire("U0", 1); rec.retire("U1", 1)
    >>> rec.restore("N", 0, recovery=1, round=1, sources=[{"proc": "U1", "ckpt": 1}])
    >>> trace = rec.trace()
    >>> [group] = recovery_groups(trace)
    >>> unjudged_state(Rescale(trace, TraceIndex(trace), group, Ownership(trace, group)))  # doctest: +ELLIPSIS
    ['rescale at line 6 (recovery 1): operator U1 restores state whole from U1:1, whose ...is not judged...']
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
    return [
        f"{rs.subject}: operator {op} restores state whole from {', '.join(sorted(cks))}, whose processes declare "
        "neither key groups nor partitions: whether it is union or broadcast state (each new process takes a copy) "
        "or split state (each old state taken once), and so whether any of it is lost or duplicated, is not judged "
        "(declare list-state partitions in the header to have it judged)."
        for op, cks in sorted(whole.items())
    ]


# -- rescale-in-flight ---------------------------------------------------------------------
class _Deliveries:
    """Replays and effective receives after a rescale, by original message."""

    def __init__(self, h, rs: Rescale, send_of: dict) -> None:
        self.recvs: dict[str, list] = {}
        self.replays: dict[str, list] = {}
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
                (m["new"], _expand(m["key_groups"]) if m.get("key_groups") is not None else None, e)
            )
    recorded = _recorded(ix, rs)
    new_of_op: dict[str, list[str]] = {}
    for p in rs.new:
        new_of_op.setdefault(own.operator[p], []).append(p)
    out: list[Violation] = []
    unkeyed: list[str] = []  # records without a key group whose owner among filtered channels is not judged
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
            else:
                maps = mapping.get(c, [])
                targets = [new for new, keep, _ in maps if keep is None or (kg in keep if kg is not None else keep)]
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
                stray = [e for e in got if e.ch not in targets]
                if stray and targets:
                    out.append(_misrouted(rs, o, c, kg, stray[0], f"on {stray[0].ch}, which no restore maps {c} onto"))
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
        rg = _ranges([g for _, _, g in found])
        out.append(
            Violation(
                "live-misrouted",
                "rescale-in-flight",
                rs.subject,
                f"{p} owns key groups {_fmt(_ranges(list(rs.own.kg[p])))} after {rs.subject}, but processes "
                f"{len(found)} record(s) sent after it of key group{'s' if len(rg) > 1 or rg[0][0] != rg[0][1] else ''} "
                f"{_fmt(rg)}, first {s.mid} (sent at line {s.line}, processed at line {e.line}): their state "
                "grows in a process that does not own it and is lost or split at the next restore.",
                [s.line, e.line],
                {"messages": [s.mid], "key_group": s.key_group, "key_groups": rg, "process": p},
            )
        )
    return out


def _recorded(ix, rs: Rescale) -> dict[str, list[str]]:
    """Old channel -> recorded mids of the restored round (input part, then output part)."""
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
    return {c: inp + outp for c, (inp, outp) in parts.items()}


def _judge(rs, o, c, kg, got, is_owner, owner_text, maps, dv, owner_procs: list[str]) -> list[Violation]:
    """The in-flight verdict of the recovered record ``o`` of old channel ``c`` (key group ``kg``):
    of its receives ``got``, those ``is_owner`` accepts must be exactly one (``owner_text``
    names the owner); the others are misrouted. ``owner_procs``, the processes that may own
    it, and the mappings ``maps`` of ``c`` explain a loss."""
    mine = [e for e in got if is_owner(e)]
    out = []
    for e in got:
        if not is_owner(e):
            out.append(_misrouted(rs, o, c, kg, e, f"by {e.proc}, not by {owner_text}"))
    wit = {"messages": [o], "old_channel": c}
    if kg is not None:
        wit["key_group"] = kg
    kgt = f" (key group {kg})" if kg is not None else ""
    if not mine:
        if not owner_procs:
            why = "no restore maps it onto an input of a new owner: its channel state was not redistributed"
        else:
            owner_proc = " or ".join(owner_procs)
            onto = [new for new, _, e in maps if e.proc in owner_procs]
            reps = dv.replays.get(o, [])
            if not onto:
                why = (
                    f"no restore maps {c} onto an input of {owner_proc}: its channel state was not "
                    "redistributed to the owner"
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
            for m in into.get(h.index.get(q), ()):
                if h.trace_index.channels[m.ch].src != part:
                    continue
                kept = [e for e in h.recvs.get(m.mid, ()) if e.proc == q]
                if kept:
                    continue
                got = [e for e in dv.recvs.get(m.mid, ()) if e.proc in holders]
                if len(got) == 1:
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


def check_rescale(run) -> None:
    """Add ``rescale-state`` and ``rescale-in-flight`` results to a ``check_trace`` run,
    one of each per rescale (``rescale_groups``), for the properties selected; a trace
    without a restore that names sources has none, and the report says so.

    ``A0`` and ``A1`` are restored as ``N``, which takes all four key groups from
    ``A0``'s checkpoint, though ``A0`` owned only two of them:

    >>> from snapcheck.checker import check_trace
    >>> from snapcheck.traces import TraceRecorder
    >>> agg = {"operator": "agg", "max_parallelism": 4}
    >>> rec = TraceRecorder([dict(agg, id="A0", key_groups=[[0, 1]]), dict(agg, id="A1", key_groups=[[2, 3]]),
    ...                      dict(agg, id="N", appears=True)], [])
    >>> _ = rec.checkpoint("A0", round=1); _ = rec.checkpoint("A1", round=1)
    >>> rec.retire("A0", 1); rec.retire("A1", 1)
    >>> rec.restore("N", 0, recovery=1, round=1, sources=[{"proc": "A0", "ckpt": 1, "key_groups": [[0, 3]]}])
    >>> report = check_trace(rec.trace())
    >>> [(v.kind, v.property, v.message) for v in report.violations]
    [('key-group-wrong-owner', 'rescale-state', 'N takes key groups 2..3 of operator agg from A0:1 (restore at line 6), but A1 owned them at round 1: the state restored for them is not theirs.')]
    >>> from snapcheck.traces.golden import golden
    >>> check_trace(golden("theory_a_zcycle")).not_judged["rescale-state"]
    'the trace has no restore at another parallelism (no restore names its sources)'
    """
    if not (run.want("rescale-state") or run.want("rescale-in-flight")):
        return
    if not run.ix.has("restore"):
        return
    for rs in rescale_groups(run):
        if rs.round is None:
            run.report.notes.append(
                f"{rs.subject}: its restored round is unknown (its restores name no round and no checkpoint), so "
                "its state and in-flight records are not judged."
            )
            continue
        if run.want("rescale-state"):
            run.add("rescale-state", rs.subject, state_violations(rs))
            run.report.notes.extend(unjudged_state(rs))
        if run.want("rescale-in-flight"):
            run.add("rescale-in-flight", rs.subject, in_flight_violations(run, rs))
