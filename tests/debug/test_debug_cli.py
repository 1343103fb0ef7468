"""The debugging commands end to end on the golden traces, with the real checker,
and the HTML report."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import debug_samples as S
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from snapcheck.checker import CheckOptions, check_trace
from snapcheck.cli import cli, main
from snapcheck.debug.findings import check_options, findings_from_report
from snapcheck.debug.html_report import html_report, write_html_report
from snapcheck.traces import read_trace

EXAMPLES = Path(__file__).resolve().parents[2] / "traces" / "examples"
FIG2B = str(EXAMPLES / "checkmate_fig2b_orphan.jsonl")
FIG5 = str(EXAMPLES / "checkmate_fig5_domino_cyclic.jsonl")


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def exit_code(*args) -> int:
    """The exit code of ``snapcheck ARGS`` through ``cli.main`` (which maps usage errors to 2)."""
    try:
        main([str(a) for a in args])
    except SystemExit as exc:
        return exc.code
    return 0


def test_findings_locate_the_checker_violations():
    t = read_trace(FIG2B)
    report = check_trace(t, check_options(t))
    f = findings_from_report(t, report)
    assert [x.kind for x in f.items] == ["orphan"]
    v = f.items[0]
    assert v.messages == ["O2>O3:1"] and v.cut == {"O1": 1, "O2": 1, "O3": 1}
    # the explanation cites both checkpoints of the cut (lines 5, 8): the orphan exists once O3 takes
    # checkpoint 1 (event 7, line 8), not at its processing (event 6)
    assert v.lines == [5, 6, 7, 8] and v.position == 7


def test_replay_at_violation_json():
    res = run("replay", FIG2B, "--at-violation", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    # the orphan of cut (1, 1, 1) exists once O3's checkpoint 1 exists (event 7, line 8)
    assert out["position"] == 7 and out["event"]["type"] == "checkpoint" and out["event"]["line"] == 8
    assert out["violation"]["kind"] == "orphan"
    assert out["violation"]["witness"]["messages"] == ["O2>O3:1"]
    assert [v["number"] for v in out["violations_here"]] == [1]
    assert [v["number"] for v in out["violations_visible"]] == [1]
    assert out["processes"]["O2"]["last_checkpoint"]["ckpt"] == 1
    assert out["processes"]["O3"]["last_checkpoint"]["ckpt"] == 1


def test_replay_until_text_and_json():
    res = run("replay", FIG5, "--until", "5")
    assert res.exit_code == 0, res.output
    assert "event 5/20" in res.output and "processes" in res.output
    res = run("replay", FIG5, "--until-line", "4", "--json")
    assert json.loads(res.output)["position"] == 3
    assert exit_code("replay", FIG5, "--until", "99") == 2
    assert exit_code("replay", FIG5, "--until", "3", "--at-violation") == 2
    assert exit_code("replay", FIG5, "--json") == 2
    assert exit_code("replay", FIG5, "--until-line", "-5") == 2  # was clamped to the start
    assert exit_code("replay", FIG5, "--until-line", "99999999999") == 2  # was clamped to the end
    for script in ("g 999", "g -1", "line 999", "line 0"):  # a script's moves too (clamped, exit 0)
        assert exit_code("replay", FIG5, "-c", script) == 2, script
    assert exit_code("replay", FIG5, "-c", "g 3;line 4") == 0


@pytest.mark.parametrize(
    "script,says",
    [
        ("b proc O1; b proc O2; d 0", "delete 0: no breakpoint [0] (b lists them: 1..2)"),  # it deleted [2]
        ("d 99999999999999999999", "no breakpoint [99999999999999999999]"),  # was an OverflowError traceback
        ("p -5", "prev -5: a count is at least 1"),  # moved forward
        ("v 5", "v takes no argument, not '5'"),  # ignored: not "the 5th violation"
        ("c 3", "c takes no argument"),
        ("json json", "json takes no argument"),
        # more arguments than a command takes: the rest were dropped in silence
        ("n 1 2", "n takes at most 1 argument(s), not '1 2'"),
        ("g 3 4", "g takes at most 1 argument(s)"),
        ("b proc O1 O2", "b takes at most 2 argument(s)"),
    ],
)
def test_a_scripted_command_with_an_argument_it_cannot_take_is_a_mistake_exit_2(script, says, snapcheck_cli):
    code, out = snapcheck_cli("replay", FIG5, "-c", script, stderr=True)
    assert code == 2 and says in out and "Traceback" not in out, out


def test_render_takes_the_format_when_the_output_name_does_not_say_it(tmp_path):
    """-o /dev/null or /dev/stdout were refused ("cannot tell the image format"), although
    outputs that are not regular files are written to directly."""
    assert exit_code("render", FIG2B, "-o", "/dev/null") == 2
    assert run("render", FIG2B, "-o", "/dev/null", "--format", "svg").exit_code == 0
    res = run("render", FIG2B, "-o", str(tmp_path / "image"), "--format", "png")
    assert res.exit_code == 0 and (tmp_path / "image").read_bytes().startswith(b"\x89PNG")


def test_a_stepper_without_the_checker_never_says_there_is_no_violation(snapcheck_cli):
    """--no-check: v and pv said "no violations" on a trace with an orphan."""
    code, out = snapcheck_cli("replay", FIG2B, "--no-check", "-c", "v")
    assert code == 0 and "the checker did not run (--no-check)" in out and "no violations" not in out


def test_the_html_reports_commands_quote_the_trace_path(tmp_path):
    """A path with a space: the command the report shows must work when pasted."""
    path = tmp_path / "my trace.jsonl"
    path.write_bytes(Path(FIG2B).read_bytes())
    res = run("check", str(path), "--cut", "O1=1,O2=1,O3=1", "--html", str(tmp_path / "r.html"))
    assert res.exit_code == 1, res.output
    assert f"snapcheck replay '{path}' --at-violation 1" in html.unescape((tmp_path / "r.html").read_text())


def test_replay_at_violation_on_a_clean_trace():
    clean = str(EXAMPLES / "checkmate_fig2a_consistent.jsonl")
    res = run("replay", clean, "--at-violation")
    assert res.exit_code == 0 and "no violation found" in res.output
    assert exit_code("replay", FIG2B, "--at-violation", "2") == 2
    assert exit_code("replay", clean, "--at-violation", "1") == 2  # a numbered violation that is not there
    res = run("replay", clean, "--at-violation", "--json")  # a script reads JSON (it got plain text)
    assert res.exit_code == 0 and json.loads(res.output) == {"violation": None, "violations": 0, "checked": True}


def test_replay_at_violation_goes_to_the_first_in_time(tmp_path):
    """Without K, --at-violation goes where the first violation becomes visible, whatever
    its number; K is the report's numbering (the HTML report's commands use it). In the
    mutant "ABS without blocking" violation #2 appears at event 383, #1 only at 404."""
    trace = tmp_path / "noblock.jsonl"
    assert exit_code("simulate", "--mutant", "abs-aligned-no-block", "--demo", "-o", trace) == 0
    every = [json.loads(run("replay", trace, "--at-violation", k, "--json").output) for k in (1, 2, 3)]
    first = min(every, key=lambda out: out["position"])
    assert first["violation"]["number"] != 1
    out = json.loads(run("replay", trace, "--at-violation", "--json").output)
    assert out["position"] == first["position"] and out["violation"] == first["violation"]
    assert [out["violation"]["number"] for out in every] == [1, 2, 3]
    assert exit_code("replay", trace, "--at-violation", "4") == 2


