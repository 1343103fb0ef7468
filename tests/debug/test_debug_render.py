"""Space-time diagrams: the SVG's content (lanes, arrows, checkpoints, highlights) and PNG output."""

from __future__ import annotations

import re
import time

import debug_samples as S
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from PIL import Image

from snapcheck.debug.findings import Finding, Findings
from snapcheck.debug.history import message_table
from snapcheck.debug.render import RenderOptions, finding_window, render, render_svg
from snapcheck.traces.errors import UsageError


def ids(svg: str, prefix: str) -> list[str]:
    return re.findall(rf'id="({re.escape(prefix)}[^"]*)"', svg)


def test_one_lane_per_process_one_arrow_per_message():
    t = S.aligned()
    svg = render_svg(t)
    assert sorted(ids(svg, "lane-")) == ["lane-A", "lane-B", "lane-S"]
    assert len(ids(svg, "msg-")) == len(message_table(t)) == 5
    labels = re.findall(r'text-anchor: end"[^>]*>([^<]*)</text>', svg)  # the lane labels
    assert labels == ["S", "A", "B"]
    # one coordinated checkpoint per process, plus the implied initial ones
    assert sorted(ids(svg, "ckpt-")) == ["ckpt-A-0", "ckpt-A-1", "ckpt-B-0", "ckpt-B-1", "ckpt-S-0", "ckpt-S-1"]


def test_barriers_are_dashed_and_data_solid():
    svg = render_svg(S.aligned())
    groups = dict(re.findall(r'<g id="(msg-[^"]*)">\s*<path d="[^"]*"\s*(?:clip-path="[^"]*"\s*)?style="([^"]*)"', svg))
    assert groups, "arrows not found"
    barrier = [s for g, s in groups.items() if "_b1" in g]
    data = [s for g, s in groups.items() if "_b1" not in g]
    assert barrier and all("stroke-dasharray" in s for s in barrier)
    assert data and not any("stroke-dasharray" in s for s in data)


def test_checkpoint_kinds_have_distinct_markers():
    t = S.failure()
    svg = render_svg(t)
    assert ids(svg, "fail-P1") and ids(svg, "restore-P1")
    assert ids(svg, "record-") == [] and ids(svg, "log-P0")
    assert "replay" in svg  # legend entry for the replayed message


def test_highlights_orphan_zcycle_useless_cut_and_recovery_line():
    t = S.example_c()
    f = Findings(
        items=[
            Finding(
                1,
                "orphan",
                "consistency",
                "cut",
                "d is an orphan",
                [12, 13],
                12,
                messages=["c10:2"],
                cut={"P0": 3, "P1": 1},
            ),
            Finding(
                2,
                "useless-checkpoint",
                "z-cycles",
                "C0,2",
                "z",
                [8, 9, 10],
                9,
                messages=["c01:2", "c10:1"],
                checkpoints=[("P0", 2)],
            ),
        ],
        useless={("P0", 2), ("P0", 3), ("P1", 1), ("P1", 2)},
        recovery_lines={"all": {"P0": 1, "P1": 0}},
        recovery_bounds={"all": {"P0": 3, "P1": 2}},
        ok=False,
    )
    svg = render_svg(t, f, RenderOptions(recovery_line="all"))
    assert ids(svg, "orphan-msg-") == ["orphan-msg-c10_2"]
    assert sorted(ids(svg, "zcycle-msg-")) == ["zcycle-msg-c01_2", "zcycle-msg-c10_1"]
    assert sorted(ids(svg, "useless-ckpt-")) == [
        "useless-ckpt-P0-2",
        "useless-ckpt-P0-3",
        "useless-ckpt-P1-1",
        "useless-ckpt-P1-2",
    ]
    assert ids(svg, "cut-") == ["cut-1"] and ids(svg, "recovery-line") and ids(svg, "recovery-start")
    assert "z1: c01:2" in svg and "z2: c10:1" in svg
    only = render_svg(t, f, RenderOptions(only=[2], recovery_line=None))
    assert ids(only, "orphan-msg-") == [] and ids(only, "cut-") == [] and not ids(only, "recovery-line")
    assert ids(only, "zcycle-msg-")


