"""``check_trace``: every applicable property of one trace, in one report.

Order of work: one pass over the events (``trace_index``: by process, by type,
shared by every analysis and by each property's "does it apply?" test); effective
history and message tuples (``intervals``); protocol errors recorded in the trace;
R-graph, SCC and useless checkpoints (``rgraph``, ``zcycles``); the properties with
a vocabulary of their own (``cic``, ``log_retention``, ``output_commit``,
``changelog``, ``replication``); the explicit cut; every coordinated round
(``rounds``, ``cuts``); recovery lines (``recovery_report``; z3 certificates in
``z3cert``); observed recoveries and exactly-once (``observed_recovery``); RDT
(``rdt``). The histories of trace prefixes (rounds rolled back later, log-retention
segments), the R-graph and its SCCs are built once per check and shared.

Applicability when ``properties`` is None: protocol-error when the trace records
one; consistency and channel-state for an explicit cut and every complete round;
termination for every round, completion for every round declared complete;
z-cycles as violations only where the protocol promises Z-cycle freedom (the
header's ``params.guarantees`` holds ``z-cycles`` or ``rdt``; see
``snapcheck.traces.protocol_facts``), otherwise the useless checkpoints are only
listed in ``report.useless``; recovery-line when a failure
set is given (the restart-all line "all" is always computed, as information);
observed-recovery and exactly-once when the trace has restores; rdt where the
protocol promises rollback-dependency trackability (``guarantees`` holds ``rdt``);
cic-conformance, cic-efficiency and timestamps for traces whose header names the
communication-induced rules they follow (``params.cic``: ``bcs`` or ``hmnr``) and
that carry protocol data (``checker.cic``); log-retention for traces that truncate
logs (``checker.log_retention``); output-commit, control-delivery and
recovery-lineage where the trace has two-phase-commit outputs, operator events, or
rounds with recoveries (``checker.output_commit``); changelog-restore and
artifact-retention for changelog checkpoints (``checker.changelog``); the replica
properties where the header declares replicas (``checker.replication``); the
regional properties for traces with regional completions, split logs or agreed
values (``checker.regional``). Nothing is decided from the protocol's name:
``CheckOptions.facts`` completes what the header declares (the command line fills
it from the protocol catalogue for protocols it knows by name).
Naming properties (``properties``) selects among these; it makes none of them apply,
but for the protocol's promises (``options.PROMISED``: z-cycles and rdt are judged when
named although the protocol does not promise them, and so are the CIC properties of a
protocol that declares CIC rules).
Every property without a result is listed in ``report.not_judged`` with the
reason (``checker.coverage``), and the faults the trace's producer was asked to
inject are listed in ``report.faults`` with whether each happened.
"""

from __future__ import annotations

from os import PathLike

from snapcheck.checker.causality import Causality
from snapcheck.checker.changelog import check_changelog
from snapcheck.checker.cic import check_cic
from snapcheck.checker.coverage import not_judged, requested_faults
from snapcheck.checker.cuts import CutAnalysis
from snapcheck.checker.durability import Durability
from snapcheck.checker.finished import check_finished
from snapcheck.checker.free_fields import guarded
from snapcheck.checker.intervals import History
from snapcheck.checker.lifetimes import Lifetimes
from snapcheck.checker.log_retention import check_log_retention
from snapcheck.checker.notation import fmt_cut
from snapcheck.checker.observed_recovery import (
    ObservedRecovery,
    delivery_violations,
    duplicate_violations,
    recovery_groups,
)
from snapcheck.checker.options import NO_PARTICIPANTS, PROMISED, CheckOptions
from snapcheck.checker.output_commit import check_output_properties
from snapcheck.checker.recovery_report import analyse_failure_set, parse_cut, parse_failures
from snapcheck.checker.regional import check_regional
from snapcheck.checker.replication import check_replication
from snapcheck.checker.report import Report, Violation
from snapcheck.checker.rescale import check_rescale
from snapcheck.checker.rgraph import Graph, scc_labels
from snapcheck.checker.rounds import (
    completion_violations,
    discarded_snapshot,
    find_rounds,
    is_complete,
    round_cut,
    round_status,
    round_violations,
)
from snapcheck.checker.trace_index import TraceIndex
from snapcheck.checker.zcycles import stably_unusable_positions, useless_positions, useless_violations
from snapcheck.traces.gc_pause import paused_gc
from snapcheck.traces.model import Trace
from snapcheck.traces.process_exit import hold
from snapcheck.traces.protocol_facts import DeclaredFacts


