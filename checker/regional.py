"""Regional checkpoints (FLIP-600): what a checkpoint that mixes the states of
pipeline regions from different rounds must satisfy, judged from the trace.

Trace vocabulary (trace format v1 ``attrs``, docs/trace-format.md "Regional
checkpoints"): a ``round_complete`` with ``attrs.fallback`` ``{process: round}``
completes although those processes keep their state of an older round (followed
through chains, ``checker.rounds.resolve``); ``attrs.assignment``
``{split: reader}`` is the source coordinator's checkpointed split assignment;
``restore attrs.digest`` hashes the state actually restored; ``checkpoint
attrs.agreed`` ``{key: value}`` a value all subtasks of the operator must agree
on (union state holding an epoch); ``external`` processes with ``attrs.split``
and ``attrs.records`` are split logs, their channels ``attrs.split``;
coordinator sends with ``attrs.split`` assign a split; ``round_abort
attrs.forced_global`` ends a forced global round; header
``protocol.params.max_consecutive`` the consecutive-regional limit.

Properties (each where the trace has its vocabulary, when selected; the default: all):

``regional-restore`` — a region's restored state is a state it had at the
checkpoint the metadata names: a restore of completed round ``n`` restores, for
each process, its checkpoint in ``n``'s cut, and list-state elements
redistributed by a rescale (``restore attrs.elements``) come from those
checkpoints (``restore-unnamed`` otherwise); the digest of the restored state
equals the digest recorded at that checkpoint (``restored-state``).

``regional-cut`` — the composition is a global checkpoint given the regions'
independence: every fallback names a checkpoint (``fallback-unresolved``); no
completed round names a checkpoint rolled back before its completion, i.e. an
acknowledgement of an incarnation that has restarted since (``stale-fallback``);
no data channel joins two processes whose states come from different rounds
(``dependent-regions``: the regions are not independent). The cut itself is
judged for orphans and channel state by ``consistency`` and ``channel-state``.

``regional-commit`` — end-to-end exactly-once through two-phase-commit sinks: a
sink publishes transaction ``m`` only after a round completed whose checkpoint
holds the sink's state of round ``m`` or later; publishing it on a completion in
which the sink fell back to an older state is ``fallback-commit`` (the sink's
region will re-process that data).

``split-assignment`` — every split is read exactly once across fallbacks. At
every completed round the coordinator's checkpointed assignment agrees with the
readers' states in the cut (a reader holds a split when its state reflects the
assignment event): ``split-dropped`` (assigned, held by no reader: lost on
restore), ``split-doubled`` (held by a reader the coordinator does not name: read
twice on restore). In the final effective history no split record is processed
twice (``split-duplicate``, across readers and channels), and once every sink
ended its stream every record of every split was processed (``split-lost``).

``agreement`` — values declared agreed are equal in every completed checkpoint;
a composition that mixes them (the reviewers' union state restored as
``{100, 101}``) is ``agreement-broken``, with a witness naming the two
checkpoints mixed.

``regional-drift`` — at most ``max_consecutive`` regional completions follow one
another before a global round completes or a forced global round aborts
(``unbounded-drift``).
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import islice

from snapcheck.checker.free_fields import need_count
from snapcheck.checker.report import Violation
from snapcheck.checker.rounds import is_complete, resolve
from snapcheck.traces.model import Event

LIST_MISSING = 100  # missing records of a split listed in a violation's data (all are counted)
PROPERTIES = ("regional-restore", "regional-cut", "regional-commit", "split-assignment", "agreement", "regional-drift")


def _attr(e, key):
    return e.attrs.get(key) if e.attrs else None


class Completions:
    """The completed rounds of a trace in completion order (declared complete, and
    complete: one declared complete without its checkpoints is ``termination``'s
    ``incomplete-round``), each with its cut:
    participant -> (checkpoint Event, 0 for the initial checkpoint, or None; the round
    of that state).

    >>> from snapcheck.traces import TraceRecorder
    >>> from snapcheck.checker.rounds import find_rounds
    >>> rec = TraceRecorder(["A", "B", {"id": "C", "role": "coordinator"}], [])
    >>> _ = rec.checkpoint("A", "coordinated", round=1); _ = rec.checkpoint("B", "coordinated", round=1)
    >>> rec.round_complete("C", 1)
    >>> _ = rec.checkpoint("A", "coordinated", round=2)
    >>> rec.round_complete("C", 2, attrs={"fallback": {"B": 1}})     # B's region failed round 2
    >>> comp = Completions(find_rounds(rec.trace(), {"A", "B"}), ["A", "B"])
    >>> comp.regional, {p: (ev.ckpt, k) for p, (ev, k) in comp.cut[2].items()}
    (True, {'A': (2, 2), 'B': (1, 1)})
    """

    def __init__(self, rounds: dict, participants: list[str]):
        self.rounds = rounds
        self.done = sorted(
            (info for info in rounds.values() if info.declared_complete and is_complete(info, participants)),
            key=lambda info: info.complete_line,
        )
        self.cut: dict[int, dict[str, tuple]] = {}
        for info in self.done:
            cut = {}
            for p in participants:
                ev, chain = resolve(rounds, info.round, p)
                cut[p] = (ev, chain[-1] if ev is not None else None)
            self.cut[info.round] = cut
        # the completed rounds whose every fallback names a checkpoint (the others are
        # ``fallback-unresolved``, and judged no further)
        self.whole = [info for info in self.done if all(ev is not None for ev, _ in self.cut[info.round].values())]

    @property
    def regional(self) -> bool:
        return any(info.fallback for info in self.done)


def _name(ev, state_round) -> str:
    if ev is None:
        return "no checkpoint"
    if ev == 0:
        return "its initial state"
    return f"checkpoint {ev.ckpt} (round {state_round}, line {ev.line})"


# -- regional-restore ----------------------------------------------------------------------


def restore_violations(ix, comp: Completions) -> list[Violation]:
    """``restore-unnamed`` and ``restored-state`` (property ``regional-restore``, module
    docstring) of the trace indexed by ``ix``.

    >>> from snapcheck.traces import TraceRecorder
    >>> from snapcheck.checker.rounds import find_rounds
    >>> from snapcheck.checker.trace_index import TraceIndex
    >>> rec = TraceRecorder(["A", "B", {"id": "C", "role": "coordinator"}], [])
    >>> _ = rec.checkpoint("A", "coordinated", round=1); _ = rec.checkpoint("B", "coordinated", round=1)
    >>> rec.round_complete("C", 1)
    >>> _ = rec.checkpoint("A", "coordinated", round=2)
    >>> rec.round_complete("C", 2, attrs={"fallback": {"B": 1}})
    >>> rec.restore("B", 0, recovery=1, round=2)          # round 2 names B's checkpoint 1
    >>> trace = rec.trace()
    >>> comp = Completions(find_rounds(trace, {"A", "B"}), ["A", "B"])
    >>> [(v.kind, v.witness["named"]) for v in restore_violations(TraceIndex(trace), comp)]
    [('restore-unnamed', ['B', 1])]
    """
    out: list[Violation] = []
    digests = {(e.proc, e.ckpt): e.digest for e in ix.of_type("checkpoint") if e.digest}
    complete_line = {info.round: info.complete_line for info in comp.done}
    for e in ix.of_type("restore"):
        n = e.round
        if n is not None and complete_line.get(n, e.line) < e.line and e.proc in comp.cut[n]:
            ev, k = comp.cut[n][e.proc]
            want = None if ev is None else ev if ev == 0 else ev.ckpt
            if want is not None and e.ckpt != want:
                out.append(
                    Violation(
                        "restore-unnamed",
                        "regional-restore",
                        f"restore of {e.proc}",
                        f"{e.proc} restores checkpoint {e.ckpt} at line {e.line} as part of completed round {n}, "
                        f"whose metadata names {_name(ev, k)} for it: the region is restored to a state the "
                        f"checkpoint does not hold.",
                        [e.line, complete_line[n]] + ([ev.line] if ev else []),
                        {
                            "round": n,
                            "restored": [e.proc, e.ckpt],
                            "named": [e.proc, want],
                            "checkpoints": [[e.proc, e.ckpt]] + ([[e.proc, want]] if want else []),
                        },
                    )
                )
        for proc, ck in _attr(e, "elements") or ():
            named = comp.cut[n].get(proc) if n in comp.cut else (0, 0) if n is None else None
            want = None if named is None or named[0] is None else _ck(named[0])
            if want is not None and ck != want:
                assert named is not None  # want is derived from it
                out.append(
                    Violation(
                        "restore-unnamed",
                        "regional-restore",
                        f"restore of {e.proc}",
                        f"{e.proc}'s restore at line {e.line} (a rescale of completed round {n}) receives list-state "
                        f"elements of {proc}'s checkpoint {ck}, but round {n}'s metadata names {_name(*named)} for "
                        f"{proc}: the redistributed state mixes a state the checkpoint does not hold.",
                        [e.line],
                        {
                            "round": n,
                            "element_of": [proc, ck],
                            "named": [proc, want],
                            "checkpoints": [[proc, ck]] + ([[proc, want]] if want else []),
                        },
                    )
                )
        got = _attr(e, "digest")
        want_digest = digests.get((e.proc, e.ckpt))
        if got is not None and want_digest is not None and got != want_digest:
            out.append(
                Violation(
                    "restored-state",
                    "regional-restore",
                    f"restore of {e.proc}",
                    f"{e.proc} restores checkpoint {e.ckpt} at line {e.line}, but the state it restores (digest "
                    f"{got}) is not the state it had at that checkpoint (digest {want_digest}): the restore "
                    f"changed it (e.g. union state redistributed from other checkpoints).",
                    [e.line],
                    {"checkpoints": [[e.proc, e.ckpt]], "restored_digest": got, "checkpoint_digest": want_digest},
                )
            )
    return out


# -- regional-cut ---------------------------------------------------------------------------


def cut_violations(h, comp: Completions, data_channels: list) -> list[Violation]:
    """``fallback-unresolved``, ``stale-fallback`` and ``dependent-regions`` (property
    ``regional-cut``, module docstring); ``h``: the trace's ``History``,
    ``data_channels``: the header's data channels between participants.

    >>> from snapcheck.traces import TraceRecorder
    >>> from snapcheck.checker.intervals import History
    >>> from snapcheck.checker.rounds import find_rounds
    >>> rec = TraceRecorder(["A", "B", {"id": "C", "role": "coordinator"}], [("a2b", "A", "B")])
    >>> _ = rec.checkpoint("A", "coordinated", round=1); _ = rec.checkpoint("B", "coordinated", round=1)
    >>> rec.round_complete("C", 1)
    >>> _ = rec.checkpoint("A", "coordinated", round=2)
    >>> rec.round_complete("C", 2, attrs={"fallback": {"B": 1}})     # but a2b joins A and B
    >>> trace = rec.trace()
    >>> comp = Completions(find_rounds(trace, {"A", "B"}), ["A", "B"])
    >>> [(v.kind, v.witness["rounds"]) for v in cut_violations(History(trace), comp, trace.channels)]
    [('dependent-regions', {'A': 2, 'B': 1})]
    """
    out: list[Violation] = []
    for info in comp.done:
        n, cut = info.round, comp.cut[info.round]
        subject = f"round {n}"
        for p, named in sorted(info.fallback.items()):
            if cut.get(p, (None,))[0] is None:
                out.append(
                    Violation(
                        "fallback-unresolved",
                        "regional-cut",
                        subject,
                        f"round {n} completes at line {info.complete_line} with {p} keeping its state of round "
                        f"{named}, but {p} has no checkpoint of that round (or the chain of fallbacks loops).",
                        [info.complete_line],
                        {"round": n, "process": p, "named": named},
                    )
                )
        for p, (ev, k) in sorted(cut.items()):
            undone = h.first_rollback(ev) if ev else None
            if undone is not None and undone < info.complete_line:
                out.append(
                    Violation(
                        "stale-fallback",
                        "regional-cut",
                        subject,
                        f"round {n} completes at line {info.complete_line} with {p}'s {_name(ev, k)}, which the "
                        f"restore at line {undone} had rolled back: the checkpoint holds a state of an incarnation "
                        f"that restarted since (its region failed over after acknowledging).",
                        [ev.line, undone, info.complete_line],
                        {"round": n, "checkpoints": [[p, ev.ckpt]], "rounds": {p: k}},
                    )
                )
        if not info.fallback or info not in comp.whole:
            continue
        for c in data_channels:
            a, b = cut.get(c.src), cut.get(c.dst)
            if a and b and a[0] is not None and b[0] is not None and a[1] != b[1]:
                out.append(
                    Violation(
                        "dependent-regions",
                        "regional-cut",
                        subject,
                        f"round {n} (line {info.complete_line}) combines {c.src}'s {_name(*a)} with {c.dst}'s "
                        f"{_name(*b)}, but channel {c.id} joins them: their regions are not independent, so mixing "
                        f"rounds {a[1]} and {b[1]} is not a state of any execution.",
                        [info.complete_line] + [x[0].line for x in (a, b) if x[0]],
                        {
                            "round": n,
                            "channel": c.id,
                            "checkpoints": [[c.src, _ck(a[0])], [c.dst, _ck(b[0])]],
                            "rounds": {c.src: a[1], c.dst: b[1]},
                        },
                    )
                )
    return out


def _ck(ev) -> int:
    return 0 if ev == 0 else ev.ckpt


# -- regional-commit ------------------------------------------------------------------------


def commit_violations(ix, comp: Completions) -> list[Violation]:
    """``fallback-commit`` (property ``regional-commit``): a published transaction no
    completed checkpoint holds for its sink.

    >>> from snapcheck.traces import TraceRecorder
    >>> from snapcheck.checker.rounds import find_rounds
    >>> from snapcheck.checker.trace_index import TraceIndex
    >>> rec = TraceRecorder(["A", {"id": "K", "role": "sink"}, {"id": "C", "role": "coordinator"}], [])
    >>> _ = rec.checkpoint("A", "coordinated", round=1); _ = rec.checkpoint("K", "coordinated", round=1)
    >>> rec.round_complete("C", 1)
    >>> _ = rec.checkpoint("A", "coordinated", round=2)
    >>> rec.round_complete("C", 2, attrs={"fallback": {"K": 1}})
    >>> rec.output("K", 3, attrs={"txn": 2, "phase": "commit"})    # the sink fell back from round 2
    >>> trace = rec.trace()
    >>> comp = Completions(find_rounds(trace, {"A", "K"}), ["A", "K"])
    >>> [(v.kind, v.witness["fallback_round"]) for v in commit_violations(TraceIndex(trace), comp)]
    [('fallback-commit', 1)]
    """
    lines = [info.complete_line for info in comp.whole]
    out: list[Violation] = []
    for e in ix.with_attr("output", "phase"):
        if e.attrs["phase"] != "commit" or not isinstance(e.attrs.get("txn"), int) or e.proc not in _cut_procs(comp):
            continue
        m = e.attrs["txn"]
        done = comp.whole[: bisect_left(lines, e.line)]
        held = [info for info in done if (comp.cut[info.round][e.proc][1] or 0) >= m]
        covering = [info for info in done if info.round >= m]
        if held or not covering:
            continue  # held by a completed checkpoint, or premature (output-commit)
        info = covering[-1]
        ev, k = comp.cut[info.round][e.proc]
        out.append(
            Violation(
                "fallback-commit",
                "regional-commit",
                f"sink {e.proc}",
                f"{e.proc} publishes transaction {m} at line {e.line} on the completion of round {info.round} "
                f"(line {info.complete_line}), in which it kept {_name(ev, k)}: no completed checkpoint holds "
                f"its state of round {m}, so its region re-processes that data after a restore and publishes it "
                f"again.",
                [e.line, info.complete_line],
                {"txn": m, "round": info.round, "fallback_round": k, "checkpoints": [[e.proc, _ck(ev)]] if ev else []},
            )
        )
    return out


def _cut_procs(comp: Completions) -> set:
    return set(comp.cut[comp.done[0].round]) if comp.done else set()


# -- agreement -------------------------------------------------------------------------------


def agreement_violations(h, comp: Completions) -> list[Violation]:
    """``agreement-broken`` (property ``agreement``): the subtasks of one operator hold
    different agreed values in a completed checkpoint.

    >>> from snapcheck.traces import TraceRecorder
    >>> from snapcheck.checker.intervals import History
    >>> from snapcheck.checker.rounds import find_rounds
    >>> rec = TraceRecorder([{"id": "A", "operator": "src"}, {"id": "B", "operator": "src"},
    ...                      {"id": "C", "role": "coordinator"}], [])
    >>> for n, procs in ((1, "AB"), (2, "A")):
    ...     for p in procs:
    ...         _ = rec.checkpoint(p, "coordinated", round=n, attrs={"agreed": {"epoch": 100 + n}})
    ...     rec.round_complete("C", n, attrs={"fallback": {"B": 1}} if n == 2 else None)
    >>> trace = rec.trace()
    >>> comp = Completions(find_rounds(trace, {"A", "B"}), ["A", "B"])
    >>> [(v.kind, v.witness["values"]) for v in agreement_violations(History(trace), comp)]
    [('agreement-broken', {'A': 102, 'B': 101})]
    """
    operator = {p.id: p.operator or p.id for p in h.trace.header.processes}
    out: list[Violation] = []
    for info in comp.whole:
        groups: dict[tuple, list] = {}
        for p, (ev, k) in sorted(comp.cut[info.round].items()):
            agreed = _attr(ev, "agreed") if ev else None
            for key, value in sorted((agreed or {}).items()):
                groups.setdefault((operator[p], key), []).append((p, value, ev, k))
        for (op, key), vals in sorted(groups.items()):
            values = {repr(v) for _, v, _, _ in vals}
            if len(values) < 2:
                continue
            a = vals[0]
            b = next(x for x in vals if repr(x[1]) != repr(a[1]))
            out.append(
                Violation(
                    "agreement-broken",
                    "agreement",
                    f"round {info.round}",
                    f"round {info.round} (line {info.complete_line}) holds {key} = {a[1]!r} for {a[0]} "
                    f"({_name(a[2], a[3])}) and {key} = {b[1]!r} for {b[0]} ({_name(b[2], b[3])}): the subtasks of "
                    f"{op} must agree on it, and the checkpoint mixes rounds {a[3]} and {b[3]} "
                    f"({sorted(values)} on restore, a combination no execution produces).",
                    [info.complete_line, a[2].line, b[2].line],
                    {
                        "round": info.round,
                        "key": key,
                        "values": {p: v for p, v, _, _ in vals},
                        "checkpoints": [[a[0], a[2].ckpt], [b[0], b[2].ckpt]],
                        "rounds": {a[0]: a[3], b[0]: b[3]},
                    },
                )
            )
    return out


# -- split-assignment -----------------------------------------------------------------------


class _Splits:
    def __init__(self, h, ix):
        header = h.trace.header
        self.records = {
            p.attrs["split"]: need_count(p.attrs.get("records"), f"attrs.records of process {p.id!r}")
            for p in header.processes
            if p.role == "external" and p.attrs and "split" in p.attrs
        }
        self.channel = {c.id: c.attrs["split"] for c in header.channels if c.attrs and "split" in c.attrs}
        self.assign = {e.mid: e.attrs["split"] for e in ix.with_attr("send", "split")}


def _held(h, readers, assign: dict) -> dict[str, dict[int, frozenset]]:
    """Reader -> checkpoint number -> the splits its state holds at that checkpoint."""
    out: dict[str, dict[int, frozenset]] = {}
    for p in readers:
        held: set = set()
        snaps: dict[int, frozenset] = {0: frozenset()}
        for e in h.raw[p]:
            if e.type == "recv" and e.mid in assign:
                held.add(assign[e.mid])
            elif e.type == "restore":
                moved = _attr(e, "splits")  # a rescale dealt it these splits
                held = set(moved) if moved is not None else set(snaps.get(e.ckpt, ()))
            elif e.type == "checkpoint":
                snaps[e.ckpt] = frozenset(held)
        out[p] = snaps
    return out


def split_violations(h, ix, comp: Completions) -> list[Violation]:
    """``split-dropped``, ``split-doubled``, ``split-duplicate`` and ``split-lost``
    (property ``split-assignment``, module docstring).

    >>> from snapcheck.traces import TraceRecorder
    >>> from snapcheck.checker.intervals import History
    >>> from snapcheck.checker.rounds import find_rounds
    >>> from snapcheck.checker.trace_index import TraceIndex
    >>> rec = TraceRecorder(["A", "B", {"id": "C", "role": "coordinator"},
    ...                      {"id": "log", "role": "external", "attrs": {"split": 0, "records": 1}}],
    ...                     [{"id": "log>A", "src": "log", "dst": "A", "attrs": {"split": 0}},
    ...                      {"id": "log>B", "src": "log", "dst": "B", "attrs": {"split": 0}},
    ...                      {"id": "C>A", "src": "C", "dst": "A", "kind": "control"}])
    >>> rec.recv("A", rec.send("C", "C>A", attrs={"split": 0}))          # split 0 goes to A
    >>> _ = rec.checkpoint("A", "coordinated", round=1); _ = rec.checkpoint("B", "coordinated", round=1)
    >>> rec.round_complete("C", 1, attrs={"assignment": {"0": "B"}})     # the coordinator says B
    >>> trace = rec.trace(); ix = TraceIndex(trace)
    >>> comp = Completions(find_rounds(trace, {"A", "B"}), ["A", "B"])
    >>> sorted((v.kind, v.witness["reader"]) for v in split_violations(History(trace, index=ix), ix, comp))
    [('split-doubled', 'A'), ('split-dropped', 'B')]
    """
    sp = _Splits(h, ix)
    readers = sorted({ix.channels[c].dst for c in sp.channel})
    held = _held(h, readers, sp.assign)
    out: list[Violation] = []
    for info in comp.whole:
        state = info.complete_attrs.get("assignment")
        if not isinstance(state, dict):
            continue
        cut = comp.cut[info.round]
        for s in sorted(sp.records):
            owner = state.get(str(s), state.get(s))
            holders = [
                p for p in readers if cut.get(p, (None,))[0] is not None and s in held[p].get(_ck(cut[p][0]), ())
            ]
            if (
                isinstance(owner, str)
                and owner in readers
                and cut.get(owner, (None,))[0] is not None
                and owner not in holders
            ):
                ev, k = cut.get(owner, (None, None))
                out.append(
                    Violation(
                        "split-dropped",
                        "split-assignment",
                        f"round {info.round}",
                        f"round {info.round} (line {info.complete_line}): the coordinator's checkpointed state assigns "
                        f"split {s} to {owner}, but {owner}'s state in it ({_name(ev, k) if ev is not None else 'none'}) "
                        f"does not hold it: restored from this checkpoint, nobody reads split {s}.",
                        [info.complete_line] + ([ev.line] if ev else []),
                        {
                            "round": info.round,
                            "split": s,
                            "reader": owner,
                            "checkpoints": [[owner, _ck(ev)]] if ev is not None else [],
                        },
                    )
                )
            for p in holders:
                if p != owner:
                    ev, k = cut[p]
                    out.append(
                        Violation(
                            "split-doubled",
                            "split-assignment",
                            f"round {info.round}",
                            f"round {info.round} (line {info.complete_line}): {p}'s {_name(ev, k)} holds split {s}, "
                            f"but the coordinator's checkpointed state "
                            + (f"assigns it to {owner}" if owner else "has it unassigned")
                            + f": restored from this checkpoint, split {s} is read twice.",
                            [info.complete_line] + ([ev.line] if ev else []),
                            {
                                "round": info.round,
                                "split": s,
                                "reader": p,
                                "coordinator": owner,
                                "checkpoints": [[p, _ck(ev)]],
                            },
                        )
                    )
    out += _split_records(h, ix, sp)
    return out


def _split_records(h, ix, sp: _Splits) -> list[Violation]:
    """``split-duplicate`` and ``split-lost`` in the final effective history."""
    seen: dict[tuple, Event] = {}
    out: list[Violation] = []
    for eff in h.eff:
        for e in eff:
            if e.type != "recv" or e.ch not in sp.channel:
                continue
            sent = h.by_mid.get(h.resolve(e.mid))
            if sent is None:
                continue
            key = (sp.channel[e.ch], sent.seq)
            first = seen.setdefault(key, e)
            if first is not e:
                out.append(
                    Violation(
                        "split-duplicate",
                        "split-assignment",
                        f"split {key[0]}",
                        f"record {key[1]} of split {key[0]} is processed twice in the effective history: by "
                        f"{first.proc} at line {first.line} and by {e.proc} at line {e.line}.",
                        [first.line, e.line],
                        {"split": key[0], "record": key[1], "messages": [first.mid, e.mid]},
                    )
                )
    sinks = [p.id for p in h.trace.header.processes if p.role == "sink"]
    ended = {
        e.proc for e in ix.with_attr("output", "phase") if e.attrs["phase"] == "end" and not h.rolled_back.get(id(e))
    }
    if sinks and all(p in ended for p in sinks):
        for s, n in sorted(sp.records.items()):
            got = sum(1 for s2, j in seen if s2 == s and 1 <= j <= (n or 0))  # not range(n): n may be huge
            missing = list(islice((j for j in range(1, (n or 0) + 1) if (s, j) not in seen), LIST_MISSING))
            if missing:
                out.append(
                    Violation(
                        "split-lost",
                        "split-assignment",
                        f"split {s}",
                        f"every sink ended its stream, but {(n or 0) - got} of the {n} records of split {s} were never "
                        f"processed in the effective history (records {missing[:5]}{' …' if len(missing) > 5 else ''}).",
                        [],
                        {"split": s, "missing": missing},
                    )
                )
    return out


# -- regional-drift ----------------------------------------------------------------------------


def drift_violations(ix, comp: Completions, limit: int) -> list[Violation]:
    """``unbounded-drift`` (property ``regional-drift``): more than ``limit`` regional
    completions in a row, with no global completion or forced global abort between.

    >>> from snapcheck.traces import TraceRecorder
    >>> from snapcheck.checker.rounds import find_rounds
    >>> from snapcheck.checker.trace_index import TraceIndex
    >>> rec = TraceRecorder(["A", "B", {"id": "C", "role": "coordinator"}], [])
    >>> for n in (1, 2, 3):
    ...     _ = rec.checkpoint("A", "coordinated", round=n)
    ...     rec.round_complete("C", n, attrs={"fallback": {"B": 0}})    # B never checkpoints
    >>> trace = rec.trace()
    >>> comp = Completions(find_rounds(trace, {"A", "B"}), ["A", "B"])
    >>> [(v.kind, v.witness["rounds"]) for v in drift_violations(TraceIndex(trace), comp, 2)]
    [('unbounded-drift', [1, 2, 3])]
    """
    events = sorted(
        [(info.complete_line, "complete", info) for info in comp.done]
        + [(e.line, "forced", e) for e in ix.with_attr("round_abort", "forced_global")]
    )
    streak: list = []
    out: list[Violation] = []
    for _, kind, x in events:
        if kind == "forced" or not x.fallback:
            streak = []
            continue
        streak.append(x)
        if len(streak) > limit:
            out.append(
                Violation(
                    "unbounded-drift",
                    "regional-drift",
                    f"round {x.round}",
                    f"round {x.round} (line {x.complete_line}) is regional completion {len(streak)} in a row (rounds "
                    f"{', '.join(str(i.round) for i in streak)}) although at most {limit} may follow one another before "
                    f"a global checkpoint is forced: failed regions drift on historical state without bound.",
                    [i.complete_line for i in streak],
                    {"rounds": [i.round for i in streak], "max_consecutive": limit},
                )
            )
    return out


# -- entry point -----------------------------------------------------------------------------


def check_regional(run) -> None:
    """Add the regional properties to a ``check_trace`` run, each where the trace has its
    vocabulary, when selected (the default: all); otherwise the report lists it as not judged.

    >>> from snapcheck.traces import TraceRecorder
    >>> from snapcheck.checker import check_trace
    >>> rec = TraceRecorder(["A", "B", {"id": "C", "role": "coordinator"}], [], params={"max_consecutive": 1})
    >>> _ = rec.checkpoint("A", "coordinated", round=1)
    >>> rec.round_complete("C", 1, attrs={"fallback": {"B": 0}})
    >>> report = check_trace(rec.trace())
    >>> report.ok, sorted(r.property for r in report.results if r.property.startswith("regional"))
    (True, ['regional-cut', 'regional-drift', 'regional-restore'])
    """
    h, ix = run.h, run.ix
    comp = Completions(run.rounds, h.procs)
    regional = comp.regional
    want = run.want
    if (regional or ix.with_attr("restore", "digest")) and want("regional-restore"):
        run.add("regional-restore", "trace", restore_violations(ix, comp))
    # With regions declared, a region restores alone even when no round completed
    # regionally yet: a round completing globally after a region failed over (with that
    # region's pre-failover checkpoints) is as stale as a regional one.
    declared = any(p.attrs and "region" in p.attrs for p in h.trace.header.processes)
    if (regional or declared) and want("regional-cut"):
        data = [c for c in h.trace.header.channels if c.kind != "control" and c.src in h.index and c.dst in h.index]
        run.add("regional-cut", "trace", cut_violations(h, comp, data))
    if regional and ix.with_attr("output", "phase") and want("regional-commit"):
        run.add("regional-commit", "trace", commit_violations(ix, comp))
    has_splits = any(p.role == "external" and p.attrs and "split" in p.attrs for p in h.trace.header.processes)
    if has_splits and want("split-assignment"):
        run.add("split-assignment", "trace", split_violations(h, ix, comp))
    if ix.with_attr("checkpoint", "agreed") and want("agreement"):
        run.add("agreement", "trace", agreement_violations(h, comp))
    limit = need_count((h.trace.header.protocol.get("params") or {}).get("max_consecutive"), "params.max_consecutive")
    if limit is not None and regional and want("regional-drift"):
        run.add("regional-drift", "trace", drift_violations(ix, comp, limit))