def test_replay_selected_property_gives_z_cycle_witnesses():
    res = run("replay", str(EXAMPLES / "theory_a_zcycle.jsonl"), "--property", "z-cycles", "--at-violation", "--json")
    assert res.exit_code == 0, res.output
    v = json.loads(res.output)["violation"]
    assert v["kind"] == "useless-checkpoint" and v["witness"]["checkpoints"] == [["P0", 1]]
    assert len(v["witness"]["messages"]) == 2


def test_replay_scripted_commands():
    res = run("replay", FIG2B, "-c", "v;q")
    assert res.exit_code == 0, res.output
    assert "#1 orphan (consistency" in res.output


def test_a_script_with_a_command_that_cannot_run_is_exit_2_naming_it():
    """Interactively a mistyped command is said and the session goes on; a script that
    did not run as written ends with exit 2 naming each command that could not run."""
    assert exit_code("replay", FIG2B, "-c", "zz;b proc nope;n") == 2
    assert "--commands: unknown command 'zz' (h for help); unknown process 'nope'" in str(
        run("replay", FIG2B, "-c", "zz;b proc nope;n").exception
    )


def test_render_cli(tmp_path):
    out = tmp_path / "f.svg"
    res = run("render", FIG2B, "-o", out)
    assert res.exit_code == 0, res.output
    assert "1 violation(s) highlighted" in res.output
    svg = out.read_text()
    assert 'id="orphan-msg-O2_O3_1"' in svg and 'id="cut-1"' in svg
    res = run("render", FIG5, "-o", tmp_path / "f5.png", "--failures", "O3", "--line", "O3")
    assert res.exit_code == 0, res.output
    assert Image.open(tmp_path / "f5.png").size[0] > 300
    res = run("render", FIG5, "-o", tmp_path / "f5.svg", "--line", "all", "--window", "3:12", "--procs", "O1,O2")
    assert res.exit_code == 0, res.output
    assert len(re.findall(r'id="lane-', (tmp_path / "f5.svg").read_text())) == 2
    for bad in (["--window", "x"], ["--line", "nope"], ["--layout", "time"], ["--cut", "O1"]):
        assert exit_code("render", FIG5, "-o", tmp_path / "bad.svg", *bad) == 2, bad
    assert exit_code("render", FIG5, "-o", tmp_path / "bad.gif") == 2


