"""Human-readable (Elle-style) rendering of a ``Report``.

The first line is the verdict: ``VIOLATION (kinds)``, ``OK`` or, when not one
property was judged, ``NOTHING JUDGED``, followed by how many properties were
judged and how many were not. Then the failed results with their violations
explained, the passed results, the useless checkpoints, the recovery lines with
their rollback distance and z3 certificates, the observed recoveries, the faults
that were requested and whether each happened, the properties that were not
judged grouped by reason (always shown, so that "not judged" never reads as
"clean"), and the notes.
"""

from __future__ import annotations

from snapcheck.checker.notation import fmt_checkpoint, fmt_cut
from snapcheck.checker.options import NOT_SELECTED, PRESENT_UNJUDGED, VOCABULARY


def _verdict(report, expected: list[str] | None) -> str:
    if not report.ok:
        head = f"VIOLATION ({', '.join(sorted(report.kinds))})"
    elif report.results:
        head = "OK"
    else:
        head = "NOTHING JUDGED (no property applied to this trace; see below)"
    n = len(report.judged)
    verdict = f"{head} — {n} propert{'y' if n == 1 else 'ies'} judged, {len(report.not_judged)} not judged"
    if expected is None:
        return verdict
    if expected:
        return f"MISMATCH with metadata.expected ({len(expected)}; see below) — the check says: {verdict}"
    return f"{verdict} — as metadata.expected says"


def not_judged_lines(report, verbose: bool = True) -> list[str]:
    """The lines of the "Not judged" section of ``report``: the properties without a
    result, grouped by reason, one line per reason in order of first appearance
    (not-selected ones in one line; unless ``verbose`` or properties were selected, also
    those of ``checker.options.VOCABULARY`` whose vocabulary the trace does not use: a
    property named with --property always gets its own reason).

    >>> from snapcheck.checker import CheckOptions, check_trace
    >>> from snapcheck.traces.golden import golden
    >>> report = check_trace(golden("theory_a_zcycle"), CheckOptions(properties=["termination", "z-cycles"]))
    >>> for line in not_judged_lines(report):
    ...     print(line)
      - not selected: consistency, channel-state, completion, ..., finished-tasks
      - termination: the trace has no snapshot rounds
    >>> print(not_judged_lines(check_trace(golden("theory_a_zcycle")), verbose=False)[0])
      - protocol-error, log-retention, ..., finished-tasks: the trace has none of what they judge (...)
    >>> print(not_judged_lines(check_trace(golden("theory_a_zcycle"), CheckOptions(properties=["rescale-state"])))[1])
      - rescale-state: the trace has no restore at another parallelism (no restore names its sources)
    """
    by_reason: dict[str, list[str]] = {}
    unused = []
    group = not verbose and NOT_SELECTED not in report.not_judged.values()
    for prop, reason in report.not_judged.items():
        if group and prop in VOCABULARY and reason not in PRESENT_UNJUDGED:  # (not a trace without them)
            unused.append(prop)
        else:
            by_reason.setdefault(reason, []).append(prop)
    out = []
    if unused:
        what = ", ".join(dict.fromkeys(VOCABULARY[p] for p in unused))
        out.append(f"  - {', '.join(unused)}: the trace has none of what they judge ({what}; -v gives each reason)")
    for reason, props in by_reason.items():
        if reason == NOT_SELECTED:
            out.append(f"  - not selected: {', '.join(props)}")
        else:
            out.append(f"  - {', '.join(props)}: {reason}")
    return out


