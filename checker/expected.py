"""Compare a report with a trace's ``metadata.expected`` (golden traces).

``metadata.expected`` (docs/trace-format.md, "Golden traces"):
``verdict`` ("clean" | "violation" | "not-judged": the report's verdict, so that a
trace expected clean in which nothing was judged does not pass), ``violations`` (exact set of distinct kinds),
``check`` (the CheckOptions to use: cut, failures, semantics), ``useless`` (exact
set of "proc:ckpt"), ``recovery_lines`` (label -> line), ``domino`` (bool, the
restart-all line "all").

Recovery lines and the domino flag for labels the report did not compute are
computed here with the checker's own recovery-line analysis.
"""

from __future__ import annotations

from snapcheck.checker.options import CheckOptions
from snapcheck.traces.model import Trace


def options_from_expected(trace: Trace, base: CheckOptions | None = None) -> CheckOptions:
    """``CheckOptions`` with the trace's ``metadata.expected.check`` applied (cut, failures,
    semantics, properties); fields ``base`` sets explicitly win.

    >>> from snapcheck.traces.golden import golden
    >>> options_from_expected(golden("theory_c_domino")).failures
    'all'
    >>> options_from_expected(golden("theory_d_dropped")).cut
    {'P0': 1, 'P1': 1}
    """
    chk = ((trace.header.expected or {}).get("check")) or {}
    opts = base or CheckOptions()
    if opts.cut is None and "cut" in chk:
        opts.cut = chk["cut"]
    if opts.failures is None and "failures" in chk:
        opts.failures = chk["failures"]
    if "semantics" in chk and opts.semantics == "partial":
        opts.semantics = chk["semantics"]
    if opts.properties is None and "properties" in chk:
        opts.properties = set(chk["properties"])
    return opts


def _norm_line(line: dict) -> dict:
    return {p: ("V" if isinstance(v, str) and v.upper() == "V" else int(v)) for p, v in line.items()}


def _expected_lines(exp: dict) -> dict:
    """``metadata.expected.recovery_lines``, checked: a failure set (process ids joined by
    commas, ``all`` or ``none``) -> a line (process -> checkpoint number or ``V``); any
    other shape is bad input (``UnreadableField``), not a crash.

    >>> _expected_lines({"recovery_lines": {"all": {"P0": "x"}}})
    Traceback (most recent call last):
    ...
    snapcheck.checker.free_fields.UnreadableField: line 1: metadata.expected.recovery_lines['all']['P0'] must be a checkpoint number or V, not 'x'
    """
    from snapcheck.checker.free_fields import UnreadableField

    lines = exp.get("recovery_lines") or {}
    where = "line 1: metadata.expected.recovery_lines"
    if not isinstance(lines, dict):
        raise UnreadableField(f"{where} must map failure sets to lines, not {lines!r}")
    for label, line in lines.items():
        if not label.strip(" ,"):
            raise UnreadableField(
                f"{where}: a failure set names processes (joined by commas), all or none, not {label!r}"
            )
        if not isinstance(line, dict):
            raise UnreadableField(
                f"{where}[{label!r}] must be a line (process -> checkpoint number or V), not {line!r}"
            )
        for p, v in line.items():
            if not ((type(v) is int and v >= 0) or (isinstance(v, str) and v.upper() == "V")):
                raise UnreadableField(f"{where}[{label!r}][{p!r}] must be a checkpoint number or V, not {v!r}")
    return lines


def compare_expected(trace: Trace, report) -> list[str]:
    """The mismatches between ``report`` and the trace's ``metadata.expected``, one sentence
    each (``[]``: the expectation holds). Recovery lines and the domino flag of failure
    sets the report did not compute are computed here. An expectation the checker cannot
    read (a failure set naming no process of the trace, a line that is not one) raises
    ``CheckerUsageError``: bad input.

    >>> from snapcheck.checker import check_trace
    >>> from snapcheck.traces.golden import golden
    >>> trace = golden("theory_c_domino")
    >>> compare_expected(trace, check_trace(trace, options_from_expected(trace)))
    []

    Checked without the cut its expectation names, CheckMate's Figure 2(b) judges nothing:

    >>> trace = golden("checkmate_fig2b_orphan")
    >>> [m.split(": ", 1)[1] for m in compare_expected(trace, check_trace(trace))]
    ['expected verdict violation, got not-judged', "expected violation kinds ['orphan'], got []; missing ['orphan']"]
    """
    exp = trace.header.expected
    if not exp:
        return []
    out = []
    name = trace.path
    verdict = exp.get("verdict")
    got_verdict = report.verdict
    if verdict is not None and verdict != got_verdict:
        out.append(
            f"{name}: expected verdict {verdict}, got {got_verdict}"
            + (f" ({', '.join(sorted(report.kinds))})" if report.kinds else "")
        )
    if "violations" in exp:
        want, got = set(exp["violations"]), report.kinds
        if want != got:
            missing, extra = sorted(want - got), sorted(got - want)
            out.append(
                f"{name}: expected violation kinds {sorted(want)}, got {sorted(got)}"
                + (f"; missing {missing}" if missing else "")
                + (f"; unexpected {extra}" if extra else "")
            )
    if "useless" in exp:
        want = set(exp["useless"])
        got = {f"{p}:{c}" for p, c in report.useless}
        if want != got:
            out.append(f"{name}: expected useless checkpoints {sorted(want)}, got {sorted(got)}")
    lines = _expected_lines(exp)
    if lines or "domino" in exp:
        semantics = ((exp.get("check") or {}).get("semantics")) or "partial"
        computed = _lines(trace, report, set(lines) | ({"all"} if "domino" in exp else set()), semantics)
        for label, want in lines.items():
            got = computed[label]["line"]
            if _norm_line(want) != _norm_line(got):
                out.append(f"{name}: recovery line for failures {label}: expected {_norm_line(want)}, got {got}")
        if "domino" in exp and bool(exp["domino"]) != computed["all"]["domino"]:
            out.append(f"{name}: expected domino {bool(exp['domino'])}, got {computed['all']['domino']}")
    return out


def _lines(trace: Trace, report, labels: set[str], semantics: str) -> dict:
    from snapcheck.checker.durability import Durability
    from snapcheck.checker.intervals import History
    from snapcheck.checker.recovery_report import analyse_failure_set, parse_failures

    out = {lb: report.recovery[lb] for lb in labels if lb in report.recovery}
    missing = [lb for lb in labels if lb not in out]
    if missing:
        h = History(trace)
        dur = Durability(h)
        for lb in missing:
            failed, label = parse_failures(h, "all" if lb == "all" else (lb if lb != "none" else None))
            d = analyse_failure_set(h, dur, failed, label, semantics)
            out[lb] = d
    return out