def test_render_says_how_many_violations_it_drew(tmp_path):
    """The summary counts the violations drawn: those --violation picks, in the window
    (it counted every violation of the trace)."""
    path = tmp_path / "z.jsonl"
    path.write_text(S.as_text(S.random_trace(1, n=3, steps=40)))  # two Z-cycles, lines 17..36
    zc = ["--property", "z-cycles"]
    assert "2 violation(s) highlighted)" in run("render", path, "-o", tmp_path / "a.svg", *zc).output
    res = run("render", path, "-o", tmp_path / "b.svg", *zc, "--violation", "2")
    assert res.exit_code == 0 and "1 violation(s) highlighted)" in res.output
    res = run("render", path, "-o", tmp_path / "c.svg", *zc, "--window", "1:10")
    assert "0 violation(s) highlighted, 2 outside the window: --violation K draws K)" in res.output
    assert exit_code("render", path, "-o", tmp_path / "d.svg", *zc, "--violation", "3") == 2


def test_render_without_checker_run(tmp_path):
    res = run("render", FIG2B, "-o", tmp_path / "plain.svg", "--no-check")
    assert res.exit_code == 0
    assert "orphan-msg" not in (tmp_path / "plain.svg").read_text()


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_html_report_is_self_contained_and_complete(tmp_path):
    t = read_trace(FIG2B)
    report = check_trace(t, check_options(t))
    path = tmp_path / "r.html"
    write_html_report(t, report, str(path))
    text = path.read_text()
    p = _Tags()
    p.feed(text)
    # no external resources: no scripts, stylesheets, images or frames loaded from anywhere
    for tag, attrs in p.tags:
        assert tag not in ("script", "link", "img", "iframe"), tag
        assert not any(
            v and v.startswith(("http:", "https:", "//")) for k, v in attrs.items() if k in ("src", "href")
        ), (tag, attrs)
    assert "VIOLATION" in text and "orphan" in text
    assert report.violations[0].message.split(".")[0] in text.replace("&gt;", ">")
    assert text.count("<svg") == 2  # the violation's diagram + the overview
    assert 'id="violation-1"' in text and 'id="v1-orphan-msg-O2_O3_1"' in text
    assert "JSON report" in text and "Recovery lines" in text


def test_html_report_for_a_clean_trace_with_useless_checkpoints():
    t = read_trace(FIG5)
    report = check_trace(t, check_options(t))
    text = html_report(t, report)
    assert "CLEAN" in text and "Useless checkpoints" in text
    assert "O1:2, O2:2, O3:2" in text
    assert text.count("<svg") == 1 and 'id="overview-recovery-line"' in text


def test_html_report_windows_long_traces():
    t = S.random_trace(3, n=4, steps=200)
    report = check_trace(t, CheckOptions(properties={"z-cycles"}, max_per_result=3))
    assert len(t.events) > 120 and 1 <= len(report.violations) <= 3
    text = html_report(t, report)
    assert text.count("<svg") == 1 + len(report.violations)
    assert "window" in text


