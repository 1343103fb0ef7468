"""JUnit XML for CI: one test case per property per subject (round, cut, recovery,
failure set, trace); a failing case carries every violation with its witness."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET


def junit_xml(reports: list, mismatches: dict | None = None) -> bytes:
    """JUnit XML for ``reports`` (``Report`` objects, one test suite per trace): one test
    case per property result, a failing one carrying every violation with its witness.
    ``mismatches``: trace -> list of expected-verdict mismatches (``compare_expected``);
    when given, each suite has an extra ``metadata.expected`` test case.

    >>> import xml.etree.ElementTree as ET
    >>> from snapcheck.checker import CheckOptions, check_trace
    >>> from snapcheck.traces.golden import golden
    >>> report = check_trace(golden("theory_d_dropped"), CheckOptions(cut={"P0": 1, "P1": 1}))
    >>> root = ET.fromstring(junit_xml([report]))
    >>> [(case.get("classname"), case.find("failure") is not None) for case in root.iter("testcase")]
    [('snapcheck.consistency', False), ('snapcheck.channel-state', True)]
    """
    root = ET.Element("testsuites", name="snapcheck check")
    total = failures = 0
    for rep in reports:
        suite = ET.SubElement(root, "testsuite", name=rep.trace)
        n = f = 0
        for r in rep.results:
            case = ET.SubElement(suite, "testcase", classname=f"snapcheck.{r.property}", name=r.subject)
            n += 1
            if not r.ok:
                f += 1
                kinds = sorted({v.kind for v in r.violations})
                fail = ET.SubElement(case, "failure", message=", ".join(kinds) or r.property,
                                     type=kinds[0] if kinds else r.property)
                parts = []
                for v in r.violations:
                    parts.append(f"{v.kind} (lines {', '.join(map(str, v.lines))}): {v.message}\n"
                                 f"witness: {json.dumps(v.witness, sort_keys=True)}")
                if r.omitted:
                    parts.append(f"... and {r.omitted} more")
                fail.text = "\n\n".join(parts)
        if mismatches is not None:
            case = ET.SubElement(suite, "testcase", classname="snapcheck.expected", name="metadata.expected")
            n += 1
            mm = mismatches.get(rep.trace) or []
            if mm:
                f += 1
                fail = ET.SubElement(case, "failure", message="expected verdict does not hold", type="expected")
                fail.text = "\n".join(mm)
        suite.set("tests", str(n))
        suite.set("failures", str(f))
        suite.set("errors", "0")
        total += n
        failures += f
    root.set("tests", str(total))
    root.set("failures", str(failures))
    root.set("errors", "0")
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)
