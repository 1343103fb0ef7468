"""The checker's verdict mapped onto a trace: where each violation becomes visible,
and which messages, checkpoints and cuts to highlight.

A violation names the trace lines involved (``Violation.lines``: its witness
events and every line its explanation cites) and a machine-readable witness
(``Violation.witness``: ``messages``, ``checkpoints``, ``cut``; see
docs/checker.md). Its *position* is the replay position at which all those
lines have been applied: the first point at which the violation exists in the
trace prefix (before it, one of the events it is made of has not happened).
A violation of a trace prefix is one of every longer prefix (the events that
make it stay in the history), so it stays visible from its position to the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from snapcheck.debug.replay import position_of_line
from snapcheck.traces.errors import UsageError
from snapcheck.traces.model import Trace

# How the diagram and the report colour the kinds (the violation kinds of docs/checker.md, "Properties").
KIND_STYLE = {
    "orphan": "orphan",
    "inconsistent-restore": "orphan",
    "dropped": "dropped",
    "lost": "dropped",
    "aligned-in-flight": "dropped",
    "phantom": "phantom",
    "duplicate-recorded": "phantom",
    "duplicate-processing": "phantom",
    "order": "phantom",
    "wrong-channel": "phantom",
    "useless-checkpoint": "zcycle",
    "rdt": "zcycle",
    "incomplete-round": "dropped",
}


def kind_style(kind: str) -> str:
    """How a violation of ``kind`` is drawn: ``KIND_STYLE``, else by what its name says —
    something gone (``-lost``, ``-dropped``, ``missing``) as dropped, something twice
    (``duplicate``, ``doubled``) as phantom, anything else ``other``: never a kind the
    table does not know drawn as an orphan.

    >>> kind_style("orphan"), kind_style("in-flight-lost"), kind_style("split-duplicate"), kind_style("premature-commit")
    ('orphan', 'dropped', 'phantom', 'other')
    """
    if kind in KIND_STYLE:
        return KIND_STYLE[kind]
    if kind.endswith(("lost", "dropped")) or "missing" in kind:
        return "dropped"
    if "duplicate" in kind or "doubled" in kind:
        return "phantom"
    return "other"


@dataclass
class Finding:
    """One violation, located in the trace."""

    number: int  # 1-based, in report order
    kind: str
    property: str
    subject: str
    message: str
    lines: list[int]
    position: int  # replay position where the whole witness is applied
    messages: list[str] = field(default_factory=list)
    checkpoints: list[tuple[str, int]] = field(default_factory=list)
    cut: dict | None = None

    @property
    def style(self) -> str:
        return kind_style(self.kind)

    def title(self) -> str:
        return f"#{self.number} {self.kind} ({self.property}, {self.subject})"


@dataclass
class Findings:
    """Everything the debugging views need from a checker report."""

    items: list[Finding] = field(default_factory=list)
    useless: set[tuple[str, int]] = field(default_factory=set)
    recovery_lines: dict[str, dict] = field(default_factory=dict)
    recovery_bounds: dict[str, dict] = field(default_factory=dict)  # label -> where rollback started
    notes: list[str] = field(default_factory=list)
    ok: bool = True
    verdict: str = "clean"  # the report's: clean, violation, or not-judged (nothing judged is not clean)
    checked: bool = True  # False: the checker did not run (--no-check), so no violation is known either way

    def at(self, position: int) -> list[Finding]:
        """The violations that appear at ``position`` (their last event is the one just applied)."""
        return [f for f in self.items if f.position == position]

    def visible(self, position: int) -> list[Finding]:
        """The violations that exist at ``position``: they appeared there or earlier."""
        return [f for f in self.items if f.position <= position]

    def positions(self) -> list[int]:
        return sorted({f.position for f in self.items})

    def first(self) -> Finding:
        """The violation that becomes visible first (of those at one position, the first in
        the report's order); ``items`` must not be empty.

        >>> late = Finding(1, "orphan", "consistency", "round 1", "...", [9], position=9)
        >>> early = Finding(2, "dropped", "channel-state", "round 1", "...", [4], position=4)
        >>> Findings(items=[late, early]).first().number
        2
        """
        return min(self.items, key=lambda f: (f.position, f.number))


def findings_from_report(trace: Trace, report) -> Findings:
    """Locate every violation of ``report`` (a ``checker.Report``) in ``trace``."""
    items = []
    for n, v in enumerate(report.violations, 1):
        w = v.witness or {}
        lines = sorted(int(x) for x in (v.lines or ()))
        pos = position_of_line(trace.events, lines[-1]) if lines else len(trace.events)
        items.append(
            Finding(
                number=n,
                kind=v.kind,
                property=v.property,
                subject=str(v.subject),
                message=v.message,
                lines=lines,
                position=pos,
                messages=[str(m) for m in w.get("messages") or ()],
                checkpoints=[(str(p), int(c)) for p, c in w.get("checkpoints") or ()],
                cut=dict(w["cut"]) if w.get("cut") else None,
            )
        )
    return Findings(
        items=items,
        useless={(str(p), int(c)) for p, c in (report.useless or ())},
        recovery_lines={str(k): dict(v) for k, v in (report.recovery_lines or {}).items()},
        recovery_bounds={
            str(k): dict(v["bound"])
            for k, v in (getattr(report, "recovery", None) or {}).items()
            if isinstance(v, dict) and v.get("bound")
        },
        notes=list(report.notes or ()),
        ok=bool(report.ok),
        verdict=getattr(report, "verdict", "clean" if report.ok else "violation"),
    )


def options_dict(trace: Trace, failures=None, semantics: str | None = None, cut: dict | None = None) -> dict:
    """Checker options (``cut``, ``failures``, ``semantics``) as a dict, chosen as
    ``snapcheck check`` chooses them: the explicit ones when any is given, else the
    trace's ``metadata.expected.check`` (``checker.expected.options_from_expected``); and
    ``facts``, what the protocol catalogue knows of the trace's protocol."""
    from snapcheck.checker import CheckOptions
    from snapcheck.checker.expected import options_from_expected
    from snapcheck.reference.catalogue import header_facts

    opts = CheckOptions(
        cut=cut, failures=failures, semantics=semantics or "partial", facts=header_facts(trace.header.protocol)
    )
    if cut is None and failures is None and semantics is None:
        opts = options_from_expected(trace, opts)
    return {
        k: v
        for k, v in (
            ("cut", opts.cut),
            ("failures", opts.failures),
            ("semantics", opts.semantics),
            ("facts", opts.facts),
        )
        if v is not None
    }


def check_options(trace: Trace, properties: set[str] | None = None, **given):
    """``checker.CheckOptions`` for ``trace`` (see ``options_dict``)."""
    from snapcheck.checker import CheckOptions

    return CheckOptions(properties=properties, **options_dict(trace, **given))


def run_checker(trace: Trace, options=None):
    """``checker.check_trace`` on ``trace`` (options default to ``check_options``).
    Options that do not fit the trace are a usage error (exit 2)."""
    from snapcheck.checker import CheckerUsageError, check_trace

    try:
        return check_trace(trace, options if options is not None else check_options(trace))
    except CheckerUsageError as exc:
        raise UsageError(f"{trace.path}: {exc}") from None


def check_findings(trace: Trace, options=None) -> tuple[object, Findings]:
    """Run the checker and locate its violations: ``(report, findings)``."""
    report = run_checker(trace, options)
    return report, findings_from_report(trace, report)
