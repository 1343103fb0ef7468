"""What a rescale is, and who owns which key groups and partitions before and after it
(definitions: ``checker.rescale``): ``Ownership``, ``Rescale``, ``rescale_groups``, and
the key-group range helpers the two rescale properties share."""

from __future__ import annotations

from snapcheck.checker.lifetimes import Lifetimes
from snapcheck.checker.observed_recovery import checkpoint_rounds, recovery_groups, restored_round
from snapcheck.checker.trace_index import TraceIndex
from snapcheck.traces.model import Event, Trace
from snapcheck.traces.recorder import TraceRecorder


def to_ranges(values: list[int]) -> list[list[int]]:
    """Sorted integers as inclusive ranges.

    >>> to_ranges([1, 2, 3, 7, 9, 10])
    [[1, 3], [7, 7], [9, 10]]
    """
    out: list[list[int]] = []
    for v in sorted(set(values)):
        if out and out[-1][1] == v - 1:
            out[-1][1] = v
        else:
            out.append([v, v])
    return out


def expand_ranges(ranges) -> set[int]:
    """The integers of inclusive ranges (none for None).

    >>> sorted(expand_ranges([[1, 3], [7, 7]])), expand_ranges(None)
    ([1, 2, 3, 7], set())
    """
    return {k for lo, hi in ranges or () for k in range(lo, hi + 1)}


def fmt_ranges(ranges: list[list[int]]) -> str:
    """Inclusive ranges as a report writes them.

    >>> fmt_ranges([[1, 3], [7, 7]])
    '1..3, 7'
    """
    return ", ".join(str(lo) if lo == hi else f"{lo}..{hi}" for lo, hi in ranges)


