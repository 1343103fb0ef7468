"""``snapcheck check``: exit codes, text, JSON, JUnit, options, --expect; golden traces."""

from __future__ import annotations

import glob
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from snapcheck.checker import CheckOptions, check_trace
from snapcheck.checker.expected import compare_expected, options_from_expected
from snapcheck.traces import TraceRecorder, read_trace

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLDEN = sorted(glob.glob(os.path.join(ROOT, "traces", "examples", "*.jsonl")))


@pytest.fixture
def run(snapcheck_cli):
    return snapcheck_cli


def write(tmp_path, name, rec):
    p = tmp_path / name
    rec.write(p)
    return str(p)


@pytest.fixture
def clean(tmp_path):
    rec = TraceRecorder(["A", "B"], [("ab", "A", "B")])
    m = rec.send("A", "ab")
    rec.recv("B", m)
    rec.checkpoint("A")
    rec.checkpoint("B")
    return write(tmp_path, "clean.jsonl", rec)


@pytest.fixture
def orphan(tmp_path):
    rec = TraceRecorder(["A", "B"], [("ab", "A", "B")])
    rec.checkpoint("A")
    m = rec.send("A", "ab")
    rec.recv("B", m)
    rec.checkpoint("B")
    return write(tmp_path, "orphan.jsonl", rec)


def test_exit_codes(run, clean, orphan, tmp_path):
    assert run("check", clean, "--cut", "A=1,B=1")[0] == 0
    assert run("check", clean)[0] == 4  # no cut, no rounds: nothing judged
    code, out = run("check", orphan, "--cut", "A=1,B=1")
    assert code == 1 and "orphan" in out and "line" in out
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    assert run("check", str(bad))[0] == 2
    assert run("check", clean, "--cut", "A=7,B=1")[0] == 2
    assert run("check", clean, "--failures", "Z")[0] == 2
    assert run("check", clean, "--property", "nonsense")[0] == 2
    assert run("check", clean, "--cut", "A")[0] == 2


def test_process_ids_with_commas_or_named_all_are_given_as_json(run, tmp_path):
    """``P0=1,P1=V`` and ``P0,P1`` cannot name a process ``a,b`` or one called ``all``: a JSON
    object (cut) or list (failure set) can, in every command that takes them."""
    rec = TraceRecorder(["a,b", "all"], [("x", "a,b", "all")])
    rec.checkpoint("a,b")
    m = rec.send("a,b", "x")
    rec.recv("all", m)
    rec.checkpoint("all")
    path = write(tmp_path, "odd.jsonl", rec)
    code, out = run("check", path, "--cut", '{"a,b": 1, "all": 1}', "--json")
    assert code == 1 and "orphan" in out
    code, out = run("check", path, "--failures", '["all"]', "--json")
    lines = json.loads(out)["reports"][0]["recovery_lines"]
    assert lines['["all"]'] == {"a,b": "V", "all": 1}, lines  # labelled as given, apart from "all" processes
    assert lines["all"] == {"a,b": 1, "all": 0}
    assert run("check", path, "--cut", '{"a,b": "last"}')[0] == 2
    for given in ("a,b", "all"):  # {a, b} and every process, or that process? Said, not guessed
        code, out = run("check", path, "--failures", given, stderr=True)
        assert code == 2 and f"failure set {given!r} is ambiguous: the trace has a process named {given!r}" in out


def test_json_reports_unreadable_files_on_stderr_too(clean, tmp_path, capsys):
    """check --json: an unreadable file's FILE:LINE reasons go to stderr as without --json,
    and stdout is the JSON document alone."""
    from snapcheck.cli import main

    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["check", "--json", clean, str(bad)])
    out, err = capsys.readouterr()
    assert exit_.value.code == 2
    assert [r["verdict"] for r in json.loads(out)["reports"]][1] == "error"
    assert f"{bad}: NOT CHECKED (bad input: exit 2)\n  {bad}:1: " in err and clean not in err


