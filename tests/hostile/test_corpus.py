"""The hostile-input corpus (tests/data/hostile/cases.json) against every trace-reading
command: the stated exit code, a FILE:LINE message naming the problem, never a traceback,
and no output file left behind by a failed run."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from snapcheck.traces.parquet import SCHEMA
from tests.hostile.commands import COMMANDS, argv, run

DATA = Path(__file__).resolve().parents[1] / "data" / "hostile"
CASES = json.loads((DATA / "cases.json").read_text())["cases"]


def expected_exit(case: dict, command: str) -> int:
    return case.get("check_exit", case["exit"]) if command.startswith("check") else case["exit"]


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_corpus_case(case, command, tmp_path):
    trace = str(DATA / case["file"])
    code, out = run(argv(command, trace, tmp_path, case.get("options", ())))
    assert "Traceback" not in out and code != 3, out
    assert code == expected_exit(case, command), out
    if code == 2:
        assert f"{trace}" in out and case["message"] in out, out
        if command == "check-json-junit":  # the JUnit file reports the bad input as an error case
            assert 'errors="1"' in (tmp_path / "out.xml").read_text()
        else:
            assert not any(p.name.startswith("out") for p in tmp_path.iterdir()), "a failed run wrote an output"
    elif command == "check" and case["message"]:
        assert case["message"] in out, out


def test_the_corpus_covers_the_issue(tmp_path):
    """At least one case per hostile input class of the issue, each file listed once."""
    files = [c["file"] for c in CASES]
    assert len(files) == len(set(files)) == len([p for p in DATA.iterdir() if p.name != "cases.json"])
    joined = " ".join(c["message"] for c in CASES)
    for fragment in (
        "empty trace",
        "malformed JSON",
        "outside the signed 64-bit range",
        "message received twice",
        "line longer than",
        "NOTHING JUDGED",
        "cannot read Parquet",
    ):
        assert fragment in joined


def _write_parquet(path: Path, rows: list[dict]) -> None:
    pq.write_table(pa.Table.from_pylist(rows, SCHEMA), path)


def _row(**kw) -> dict:
    row = dict.fromkeys(SCHEMA.names)
    row.update(trace_id="t", line=1)
    row.update(kw)
    return row


@pytest.mark.parametrize(
    "name, rows, fragment",
    [
        ("header_without_json", [_row(type="header", idx=-1)], "the header row has no JSON in column 'extra'"),
        (
            "extra_not_object",
            [
                _row(
                    type="header",
                    idx=-1,
                    extra='{"format": "snapcheck-trace", "version": 1, "processes": [{"id": "A"}], "channels": []}',
                ),
                _row(line=2, type="fail", proc="A", idx=0, extra="[1, 2]"),
            ],
            "column 'extra' must hold a JSON object",
        ),
        (
            "extra_empty_string",  # not JSON: the SQL engines said so, check read it as {}
            [
                _row(
                    type="header",
                    idx=-1,
                    extra='{"format": "snapcheck-trace", "version": 1, "processes": [{"id": "A"}], "channels": []}',
                ),
                _row(line=2, type="fail", proc="A", idx=0, extra=""),
            ],
            "malformed JSON in column 'extra'",
        ),
        (
            "extra_big_integer",
            [
                _row(
                    type="header",
                    idx=-1,
                    extra='{"format": "snapcheck-trace", "version": 1, '
                    '"processes": [{"id": "A"}], "channels": [], '
                    '"seed": 99999999999999999999}',
                )
            ],
            "outside the signed 64-bit range",
        ),
        (
            "extra_repeats_a_key",
            [
                _row(
                    type="header",
                    idx=-1,
                    extra='{"format": "snapcheck-trace", "version": 1, "processes": [{"id": "A"}], '
                    '"channels": [], "processes": [{"id": "B"}]}',
                )
            ],
            "column 'extra': key 'processes' appears twice in one object",
        ),
        (
            "extra_overrides_a_typed_column",
            [
                _row(
                    type="header",
                    idx=-1,
                    extra='{"format": "snapcheck-trace", "version": 1, "processes": [{"id": "A"}, {"id": "B"}], '
                    '"channels": []}',
                ),
                _row(line=2, type="fail", proc="A", idx=0, extra='{"proc": "B"}'),
            ],
            "column 'extra' repeats the typed column(s) 'proc'",
        ),
        (
            "extra_holds_a_typed_field",  # check read it, the SQL checks (validate --input) did not
            [
                _row(
                    type="header",
                    idx=-1,
                    extra='{"format": "snapcheck-trace", "version": 1, "processes": [{"id": "A"}], "channels": []}',
                ),
                _row(line=2, type="checkpoint", proc="A", idx=0, kind="basic", extra='{"ckpt": 1}'),
            ],
            "column 'extra' holds 'ckpt', which belong(s) in the typed column",
        ),
        (
            "trace_id_null",  # the row named no trace: every reader skipped it
            [
                _row(
                    type="header",
                    idx=-1,
                    extra='{"format": "snapcheck-trace", "version": 1, "processes": [{"id": "A"}], "channels": []}',
                ),
                _row(line=2, type="fail", proc="A", idx=0, trace_id=None),
            ],
            "row 2 of the file has no trace_id (null): every row names its trace",
        ),
        (
            "header_row_with_event_values",  # values no reader looked at
            [
                _row(
                    type="header",
                    idx=-1,
                    ch="c",
                    ckpt=1,
                    extra='{"format": "snapcheck-trace", "version": 1, "processes": [{"id": "A"}], "channels": []}',
                )
            ],
            "the header row has values in event column(s) 'ch', 'ckpt'",
        ),
        ("extra_twice", "extra:twice", "not a snapcheck Parquet trace: column(s) ['extra'] appear twice"),
        ("missing_columns", None, "not a snapcheck Parquet trace: missing column(s)"),
        ("unknown_column", "ts", "not a snapcheck Parquet trace: unknown column(s) 'ts'"),
        (
            "mistyped_column",
            "line:string",
            "not a snapcheck Parquet trace: column 'line' has type string, expected bigint",
        ),
    ],
)
def test_hostile_parquet(name, rows, fragment, tmp_path):
    path = tmp_path / f"{name}.parquet"
    if rows is None:
        pq.write_table(pa.table({"x": [1, 2]}), path)
    elif rows == "ts":  # a valid trace with one column more: data no reader would look at
        table = pa.Table.from_pylist([_HEADER_ROW, *_EVENT_ROWS], SCHEMA)
        pq.write_table(table.append_column("ts", pa.array([0, 1, 2], pa.int64())), path)
    elif rows == "extra:twice":  # a second 'extra' column: a reader would look at one of them only
        table = pa.Table.from_pylist([_HEADER_ROW, *_EVENT_ROWS], SCHEMA)
        pq.write_table(table.append_column("extra", pa.array(['{"zz": 1}'] * 3, pa.string())), path)
    elif rows == "line:string":  # a valid trace with its line numbers stored as strings
        table = pa.Table.from_pylist([_HEADER_ROW, *_EVENT_ROWS], SCHEMA)
        pq.write_table(table.set_column(1, "line", table.column("line").cast(pa.string())), path)
    else:
        _write_parquet(path, rows)
    for command in ("validate-trace", "check", "convert-jsonl", "replay"):
        code, out = run(argv(command, str(path), tmp_path))
        assert code == 2 and fragment in out and "Traceback" not in out, (command, out)


_HEADER_ROW = _row(
    type="header",
    idx=-1,
    extra='{"format": "snapcheck-trace", "version": 1, "processes": [{"id": "A"}, {"id": "B"}], "channels": []}',
)
_EVENT_ROWS = [_row(line=2, type="fail", proc="A", idx=0), _row(line=3, type="fail", proc="B", idx=0)]


@pytest.mark.parametrize(
    "name, rows, fragment",
    [
        ("one_line_twice", [_HEADER_ROW, _EVENT_ROWS[0], dict(_EVENT_ROWS[1], line=2)], "2: two rows of line 2"),
        ("lines_backwards", [_HEADER_ROW, *_EVENT_ROWS[::-1]], "2: the row of line 2 comes after the row of line 3"),
        ("no_line", [_HEADER_ROW, dict(_EVENT_ROWS[0], line=None)], "1: a row without a line number after line 1"),
        ("second_header", [_HEADER_ROW, *_EVENT_ROWS, dict(_HEADER_ROW, line=4)], "4: a second header row"),
        ("line_missing", [_HEADER_ROW, dict(_EVENT_ROWS[1], line=4)], "4: no row of lines 2-3 (the row of line 4"),
        ("first_line_missing", [dict(_HEADER_ROW, line=2), *_EVENT_ROWS[1:]], "2: no row of line 1 (the first row"),
    ],
)
def test_parquet_rows_follow_their_lines(name, rows, fragment, tmp_path):
    """A trace's rows name each line once, in order, without a gap, and one header:
    otherwise every FILE:LINE of a report could name the wrong event (all rows of line 1
    used to be read; a deleted row was a shorter trace, judged as if complete)."""
    from snapcheck.spark_validation.trace_udf import check_rows

    path = tmp_path / f"{name}.parquet"
    _write_parquet(path, rows)
    for command in ("validate-trace", "check", "convert-jsonl", "replay"):
        code, out = run(argv(command, str(path), tmp_path))
        assert code == 2 and f"{path}:{fragment}" in out, (command, out)
    if name != "lines_backwards":  # the Spark/DuckDB job sorts rows by line first
        result = check_rows([dict(r) for r in rows], "t", None, None, "partial")
        assert not result["valid"] and f"line {fragment}" in result["problem"], result
    _write_parquet(path, [_HEADER_ROW, *_EVENT_ROWS])
    assert run(argv("check", str(path), tmp_path))[0] == 4  # read and checked: nothing in it to judge


def test_multi_trace_parquet_needs_a_trace_id_everywhere(tmp_path):
    one = str(DATA / "crlf.jsonl")
    two = tmp_path / "two.jsonl"
    two.write_bytes((DATA / "seq_2_63.jsonl").read_bytes())
    both = tmp_path / "both.parquet"
    assert run(["convert", one, str(two), "-o", str(both)])[0] == 0
    for command in ("validate-trace", "check", "replay", "render", "shiviz", "convert-jsonl"):
        code, out = run(argv(command, str(both), tmp_path))
        assert code == 2 and "holds 2 traces; choose one with --trace-id" in out, (command, out)
        code, out = run(argv(command, str(both), tmp_path) + ["--trace-id", one])
        assert code == (4 if command == "check" else 0), (command, out)  # check: nothing in it to judge


def test_a_trace_chosen_in_a_parquet_file_is_named_in_every_report(tmp_path):
    """``check --trace-id``: the text, JSON and JUnit reports say which trace of the file
    they judged (they named only the file, the same for every trace in it)."""
    import json
    import xml.etree.ElementTree as ET

    import jsonschema

    from snapcheck.checker.report import json_schema

    both = tmp_path / "both.parquet"
    one, two = str(DATA / "crlf.jsonl"), str(DATA / "seq_2_63.jsonl")
    assert run(["convert", one, two, "-o", str(both)])[0] == 0
    junit = tmp_path / "r.xml"
    code, out = run(["check", str(both), "--trace-id", two, "--json", "--junit", str(junit)])
    doc = json.loads(out)
    jsonschema.Draft202012Validator(json_schema()).validate(doc)
    [report] = doc["reports"]
    assert (report["trace"], report["trace_id"]) == (str(both), two)
    assert ET.parse(junit).getroot()[0].get("name") == f"{both} (trace {two})"
    code, out = run(["check", str(both), "--trace-id", two])
    assert out.startswith(f"{both} (trace {two}): protocol"), out


def test_outputs_never_destroy_a_file(tmp_path):
    """convert onto its input (same path, symlink, hard link), into a missing directory,
    and a failed conversion: every existing file is left as it was."""
    src = tmp_path / "t.jsonl"
    src.write_bytes((DATA / "crlf.jsonl").read_bytes())
    before = src.read_bytes()
    link = tmp_path / "link.jsonl"
    link.symlink_to(src)
    hard = tmp_path / "hard.jsonl"
    hard.hardlink_to(src)
    for out in (src, link, hard):
        code, text = run(["convert", str(src), "-o", str(out)])
        assert code == 2 and "the output is the input" in text
    pq_out = tmp_path / "t.parquet"
    assert run(["convert", str(src), "-o", str(pq_out)])[0] == 0
    code, text = run(["convert", str(pq_out), "-o", str(pq_out)])
    assert code == 2 and "the output is the input" in text
    keep = tmp_path / "keep.jsonl"
    keep.write_text("precious\n")
    code, _ = run(["convert", str(DATA / "empty.jsonl"), "-o", str(keep)])
    assert code == 2 and keep.read_text() == "precious\n"
    for args in (
        ["convert", str(src), "-o", str(tmp_path / "no" / "x.jsonl")],
        ["render", str(src), "-o", str(tmp_path / "no" / "x.svg")],
        ["check", str(src), "--junit", str(tmp_path / "no" / "x.xml")],
        ["check", str(src), "--html", str(tmp_path / "no" / "x.html")],
        ["simulate", "-o", str(tmp_path / "no" / "x.jsonl")],
        ["shiviz", str(src), "-o", str(tmp_path / "no" / "x.log")],
    ):
        code, text = run(args)
        assert code == 2 and "does not exist" in text and "Traceback" not in text, (args, text)
    assert src.read_bytes() == before
    for direction in (("t.jsonl", "n.jsonl"), ("t.parquet", "n.parquet"), ("t.parquet", "b.jsonl")):
        code, text = run(["convert", str(tmp_path / direction[0]), "-o", str(tmp_path / direction[1])])
        assert code == 0, text
    assert (tmp_path / "b.jsonl").read_bytes() == (tmp_path / "n.jsonl").read_bytes()
    code, text = run(["convert", str(src), "-o", str(tmp_path / "x.csv")])
    assert code == 2 and "name it .parquet or .jsonl" in text


def test_many_files_one_run_reports_each(tmp_path):
    """check A B C: every readable file checked, an unreadable one an error entry; exit = worst."""
    good, empty, orphan = (str(DATA / f) for f in ("crlf.jsonl", "empty.jsonl", "orphan_cut.jsonl"))
    junit = tmp_path / "x.xml"
    code, out = run(["check", good, empty, orphan, "--junit", str(junit)])
    assert code == 2 and "orphan" in out and f"{empty}: NOT CHECKED" in out
    xml = junit.read_text()
    assert 'errors="1"' in xml and "orphan" in xml and "not judged" in xml
    code, out = run(["check", good, orphan, "--json"])
    doc = json.loads(out)
    assert code == 1 and doc["exit_code"] == 1 and [r["verdict"] for r in doc["reports"]] == ["not-judged", "violation"]


def test_a_file_name_that_is_not_utf8_is_bad_input(tmp_path):
    """A trace whose file name is not UTF-8 (Python holds it with surrogate escapes) is
    refused with exit 2 by every command: its name could not be written into a JSON
    report, a diagram title or a Parquet trace id (tracebacks, exit 3)."""
    import os

    name = os.fsdecode(os.fsencode(str(tmp_path)) + b"/t\xff.jsonl")
    with open(os.fsencode(name), "wb") as f:
        f.write((DATA / "crlf.jsonl").read_bytes())
    for command in COMMANDS:
        code, out = run(argv(command, name, tmp_path))
        assert code == 2 and "t\\xff.jsonl: the argument is not valid UTF-8" in out, (command, out)


def test_a_file_name_with_a_line_break_is_bad_input(tmp_path):
    """A trace named ``evil\\nOK: all traces clean.jsonl`` printed a report line of its
    own reading "OK: all traces clean…" under its violation: every command refuses it."""
    name = str(tmp_path / "evil\nOK: all traces clean.jsonl")
    with open(name, "wb") as f:
        f.write((DATA / "orphan_cut.jsonl").read_bytes())
    for command in COMMANDS:
        code, out = run(argv(command, name, tmp_path))
        assert code == 2 and "evil\\x0aOK: all traces clean.jsonl: the argument holds a control" in out, (command, out)
        assert "\nOK: all traces clean" not in out


@pytest.mark.parametrize("command", ["check", "replay", "render", "shrink"])
def test_cut_and_failure_options_are_read_alike_and_strictly(command, tmp_path):
    """A process given twice in --cut (the last one silently won) and a --failures that
    names no process (',' was judged as no failure) are usage errors; --failures none
    means no failure in every command (render, replay and shrink took 'none' for a
    process name)."""
    trace = str(Path(__file__).resolve().parents[2] / "traces" / "examples" / "checkmate_fig2b_orphan.jsonl")
    extra = {
        "check": [],
        "replay": ["--until", "0"],
        "render": ["-o", str(tmp_path / "x.svg")],
        "shrink": ["--property", "orphan", "-o", str(tmp_path / "x.jsonl")],
    }[command]
    code, out = run([command, trace, *extra, "--cut", "O1=1,O2=1,O3=1,O2=0"])
    assert code == 2 and "O2 is given twice" in out, out
    code, out = run([command, trace, *extra, "--failures", " , "])
    assert code == 2 and "names no process" in out, out
    code, out = run([command, trace, *extra, "--failures", "none", "--cut", "O1=1,O2=1,O3=1"])
    assert code == (1 if command == "check" else 0) and "Traceback" not in out, out


def test_a_directory_among_the_traces_is_reported_not_fatal(tmp_path):
    """check / validate-trace A DIR B (a glob that caught a directory): every file is still
    read and reported, the directory as unreadable; click used to refuse the whole command,
    writing no JUnit file."""
    good = str(DATA / "crlf.jsonl")
    folder = tmp_path / "runs.jsonl"
    folder.mkdir()
    junit = tmp_path / "x.xml"
    code, out = run(["check", good, str(folder), "--junit", str(junit)])
    assert code == 2 and f"{folder}: cannot open: Is a directory" in out and f"{good}: protocol none" in out, out
    assert 'errors="1"' in junit.read_text()
    code, out = run(["validate-trace", str(folder), good])
    assert code == 2 and f"{folder}: cannot open" in out and f"{good}: OK" in out, out


def test_a_commands_other_inputs_and_two_of_its_outputs_are_never_overwritten(tmp_path):
    """Inputs besides the trace: a user's protocol file (simulate -p FILE.py:CLASS, and its
    --metrics-json) and shrink's @CONFIG file; two outputs of one command naming one file;
    an output that cannot be written is refused before any work (check --json printed its
    verdict, then exited 2)."""
    proto = tmp_path / "myproto.py"
    proto.write_text(
        "from snapcheck.reference.catalogue import PROTOCOLS\n\n\nclass Mine(PROTOCOLS['abs-aligned']):\n    name = 'mine'\n"
    )
    cfg = tmp_path / "cfg.json"
    cfg.write_text('{"protocol": "abs-aligned", "workload": "q1"}\n')
    src = tmp_path / "t.jsonl"
    src.write_bytes((DATA / "crlf.jsonl").read_bytes())
    keep = {p: p.read_bytes() for p in (proto, cfg, src)}
    (tmp_path / "junit.xml").symlink_to("report.html")  # dangling
    for args, why in (
        (["simulate", "-p", f"{proto}:Mine", "-o", str(proto)], "the output is the input"),
        (
            ["simulate", "-p", f"{proto}:Mine", "-o", str(tmp_path / "s.jsonl"), "--metrics-json", str(proto)],
            "the output is the input",
        ),
        (
            ["simulate", "-o", str(tmp_path / "s.jsonl"), "--metrics-json", str(tmp_path / "s.jsonl")],
            "given for two outputs",
        ),
        (["shrink", "--simulate", f"@{cfg}", "--property", "channel-state", "-o", str(cfg)], "the output is the input"),
        (
            ["check", str(src), "--junit", str(tmp_path / "same.out"), "--html", str(tmp_path / "same.out")],
            "given for two outputs",
        ),
        (["check", str(src), "--json", "--junit", str(tmp_path / "no" / "x.xml")], "does not exist"),
        (  # a symbolic link to the other output, not written yet: one report would replace the other
            ["check", str(src), "--junit", str(tmp_path / "junit.xml"), "--html", str(tmp_path / "report.html")],
            "name the same file",
        ),
    ):
        code, text = run(args)
        assert code == 2 and why in text and "Traceback" not in text, (args, text)
        assert '"exit_code"' not in text, text  # refused before the check ran
    assert {p: p.read_bytes() for p in keep} == keep and not (tmp_path / "same.out").exists()


TERMINAL = Path(__file__).resolve().parents[1] / "data" / "terminal"


@pytest.mark.parametrize("trace", ["terminal_controls.jsonl", "carriage_return_name.jsonl"])
@pytest.mark.parametrize(
    "args", [["check"], ["check", "-v"], ["replay", "--until", "5"], ["validate-trace"], ["shiviz", "-o", "OUT.log"]]
)
def test_text_output_never_carries_a_control_character_of_the_data(trace, args, tmp_path):
    """Process names with BEL, ESC sequences (clear the screen, set the terminal title,
    colour), backspace, DEL, a C1 CSI, or a carriage return that would print a forged
    verdict over the real one: an id with a control character is bad input (a newline in
    one printed a line of its own in every report), and the error names it escaped."""
    argv = [tmp_path / "out.log" if a == "OUT.log" else a for a in args]
    code, out = run([str(a) for a in argv[:1]] + [str(TERMINAL / trace)] + [str(a) for a in argv[1:]])
    assert code == 2 and "Traceback" not in out, out
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", out), repr(out[:2000])
    assert "no control character" in out and ("\\x1b" in out or "\\r" in out)  # the name, escaped


@pytest.mark.parametrize("name,says", [("gzipped.jsonl", "gzip-compressed"), ("utf16.jsonl", "UTF-16 text, not UTF-8")])
def test_a_file_of_another_format_named_jsonl_is_named_for_what_it_is(name, says):
    """A gzip or UTF-16 file read as JSON Lines: line 1 says what the file is (it said
    "malformed JSON: str is not valid UTF-8: surrogates not allowed")."""
    code, out = run(["validate-trace", str(TERMINAL / name)])
    assert code == 2 and f"{name}:1: not JSON: " in out and says in out, out


def test_a_byte_that_is_not_utf8_is_named_with_its_column(tmp_path):
    """A Latin-1 byte in a name: the reason is the encoding, at the byte (it said
    "surrogates not allowed: line 1 column 1")."""
    lines = (DATA / "crlf.jsonl").read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"proc":', b'"proc\xff":', 1)
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(b"".join(lines))
    column = lines[1].index(b"\xff") + 1
    code, out = run(["validate-trace", str(bad)])
    assert code == 2 and f"latin1.jsonl:2: not UTF-8: byte 0xff at column {column}" in out, out


def test_an_unknown_property_is_the_commands_mistake_not_the_traces():
    """--property bogus is refused once, before any trace is read (each trace was reported
    NOT CHECKED, as if it were bad input)."""
    code, out = run(["check", str(DATA / "crlf.jsonl"), "--property", "bogus"])
    assert code == 2 and out.startswith("snapcheck: unknown property bogus") and "NOT CHECKED" not in out, out


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or (os.geteuid() == 0 and not shutil.which("setpriv")),
    reason="needs a user other than root",
)
def test_an_unreadable_trace_is_reported_and_the_others_are_still_checked():
    """``check A UNREADABLE`` (as a user who may not read it): the unreadable file is bad
    input of its own, ``A`` is checked, and the JSON and JUnit outputs are written (click
    refused the whole command before anything ran); the other commands name the file and
    the reason, exit 2."""
    work = Path(tempfile.mkdtemp(prefix="snapcheck-unreadable-"))  # not under pytest's root-only directory
    try:
        work.chmod(0o777)
        good, unreadable = work / "good.jsonl", work / "unr.jsonl"
        for p in (good, unreadable):
            p.write_bytes((DATA / "crlf.jsonl").read_bytes())
            p.chmod(0o644)
        unreadable.chmod(0)
        user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []

        def as_user(*args):
            res = subprocess.run(
                [*user, sys.executable, "-m", "snapcheck", *args], cwd=work, capture_output=True, text=True, timeout=300
            )
            return res.returncode, res.stdout + res.stderr

        code, out = as_user("check", "--json", "--junit", "j.xml", "good.jsonl", "unr.jsonl")
        assert code == 2 and "unr.jsonl: cannot open: Permission denied" in out and '"trace": "good.jsonl"' in out, out
        assert 'errors="1"' in (work / "j.xml").read_text()
        for command in (
            ["validate-trace"],
            ["render", "-o", "x.svg"],
            ["shiviz", "-o", "x.log"],
            ["replay", "--until", "1"],
        ):
            code, out = as_user(*command, "unr.jsonl")
            assert code == 2 and "unr.jsonl: cannot open: Permission denied" in out and "Traceback" not in out, (
                command,
                out,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.parametrize("c", ["\u00ad", "\u034f", "\u061c", "\u180e", "\u3164", "\ufe0f", "\U000e0041", "\U000e0101"])
def test_invisible_characters_a_hunt_found_printed_raw_are_escaped(c):
    """A soft hyphen, the Arabic letter mark (a bidi control), fillers, variation selectors
    and tag characters printed raw: two ids that differ by one looked the same."""
    from snapcheck.console import printable

    shown = printable(f"P0{c}")
    assert shown != f"P0{c}" and shown.isascii() and shown.startswith("P0\\")


def test_options_from_the_header_that_do_not_fit_name_the_header_field(tmp_path):
    """A ``metadata.expected.check.cut`` naming a checkpoint never taken said only
    "cut: P0 has no checkpoint 7": the options came from the trace's header (line 1)."""
    golden = Path(__file__).resolve().parents[2] / "traces" / "examples" / "theory_d_dropped.jsonl"
    lines = golden.read_text().splitlines()
    header = json.loads(lines[0])
    header["metadata"]["expected"]["check"]["cut"] = {"P0": 7, "P1": 1}
    bad = tmp_path / "t.jsonl"
    bad.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    code, out = run(["check", str(bad)])
    assert code == 2 and f"{bad}: line 1: metadata.expected.check: cut: P0 has no checkpoint 7" in out, out