def test_html_report_draws_the_beginning_of_a_witness_wider_than_a_picture(monkeypatch):
    """A witness spanning more events than a picture holds (``DRAW_LIMIT``) is drawn from its
    beginning, and the report says so; ``check --html`` refused the whole trace (exit 2)."""
    import snapcheck.debug.render as R
    from snapcheck.traces import TraceRecorder

    monkeypatch.setattr(R, "DRAW_LIMIT", 40)
    rec = TraceRecorder(["A", "B"], [("a2b", "A", "B")], protocol="chandy-lamport")
    sent = [rec.send("A", "a2b") for _ in range(60)]
    rec.checkpoint("A", kind="coordinated", round=1)
    rec.checkpoint("B", kind="coordinated", round=1)
    for m in sent:
        rec.recv("B", m)
    t = rec.trace()
    report = check_trace(t, CheckOptions(max_per_result=1))
    assert report.violations and len(t.events) > 120
    text = html_report(t, report)
    assert "The witness spans events 1–" in text and "the diagram shows the first 40 of them" in text
    assert text.count("<svg") == 1 + len(report.violations)


def test_html_report_draws_a_bounded_number_of_diagrams_with_unique_ids(monkeypatch):
    """The first DIAGRAMS_SHOWN violations are drawn (hundreds of diagrams made a report of
    gigabytes of memory and tens of megabytes); the report says how many are not and how
    to see them. Every element id of the document is unique: each diagram prefixes its own."""
    import snapcheck.debug.html_report as H

    t = S.random_trace(1, n=3, steps=40)
    report = check_trace(t, CheckOptions(properties={"z-cycles"}))
    assert len(report.violations) == 2
    text = html_report(t, report)
    ids = re.findall(r'\bid="([^"]+)"', text)
    assert len(ids) == len(set(ids)) and "v1-figure_1" in ids and "v2-figure_1" in ids and "overview-figure_1" in ids
    assert set(re.findall(r'url\(#([^)]+)\)|href="#([^"]+)"', text)) <= {(i, "") for i in ids} | {("", i) for i in ids}
    assert text.count("<svg") == 3 and "Diagrams are drawn" not in text
    monkeypatch.setattr(H, "DIAGRAMS_SHOWN", 1)
    text = html_report(t, report)
    assert text.count("<svg") == 2 and 'id="violation-2"' in text and "v2-figure_1" not in text
    assert "Diagrams are drawn for the first 1 violations; the other 1 are listed without one" in text
    assert f"snapcheck replay {t.path} --at-violation K" in text and "--violation K -o vK.svg" in text


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.jsonl")))
def test_every_golden_trace_renders_and_replays(name, tmp_path):
    path = EXAMPLES / name
    res = run("render", path, "-o", tmp_path / "g.svg")
    assert res.exit_code == 0, res.output
    res = run("replay", path, "--until", "0", "--json")
    assert res.exit_code == 0 and json.loads(res.output)["position"] == 0
    res = run("shiviz", path, "-o", tmp_path / "g.log")
    assert res.exit_code == 0


def test_html_target_names():
    from snapcheck.debug.html_report import html_targets

    assert html_targets("out/report.html", ["traces/a.jsonl"]) == ["out/report.html"]
    assert html_targets("out/report.html", ["traces/fig2b.jsonl", "b.jsonl", "c.jsonl"])[0] == "out/report-fig2b.html"
    assert html_targets("report", ["x/y.parquet", "z.jsonl"]) == ["report-y.html", "report-z.html"]
    assert html_targets("out.d/report", ["y.jsonl", "z.jsonl"]) == ["out.d/report-y.html", "out.d/report-z.html"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["t.jsonl", "a/t.jsonl", "t.1.jsonl", "t.2.parquet", "u.jsonl", "b/u"]), min_size=2))
def test_html_targets_never_collide(paths):
    """Every trace of a multi-trace --html gets its own report file, also when file names repeat."""
    from snapcheck.debug.html_report import html_targets

    targets = html_targets("out/r.html", paths)
    assert len(set(targets)) == len(paths) and "out/r.html" not in targets


