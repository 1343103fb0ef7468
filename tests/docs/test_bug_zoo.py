"""docs/bug-zoo.md lists every mutant of the catalogue: its generated table is exactly
what ``scripts/make_bug_zoo.py`` makes of ``snapcheck.reference.catalogue.MUTANTS``."""

from __future__ import annotations

import re

import pytest
from doc_scripts import ROOT, load

from snapcheck.reference.catalogue import MUTANTS
from snapcheck.reference.coordinated.unaligned import Unaligned

DOC = ROOT / "docs" / "bug-zoo.md"
GEN = load("make_bug_zoo")


def _rows(doc: str) -> dict[str, str]:
    """The generated table's rows, by mutant name."""
    block = doc.split(GEN.BEGIN, 1)[1].split(GEN.END, 1)[0]
    rows = {}
    for line in block.strip().splitlines()[2:]:
        m = re.match(r"\| \[?`([^`]+)`", line)
        assert m, line
        rows[m.group(1)] = line
    return rows


def test_the_table_is_what_the_catalogue_says():
    doc, expected = GEN.expected(DOC)
    assert doc == expected, "docs/bug-zoo.md lags behind the catalogue: run python scripts/make_bug_zoo.py"


def test_every_mutant_has_a_row_with_its_facts_and_its_public_reports():
    rows = _rows(DOC.read_text(encoding="utf-8"))
    assert list(rows) == list(MUTANTS)
    for name, cls in MUTANTS.items():
        row = rows[name]
        assert f"`{cls.mutant_of}`" in row and f"`{cls.prop}`" in row, row
        assert all(f"`{k}`" in row for k in cls.expect), row
        for key in re.findall(r"\b(?:FLINK|SPARK|KAFKA)-\d+\b", cls.bug):
            assert f"[{key}](https://issues.apache.org/jira/browse/{key})" in row, (name, key)
        for repo, num in re.findall(r"([\w.-]+/[\w.-]+)#(\d+)", cls.bug):
            assert f"(https://github.com/{repo}/issues/{num})" in row, (name, repo, num)


def test_a_mutant_added_later_gets_a_row_without_prose():
    class Upcoming(Unaligned):
        name = "unaligned-upcoming"
        mutant_of = "unaligned"
        summary = "a | pipe in the summary"
        bug = "FLINK-99999 (apache/flink#99999)"
        expect = ("dropped",)
        prop = "channel-state"

    doc = DOC.read_text(encoding="utf-8")
    sections = {GEN.github_slug(h) for h in GEN.headings(DOC)}
    rows = _rows(GEN.render(doc, {**MUTANTS, Upcoming.name: Upcoming}, sections))
    row = rows["unaligned-upcoming"]
    assert row.startswith("| `unaligned-upcoming` | `unaligned` | a \\| pipe in the summary |")
    assert "[FLINK-99999](https://issues.apache.org/jira/browse/FLINK-99999)" in row
    assert rows["unaligned-late-snapshot"].startswith("| [`unaligned-late-snapshot`](#unaligned-late-snapshot)")
    fewer = _rows(GEN.render(doc, {"unaligned-late-snapshot": MUTANTS["unaligned-late-snapshot"]}, sections))
    assert list(fewer) == ["unaligned-late-snapshot"]


def test_link_references():
    link = GEN.link_references
    assert link("FLINK-20654 / FLINK-21104 (apache/flink#14807)") == (
        "[FLINK-20654](https://issues.apache.org/jira/browse/FLINK-20654) / "
        "[FLINK-21104](https://issues.apache.org/jira/browse/FLINK-21104) "
        "([apache/flink#14807](https://github.com/apache/flink/issues/14807))"
    )
    assert (
        link("WallarooLabs/wally#3032")
        == "[WallarooLabs/wally#3032](https://github.com/WallarooLabs/wally/issues/3032)"
    )
    assert link("FLIP-76 output side missing; #5 alone") == "FLIP-76 output side missing; #5 alone"
    assert link('see docs/theory.md "Pitfall: Algorithm 2 as printed"') == (
        "see [Pitfall: Algorithm 2 as printed](theory" + ".md#pitfall-algorithm-2-as-printed)"
    )


def test_the_markers_must_be_there():
    with pytest.raises(SystemExit, match="markers"):
        GEN.render("# no table here\n", MUTANTS, set())
