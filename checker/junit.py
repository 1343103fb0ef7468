"""JUnit XML for CI: one test case per property per subject (round, cut, recovery,
failure set, trace); a failing case carries every violation with its witness.

Nothing judged reads as passed: every property without a result is a *skipped*
test case whose message says why, and a trace in which not one property was
judged has an *error* test case (``snapcheck.verdict``, "nothing judged"): it
has no verdict; every requested fault is a test case,
skipped when it never happened (a *failure* with ``require_faults``); a trace
that could not be read is an *error* test case with its ``FILE:LINE`` reasons.
The report's notes go to the suite's ``system-out``.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

from snapcheck.checker.report import UnreadTrace

_EXPECTED = "expected"  # the type of a skipped case whose failure metadata.expected states (--expect)


def _violations_case(suite, r, expected: bool) -> bool:
    """The case of one property result; ``expected``: the trace's ``metadata.expected``
    decides its outcome (``--expect``), so a violation is a *skipped* case of type
    ``expected`` (like an expected failure), carrying the same text. True when it failed."""
    case = ET.SubElement(suite, "testcase", classname=f"snapcheck.{r.property}", name=r.subject)
    if r.ok:
        return False
    kinds = sorted({v.kind for v in r.violations})
    message = ", ".join(kinds) or r.property
    if expected:
        fail = ET.SubElement(case, "skipped", message=f"{message} (judged against metadata.expected)", type=_EXPECTED)
    else:
        fail = ET.SubElement(case, "failure", message=message, type=kinds[0] if kinds else r.property)
    parts = []
    for v in r.violations:
        parts.append(
            f"{v.kind} (lines {', '.join(map(str, v.lines))}): {v.message}\n"
            f"witness: {json.dumps(v.witness, sort_keys=True)}"
        )
    if r.omitted:
        parts.append(f"... and {r.omitted} more")
    fail.text = "\n\n".join(parts)
    return not expected


def junit_xml(reports: list, mismatches: dict | None = None, require_faults: bool = False) -> bytes:
    """JUnit XML for ``reports`` (a ``Report`` or ``UnreadTrace`` per trace, one test
    suite each): one test case per property result, a failing one carrying every
    violation with its witness; a skipped case per property not judged, with the
    reason; an error case for an unreadable trace, and one for a trace in which nothing
    was judged; a case per requested fault (a
    failure when it never happened and ``require_faults``, else skipped).
    ``mismatches``: trace -> list of expected-verdict mismatches (``compare_expected``)
    of the traces that state one (``--expect``); when given, each suite has an extra
    ``metadata.expected`` test case, which for a trace in ``mismatches`` decides: its
    violations and its "nothing judged" are skipped cases of type ``expected``, so the
    file fails exactly when the command does.

    >>> import xml.etree.ElementTree as ET
    >>> from snapcheck.checker import CheckOptions, check_trace
    >>> from snapcheck.traces.golden import golden
    >>> report = check_trace(golden("theory_d_dropped"), CheckOptions(cut={"P0": 1, "P1": 1}))
    >>> root = ET.fromstring(junit_xml([report]))
    >>> [(case.get("classname"), case.find("failure") is not None) for case in root.iter("testcase")
    ...  if case.get("name") != "not judged"]
    [('snapcheck.consistency', False), ('snapcheck.channel-state', True)]
    """
    root = ET.Element("testsuites", name="snapcheck check")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for rep in reports:
        suite = ET.SubElement(root, "testsuite", name=rep.trace if isinstance(rep, UnreadTrace) else rep.named)
        count = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        if isinstance(rep, UnreadTrace):
            case = ET.SubElement(suite, "testcase", classname="snapcheck.input", name="read and validate")
            err = ET.SubElement(case, "error", message="not checked: bad input", type="bad-input")
            err.text = "\n".join(rep.errors)
            count["tests"] += 1
            count["errors"] += 1
        else:
            # --expect: the trace's metadata.expected decides (its own case below), so the suite fails
            # exactly when the command's exit code does
            expected = mismatches is not None and rep.trace in mismatches
            for r in rep.results:
                count["tests"] += 1
                failed = _violations_case(suite, r, expected)
                count["failures"] += failed
                count["skipped"] += not r.ok and not failed
            for prop, reason in rep.not_judged.items():
                case = ET.SubElement(suite, "testcase", classname=f"snapcheck.{prop}", name="not judged")
                ET.SubElement(case, "skipped", message=reason)
                count["tests"] += 1
                count["skipped"] += 1
            if rep.verdict == "not-judged":
                case = ET.SubElement(suite, "testcase", classname="snapcheck.verdict", name="nothing judged")
                message = "no property was judged: no verdict, neither clean nor a violation"
                count["tests"] += 1
                if expected:
                    ET.SubElement(
                        case, "skipped", message=f"{message} (judged against metadata.expected)", type=_EXPECTED
                    )
                    count["skipped"] += 1
                else:
                    ET.SubElement(case, "error", message=message, type="not-judged")
                    count["errors"] += 1
            for f in rep.faults:
                case = ET.SubElement(suite, "testcase", classname="snapcheck.fault-injection", name=f["fault"])
                count["tests"] += 1
                if not f["exercised"]:
                    text = f"not exercised: {f['detail']}"
                    if require_faults:
                        ET.SubElement(case, "failure", message=text, type="fault-not-exercised")
                        count["failures"] += 1
                    else:
                        ET.SubElement(case, "skipped", message=text)
                        count["skipped"] += 1
            if mismatches is not None:
                case = ET.SubElement(suite, "testcase", classname="snapcheck.expected", name="metadata.expected")
                count["tests"] += 1
                mm = mismatches.get(rep.trace) or []
                if not expected:
                    ET.SubElement(case, "skipped", message="the trace states no metadata.expected; its verdict decides")
                    count["skipped"] += 1
                elif mm:
                    count["failures"] += 1
                    fail = ET.SubElement(case, "failure", message="expected verdict does not hold", type="expected")
                    fail.text = "\n".join(mm)
            if rep.notes:
                ET.SubElement(suite, "system-out").text = "\n".join(rep.notes)
        for k, v in count.items():
            suite.set(k, str(v))
            totals[k] += v
    for k, v in totals.items():
        root.set(k, str(v))
    printable_xml(root)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


# characters XML 1.0 cannot hold, even escaped (a CI's JUnit parser rejects the whole file)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def printable_xml(root: ET.Element) -> None:
    r"""Write every character XML cannot hold (a control character in a process name, a
    failure reason, a file name) as an escape, in every text and attribute under ``root``.

    >>> case = ET.Element("testcase", name="op\x07[0]")
    >>> case.text = "bell\x07"
    >>> printable_xml(case)
    >>> case.get("name"), case.text
    ('op\\x07[0]', 'bell\\x07')
    """

    def shown(text: str) -> str:
        return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else "\ufffd", text)

    for el in root.iter():
        if el.text:
            el.text = shown(el.text)
        for k, v in el.attrib.items():
            el.attrib[k] = shown(v)