def test_html_reports_of_traces_with_one_name_are_all_kept(tmp_path):
    """check x/t.jsonl y/t.jsonl --html r.html: two reports, each linked from the index
    (one report used to overwrite the other, and both links led to the survivor)."""
    from snapcheck.cli import cli

    ex = Path(__file__).resolve().parents[2] / "traces" / "examples"
    traces = []
    for d, name in (("x", "checkmate_fig2b_orphan.jsonl"), ("y", "checkmate_fig2a_consistent.jsonl")):
        (tmp_path / d).mkdir()
        (tmp_path / d / "t.jsonl").write_bytes((ex / name).read_bytes())
        traces.append(str(tmp_path / d / "t.jsonl"))
    res = CliRunner().invoke(cli, ["check", *traces, "--html", str(tmp_path / "r.html")])
    assert res.exit_code == 1, res.output
    index = (tmp_path / "r.html").read_text()
    assert "href='./r-t-1.html'" in index and "href='./r-t-2.html'" in index
    assert "orphan" in (tmp_path / "r-t-1.html").read_text()
    assert "orphan" not in (tmp_path / "r-t-2.html").read_text()


def test_html_with_several_traces_writes_an_index_linking_each_report(tmp_path):
    from snapcheck.cli import cli

    ex = Path(__file__).resolve().parents[2] / "traces" / "examples"
    bad = tmp_path / "broken.jsonl"
    bad.write_text('{"format": "snapcheck-trace", "version": 1}\n')
    traces = [str(ex / "checkmate_fig2a_consistent.jsonl"), str(ex / "theory_d_dropped.jsonl"), str(bad)]
    res = CliRunner().invoke(cli, ["check", *traces, "--html", str(tmp_path / "r.html")])
    assert res.exit_code == 2, res.output  # the worst over the files: bad input
    index = (tmp_path / "r.html").read_text()
    assert "3 traces" in index and "2 not clean" in index
    for stem in ("checkmate_fig2a_consistent", "theory_d_dropped"):
        assert f"href='./r-{stem}.html'" in index and (tmp_path / f"r-{stem}.html").exists()
    assert "bad input" in index and not (tmp_path / "r-broken.html").exists()


def test_an_interrupted_html_run_leaves_the_older_report_set_as_it_was(tmp_path, monkeypatch):
    """Ctrl-C during check A B C --html r.html: the per-trace pages are written aside and moved
    into place with the index at the end, so no new page lands beside the older index (the
    pages of the traces checked before the interruption used to)."""
    import snapcheck.commands.check as check_cmd

    traces = [FIG2B, FIG5, str(EXAMPLES / "theory_d_dropped.jsonl")]
    (tmp_path / "r.html").write_text("old index")
    (tmp_path / "r-checkmate_fig2b_orphan.html").write_text("old page")
    before = {p.name: p.read_text() for p in tmp_path.iterdir()}
    check_one = check_cmd._check_one

    def interrupted(path, *args):
        if path == traces[-1]:
            raise KeyboardInterrupt
        return check_one(path, *args)

    monkeypatch.setattr(check_cmd, "_check_one", interrupted)
    with pytest.raises(SystemExit) as info:
        main(["check", *traces, "--html", str(tmp_path / "r.html")])
    assert info.value.code == 130
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == before  # no staging directory left either
    monkeypatch.setattr(check_cmd, "_check_one", check_one)
    with pytest.raises(SystemExit):
        main(["check", *traces, "--html", str(tmp_path / "r.html")])
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "r-checkmate_fig2b_orphan.html",
        "r-checkmate_fig5_domino_cyclic.html",
        "r-theory_d_dropped.html",
        "r.html",
    ]
    assert (tmp_path / "r-checkmate_fig2b_orphan.html").read_text() != "old page"


def test_the_index_links_every_report_whatever_its_name(tmp_path):
    """Trace names with a ':' (an ISO timestamp), '#', '%' or a space: each link of the
    index opens its page (a ':' made the part before it a URL scheme, '#' a fragment)."""
    from urllib.parse import unquote

    from snapcheck.cli import cli

    ex = Path(__file__).resolve().parents[2] / "traces" / "examples" / "checkmate_fig2b_orphan.jsonl"
    traces = []
    for stem in ("run-2026-11-28T15:00:00", "run#2 50%"):
        traces.append(str(tmp_path / f"{stem}.jsonl"))
        Path(traces[-1]).write_bytes(ex.read_bytes())
    CliRunner().invoke(cli, ["check", *traces, "--html", str(tmp_path / "idx.html")])
    links = re.findall(r"href='([^']*)'", (tmp_path / "idx.html").read_text())
    assert len(links) == 2 and all(link.startswith("./") and ":" not in link and "#" not in link for link in links)
    assert all((tmp_path / unquote(link[2:])).exists() for link in links)