def render_text(report, verbose: bool = False, expected: list[str] | None = None) -> str:
    r"""The human-readable report of ``report`` (a ``Report``): the verdict (with
    ``expected``, the mismatches with the trace's ``metadata.expected``: first whether
    they hold, the mismatches last), each failed
    property result with its violations explained in the style of Elle (Kingsbury and
    Alvaro, "Elle: Inferring Isolation Anomalies from Experimental Observations", 2020),
    the useless checkpoints, every recovery line with its rollback distance and the chain
    of why each process rolls back (for the restart-all line ``all`` only after a domino
    effect), z3 certificates, observed recoveries, the requested faults, what was not
    judged (``not_judged_lines``) and notes. ``verbose`` lists each passed result
    (otherwise they are counted per property), every chain, the checkpoints that may
    still become useless and the reason of each property not judged.

    >>> from snapcheck.checker import check_trace
    >>> from snapcheck.traces.golden import golden
    >>> report = check_trace(golden("theory_a_zcycle"))
    >>> report.trace = "theory_a_zcycle.jsonl"        # the report names the trace by its path
    >>> print("\n".join(render_text(report).splitlines()[:6]))   # then what was not judged, and why
    theory_a_zcycle.jsonl: protocol none: NOTHING JUDGED (no property applied to this trace; see below) — 0 properties judged, 31 not judged
    <BLANKLINE>
    Useless checkpoints (on a Z-cycle, so far): P0:1
    <BLANKLINE>
    Recovery line for failures all (restart-all): {P0: 2, P1: 1}
      rollback: 0 checkpoint(s), 0 event(s) undone, 0 message(s) to replay

    Checked against an expected verdict it does not meet, the report says so first:

    >>> print(render_text(report, expected=["expected verdict violation, got not-judged"]).splitlines()[0])
    theory_a_zcycle.jsonl: protocol none: MISMATCH with metadata.expected (1; see below) — the check says: NOTHING JUDGED ...
    """
    out = [f"{report.named}: protocol {report.protocol}: {_verdict(report, expected)}"]
    failed = [r for r in report.results if not r.ok]
    for r in failed:
        out.append(f"\n[{r.property}] {r.subject}: {len(r.violations) + r.omitted} violation(s)")
        for v in r.violations:
            out.append(f"  - {v.kind} (lines {', '.join(map(str, v.lines))}):")
            out.extend("      " + line for line in v.message.splitlines())
        if r.omitted:
            out.append(f"  ... and {r.omitted} more")
    passed = [r for r in report.results if r.ok]
    if passed:
        subjects: dict[str, list[str]] = {}
        for r in passed:
            subjects.setdefault(r.property, []).append(r.subject)
        if verbose:
            out.append("\nPassed: " + "; ".join(f"{r.property} ({r.subject})" for r in passed))
        else:
            out.append(
                "\nPassed: "
                + "; ".join(
                    f"{p} ({len(s)} subject{'s' if len(s) > 1 else ''})" if len(s) > 1 else f"{p} ({s[0]})"
                    for p, s in subjects.items()
                )
            )
    if report.useless:
        out.append(
            f"\nUseless checkpoints (on a Z-cycle, so far): {', '.join(fmt_checkpoint(p, c) for p, c in report.useless)}"
        )
    extra = report.may_become_useless
    if extra and verbose:
        out.append(
            f"Not usable with stable checkpoints only, and may become useless as the trace continues: "
            f"{', '.join(fmt_checkpoint(p, c) for p, c in extra)}"
        )
    for label, d in report.recovery.items():
        out.append(
            f"\nRecovery line for failures {label} ({d['semantics']}): {fmt_cut(d['line'])}"
            f"{' — domino effect' if d['domino'] else ''}"
        )
        dist = d["distance"]
        out.append(
            f"  rollback: {dist['checkpoints_rolled_back']} checkpoint(s), {dist['events_undone']} event(s) "
            f"undone, {dist['messages_to_replay']} message(s) to replay"
        )
        if verbose or label != "all" or d["domino"]:
            for p, steps in d["chain"].items():
                out.append(f"  why {p} rolls back:")
                out.extend(f"    {s}" for s in steps)
        cert = report.certificates.get(label)
        if cert:
            out.append(
                f"  z3: maximality {cert['maximality']} ({cert['seconds']:.3f} s, "
                f"{cert['variables']} variable(s), {cert['constraints']} constraint(s))"
            )
            if "min_replay" in cert:
                mr = cert["min_replay"]
                out.append(f"  z3: fewest messages to replay {mr['messages']} with line {fmt_cut(mr['line'])}")
    for o in report.observed:
        out.append(
            f"\nObserved {o['subject']}: restored {fmt_cut(o['restored_line'])}, maximal "
            f"{fmt_cut(o['maximal_line'])}" + (" (extra rollback)" if o["extra_rollback"] else "")
        )
    if report.faults:
        missed = report.faults_not_exercised
        out.append(
            f"\nRequested faults: {len(report.faults)}, exercised {len(report.faults) - len(missed)}"
            + (
                f", NOT EXERCISED {len(missed)} (the recovery they were meant to test did not happen: no verdict on it)"
                if missed
                else ""
            )
        )
        for f in report.faults:
            out.append(f"  - {f['fault']}: {'exercised' if f['exercised'] else 'NOT EXERCISED'} ({f['detail']})")
    if report.not_judged:
        out.append("\nNot judged (no verdict on these properties):")
        out.extend(not_judged_lines(report, verbose))
    if report.notes:
        out.append("\nNotes:")
        out.extend(f"  - {n}" for n in report.notes)
    if expected is not None:
        out.append("expected verdict: " + ("MISMATCH\n  " + "\n  ".join(expected) if expected else "holds"))
    return "\n".join(out)