class _Run:
    """State shared by the analyses of one ``check_trace`` call."""

    def __init__(self, trace: Trace, opts: CheckOptions):
        self.trace = trace
        self.opts = opts
        self.ix = TraceIndex(trace)
        self.h = History(trace, index=self.ix)
        self.report = Report(trace=trace.path, protocol=str(trace.header.protocol.get("name", "unknown")))
        self._dur: Durability | None = None
        self._graph: Graph | None = None
        self._scc: list[int] | None = None
        self._prefix: dict[int, History] = {}
        self._prefix_dur: dict[int, Durability] = {}
        self._groups: list[list] | None = None
        self._rounds: dict | None = None
        self._life: Lifetimes | None = None
        self.facts = DeclaredFacts.of(trace.header.protocol, opts.facts)
        self.aligned = self.facts.aligned

    @property
    def dur(self) -> Durability:
        if self._dur is None:
            self._dur = Durability(self.h)
        return self._dur

    @property
    def graph(self) -> Graph:
        if self._graph is None:
            self._graph = Graph(self.h, "r")
        return self._graph

    @property
    def scc(self) -> list[int]:
        """SCC labels of the R-graph (``scc_labels``)."""
        if self._scc is None:
            self._scc = scc_labels(self.graph)
        return self._scc

    @property
    def rounds(self) -> dict:
        """The trace's coordinated rounds (``checker.rounds.find_rounds``), found once."""
        if self._rounds is None:
            self._rounds = find_rounds(self.trace, set(self.h.procs), self.facts.barriers_delimit)
        return self._rounds

    def want(self, prop: str) -> bool:
        return self.opts.properties is None or prop in self.opts.properties

    def explicit(self, prop: str) -> bool:
        """Is ``prop`` a promise (``options.PROMISED``) named with --property? Then it is
        judged also where the protocol does not promise it; no other property is."""
        return prop in PROMISED and self.opts.properties is not None and prop in self.opts.properties

    def add(self, prop, subject, violations, omitted: int = 0, omitted_kinds: frozenset[str] = frozenset()):
        return self.report.add(prop, subject, violations, self.opts.max_per_result, omitted, omitted_kinds)

    def history(self, limit: int | None = None) -> History:
        """The effective history of the trace prefix before line ``limit`` (None: the whole trace)."""
        if limit is None:
            return self.h
        h = self._prefix.get(limit)
        if h is None:
            h = self._prefix[limit] = History(self.trace, limit=limit, index=self.ix)
        return h

    @property
    def lifetimes(self) -> Lifetimes:
        """When each process belongs to the job (``checker.lifetimes``), computed once."""
        if self._life is None:
            self._life = Lifetimes(self.trace, self.ix)
        return self._life

    def recovery_groups(self) -> list[list]:
        """The trace's observed recoveries (groups of restores), computed once."""
        if self._groups is None:  # none without a restore (no scan of the events then)
            self._groups = recovery_groups(self.trace) if self.ix.has("restore") else []
        return self._groups

    def durability(self, limit: int) -> Durability:
        """Durability of the trace prefix before line ``limit``."""
        dur = self._prefix_dur.get(limit)
        if dur is None:
            dur = self._prefix_dur[limit] = Durability(self.history(limit))
        return dur