def test_nothing_judged_is_no_verdict_in_every_output(run, clean, tmp_path):
    """A trace in which no property was judged (no cut, no rounds; or none of the
    properties named applies) has no verdict: exit 4, never 0 (clean) nor 1 (violation);
    JSON ok false; a JUnit error case; the text says NOTHING JUDGED. Over many traces
    the exit code is the worst: bad input, then a violation, then nothing judged."""
    from snapcheck.checker.report import json_schema

    junit = tmp_path / "x.xml"
    code, out = run("check", clean, "--junit", str(junit))
    assert code == 4 and out.startswith(f"{clean}: protocol unknown: NOTHING JUDGED")
    suite = ET.parse(junit).getroot().find("testsuite")
    (case,) = [c for c in suite.iter("testcase") if c.get("classname") == "snapcheck.verdict"]
    assert case.get("name") == "nothing judged" and case.find("error") is not None and suite.get("errors") == "1"
    code, out = run("check", clean, "--json")
    doc = json.loads(out)
    jsonschema.Draft202012Validator(json_schema()).validate(doc)
    assert (code, doc["exit_code"], doc["ok"]) == (4, 4, False)
    assert (doc["reports"][0]["verdict"], doc["reports"][0]["ok"]) == ("not-judged", False)
    # a property named where it does not apply: nothing judged either
    assert run("check", clean, "--cut", "A=1,B=1", "--property", "rescale-state")[0] == 4
    example = os.path.join(ROOT, "traces", "examples", "checkmate_fig2{}.jsonl").format  # judged by their options
    assert run("check", example("a_consistent"), clean)[0] == 4
    assert run("check", clean, example("b_orphan"))[0] == 1
    assert run("check", clean, str(tmp_path / "missing.jsonl"))[0] == 2


def test_json_report_schema(run, orphan):
    code, out = run("check", orphan, "--cut", "A=1,B=1", "--failures", "A", "--json")
    assert code == 1
    doc = json.loads(out)
    assert doc["schema"] == "snapcheck-check" and doc["ok"] is False
    rep = doc["reports"][0]
    for key in (
        "trace",
        "protocol",
        "ok",
        "violation_kinds",
        "violations",
        "results",
        "useless",
        "stably_unusable",
        "recovery_lines",
        "recovery",
        "rounds",
        "observed_recoveries",
        "notes",
        "stats",
    ):
        assert key in rep
    v = rep["violations"][0]
    assert v["kind"] == "orphan" and v["property"] == "consistency"
    assert v["witness"]["cut"] == {"A": 1, "B": 1} and v["witness"]["messages"] == ["ab:1"]
    assert rep["recovery_lines"]["A"] == {"A": 1, "B": 0}
    assert rep["recovery"]["A"]["algorithms"]["r-mark"] == {"A": 1, "B": 0}


def test_junit_one_case_per_property_and_subject(run, orphan, tmp_path):
    out = tmp_path / "junit.xml"
    code, _ = run("check", orphan, "--cut", "A=1,B=1", "--failures", "A", "--junit", str(out))
    assert code == 1
    root = ET.parse(out).getroot()
    cases = root.findall(".//testcase")
    names = {(c.get("classname"), c.get("name")) for c in cases}
    assert ("snapcheck.consistency", "cut {A: 1, B: 1}") in names
    assert ("snapcheck.recovery-line", "failures A") in names
    failed = [c for c in cases if c.find("failure") is not None]
    assert len(failed) == 1 and "witness" in failed[0].find("failure").text
    assert root.get("failures") == "1"


def test_z3_option_reports_the_certificate(run, orphan):
    code, out = run("check", orphan, "--failures", "A", "--z3-min-replay")
    assert code == 0
    assert "z3: maximality proved" in out and "fewest messages to replay" in out


def test_metadata_expected_check_applies_and_expect_flag(run, tmp_path):
    rec = TraceRecorder(
        ["A", "B"],
        [("ab", "A", "B")],
        metadata={"expected": {"verdict": "violation", "violations": ["orphan"], "check": {"cut": {"A": 1, "B": 1}}}},
    )
    rec.checkpoint("A")
    m = rec.send("A", "ab")
    rec.recv("B", m)
    rec.checkpoint("B")
    path = write(tmp_path, "exp.jsonl", rec)
    assert run("check", path)[0] == 1  # the expected cut is analysed
    code, out = run("check", path, "--expect")
    assert code == 0 and "expected verdict: holds" in out
    code, _ = run("check", path, "--cut", "A=V,B=V")  # explicit option wins
    assert code == 0
    code, out = run("check", path, "--cut", "A=V,B=V", "--expect")
    assert code == 1 and "MISMATCH" in out


