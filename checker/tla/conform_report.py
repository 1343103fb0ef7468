"""The verdicts of ``snapcheck conform`` for CI: one JSON document (``--json``; schema
``checker/schema/conform-report.schema.json``) and JUnit XML (``--junit FILE``).

Nothing without a verdict reads as passed. In JSON every ERROR carries ``error``, why
it has none (``conform.ERRORS``). In JUnit a trace is one test case: ACCEPT passes,
REJECT is a *failure* naming the first event no behaviour matches (``FILE:LINE``),
a trace outside the specifications is *skipped* with what the specification does not
model, and an invalid trace, a TLC failure or time-out and a specification that broke
its own invariant are *errors*. Events no specification models are listed with every
verdict (``not_mapped``): what an ACCEPT does not vouch for.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from snapcheck.checker.junit import printable_xml
from snapcheck.checker.tla.conform import ACCEPT, ERROR, REJECT, Verdict
from snapcheck.traces.errors import EXIT_BAD_INPUT, EXIT_CLEAN, EXIT_VIOLATION

SCHEMA, VERSION = "snapcheck-conform", 1


def exit_code(verdicts: list[Verdict]) -> int:
    """The command's exit code: 2 if any trace is an ERROR, else 1 if any is a REJECT, else 0.

    >>> exit_code([Verdict("a", ACCEPT), Verdict("b", REJECT)]), exit_code([Verdict("a", ERROR), Verdict("b", REJECT)])
    (1, 2)
    """
    if any(v.verdict == ERROR for v in verdicts):
        return EXIT_BAD_INPUT
    return EXIT_VIOLATION if any(v.verdict == REJECT for v in verdicts) else EXIT_CLEAN


def counts(verdicts: list[Verdict]) -> dict[str, int]:
    """How many traces got each verdict.

    >>> counts([Verdict("a", ACCEPT), Verdict("b", ACCEPT), Verdict("c", ERROR)])
    {'accept': 2, 'reject': 0, 'error': 1}
    """
    return {k.lower(): sum(v.verdict == k for v in verdicts) for k in (ACCEPT, REJECT, ERROR)}


def to_json(verdicts: list[Verdict]) -> dict:
    """The JSON document of ``snapcheck conform --json``: a verdict per trace, in order.

    >>> doc = to_json([Verdict("t.jsonl", REJECT, "abs-aligned", matched=3, total=9, location="t.jsonl:7",
    ...                        message="first event no behaviour of the specification matches: …",
    ...                        spec="ABSTrace")])
    >>> doc["exit_code"], doc["verdicts"][0]["location"], doc["verdicts"][0]["matched_prefix"]
    (1, 't.jsonl:7', 3)
    """
    code = exit_code(verdicts)
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "ok": code == 0,
        "exit_code": code,
        "counts": counts(verdicts),
        "verdicts": [_entry(v) for v in verdicts],
    }


def _entry(v: Verdict) -> dict:
    return {
        "trace": v.path,
        "verdict": v.verdict,
        "protocol": v.protocol or None,
        "specification": v.spec or None,
        "mapped_events": v.mapped,
        "matched_prefix": v.prefix,
        "location": v.location or None,
        "message": v.message or None,
        "error": v.error or None,
        "outside": v.outside or None,
        "not_mapped": dict(sorted(v.ignored.items())),
        "notes": list(v.notes),
    }


def junit_xml(verdicts: list[Verdict]) -> bytes:
    """JUnit XML of ``snapcheck conform --junit``: one test suite, one test case per trace.

    >>> root = ET.fromstring(junit_xml([Verdict("a.jsonl", ACCEPT, "unc", total=4),
    ...     Verdict("b.jsonl", ERROR, "unc", message="not modelled", outside="send:cancel",
    ...             error="outside-specification")]))
    >>> [(c.get("name"), [e.tag for e in c]) for c in root.iter("testcase")]
    [('a.jsonl', []), ('b.jsonl', ['skipped'])]
    """
    suite = ET.Element("testsuite", name="snapcheck.conform", tests=str(len(verdicts)))
    counts = {"failures": 0, "errors": 0, "skipped": 0}
    for v in verdicts:
        case = ET.SubElement(
            suite, "testcase", classname=f"snapcheck.conform.{v.spec or v.protocol or 'unknown'}", name=v.path
        )
        if v.verdict == REJECT:
            counts["failures"] += 1
            fail = ET.SubElement(case, "failure", type="REJECT", message=f"REJECT at {v.location}")
            fail.text = f"{v.message}\nlongest matched prefix: {v.prefix} of {v.mapped} mapped events"
        elif v.verdict == ERROR and v.error == "outside-specification":
            counts["skipped"] += 1
            ET.SubElement(case, "skipped", message=f"not judged: outside the specification ({v.outside}): {v.message}")
        elif v.verdict == ERROR:
            counts["errors"] += 1
            err = ET.SubElement(case, "error", type=v.error or "error", message=v.message.split("\n", 1)[0][:500])
            err.text = v.message
        said = []
        if v.ignored:
            said.append(
                "not mapped (outside the specification): " + ", ".join(f"{n} {k}" for k, n in sorted(v.ignored.items()))
            )
        said += [f"note: {n}" for n in v.notes]
        if said:
            ET.SubElement(case, "system-out").text = "\n".join(said)
    root = ET.Element("testsuites")
    root.append(suite)
    for k, n in counts.items():
        suite.set(k, str(n))
        root.set(k, str(n))
    root.set("tests", str(len(verdicts)))
    printable_xml(root)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)