def test_the_legend_names_what_is_drawn():
    """A violation's cut is not called the checked cut (it was, with no checked-cut line drawn);
    log, arrival, round and output markers have entries when the trace has such events."""
    t = S.example_c()
    f = Findings(items=[Finding(1, "orphan", "consistency", "cut", "o", [12, 13], 12, cut={"P0": 3, "P1": 1})])
    svg = render_svg(t, f)
    assert ids(svg, "cut-") == ["cut-1"] and "cut of a violation" in svg and "checked cut" not in svg
    svg = render_svg(t, f, RenderOptions(cut={"P0": 2, "P1": 1}))
    assert ids(svg, "checked-cut") and "cut of a violation / checked cut" in svg
    assert "checked cut" not in render_svg(t, f, RenderOptions(cut={"P0": 3, "P1": 1}))  # one line: the violation's
    assert "log entry / truncation" in render_svg(S.failure()) and "arrival (buffered)" in render_svg(S.aligned())
    assert "log entry" not in render_svg(t) and "arrival" not in render_svg(t)


@pytest.mark.parametrize(
    "kind, style, legend",
    [
        ("in-flight-lost", "dropped", "dropped / lost"),
        ("split-duplicate", "phantom", "phantom / duplicate"),
        ("premature-commit", "other", "other violation"),
    ],
)
def test_a_kind_the_style_table_does_not_name_is_drawn_by_what_it_is_never_as_an_orphan(kind, style, legend):
    """Every kind the table did not name was drawn red and called an orphan in the legend
    (an in-flight-lost record of a rescale among them)."""
    f = Findings(items=[Finding(1, kind, "p", "s", "m", [12, 13], 12, messages=["c10:2"])], ok=False)
    svg = render_svg(S.example_c(), f)
    assert ids(svg, f"{style}-msg-") == [f"{style}-msg-c10_2"] and not ids(svg, "orphan-msg-")
    assert legend in svg and ">orphan<" not in svg


def test_the_title_of_a_trace_with_nothing_judged_does_not_say_clean():
    f = Findings(recovery_lines={"all": {"P0": 1, "P1": 0}}, verdict="not-judged")
    assert "nothing judged" in render_svg(S.example_c(), f) and "· clean" not in render_svg(S.example_c(), f)
    assert "· clean" in render_svg(S.example_c(), Findings(recovery_lines={"all": {"P0": 1, "P1": 0}}))


def test_the_legend_calls_an_rdt_witness_a_z_path_not_a_z_cycle():
    """An RDT violation's witness is a Z-path that no causal path doubles, not a Z-cycle: the
    legend said "Z-cycle witness" for it."""
    t = S.example_c()

    def legend(*kinds):
        items = [Finding(n, k, k, "trace", "w", [12, 13], 12, messages=["c10:2"]) for n, k in enumerate(kinds, 1)]
        return render_svg(t, Findings(items=items))

    assert "Z-path witness (RDT)" in legend("rdt") and "Z-cycle" not in legend("rdt")
    assert "Z-cycle witness" in legend("useless-checkpoint") and "Z-path" not in legend("useless-checkpoint")
    assert "Z-cycle / Z-path witness" in legend("rdt", "useless-checkpoint")


def test_auto_recovery_line_gives_way_to_a_violation_cut():
    t = S.example_c()
    f = Findings(
        items=[
            Finding(1, "orphan", "consistency", "cut", "x", [12, 13], 12, messages=["c10:2"], cut={"P0": 3, "P1": 1})
        ],
        recovery_lines={"all": {"P0": 1, "P1": 0}},
        ok=False,
    )
    assert not ids(render_svg(t, f), "recovery-line")
    assert ids(render_svg(t, f, RenderOptions(recovery_line="all")), "recovery-line")
    with pytest.raises(UsageError, match="no recovery line 'P7'"):
        render_svg(t, f, RenderOptions(recovery_line="P7"))


def test_window_and_process_filter():
    t = S.random_trace(4, n=4, steps=120)
    full = render_svg(t, options=RenderOptions(layout="file"))
    part = render_svg(t, options=RenderOptions(layout="file", window=(10, 30)))
    assert 0 < len(ids(part, "msg-")) < len(ids(full, "msg-"))
    two = render_svg(t, options=RenderOptions(procs=["P0", "P2"]))
    assert sorted(ids(two, "lane-")) == ["lane-P0", "lane-P2"]
    msgs = message_table(t)
    assert len(ids(two, "msg-")) == sum(1 for m in msgs.values() if {m.src, m.dst} <= {"P0", "P2"})
    with pytest.raises(UsageError, match="unknown process"):
        render_svg(t, options=RenderOptions(procs=["P9"]))
    with pytest.raises(UsageError, match="bad window"):
        render_svg(t, options=RenderOptions(window=(500, 600)))


def test_layouts():
    t = S.example_c()
    with pytest.raises(UsageError, match="needs a 't'"):
        render_svg(t, options=RenderOptions(layout="time"))
    with pytest.raises(UsageError, match="unknown layout"):
        render_svg(t, options=RenderOptions(layout="spiral"))
    assert ids(render_svg(t, options=RenderOptions(layout="file")), "lane-")