def test_expect_headline_states_whether_the_expected_verdict_holds(run, tmp_path):
    """With --expect, a trace's first line says whether its metadata.expected holds: a
    mismatch (exit 1) never heads the report as OK, a violation that was expected says so."""
    rec = TraceRecorder(["A", "B"], [("ab", "A", "B")], metadata={"expected": {"verdict": "violation"}})
    rec.checkpoint("A")
    rec.recv("B", rec.send("A", "ab"))
    rec.checkpoint("B")
    path = write(tmp_path, "exp.jsonl", rec)
    code, out = run("check", path, "--cut", "A=V,B=V", "--expect")
    assert code == 1
    assert out.splitlines()[0] == (
        f"{path}: protocol unknown: MISMATCH with metadata.expected (1; see below) — the check says: "
        "OK — 2 properties judged, 29 not judged"
    )
    code, out = run("check", path, "--cut", "A=1,B=1", "--expect")
    assert code == 0
    assert out.splitlines()[0] == (
        f"{path}: protocol unknown: VIOLATION (orphan) — 2 properties judged, 29 not judged — as metadata.expected says"
    )


def test_expect_takes_nothing_judged_for_neither_clean_nor_a_violation(run, tmp_path):
    """A trace expected clean in which not one property applies does not hold its
    expectation (nothing judged is no clean verdict); one that states ``not-judged`` does."""
    for verdict, want in (("clean", 1), ("violation", 1), ("not-judged", 0)):
        rec = TraceRecorder(["A", "B"], [("ab", "A", "B")], metadata={"expected": {"verdict": verdict}})
        rec.recv("B", rec.send("A", "ab"))
        code, out = run("check", write(tmp_path, f"{verdict}.jsonl", rec), "--expect", "--json")
        assert code == want, (verdict, out)
        (report,) = json.loads(out)["reports"]
        assert report["verdict"] == "not-judged"
        assert bool(report["expected_mismatches"]) == bool(want)


def test_expect_junit_fails_exactly_when_the_command_does(run, tmp_path):
    """With --expect, the trace's metadata.expected decides: its expected violations and its
    nothing judged are skipped cases of type "expected" (expected failures), so a CI reading
    the JUnit file sees a failure exactly when the exit code is not 0; a mismatch fails the
    metadata.expected case, and a trace without an expectation keeps its own failures."""
    junit = tmp_path / "golden.xml"
    golden = sorted(str(p) for p in (Path(__file__).parents[2] / "traces" / "examples").glob("*.jsonl"))
    code, _ = run("check", "--expect", "--junit", str(junit), *golden)
    root = ET.parse(junit).getroot()
    assert code == 0 and (root.get("failures"), root.get("errors")) == ("0", "0")
    expected = [
        c
        for c in root.iter("testcase")
        if c.find("skipped") is not None and c.find("skipped").get("type") == "expected"
    ]
    assert {c.get("classname") for c in expected} >= {"snapcheck.channel-state", "snapcheck.verdict"}
    assert all("judged against metadata.expected" in c.find("skipped").get("message") for c in expected)

    rec = TraceRecorder(["A", "B"], [("ab", "A", "B")], metadata={"expected": {"verdict": "clean"}})
    rec.checkpoint("A")
    rec.recv("B", rec.send("A", "ab"))
    rec.checkpoint("B")
    mismatch = write(tmp_path, "mismatch.jsonl", rec)
    plain = TraceRecorder(["A", "B"], [("ab", "A", "B")])
    plain.checkpoint("A")
    plain.recv("B", plain.send("A", "ab"))
    plain.checkpoint("B")
    code, _ = run(
        "check", "--expect", "--cut", "A=1,B=1", "--junit", str(junit), mismatch, write(tmp_path, "plain.jsonl", plain)
    )
    assert code == 1
    suites = {Path(s.get("name")).name: s for s in ET.parse(junit).getroot().iter("testsuite")}
    failed = {
        name: [c.get("classname") for c in s.iter("testcase") if c.find("failure") is not None]
        for name, s in suites.items()
    }
    assert failed == {"mismatch.jsonl": ["snapcheck.expected"], "plain.jsonl": ["snapcheck.consistency"]}
    skipped = suites["plain.jsonl"].find("testcase[@classname='snapcheck.expected']/skipped")
    assert "states no metadata.expected" in skipped.get("message")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a disk that is full)")