class Ownership:
    """Key groups and partitions owned by each process (module docstring): ``kg`` and
    ``parts`` map a process to what it owns, its header declaration if it has one, else
    what its restore took from its sources (``restores_with_sources``: the restores
    that name sources, in trace order); a source that names neither key groups nor
    partitions gives all of its process's. ``restored_kg`` keeps what each of those
    restores took, possibly nothing (``sources: []``), to compare with the declarations;
    ``operator`` maps each process to its operator (its own id when the header names none).

    ``A0`` and ``A1`` own key groups 0..1 and 2..3 of operator ``agg``; the job is
    restored with one process ``N`` that takes both ranges:

    >>> trace = two_to_one([0, 1], [2, 3])
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
        self.restored_kg: dict[str, set[int]] = {}
        for e in restores_with_sources:
            kgs: set[int] = set()
            parts: set[str] = set()
            for s in e.sources:
                if s.get("key_groups") is not None:
                    kgs |= expand_ranges(s["key_groups"])
                if s.get("partitions") is not None:
                    parts |= set(s["partitions"])
                if s.get("key_groups") is None and s.get("partitions") is None:  # all of that state
                    q = s["proc"]
                    kgs |= expand_ranges(declared_kg[q]) if q in declared_kg else self.kg.get(q, set())
                    parts |= set(declared_parts[q]) if q in declared_parts else self.parts.get(q, set())
            self.restored_kg[e.proc] = kgs
            if kgs:
                self.kg[e.proc] = kgs
            if parts:
                self.parts[e.proc] = parts
        for p, r in declared_kg.items():
            self.kg[p] = expand_ranges(r)
        for p, ps in declared_parts.items():
            self.parts[p] = set(ps)


class Rescale:
    """One rescale: the restores ``group`` of a recovery of which some name sources
    (``trace`` and its ``TraceIndex`` ``ix``; ``own``: the ``Ownership`` of the trace).
    ``round`` is the restored round (the restores' ``round``, else the round of their
    sources' checkpoints, 0 when they are all initial states; None if neither says), ``new`` maps each restoring process to
    its restore, ``old_ckpt`` each old process (outside the group, with a checkpoint of
    ``round``; a process restored in place, without ``sources``, is one too) to that
    checkpoint, ``missing`` each process that owned key groups or
    partitions and belonged to the job when that round started but has no checkpoint of it
    (to the line where the round started), ``start`` is the line of the first restore and
    ``subject`` names the rescale in the report. ``after``: the line where the previous
    rescale began (0: none); the processes it replaced are not old ones here.

    >>> trace = two_to_one([0, 1], [2, 3])
    >>> rs = Rescale.only(trace)
    >>> rs.subject, rs.round, list(rs.new), rs.old_ckpt
    ('rescale at line 6 (recovery 1)', 1, ['N'], {'A0': 1, 'A1': 1})
    """

    def __init__(self, trace: Trace, ix, group: list, own: Ownership, after: int = 0) -> None:
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
        self.channels = ix.channels
        self.keyed_sends = [e for e in ix.of_type("send") if e.key is not None and e.key_group is not None]
        self.ckpt_round = checkpoint_rounds(ix)
        self.round = _rescale_round(group, self.ckpt_round)
        self.old_ckpt: dict[str, int] = {}  # old process -> its checkpoint of the restored round
        self.missing: dict[str, int] = {}  # old process without one -> line where the round started
        # a restore without sources restores its process in place (an operator whose
        # parallelism did not change): its own checkpoint is one of the old ones too
        in_place = {p for p, e in self.new.items() if e.sources is None}
        # the generation this rescale replaces: not one an earlier rescale (from line
        # ``after``) had already replaced, nor one of its new processes
        retired_at = {e.proc: e.line for e in ix.of_type("retire")}
        generation = [
            p.id
            for p in trace.header.processes
            if (p.id not in self.new or p.id in in_place)
            and p.role not in ("coordinator", "external")
            and retired_at.get(p.id, after + 1) > after
            and not (p.appears and min((e.line for e in ix.by_proc.get(p.id, ())), default=0) > self.start)
        ]  # (nor a process a later rescale creates)
        if self.round == 0:  # each has its checkpoint 0: the initial state, or what its creation restored
            self.old_ckpt = {q: 0 for q in generation}
        elif self.round is not None:
            mine = set(generation)
            started = [e.line for e in ix.of_type("checkpoint") if e.round == self.round]
            started += [e.line for e in ix.of_type("round_start") if e.round == self.round]
            for (q, c), r in self.ckpt_round.items():  # checkpoint events first, in trace order
                if r == self.round and q in mine and q not in self.old_ckpt:
                    self.old_ckpt[q] = c
            stateful = [q for q in generation if (own.kg.get(q) or own.parts.get(q)) and q not in self.old_ckpt]
            if started and stateful:
                line = min(started)
                self.missing = {q: line for q in Lifetimes(trace, ix).members(stateful, line)}

    @classmethod
    def only(cls, trace: Trace) -> Rescale:
        """The rescale of a trace with one recovery, which restores from ``sources``.

        >>> Rescale.only(two_to_one([0, 3])).new["N"].line
        6
        """
        [group] = recovery_groups(trace)
        return cls(trace, TraceIndex(trace), group, Ownership(trace, group))

    def data_events(self, p: str, after: int, before: int) -> list[Event]:
        """The events of process ``p`` between two lines that send, process or re-inject
        data (barriers and cancellation markers are not data)."""
        return [
            x
            for x in self._by_proc.get(p, [])
            if after < x.line < before and x.mid is not None and x.mid not in self._markers
        ]

    def events_of(self, p: str) -> list[Event]:
        """Every event of process ``p`` (effective or rolled back), in its order."""
        return self._by_proc.get(p, [])

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
    >>> trace = two_to_one([0, 1], [2, 3])
    >>> [(r.property, r.subject, r.ok) for r in check_trace(trace).results if r.property.startswith("rescale")]
    [('rescale-state', 'rescale at line 6 (recovery 1)', True), ('rescale-in-flight', 'rescale at line 6 (recovery 1)', True)]
    """
    groups = [g for g in run.recovery_groups() if any(e.sources is not None for e in g)]
    if not groups:
        return []
    own = Ownership(run.trace, [e for g in groups for e in g if e.sources is not None])
    starts = [0] + [min(e.line for e in g) for g in groups]  # each rescale replaces what the one before began
    return [Rescale(run.trace, run.ix, g, own, after) for g, after in zip(groups, starts)]


def _rescale_round(group: list, ckpt_round: dict) -> int | None:
    """The round a rescale restores: the round its restores' checkpoints hold
    (``restored_round``, each restore's checkpoints agreeing) when they all hold the same
    one; when they hold different rounds, the ``round`` the restores name if they name one
    alone, else the newest of them; when no restore's checkpoints agree, the newest round a
    restore meant (``_meant_round``); None if nothing says. Never the round of whichever
    restore comes first: a restore that takes an older round's state is the one
    ``state-wrong-round`` blames, wherever it is in the trace.

    >>> from snapcheck.traces.model import Event
    >>> def restore(proc, source, ckpt, **more):
    ...     return Event.from_dict({"type": "restore", "proc": proc, "idx": 0, "ckpt": 0,
    ...                             "sources": [{"proc": source, "ckpt": ckpt}], **more})
    >>> rounds = {("A", 5): 5, ("B", 6): 6}
    >>> _rescale_round([restore("N0", "A", 5, round=6), restore("N1", "B", 6, round=6)], rounds)
    6
    >>> _rescale_round([restore("N0", "A", 5), restore("N1", "B", 6)], rounds)
    6
    """
    held = {r for e in group if (r := restored_round(e, ckpt_round)) is not None}
    if len(held) == 1:
        return held.pop()
    named = {e.round for e in group if e.round is not None}
    if held:
        return named.pop() if len(named) == 1 else max(held)
    meant = [r for e in group if (r := _meant_round(e, ckpt_round)) is not None]
    return max(meant, default=None)


def _meant_round(e, ckpt_round: dict) -> int | None:
    """The round a restore whose sources hold state of different rounds meant to restore:
    the ``round`` it names, else the newest of its sources' (the others then mix an older
    round in: ``state-wrong-round``); None when neither is known.

    >>> from snapcheck.traces.model import Event
    >>> e = Event.from_dict({"type": "restore", "proc": "N", "idx": 0, "ckpt": 0,
    ...                      "sources": [{"proc": "A", "ckpt": 1}, {"proc": "B", "ckpt": 2}]})
    >>> _meant_round(e, {("A", 1): 1, ("B", 2): 2})
    2
    """
    if e.round is not None:
        return e.round
    known = [r for s in e.sources or () if (r := ckpt_round.get((s.get("proc"), s.get("ckpt")))) is not None]
    return max(known, default=None)


def two_to_one(a0_groups: list[int], a1_groups: list[int] | None = None) -> Trace:
    """The rescale the examples of the rescale modules use: ``A0`` and ``A1`` own key
    groups 0..1 and 2..3 of operator ``agg`` (max parallelism 4), checkpoint round 1 and
    retire; one new process ``N`` restores the key groups ``[lo, hi]`` from ``A0``'s
    checkpoint and, unless None, those from ``A1``'s.

    >>> [(e.type, e.proc) for e in two_to_one([0, 3]).events][-1]
    ('restore', 'N')
    """
    agg = {"operator": "agg", "max_parallelism": 4}
    rec = TraceRecorder(
        [
            dict(agg, id="A0", key_groups=[[0, 1]]),
            dict(agg, id="A1", key_groups=[[2, 3]]),
            dict(agg, id="N", appears=True),
        ],
        [],
    )
    rec.checkpoint("A0", round=1)
    rec.checkpoint("A1", round=1)
    rec.retire("A0", 1)
    rec.retire("A1", 1)
    sources = [{"proc": "A0", "ckpt": 1, "key_groups": [a0_groups]}]
    if a1_groups is not None:
        sources.append({"proc": "A1", "ckpt": 1, "key_groups": [a1_groups]})
    rec.restore("N", 0, recovery=1, round=1, sources=sources)
    return rec.trace()