def check_trace(trace: Trace, opts: CheckOptions | None = None) -> Report:
    """Check one ``traces.Trace``: every property that applies to it (module docstring) or
    those ``opts.properties`` names, the useless checkpoints (Netzer and Xu, "Necessary
    and Sufficient Conditions for Consistent Global Snapshots", 1995), the restart-all
    recovery line and the one of ``opts.failures``; see ``CheckOptions`` and
    docs/checker.md. Returns a ``Report``; options that do not fit the trace raise
    ``CheckerUsageError``.

    Worked example C of docs/theory.md, the domino effect: four useless checkpoints, and
    after the failure of both processes the line falls back to ``(1, 0)``.

    >>> from snapcheck.traces.golden import golden
    >>> report = check_trace(golden("theory_c_domino"), CheckOptions(failures="all"))
    >>> report.ok, report.useless
    (True, [('P0', 2), ('P0', 3), ('P1', 1), ('P1', 2)])
    >>> report.recovery_lines["all"], report.recovery["all"]["domino"]
    ({'P0': 1, 'P1': 0}, True)

    CheckMate's Figure 2(b), an inconsistent cut:

    >>> check_trace(golden("checkmate_fig2b_orphan"), CheckOptions(cut={"O1": 1, "O2": 1, "O3": 1})).kinds
    {'orphan'}

    ``trace`` is a ``Trace`` only: a file is read with ``snapcheck.traces.read_trace(path)``
    (which validates it; ``snapcheck check FILE`` also completes the options from the
    protocol catalogue and the trace's ``metadata.expected``), a simulation's trace is
    ``res.trace()``. Anything else, and ``opts`` that are not a ``CheckOptions``, is a
    ``TypeError`` saying what to pass:

    >>> check_trace("run.jsonl")
    Traceback (most recent call last):
    TypeError: check_trace(trace): expected a snapcheck.traces.Trace, not str; read a trace file with snapcheck.traces.read_trace(path)
    >>> check_trace(golden("theory_c_domino"), {"failures": "all"})
    Traceback (most recent call last):
    TypeError: check_trace(trace, opts): expected a CheckOptions, not dict; e.g. CheckOptions(**opts)
    """
    _check_arguments(trace, opts)
    opts = opts or CheckOptions()
    opts.validate()
    with paused_gc():  # the analyses build many small objects and no garbage cycles
        run = _Run(trace, opts)
        _check(run)
    hold(run)  # the history and indexes are not freed when the process ends next (traces.process_exit)
    return run.report


def _check_arguments(trace, opts) -> None:
    """A ``TypeError`` for a ``check_trace`` argument of the wrong type, saying what to pass."""
    if not isinstance(trace, Trace):
        what = type(trace).__name__
        if isinstance(trace, (str, bytes, PathLike)):
            how = "read a trace file with snapcheck.traces.read_trace(path)"
        elif callable(getattr(trace, "trace", None)):  # a SimResult (the checker does not import the simulator)
            how = "pass a simulation's trace, res.trace()"
        else:
            how = "read one with snapcheck.traces.read_trace(path)"
        raise TypeError(f"check_trace(trace): expected a snapcheck.traces.Trace, not {what}; {how}")
    if opts is not None and not isinstance(opts, CheckOptions):
        raise TypeError(
            f"check_trace(trace, opts): expected a CheckOptions, not {type(opts).__name__}"
            + ("; e.g. CheckOptions(**opts)" if isinstance(opts, dict) else "")
        )


def _check(run: _Run) -> None:
    trace, opts = run.trace, run.opts
    _protocol_errors(run)
    _useless(run)
    for name, family in FAMILIES:  # they read protocol-specific fields: guarded (checker/free_fields.py)
        guarded(name, family, run)
    if opts.cut is not None:
        _explicit_cut(run, opts.cut)
    _rounds(run)
    _recovery_lines(run)
    if run.h.restores:
        _observed(run)
    run.report.notes.extend(never_restored(run.ix))
    if run.want("rdt") and (run.facts.promises("rdt") or run.explicit("rdt")):
        from snapcheck.checker.rdt import rdt_violations

        vs, omitted = rdt_violations(run.h, run.graph, opts.max_witnesses)
        run.add("rdt", "trace", vs, omitted)
    h = run.h
    run.report.stats.update(
        {"processes": h.n, "messages": len(h.msgs), "checkpoints": sum(h.L), "events": len(trace.events)}
    )
    guarded("coverage", _coverage, run)


