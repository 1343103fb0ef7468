"""The checker's result objects: ``Violation``, ``PropertyResult``, ``Report``.

``Report.to_json()`` is one entry of the ``reports`` of the document that the JSON
Schema shipped as ``checker/schema/check-report.schema.json`` describes (its
``report`` definition; docs/checker.md, "JSON report"); ``UnreadTrace.to_json()``
is the entry of a trace that could not be read (its ``unread`` definition).
``Report.render_text()`` is the Elle-style human report. A report says what was
judged and what was not: every property has either results or a reason in
``not_judged``, and ``verdict`` is ``"violation"``, ``"clean"`` or, when not one
property was judged, ``"not-judged"`` (never "clean").

A violation's ``lines`` hold every trace line its explanation cites: the lines
named in the message (``line 7``, ``lines 5, 8``) are added to the witness's
lines, so a viewer that shows the witness shows what the explanation talks about.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from snapcheck.traces.errors import EXIT_BAD_INPUT, EXIT_CLEAN, EXIT_NOT_JUDGED, EXIT_VIOLATION

# 4: a recovery lists 100 in-transit messages and counts them all; 3: exit code 4, ok = verdict clean
JSON_SCHEMA_VERSION = 4
# A report's verdict and its exit code; over many traces a command exits with the worst,
# first in WORST_FIRST: a trace not read, then a violation, then a trace with no verdict.
VERDICT_EXIT = {"clean": EXIT_CLEAN, "violation": EXIT_VIOLATION, "not-judged": EXIT_NOT_JUDGED}
WORST_FIRST = (EXIT_BAD_INPUT, EXIT_VIOLATION, EXIT_NOT_JUDGED, EXIT_CLEAN)


def worst_exit(codes) -> int:
    """The exit code of a command over many traces: the worst of theirs (``WORST_FIRST``), 0 for none.

    >>> worst_exit([0, 4, 1]), worst_exit([4, 0]), worst_exit([1, 2]), worst_exit([])
    (1, 4, 2, 0)
    """
    return min(codes, key=WORST_FIRST.index, default=EXIT_CLEAN)


_CITED = re.compile(r"\blines? (\d+(?:(?:, | and )\d+)*)")


def json_schema(name: str = "check-report") -> dict:
    """A JSON Schema shipped with the package: ``check-report`` (``snapcheck check --json``)
    or ``validate-summary`` (the ``summary.json`` of ``snapcheck validate``).

    >>> json_schema()["properties"]["schema"]
    {'const': 'snapcheck-check'}
    """
    import json
    from importlib import resources

    text = resources.files("snapcheck.checker").joinpath(f"schema/{name}.schema.json").read_text()
    return json.loads(text)


def cited_lines(message: str) -> set[int]:
    """The trace lines a message cites.

    >>> sorted(cited_lines("sent at line 6, after checkpoint O2:1 (line 5); lines 7, 8 and 9"))
    [5, 6, 7, 8, 9]
    """
    return {int(n) for m in _CITED.finditer(message) for n in re.findall(r"\d+", m.group(1))}


# Canonical violation kinds (checker API contract) and the property each belongs to.
KIND_PROPERTY = {
    "orphan": "consistency",
    "dropped": "channel-state",
    "phantom": "channel-state",
    "order": "channel-state",
    "duplicate-recorded": "channel-state",
    "wrong-channel": "channel-state",
    "aligned-in-flight": "channel-state",
    "incomplete-round": "termination",
    "premature-completion": "completion",
    "contradictory-outcome": "completion",
    "completion-before-channel-state": "completion",
    "protocol-error": "protocol-error",
    "useless-checkpoint": "z-cycles",
    "inconsistent-restore": "observed-recovery",
    "lost": "exactly-once",
    "duplicate-processing": "exactly-once",
    "rdt": "rdt",
    "missing-forced-checkpoint": "cic-conformance",
    "piggyback-mismatch": "cic-conformance",
    "vars-mismatch": "cic-conformance",
    "spurious-forced-checkpoint": "cic-efficiency",
    "timestamp-order": "timestamps",
    "premature-truncation": "log-retention",
    "premature-commit": "output-commit",
    "duplicate-commit": "output-commit",
    "rolled-back-commit": "output-commit",
    "uncommitted": "output-commit",
    "eos-before-commit": "output-commit",
    "control-dropped": "control-delivery",
    "restore-aborted": "recovery-lineage",
    "restore-stale": "recovery-lineage",
    "restore-mixed": "recovery-lineage",
    "changelog-gap": "changelog-restore",
    "changelog-overlap": "changelog-restore",
    "changelog-mismatch": "changelog-restore",
    "artifact-unknown": "changelog-restore",
    "artifact-deleted-referenced": "artifact-retention",
    "restore-missing-artifact": "artifact-retention",
    "replica-order-divergence": "replica-agreement",
    "replica-output-divergence": "replica-agreement",
    "dedup-lost": "replica-delivery",
    "dedup-duplicate": "replica-delivery",
    "replica-stalled": "replica-liveness",
    "restore-unnamed": "regional-restore",
    "restored-state": "regional-restore",
    "fallback-unresolved": "regional-cut",
    "stale-fallback": "regional-cut",
    "dependent-regions": "regional-cut",
    "fallback-commit": "regional-commit",
    "split-dropped": "split-assignment",
    "split-doubled": "split-assignment",
    "split-duplicate": "split-assignment",
    "split-lost": "split-assignment",
    "agreement-broken": "agreement",
    "unbounded-drift": "regional-drift",
    "key-group-lost": "rescale-state",
    "key-group-duplicated": "rescale-state",
    "key-group-wrong-owner": "rescale-state",
    "key-group-mismatch": "rescale-state",
    "key-group-changed": "rescale-state",
    "max-parallelism-changed": "rescale-state",
    "state-wrong-round": "rescale-state",
    "partition-lost": "rescale-state",
    "partition-duplicated": "rescale-state",
    "partition-wrong-owner": "rescale-state",
    "in-flight-lost": "rescale-in-flight",
    "in-flight-duplicated": "rescale-in-flight",
    "in-flight-misrouted": "rescale-in-flight",
    "in-flight-after-live": "rescale-in-flight",
    "input-lost": "rescale-in-flight",
    "live-misrouted": "rescale-in-flight",
    "send-after-finish": "finished-tasks",
    "retired-before-final-checkpoint": "finished-tasks",
    "final-checkpoint-unnotified": "finished-tasks",
    "final-checkpoint-missing": "finished-tasks",
}


def expectation_problems(expect, prop) -> list[str]:
    """What is wrong with a mutant's declared expectation — the violation kinds it should
    be caught by (``expect``) and their property (``prop``) — against the checker's
    vocabulary (``KIND_PROPERTY``): empty when nothing is. A misspelt kind would never
    match a finding, and the mutant would look as if no run caught it by its kind.

    >>> expectation_problems(("orphan",), "consistency")
    []
    >>> for p in expectation_problems(("orphans", "lost"), "exactly once"): print(p)
    expect: 'orphans' is not a violation kind the checker reports (did you mean 'orphan'?); docs/checker.md lists them all
    prop = 'exactly once': not a property of the checker (did you mean 'exactly-once'?)
    """
    if isinstance(expect, str) or not isinstance(expect, (tuple, list)):
        return [f"expect = {expect!r}: expected a tuple of violation kinds, e.g. ('orphan',)"]
    properties = list(dict.fromkeys(KIND_PROPERTY.values()))

    def hint(word, known) -> str:
        close = difflib.get_close_matches(str(word), known, n=1)
        return f"did you mean {close[0]!r}?" if close else f"e.g. {', '.join(known[:3])}"

    out = [
        f"expect: {k!r} is not a violation kind the checker reports ({hint(k, list(KIND_PROPERTY))}); "
        "docs/checker.md lists them all"
        for k in expect
        if k not in KIND_PROPERTY
    ]
    if prop and prop not in properties:
        out.append(f"prop = {prop!r}: not a property of the checker ({hint(prop, properties)})")
    return out


@dataclass
class UnreadTrace:
    """A trace that was not checked because it could not be read or is not valid (the
    ``check`` command exits 2 for it): ``errors`` are ``FILE:LINE: reason`` texts (the
    first ones; ``total`` counts all). It stands where a ``Report`` would, with
    ``ok`` and ``clean`` False and ``verdict`` ``"error"``.

    >>> unread = UnreadTrace("run.jsonl", ["run.jsonl:3: unknown channel 'x'"], total=4)
    >>> unread.ok, unread.verdict, unread.to_json()["error"]
    (False, 'error', {'messages': ["run.jsonl:3: unknown channel 'x'"], 'total': 4})
    >>> print(unread.render_text())
    run.jsonl: NOT CHECKED (bad input: exit 2)
      run.jsonl:3: unknown channel 'x'
      ... and 3 more error(s)
    """

    trace: str
    errors: list[str]
    total: int = 0

    ok = False
    clean = False
    verdict = "error"

    def to_json(self) -> dict:
        """The entry of the JSON report for this trace (the schema's ``unread``)."""
        return {
            "schema": "snapcheck-check-report",
            "version": JSON_SCHEMA_VERSION,
            "trace": self.trace,
            "ok": False,
            "verdict": "error",
            "error": {"messages": list(self.errors), "total": max(self.total, len(self.errors))},
        }

    def render_text(self, verbose: bool = False) -> str:
        """The human-readable entry: the trace, ``NOT CHECKED``, its errors (``verbose``
        changes nothing: there is nothing more to say)."""
        more = self.total - len(self.errors)
        return "\n".join(
            [f"{self.trace}: NOT CHECKED (bad input: exit 2)"]
            + [f"  {e}" for e in self.errors]
            + ([f"  ... and {more} more error(s)"] if more > 0 else [])
        )


@dataclass
class Violation:
    """One violation of a property: its ``kind`` (``KIND_PROPERTY`` maps each kind to its
    property), the ``property``, the ``subject`` judged (a round, a cut, a recovery, a
    checkpoint, the trace), a ``message`` that explains it in the style of Elle ("Let …
    Then … : a contradiction"), the trace ``lines`` involved and a machine-readable
    ``witness`` (messages, cut, checkpoints).

    CheckMate's Figure 2(b), the cut ``{O1: 1, O2: 1, O3: 1}`` with an orphan:

    >>> from snapcheck.checker import CheckOptions, check_trace
    >>> from snapcheck.traces.golden import golden
    >>> report = check_trace(golden("checkmate_fig2b_orphan"), CheckOptions(cut={"O1": 1, "O2": 1, "O3": 1}))
    >>> v = report.violations[0]
    >>> v.kind, v.property, v.subject, v.lines, v.witness["messages"]
    ('orphan', 'consistency', 'cut {O1: 1, O2: 1, O3: 1}', [5, 6, 7, 8], ['O2>O3:1'])
    """

    kind: str
    property: str
    subject: str
    message: str
    lines: list[int] = field(default_factory=list)
    witness: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Sort the lines and add those the message cites (``cited_lines``)."""
        self.lines = sorted({ln for ln in self.lines if ln} | cited_lines(self.message))

    def to_json(self) -> dict:
        """The violation as a JSON object (the schema's ``violation``)."""
        return {
            "kind": self.kind,
            "property": self.property,
            "subject": self.subject,
            "message": self.message,
            "lines": list(self.lines),
            "witness": self.witness,
        }


@dataclass
class PropertyResult:
    """One property checked on one subject (a round, a cut, a recovery, the trace): ``ok``,
    the violations listed and the number ``omitted`` beyond the cap per result.

    >>> from snapcheck.checker import CheckOptions, check_trace
    >>> from snapcheck.traces.golden import golden
    >>> report = check_trace(golden("theory_d_dropped"), CheckOptions(cut={"P0": 1, "P1": 1}))
    >>> [(r.property, r.subject, r.ok, [v.kind for v in r.violations]) for r in report.results]
    [('consistency', 'cut {P0: 1, P1: 1}', True, []), ('channel-state', 'cut {P0: 1, P1: 1}', False, ['dropped'])]
    """

    property: str
    subject: str
    ok: bool
    violations: list[Violation] = field(default_factory=list)
    omitted: int = 0  # further violations of this result not listed (cap per result)
    omitted_kinds: frozenset[str] = frozenset()  # the kinds among them (a capped kind is still reported)

    def to_json(self) -> dict:
        """The result as a JSON object (the schema's ``result``)."""
        return {
            "property": self.property,
            "subject": self.subject,
            "ok": self.ok,
            "violations": [v.to_json() for v in self.violations],
            "omitted": self.omitted,
        }


@dataclass
class Report:
    """Everything ``check_trace`` found in one trace: the property ``results`` (``ok`` when
    every result is), the ``useless`` and ``stably_unusable`` checkpoints (as
    ``(process, checkpoint number)``), the ``recovery_lines`` and their details
    (``recovery``), z3 ``certificates``, the coordinated ``rounds``, the ``observed``
    recoveries, ``notes`` (e.g. messages not judged because their channel state is not
    shown), ``stats``, ``not_judged`` (each property without a result and why) and the
    requested ``faults`` with whether each happened (``checker.coverage``). ``verdict``
    is ``"not-judged"`` when there is no result at all (``ok`` is then True: nothing was
    violated; ``clean`` is False, and in the JSON report ``ok`` is ``clean``). ``to_json()`` is the documented
    JSON report (docs/checker.md, "JSON report"), ``render_text()`` the human one.

    Worked example A of docs/theory.md: no property is violated (the trace promises no
    Z-cycle freedom), and ``C_{0,1}`` is useless.

    >>> from snapcheck.checker import check_trace
    >>> from snapcheck.traces.golden import golden
    >>> report = check_trace(golden("theory_a_zcycle"))
    >>> report.ok, report.useless, report.recovery_lines["all"]
    (True, [('P0', 1)], {'P0': 2, 'P1': 1})
    >>> report.verdict, report.judged
    ('not-judged', [])
    """

    trace: str = "<memory>"
    trace_id: str | None = None  # the trace chosen in a multi-trace Parquet file (``check --trace-id``)
    protocol: str = "unknown"
    results: list[PropertyResult] = field(default_factory=list)
    useless: list[tuple[str, int]] = field(default_factory=list)
    stably_unusable: list[tuple[str, int]] = field(default_factory=list)
    recovery_lines: dict[str, dict] = field(default_factory=dict)
    recovery: dict[str, dict] = field(default_factory=dict)  # label -> details (chain, distance, ...)
    certificates: dict[str, dict] = field(default_factory=dict)  # label -> z3 results
    rounds: dict[str, dict] = field(default_factory=dict)  # round -> status
    observed: list[dict] = field(default_factory=list)  # observed recoveries
    notes: list[str] = field(default_factory=list)
    stats: dict = field(default_factory=dict)
    not_judged: dict[str, str] = field(default_factory=dict)  # property -> why it has no result
    faults: list[dict] = field(default_factory=list)  # requested faults (checker.coverage)

    @property
    def judged(self) -> list[str]:
        """The properties with at least one result, in first-result order."""
        return list(dict.fromkeys(r.property for r in self.results))

    @property
    def verdict(self) -> str:
        """``violation``, ``clean``, or ``not-judged`` when no property was judged at all."""
        if not self.ok:
            return "violation"
        return "clean" if self.results else "not-judged"

    def not_judged_json(self) -> list[dict]:
        """The properties not judged and why, as the JSON report lists them (``{property, reason}``)."""
        return [{"property": p, "reason": r} for p, r in self.not_judged.items()]

    @property
    def faults_not_exercised(self) -> list[dict]:
        """The requested faults that did not happen (``checker.coverage``)."""
        return [f for f in self.faults if not f["exercised"]]

    @property
    def may_become_useless(self) -> list[tuple[str, int]]:
        """Checkpoints not (yet) useless that a continuation of the trace can make useless:
        exactly the stably unusable ones that are not useless (some V_j reaches them)."""
        useless = set(self.useless)
        return [c for c in self.stably_unusable if c not in useless]

    @property
    def violations(self) -> list[Violation]:
        """Every listed violation, in result order (omitted ones are only counted)."""
        return [v for r in self.results for v in r.violations]

    @property
    def ok(self) -> bool:
        """Whether every result is ``ok`` (True for a report without results: see ``verdict``;
        a test asserts ``clean``)."""
        return all(r.ok for r in self.results)

    @property
    def clean(self) -> bool:
        """Whether the verdict is ``clean``: something was judged and nothing violated (what
        ``snapcheck check`` exits 0 for and the JSON report calls ``ok``). The assertion of a
        test: ``assert check_trace(trace).clean`` fails also for a trace with nothing judged.

        >>> from snapcheck.checker import check_trace
        >>> from snapcheck.traces.golden import golden
        >>> nothing = check_trace(golden("theory_a_zcycle"))
        >>> nothing.ok, nothing.clean, nothing.verdict
        (True, False, 'not-judged')
        """
        return self.verdict == "clean"

    @property
    def kinds(self) -> set[str]:
        """The kinds of the violations found: listed, or beyond the cap per result."""
        return {v.kind for v in self.violations}.union(*(r.omitted_kinds for r in self.results))

    def add(
        self,
        prop: str,
        subject: str,
        violations: list[Violation],
        cap: int | None = None,
        omitted: int = 0,
        omitted_kinds: frozenset[str] = frozenset(),
    ) -> PropertyResult:
        """Record one property result; violations beyond ``cap`` (and ``omitted`` ones
        found but not given a witness, of ``omitted_kinds``) are counted, not listed."""
        beyond: frozenset[str] = omitted_kinds - {v.kind for v in violations[:cap]}
        if cap is not None and len(violations) > cap:
            omitted += len(violations) - cap
            beyond |= frozenset(v.kind for v in violations[cap:]) - {v.kind for v in violations[:cap]}
            violations = violations[:cap]
        r = PropertyResult(prop, subject, not violations and not omitted, violations, omitted, beyond)
        self.results.append(r)
        return r

    @property
    def named(self) -> str:
        """The trace as reports name it: its file, and the trace chosen in it (``trace_id``).

        >>> Report("runs.parquet", trace_id="run-7").named
        'runs.parquet (trace run-7)'
        """
        return self.trace if self.trace_id is None else f"{self.trace} (trace {self.trace_id})"

    def to_json(self) -> dict:
        """The documented JSON report of this trace (the schema's ``report``)."""
        return {
            "schema": "snapcheck-check-report",
            "version": JSON_SCHEMA_VERSION,
            "trace": self.trace,
            **({"trace_id": self.trace_id} if self.trace_id is not None else {}),
            "protocol": self.protocol,
            "ok": self.clean,  # a trace with nothing judged is not OK (exit 4)
            "verdict": self.verdict,
            "judged": self.judged,
            "not_judged": self.not_judged_json(),
            "faults": list(self.faults),
            "violation_kinds": sorted(self.kinds),
            "violations": [v.to_json() for v in self.violations],
            "results": [r.to_json() for r in self.results],
            "useless": [f"{p}:{c}" for p, c in self.useless],
            "stably_unusable": [f"{p}:{c}" for p, c in self.stably_unusable],
            "may_become_useless": [f"{p}:{c}" for p, c in self.may_become_useless],
            "recovery_lines": self.recovery_lines,
            "recovery": self.recovery,
            "certificates": self.certificates,
            "rounds": self.rounds,
            "observed_recoveries": self.observed,
            "notes": list(self.notes),
            "stats": self.stats,
        }

    def render_text(self, verbose: bool = False, expected: list[str] | None = None) -> str:
        """The human-readable report (``checker.text.render_text``); ``expected``: the
        mismatches with the trace's ``metadata.expected``, when compared."""
        from snapcheck.checker.text import render_text

        return render_text(self, verbose, expected)