@given(st.lists(st.integers(0, 5), min_size=3, max_size=8), st.booleans())
@settings(max_examples=60, deadline=None)
def test_the_time_layout_says_where_time_goes_backwards(times, late_send):
    """A process whose ``t`` decreases, or a receive timed before its send, is drawn out
    of order by the time layout: a note says where (brute force over the lanes), and a
    trace whose time only moves forward gets none."""
    from snapcheck.debug.render import plan_view
    from snapcheck.traces import TraceRecorder

    rec = TraceRecorder(["A", "B"], [("a2b", "A", "B")])
    m = rec.send("A", "a2b", t=float(times[0] + (10 if late_send else 0)))
    rec.recv("B", m, t=float(times[1]))
    for t in times[2:]:
        rec.checkpoint("B", t=float(t))
    notes = plan_view(rec.trace(), None, RenderOptions(layout="time")).notes
    lane = times[1:]
    assert any("time goes backwards" in n for n in notes) == any(b < a for a, b in zip(lane, lane[1:]))
    assert any("before its send" in n for n in notes) == (times[1] < times[0] + (10 if late_send else 0))
    assert not plan_view(rec.trace(), None, RenderOptions(layout="lamport")).notes


def test_png_and_svg_files(tmp_path):
    t = S.example_a()
    render(t, str(tmp_path / "a.png"))
    w, h = Image.open(tmp_path / "a.png").size
    assert w > 300 and h > 150
    render(t, str(tmp_path / "a.svg"))
    assert (tmp_path / "a.svg").read_text().lstrip().startswith("<?xml")
    with pytest.raises(UsageError, match="image format"):
        render(t, str(tmp_path / "a.gif"))


@pytest.mark.parametrize("ext", ["pdf", "svg", "png"])
def test_a_diagram_drawn_twice_is_the_same_file(ext, tmp_path, monkeypatch):
    """No creation date in the file (a PDF had one): drawn at two moments, the same bytes."""
    t = S.example_c()
    for moment in ("1000000000", "2000000000"):  # matplotlib dates files by SOURCE_DATE_EPOCH if set
        monkeypatch.setenv("SOURCE_DATE_EPOCH", moment)
        render(t, str(tmp_path / f"{moment}.{ext}"))
    assert (tmp_path / f"1000000000.{ext}").read_bytes() == (tmp_path / f"2000000000.{ext}").read_bytes()


def test_sixteen_processes_and_hundreds_of_events_stay_legible(tmp_path):
    t = S.random_trace(7, n=16, steps=400)
    start = time.monotonic()
    render(t, str(tmp_path / "big.png"))
    assert time.monotonic() - start < 20
    w, h = Image.open(tmp_path / "big.png").size
    # at least ~60 px per lane and a width that grows with the number of columns
    assert h >= 16 * 60 and 1000 <= w <= 60 * 110
    svg = render_svg(t)
    assert len(ids(svg, "lane-")) == 16


def test_finding_window():
    t = S.example_c()
    f = Finding(1, "orphan", "consistency", "c", "m", [12, 13], 12)
    assert finding_window(t, f, margin=2) == (9, 14)


# any characters but the controls an id may not hold (a trace with one is refused: tests/hostile)
# and lone surrogates, which no UTF-8 file holds (the recorder refuses to write them)
_NAMES = st.text(st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=10).filter(lambda s: s.strip())


