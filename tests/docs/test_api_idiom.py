"""The test idiom the documentation gives API users fails for a trace on which nothing
was judged (``Report.clean``, not ``Report.ok``), and the example of docs/protocols.md
that uses it runs as printed."""

from __future__ import annotations

import re
from pathlib import Path

from snapcheck.checker import CheckOptions, check_trace
from snapcheck.traces.golden import golden

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("checker", "reference", "spark_validation", "snapcheck", "traces")


def test_clean_is_false_where_nothing_was_judged():
    report = check_trace(golden("theory_a_zcycle"))  # no property applies to it
    assert report.verdict == "not-judged" and report.ok and not report.clean
    assert check_trace(golden("theory_c_domino"), CheckOptions(failures="all")).clean


def test_no_documented_assertion_passes_for_nothing_judged():
    files = [*ROOT.glob("docs/*.md"), ROOT / "README.md", *(p for d in SOURCES for p in (ROOT / d).rglob("*.py"))]
    bad = [
        f"{f.relative_to(ROOT)}: {m.group(0)}"
        for f in files
        for m in re.finditer(r"assert .*(check_trace\(.*\)|report)\.ok\b.*", f.read_text())
    ]
    assert not bad, "assert report.clean (ok is True when nothing was judged):\n" + "\n".join(bad)


def test_the_simulate_and_check_example_of_protocols_md_runs():
    text = (ROOT / "docs" / "protocols.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "SimConfig(protocol=" in b)
    assert "check_trace(res.trace()).clean" in block
    exec(compile(block, "docs/protocols.md", "exec"), {})