@pytest.mark.parametrize("output", ["--junit", "--html"])
def test_an_output_file_that_cannot_be_written_is_exit_2_in_the_json_document_too(run, clean, output):
    """A full disk under --junit or --html: the command exits 2 and its JSON document, still
    printed, says so (exit_code 2, ``unwritten`` naming the file); it said 0 and ok, or
    printed no document at all."""
    from snapcheck.checker.report import json_schema

    code, out = run("check", clean, "--cut", "A=1,B=1", "--json", output, "/dev/full")
    doc = json.loads(out)
    jsonschema.Draft202012Validator(json_schema()).validate(doc)
    assert (code, doc["exit_code"], doc["ok"]) == (2, 2, False)
    assert doc["unwritten"] == ["cannot write /dev/full: No space left on device"]
    assert doc["reports"][0]["verdict"] == "clean"


def test_expect_on_a_trace_without_an_expectation_says_so(run, tmp_path):
    """A trace with no metadata.expected (a simulator's): --expect has nothing to compare
    with; its verdict decides, and the report says so rather than staying silent."""
    rec = TraceRecorder(["A", "B"], [("ab", "A", "B")])
    rec.recv("B", rec.send("A", "ab"))
    code, out = run("check", write(tmp_path, "plain.jsonl", rec), "--expect", "--json")
    (report,) = json.loads(out)["reports"]
    assert code == 4 and report["expected_mismatches"] is None  # its verdict: nothing judged (exit 4)
    assert any("no metadata.expected" in n for n in report["notes"])


def test_compare_expected_reports_each_mismatch(tmp_path):
    rec = TraceRecorder(
        ["A", "B"],
        [("ab", "A", "B")],
        metadata={
            "expected": {
                "verdict": "not-judged",
                "violations": [],
                "useless": ["A:1"],
                "recovery_lines": {"A": {"A": 0, "B": "V"}},
                "domino": True,
            }
        },
    )
    rec.checkpoint("A")
    t = rec.trace()
    rep = check_trace(t, options_from_expected(t))
    mm = compare_expected(t, rep)
    assert len(mm) == 3
    assert any("useless" in m for m in mm) and any("recovery line for failures A" in m for m in mm)
    assert any("domino" in m for m in mm)


@pytest.mark.parametrize("path", GOLDEN, ids=[os.path.basename(p) for p in GOLDEN])
def test_golden_trace_expected_verdict_holds(path):
    t = read_trace(path)
    rep = check_trace(t, options_from_expected(t, CheckOptions(z3=True)))
    assert compare_expected(t, rep) == []
    for _label, cert in rep.certificates.items():
        assert cert["maximality"] == "proved"


def test_golden_traces_exist():
    assert len(GOLDEN) >= 10


@pytest.mark.parametrize(
    "lines, why",
    [
        ({"O9": {"O1": 1}}, "line 1: metadata.expected: unknown process 'O9' in the failure set"),
        ({"": {"O1": 1}}, "a failure set names processes (joined by commas), all or none, not ''"),
        ({"all": "x"}, "recovery_lines['all'] must be a line (process -> checkpoint number or V), not 'x'"),
        ({"all": {"O1": "W"}}, "recovery_lines['all']['O1'] must be a checkpoint number or V, not 'W'"),
        ({"all": {"O1": -1}}, "must be a checkpoint number or V, not -1"),
    ],
)
def test_an_expectation_the_checker_cannot_read_is_bad_input_and_the_other_files_are_reported(
    run, tmp_path, lines, why
):
    """``check --expect`` on a ``metadata.expected.recovery_lines`` that names no process of
    the trace, or is not a line, crashed (exit 3) and reported no other file (a hostile hunt)."""
    src = os.path.join(
        os.path.dirname(__file__), "..", "..", "traces", "examples", "checkmate_fig4_rollback_propagation.jsonl"
    )
    header, *events = open(src).read().splitlines()
    h = json.loads(header)
    h["metadata"]["expected"]["recovery_lines"] = lines
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([json.dumps(h), *events]) + "\n")
    code, out = run("check", "--expect", src, str(bad), stderr=True)
    assert code == 2 and "Traceback" not in out and why in out
    assert "checkmate_fig4_rollback_propagation.jsonl: protocol" in out  # the good file is reported