def _coverage(run: _Run) -> None:
    """What was not judged, and the faults the trace's simulator was asked for (its metadata)."""
    run.report.not_judged = not_judged(run)
    run.report.faults = [f.to_json() for f in requested_faults(run.trace)]


# Families of checks that read the trace's protocol-specific fields, in the order they run.
FAMILIES = (
    ("CIC", check_cic),  # CIC conformance, timestamps along Z-paths (checker/cic.py)
    ("log-retention", check_log_retention),  # no log truncated while a line needs it (checker/log_retention.py)
    ("output", check_output_properties),  # output commit, control delivery, lineage (checker/output_commit.py)
    ("changelog", check_changelog),  # handles restore the checkpoint's state; retention (checker/changelog.py)
    ("replication", check_replication),  # replicas agree, deliver once, never stall (checker/replication.py)
    ("rescale", check_rescale),  # key groups and in-flight records at another parallelism (checker/rescale.py)
    ("finished-task", check_finished),  # final checkpoint and its notification (checker/finished.py)
    ("regional", check_regional),  # fallback cuts, restores, commits, splits, agreement (checker/regional.py)
)


def _protocol_errors(run: _Run) -> None:
    """``protocol-error``: the trace records that its protocol raised in a handler or broke
    an invariant the recording system relies on (``protocol_error`` events); the rest of
    the run is missing, so every property is judged on the events before it."""
    if not run.want("protocol-error") or not run.ix.has("protocol_error"):
        return
    vs = [
        Violation(
            "protocol-error",
            "protocol-error",
            e.proc,
            f"The protocol broke at line {e.line} on {e.proc}: {e.reason}. The run ended there; the "
            f"checker judged the trace up to that line.",
            [e.line],
            dict(e.attrs or {}),
        )
        for e in run.ix.of_type("protocol_error")
    ]
    run.add("protocol-error", "trace", vs)


def _useless(run: _Run) -> None:
    h, report = run.h, run.report
    graph = run.graph
    useless = useless_positions(graph, run.scc)
    report.useless = [(h.procs[i], h.label(i, x)) for i, x in useless]
    report.stably_unusable = [(h.procs[i], h.label(i, x)) for i, x in stably_unusable_positions(graph, useless)]
    if run.want("z-cycles") and (run.facts.promises("z-cycles") or run.explicit("z-cycles")):
        vs = useless_violations(h, graph, useless, run.opts.max_witnesses)
        run.add("z-cycles", "trace", vs, len(useless) - len(vs))


def _analyse_cut(run: _Run, h, dur, g, subject: str, at_line=float("inf"), gone=frozenset()) -> CutAnalysis:
    ca = CutAnalysis(
        h,
        dur,
        g,
        subject,
        aligned=run.aligned,
        channel_state=run.want("channel-state"),
        at_line=at_line,
        gone=gone,
        cap=run.opts.max_per_result,
    )
    if run.want("consistency"):
        run.add("consistency", subject, ca.consistency, ca.uncounted["consistency"].total())
    if run.want("channel-state"):
        more = ca.uncounted["channel-state"]
        run.add("channel-state", subject, ca.channel_state, more.total(), frozenset(more))
    if ca.unobservable:
        run.report.stats["unobservable_in_transit"] = run.report.stats.get("unobservable_in_transit", 0) + len(
            ca.unobservable
        )
        run.report.notes.append(
            f"{subject}: {len(ca.unobservable)} in-transit message(s) on channels whose recorded state the trace "
            f"does not show (protocol param channel_state = observed-at-restore), not judged as dropped: "
            f"{', '.join(m.mid for m in ca.unobservable[:5])}{' …' if len(ca.unobservable) > 5 else ''}."
        )
    return ca


