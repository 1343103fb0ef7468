"""The interactive stepper: commands driven programmatically, through the CLI's
command option, and once through a real pseudo-terminal."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time

import debug_samples as S
from rich.console import Console

from snapcheck.debug.findings import Finding, Findings
from snapcheck.debug.stepper import Stepper


def _stepper(trace, findings=None):
    return Stepper(trace, findings, console=Console(record=True, width=160, color_system=None))


def _screen(s: Stepper) -> str:
    s.console.print(s.screen())
    return s.console.export_text()


def _fake_findings(trace) -> Findings:
    """An orphan of example C's cut (C0,3, C1,2): d = c10:2 is sent after C1,2 ... as the
    checker would report it (lines of the send and the processing)."""
    f = Finding(
        number=1,
        kind="orphan",
        property="consistency",
        subject="cut",
        message="c10:2 is an orphan",
        lines=[12, 13],
        position=12,
        messages=["c10:2"],
        cut={"P0": 3, "P1": 1},
    )
    g = Finding(
        number=2,
        kind="useless-checkpoint",
        property="z-cycles",
        subject="C0,2",
        message="C0,2 is useless",
        lines=[8, 9, 10],
        position=9,
        messages=["c01:2", "c10:1"],
        checkpoints=[("P0", 2)],
    )
    return Findings(items=[f, g], useless={("P0", 2)}, ok=False)


def test_moving_with_commands():
    s = _stepper(S.example_c())
    for cmd, pos in (
        ("n", 1),
        ("", 2),
        ("n 5", 7),
        ("p", 6),
        ("p 10", 0),
        ("g 9", 9),
        ("line 4", 3),
        ("end", 15),
        ("start", 0),
    ):
        assert s.execute(cmd) is True
        assert s.replay.position == pos, cmd
    assert s.execute("q") is False


def test_bad_and_unknown_commands_are_reported_not_raised():
    s = _stepper(S.example_c())
    s.execute("frobnicate")
    assert "unknown command" in s.message
    s.execute("g x")
    assert "bad arguments" in s.message
    s.execute("b proc NOPE")
    assert "unknown process" in s.message
    s.execute("b msg nope")
    assert "unknown message" in s.message
    s.execute("c")
    assert "no breakpoints" in s.message


def test_a_process_whose_id_has_a_space_is_named_in_quotes():
    from snapcheck.traces import TraceRecorder

    rec = TraceRecorder(["map 0", "sink"], [("m2s", "map 0", "sink")])
    m = rec.send("map 0", "m2s")
    rec.recv("sink", m)
    _ = rec.checkpoint("map 0", "basic")
    s = _stepper(rec.trace())
    s.execute('b proc "map 0"')
    assert s.message == "breakpoint [1] proc map 0", s.message
    s.execute("c")
    assert s.replay.position == 1
    s.execute('b proc "map 0')
    assert "unbalanced quote" in s.message and len(s.replay.breakpoints) == 1


def test_violation_jumps_and_panels():
    t = S.example_c()
    s = _stepper(t, _fake_findings(t))
    s.execute("v")
    assert s.replay.position == 9
    out = _screen(s)
    assert "#2 useless-checkpoint" in out and "C0,2 is useless" in out
    assert "witness messages: c01:2 → c10:1" in out
    assert "next violation at event 12" in out
    s.execute("v")
    assert s.replay.position == 12
    s.execute("v")
    assert s.replay.position == 12 and s.message == "no later violation"
    s.execute("pv")
    assert s.replay.position == 9


def test_breakpoints_through_commands():
    s = _stepper(S.aligned())
    s.execute("b ckpt B")
    s.execute("b msg s2b:1")
    s.execute("b")
    assert s.message == "breakpoints: [1] ckpt B, [2] msg s2b:1"
    s.execute("c")
    assert s.replay.state.event.line == 12 and s.message == "breakpoint msg s2b:1"
    s.execute("c")
    assert s.replay.state.event.line == 14
    s.execute("c")
    assert s.replay.state.event.line == 18 and s.message == "breakpoint ckpt B"
    s.execute("rc")
    assert s.replay.state.event.line == 14
    s.execute("d 2")
    s.execute("b")
    assert s.message == "breakpoints: [1] ckpt B"


def test_a_breakpoint_on_an_unknown_event_type_is_refused():
    """Like an unknown process or message (it was accepted, and never hit)."""
    s = _stepper(S.aligned())
    s.execute("b type zzz")
    assert s.message.startswith("unknown event type 'zzz' (event types: send, ") and "checkpoint" in s.message
    assert s.replay.breakpoints == []
    s.execute("b type checkpoint")
    assert s.message == "breakpoint [1] type checkpoint"


def test_screen_shows_processes_channels_and_context():
    s = _stepper(S.aligned())
    s.execute("line 15")
    out = _screen(s)
    assert "event 14/18 · line 15 · B arrive a2b:b1 on a2b from A" in out
    assert "→    14  L15" in out  # the context listing marks the event
    for row in (
        "a2b (r1), s2b (r1)",  # B's blocked channels
        "C1 coordinated r1 @L10",  # A's last checkpoint
        '{"count":1}',  # A's protocol variables
        'pb {"tdv":[1,0,0]}',
    ):  # S's last piggyback
        assert row in out, row
    assert "[b1]* :1*" in out  # in flight, both arrived
    s.execute("all")
    assert "s2a S→A" in _screen(s)  # empty channels on request


def test_loop_reads_commands_until_quit():
    s = _stepper(S.example_c())
    s.loop(["n 3", "b proc P1", "c", "q", "n"])
    assert s.replay.position == 4  # the command after q never ran
    text = s.console.export_text()
    assert text.count("event ") >= 4


def test_json_command():
    s = _stepper(S.example_c())
    s.execute("g 2")
    s.execute("json")
    assert '"position": 2' in s.message


def _run_in_pty(argv: list[str], keys: list[str], timeout: float = 60.0) -> str:
    """Run ``argv`` on a pseudo-terminal, type ``keys`` one line at a time (each after the
    prompt appears), and return everything it printed."""
    master, slave = pty.openpty()
    env = dict(os.environ, COLUMNS="150", LINES="60", TERM="xterm")
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + timeout

    def read_until(marker: bytes) -> None:
        nonlocal out
        while marker not in out.split(b"\n")[-1] and time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    out += os.read(master, 65536)
                except OSError:
                    return

    try:
        for k in keys:
            read_until(b"(snapcheck) ")
            os.write(master, (k + "\n").encode())
            out += b"\n"  # so the next wait looks for a fresh prompt
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        while True:
            ready, _, _ = select.select([master], [], [], 0.2)
            if not ready:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    return out.decode(errors="replace")


def test_stepper_through_a_pseudo_terminal(tmp_path):
    path = tmp_path / "aligned.jsonl"
    path.write_text(S.as_text(S.aligned()))
    snapcheck = os.path.join(os.path.dirname(sys.executable), "snapcheck")
    out = _run_in_pty([snapcheck, "replay", str(path), "--no-check"], ["n", "g 7", "b ckpt B", "c", "q"])
    assert "event 0/18" in out
    assert "event 1/18" in out
    assert "event 7/18" in out and "s2a (r1)" in out  # A blocked after the barrier arrived
    assert "breakpoint ckpt B" in out and "event 17/18" in out


def test_a_long_explanation_wraps_inside_its_panel(capsys):
    """The consoles soft-wrap (piped, a line is never broken at 80 columns); a violation's
    explanation still wraps inside its panel, piped (240 columns) or at a 120-column
    terminal, instead of being clipped at the panel's edge."""
    from snapcheck.console import make_console

    t = S.example_c()
    findings = _fake_findings(t)
    long = " ".join(f"word{i}" for i in range(120)) + " and the last words of the sentence."
    findings.items[1].message = long
    for console in (make_console(), Console(width=120, soft_wrap=True, record=True, color_system=None)):
        s = Stepper(t, findings, console=console)
        s.execute("v")
        s.show()
        out = console.export_text() if console.record else capsys.readouterr().out
        lines = out[out.index("#2 useless-checkpoint") :].splitlines()
        assert all(len(line) <= console.width for line in lines)
        assert long in " ".join(line.strip("│ ") for line in lines)