@settings(max_examples=12, deadline=None)
@given(st.lists(_NAMES, min_size=2, max_size=2, unique=True), _NAMES)
@example(["a$\\qq{$", "$x^{2}$"], "p\u202e\ufeff")
@example(["\U000db819", "\u4e2d"], "p")  # characters the layout font lacks: drawn, and no warning printed
def test_any_names_give_well_formed_svg_and_junit(names, protocol):
    """Process and protocol names of any characters an id may hold ('$x^2$', 'a$\\q$',
    RTL marks, U+FEFF) give a diagram and a JUnit file that XML parsers read, the names
    drawn as written: mathtext parse errors used to end render and check --html with a
    traceback, and control characters made the SVG and the JUnit XML unreadable."""
    import warnings
    import xml.etree.ElementTree as ET

    from snapcheck.checker import CheckOptions, check_trace
    from snapcheck.checker.junit import junit_xml
    from snapcheck.debug.findings import findings_from_report
    from snapcheck.traces import TraceRecorder

    a, b = names
    rec = TraceRecorder([a, b], [("c", a, b)], protocol=protocol)  # an unknown protocol is named in a note
    rec.checkpoint(a)
    rec.recv(b, rec.send(a, "c"))
    rec.checkpoint(b)
    trace = rec.trace()
    report = check_trace(trace, CheckOptions(cut={a: 1, b: 1}))
    assert "orphan" in report.kinds
    ET.fromstring(junit_xml([report]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. a glyph the font lacks: the SVG keeps the name as text
        svg = render_svg(trace, findings_from_report(trace, report))
    ET.fromstring(svg)
    if "$" in a and a.isprintable():
        assert a.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in svg


def test_control_characters_are_drawn_as_escapes():
    from snapcheck.debug.render import _shown

    assert _shown("A\x01B\x7f\tC\nD") == "A\\x01B\\x7f\\x09C\nD"


@pytest.mark.parametrize(
    "name,layout", [("huge_times.jsonl", "time"), ("huge_times.jsonl", "lamport"), ("xml_nonchars.jsonl", "lamport")]
)
def test_extreme_times_and_names_xml_cannot_hold_still_draw_well_formed_svg(name, layout, tmp_path):
    """Times of ±1e308 (their difference overflows: the time layout divided by infinity
    and crashed) and process names with U+FFFE/U+FFFF (which XML cannot hold at all:
    the SVG did not parse)."""
    import xml.etree.ElementTree as ET
    from pathlib import Path

    from snapcheck.traces import read_trace

    trace = read_trace(str(Path(__file__).resolve().parents[1] / "data" / "terminal" / name))
    ET.fromstring(render_svg(trace, options=RenderOptions(layout=layout)))


def test_bidirectional_controls_of_the_data_never_reach_a_diagram_or_a_report(tmp_path):
    """A process named with U+202E (right-to-left override) would show readers of the SVG
    and of the HTML report other names than the trace's: both write it as an escape."""
    from snapcheck.checker import check_trace
    from snapcheck.debug.html_report import html_report
    from snapcheck.traces import TraceRecorder

    rec = TraceRecorder(["A\u202eB", "C"], [("c", "A\u202eB", "C")])
    rec.recv("C", rec.send("A\u202eB", "c"))
    trace = rec.trace()
    svg = render_svg(trace)
    assert "\u202e" not in svg and "A\\u202eB" in svg
    page = html_report(trace, check_trace(trace))
    assert "\u202e" not in page and "A\\u202eB" in page


@pytest.mark.parametrize("suffix", [".pdf", ".png", ".svg"])
def test_an_invisible_formatting_character_in_a_name_draws_in_every_format(suffix, tmp_path, snapcheck_cli):
    """U+FEFF in a process name ended a PDF render with an IndexError in matplotlib's PDF
    backend; it is drawn as an escape, as U+200B and the other zero-width characters are."""
    from snapcheck.debug.render import _shown
    from snapcheck.traces import TraceRecorder

    assert _shown("O2\ufeff\u200b") == "O2\\ufeff\\u200b"
    rec = TraceRecorder(["O1", "O2\ufeff"], [("c", "O1", "O2\ufeff")])
    rec.recv("O2\ufeff", rec.send("O1", "c"))
    rec.write(tmp_path / "t.jsonl")
    out = tmp_path / f"t{suffix}"
    code, text = snapcheck_cli("render", str(tmp_path / "t.jsonl"), "-o", str(out), "--title", "x\ufeff", stderr=True)
    assert code == 0 and out.stat().st_size > 0, text


def test_processes_whose_names_differ_only_in_characters_an_id_cannot_hold_get_distinct_ids(snapcheck_cli, tmp_path):
    """``a b``, ``a_b`` and ``a:b`` all wrote ``lane-a_b`` (and their checkpoints one
    ``ckpt-a_b-1``): the SVG and the HTML report had the same id twice."""
    from collections import Counter

    from snapcheck.traces import TraceRecorder

    rec = TraceRecorder(["a b", "a_b", "a:b"], [("c", "a b", "a_b"), ("d", "a_b", "a:b")])
    for p in ("a b", "a_b", "a:b"):
        rec.checkpoint(p)
    rec.recv("a_b", rec.send("a b", "c"))
    rec.recv("a:b", rec.send("a_b", "d"))
    svg = render_svg(rec.trace())
    counts = Counter(re.findall(r'\bid="([^"]*)"', svg))
    assert [i for i, n in counts.items() if n > 1] == []
    assert sorted(ids(svg, "lane-")) == ["lane-a_b", "lane-a_b.2", "lane-a_b.3"]
    rec.write(tmp_path / "t.jsonl")
    snapcheck_cli("check", str(tmp_path / "t.jsonl"), "--html", str(tmp_path / "r.html"))
    page = Counter(re.findall(r'\bid="([^"]*)"', (tmp_path / "r.html").read_text()))
    assert [i for i, n in page.items() if n > 1] == []