def _explicit_cut(run: _Run, cut: dict) -> None:
    h = run.h
    g = parse_cut(h, cut)
    _analyse_cut(run, h, run.dur, g, f"cut {fmt_cut(h.line_to_dict(g))}")


def _rounds(run: _Run) -> None:
    h, trace = run.h, run.trace
    rounds = run.rounds
    life = run.lifetimes
    coordinated = any(i.announced or i.declared_complete or i.abort_line is not None for i in rounds.values())
    causality = Causality(h.trace_index)
    for r in sorted(rounds):
        info = rounds[r]
        members = life.members(h.procs, info.start_line)
        whole = is_complete(info, members)
        status = round_status(info, members, coordinated, whole)
        entry = {
            "status": status,
            "start_line": info.start_line,
            "checkpoints": {p: e.ckpt for p, e in info.ckpts.items()},
        }
        run.report.rounds[str(r)] = entry
        if not members:
            entry["not_analysed"] = NO_PARTICIPANTS
            run.report.notes.append(f"round {r}: not judged, {NO_PARTICIPANTS}.")
            continue
        if run.want("termination"):
            run.add("termination", f"round {r}", round_violations(info, members, trace, coordinated, whole))
        if run.want("completion") and info.declared_complete:
            run.add("completion", f"round {r}", completion_violations(info, run.facts.observed_at_restore, causality))
        if (run.want("consistency") or run.want("channel-state")) and (why := discarded_snapshot(info, status, whole)):
            entry["not_analysed"] = why
            run.report.notes.append(f"round {r}: {why}.")
        if status != "complete" or not (run.want("consistency") or run.want("channel-state")):
            continue
        cut = dict(info.ckpts)
        if info.fallback:  # a regional completion: each participant's state of the round named
            cut.update((p, e) for p, (e, _) in round_cut(rounds, r, info.fallback).items())
            entry["checkpoints"] = {p: e.ckpt if e else 0 for p, e in cut.items() if e is not None}
            entry["fallback"] = dict(info.fallback)
            if unresolved := sorted(p for p, e in cut.items() if e is None):
                # a fallback that names no checkpoint: regional-cut's fallback-unresolved
                entry["not_analysed"] = (
                    f"its fallback names no checkpoint of {', '.join(unresolved)} (regional-cut judges that), "
                    "so its consistency and channel state are not judged"
                )
                run.report.notes.append(f"round {r}: {entry['not_analysed']}.")
                continue
        undone = [x for x in (h.first_rollback(e) for e in cut.values() if e) if x is not None]
        limit: float
        if undone:
            limit = min(undone)
            if any(e and e.line >= limit for e in cut.values()):
                # its checkpoints straddle a rollback (a region failed over while others went on):
                # no prefix of the trace holds them all (a completed one is judged by checker.regional)
                entry["not_analysed"] = (
                    f"a checkpoint of the round is rolled back at line {limit} before others are taken"
                )
                continue
            hist, dur = run.history(limit), run.durability(limit)
            entry["analysed_before_line"] = limit
        else:
            hist, dur, limit = h, run.dur, float("inf")
        g = [
            hist.pos_of[i][cut[p].ckpt if cut[p] else 0] if p in cut else life.position(hist, i, info.start_line)
            for i, p in enumerate(hist.procs)
        ]
        gone = frozenset(i for i, p in enumerate(hist.procs) if life.handed_over(p, info.start_line))
        ca = _analyse_cut(run, hist, dur, g, f"round {r}", at_line=limit, gone=gone)
        entry["in_transit"] = len(ca.internal_in_transit) + ca.external_in_transit


