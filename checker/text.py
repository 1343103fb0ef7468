"""Human-readable (Elle-style) rendering of a ``Report``."""

from __future__ import annotations

from snapcheck.checker.notation import fmt_checkpoint, fmt_cut


def render_text(report, verbose: bool = False) -> str:
    """The human-readable report of ``report`` (a ``Report``): the verdict, each failed
    property result with its violations explained in the style of Elle (Kingsbury and
    Alvaro, "Elle: Inferring Isolation Anomalies from Experimental Observations", 2020),
    the useless checkpoints, every recovery line with its rollback distance and the chain
    of why each process rolls back (for the restart-all line ``all`` only after a domino
    effect), z3 certificates, observed recoveries and notes. ``verbose`` adds the passed
    results, every chain and the checkpoints that may still become useless.

    >>> from snapcheck.checker import check_trace
    >>> from snapcheck.traces.golden import golden
    >>> report = check_trace(golden("theory_a_zcycle"))
    >>> report.trace = "theory_a_zcycle.jsonl"        # the report names the trace by its path
    >>> print(render_text(report))
    theory_a_zcycle.jsonl: protocol none: OK
    <BLANKLINE>
    Useless checkpoints (on a Z-cycle, so far): P0:1
    <BLANKLINE>
    Recovery line for failures all (restart-all): {P0: 2, P1: 1}
      rollback: 0 checkpoint(s), 0 event(s) undone, 0 message(s) to replay
    """
    out = [f"{report.trace}: protocol {report.protocol}: "
           + ("OK" if report.ok else f"VIOLATION ({', '.join(sorted(report.kinds))})")]
    failed = [r for r in report.results if not r.ok]
    for r in failed:
        out.append(f"\n[{r.property}] {r.subject}: {len(r.violations) + r.omitted} violation(s)")
        for v in r.violations:
            out.append(f"  - {v.kind} (lines {', '.join(map(str, v.lines))}):")
            out.extend("      " + line for line in v.message.splitlines())
        if r.omitted:
            out.append(f"  ... and {r.omitted} more")
    if verbose:
        passed = [r for r in report.results if r.ok]
        if passed:
            out.append("\nPassed: " + "; ".join(f"{r.property} ({r.subject})" for r in passed))
    if report.useless:
        out.append(f"\nUseless checkpoints (on a Z-cycle, so far): {', '.join(fmt_checkpoint(p, c) for p, c in report.useless)}")
    extra = report.may_become_useless
    if extra and verbose:
        out.append(f"Not usable with stable checkpoints only, and may become useless as the trace continues: "
                   f"{', '.join(fmt_checkpoint(p, c) for p, c in extra)}")
    for label, d in report.recovery.items():
        out.append(f"\nRecovery line for failures {label} ({d['semantics']}): {fmt_cut(d['line'])}"
                   f"{' — domino effect' if d['domino'] else ''}")
        dist = d["distance"]
        out.append(f"  rollback: {dist['checkpoints_rolled_back']} checkpoint(s), {dist['events_undone']} event(s) "
                   f"undone, {dist['messages_to_replay']} message(s) to replay")
        if verbose or label != "all" or d["domino"]:
            for p, steps in d["chain"].items():
                out.append(f"  why {p} rolls back:")
                out.extend(f"    {s}" for s in steps)
        cert = report.certificates.get(label)
        if cert:
            out.append(f"  z3: maximality {cert['maximality']} ({cert['seconds']:.3f} s, "
                       f"{cert['variables']} variable(s), {cert['constraints']} constraint(s))")
            if "min_replay" in cert:
                mr = cert["min_replay"]
                out.append(f"  z3: fewest messages to replay {mr['messages']} with line {fmt_cut(mr['line'])}")
    for o in report.observed:
        out.append(f"\nObserved {o['subject']}: restored {fmt_cut(o['restored_line'])}, maximal "
                   f"{fmt_cut(o['maximal_line'])}" + (" (extra rollback)" if o["extra_rollback"] else ""))
    if report.notes:
        out.append("\nNotes:")
        out.extend(f"  - {n}" for n in report.notes)
    return "\n".join(out)