def _recovery_lines(run: _Run) -> None:
    h, opts, report = run.h, run.opts, run.report
    sets = []
    if opts.failures is not None:
        sets.append(parse_failures(h, opts.failures))
    if not any(label == "all" for _, label in sets):
        sets.append((list(range(h.n)), "all"))
    for failed, label in sets:
        d = analyse_failure_set(h, run.dur, failed, label, opts.semantics, graph=run.graph, crosscheck=opts.crosscheck)
        g, U = d.pop("_g"), d.pop("_U")
        report.recovery_lines[label] = d["line"]
        report.recovery[label] = d
        if opts.z3:
            from snapcheck.checker.z3cert import certify

            report.certificates[label] = certify(h, U, g, min_replay=opts.z3_min_replay)
        explicit_set = opts.failures is not None and label == sets[0][1]
        if explicit_set and run.want("recovery-line"):
            run.add("recovery-line", f"failures {label}", [])
            if d["unrecoverable_in_transit"]:
                report.notes.append(
                    f"recovery line for failures {label} {fmt_cut(d['line'])}: "
                    f"{len(d['unrecoverable_in_transit'])} in-transit message(s) nothing can replay "
                    f"({', '.join(d['unrecoverable_in_transit'][:5])}); the maximal loss-free line is "
                    f"{fmt_cut(d['loss_free_line'])}."
                )
    if "all" in report.recovery:
        report.stats["domino"] = report.recovery["all"]["domino"]


def never_restored(ix: TraceIndex) -> list[str]:
    """A note for each process whose last ``fail`` no ``restore`` (or ``retire``) follows:
    the trace ends with it down, so no recovery from that failure was observed or judged.

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["A", "B"], [])
    >>> _ = rec.checkpoint("A"); rec.fail("A"); rec.restore("A", 1); rec.fail("B")
    >>> never_restored(TraceIndex(rec.trace()))
    ['B fails at line 5 and the trace ends with it down: no recovery from that failure was observed or judged.']
    """
    last_fail = {e.proc: e.line for e in ix.of_type("fail")}
    back = {e.proc: e.line for e in ix.of_type("restore") + ix.of_type("retire")}
    return [
        f"{p} fails at line {line} and the trace ends with it down: no recovery from that failure was observed or judged."
        for p, line in sorted(last_fail.items(), key=lambda x: x[1])
        if back.get(p, 0) < line
    ]


def interrupted(trace: Trace, group: list) -> int | None:
    """The line of the ``protocol_error`` that ended the run in the middle of the recovery
    ``group`` (restore events): nothing but restores and failures between its last
    restore and that error, so its other restores never came. None otherwise.

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["A", "B"], [])
    >>> rec.fail("A"); rec.fail("B"); rec.restore("A", 0, recovery=1)
    >>> rec.protocol_error("A", "in on_restore of A: boom")
    >>> trace = rec.trace(); interrupted(trace, [e for e in trace.events if e.type == "restore"])  # line 1: the header
    5
    """
    last = max(e.line for e in group)
    for e in trace.events:
        if e.line > last:
            if e.type == "protocol_error":
                return e.line
            if e.type not in ("restore", "fail"):
                return None
    return None


def _observed(run: _Run) -> None:
    trace, h, report, opts = run.trace, run.h, run.report, run.opts
    exactly = run.want("exactly-once")
    broke = run.ix.has("protocol_error")
    for n, group in enumerate(run.recovery_groups(), 1):
        cut = interrupted(trace, group) if broke else None
        if cut is not None:
            report.notes.append(
                f"recovery {n} (restore at line(s) {', '.join(str(e.line) for e in group)}) was interrupted by the "
                f"protocol error at line {cut}: the run ended during it, so observed-recovery and exactly-once did "
                "not judge it."
            )
            continue
        rec = ObservedRecovery(trace, h, n, group, opts.semantics)
        report.observed.append(rec.summary())
        if run.want("observed-recovery"):
            run.add("observed-recovery", rec.subject, rec.violations())
            report.notes.extend(rec.notes())
        if exactly:
            run.add("exactly-once", rec.subject, delivery_violations(rec, h, trace, report.notes))
    if exactly:
        run.add("exactly-once", "effective history", duplicate_violations(h, run.want("observed-recovery")))
