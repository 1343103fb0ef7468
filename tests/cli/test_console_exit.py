"""The ``snapcheck`` console script ends ``check`` without freeing the last trace
(``snapcheck.traces.process_exit``): what it prints, the files it writes and its exit code
are those of ``main`` run in-process, the ``atexit`` handlers still run, and in-process
runs never hold anything."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from snapcheck.traces import process_exit

EXAMPLES = Path(__file__).resolve().parents[2] / "traces" / "examples"
CLEAN = str(EXAMPLES / "checkmate_fig2a_consistent.jsonl")
ORPHAN = str(EXAMPLES / "checkmate_fig2b_orphan.jsonl")

# Runs the console entry point with an ``atexit`` handler that reports whether anything was
# held (so whether the process ended through ``exit_without_freeing``).
_CONSOLE = """
import atexit, sys
from snapcheck.cli import console
from snapcheck.traces import process_exit
atexit.register(lambda: print("held at exit:", process_exit.held(), file=sys.stderr))
sys.argv = ["snapcheck", *sys.argv[1:]]
console()
"""


def _console(*args: str) -> subprocess.CompletedProcess:
    # PYTHONHASHSEED=0 as the console script sets it (else it starts again, without this atexit handler)
    env = dict(os.environ, PYTHONHASHSEED="0")
    return subprocess.run([sys.executable, "-c", _CONSOLE, *args], capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize(
    "args",
    [
        ["check", CLEAN],
        ["check", "-v", ORPHAN],
        ["check", "--json", CLEAN, ORPHAN],
        ["check", "--json", "--property", "consistency", ORPHAN, CLEAN],
    ],
)
def test_console_check_prints_and_exits_as_main_does(snapcheck_cli, args, tmp_path):
    console_junit, main_junit = tmp_path / "console.xml", tmp_path / "main.xml"
    run = _console(*args[:1], "--junit", str(console_junit), *args[1:])
    code, out = snapcheck_cli(*args[:1], "--junit", str(main_junit), *args[1:])
    assert (run.returncode, run.stdout) == (code, out)
    assert console_junit.read_text() == main_junit.read_text()
    assert run.stderr.splitlines()[-1] == "held at exit: True"  # ended without freeing, atexit ran


def test_console_without_a_trace_read_ends_normally(tmp_path):
    run = _console("check", str(tmp_path / "missing.jsonl"))
    assert run.returncode == 2
    assert run.stderr.splitlines()[-1] == "held at exit: False"


def test_nothing_is_held_in_process(snapcheck_cli):
    assert snapcheck_cli("check", ORPHAN)[0] == 1
    assert not process_exit.held()


def test_hold_keeps_only_inside_holding_in_a_process_that_ends():
    code = (
        "from snapcheck.traces import process_exit as p\n"
        "p.hold(1)\n"
        "with p.holding(last=False):\n"
        "    p.hold(2)\n"
        "a = p.held()\n"
        "p.ends_after_command()\n"
        "p.hold(3)\n"
        "with p.holding(last=False):\n"
        "    p.hold(4)\n"
        "b = p.held()\n"
        "with p.holding():\n"
        "    p.hold(5)\n"
        "p.hold(6)\n"
        "print(a, b, p._held)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.stdout.split() == ["False", "False", "[5]"]


def test_ctrl_c_exits_130_with_one_line(tmp_path):
    """Ctrl-C (SIGINT) stops any command with the shell's code for it, 128 + 2, and one
    line saying so; not 2 (which means bad input) and not a traceback."""
    import signal
    import time

    env = dict(os.environ, PYTHONHASHSEED="0")
    proc = subprocess.Popen(
        [sys.executable, "-c", "from snapcheck.cli import main; main()", "simulate", "-p", "abs-aligned",
         "-w", "q1", "--records", "2000000", "-o", str(tmp_path / "t.jsonl")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        # as a terminal's foreground command: a test runner's worker (pytest-xdist) may run with
        # SIGINT ignored, which its children inherit (and then, rightly, ignore Ctrl-C)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    # well into the run: imports take well under a second of CPU; counted in CPU time, not
    # wall time, so a loaded machine (a whole test suite beside it) cannot make it early
    ticks, deadline = os.sysconf("SC_CLK_TCK"), time.monotonic() + 120
    while time.monotonic() < deadline:
        with open(f"/proc/{proc.pid}/stat") as f:
            utime, stime = map(int, f.read().rsplit(")", 1)[1].split()[11:13])
        if (utime + stime) / ticks >= 3:
            break
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (proc.returncode, err)
    assert err.strip().splitlines()[-1] == "snapcheck: interrupted" and "Traceback" not in err, err
    assert not (tmp_path / "t.jsonl").exists()  # an interrupted run writes no partial trace


@pytest.mark.parametrize(
    "args, code",
    [
        (["check", CLEAN], 0),
        (["check", "--json", CLEAN], 0),
        (["check", "-v", ORPHAN, CLEAN], 1),
        (["check", CLEAN, "/nonexistent/trace.jsonl"], 2),  # its reasons go to stderr
        (["protocols"], 0),  # a rich table (rich ends the process with exit 1 at a closed pipe)
    ],
)
def test_a_closed_output_pipe_leaves_the_exit_code_to_the_verdict(args, code, tmp_path):
    """``snapcheck check … | head -1``: the reader closes the pipe before the command
    writes; the command goes on judging every trace, its output discarded, and exits
    with the verdict's code (under ``pipefail`` CI sees that code, not exit 1 for a
    clean trace)."""
    junit = tmp_path / "x.xml"
    extra = ["--junit", str(junit)] if args[0] == "check" else []
    for closed, unbuffered in (("stdout", ""), ("stderr", ""), ("stdout", "1"), ("stderr", "1")):
        env = dict(os.environ, PYTHONHASHSEED="0", PYTHONUNBUFFERED=unbuffered)
        streams = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, closed: subprocess.PIPE}
        proc = subprocess.Popen([sys.executable, "-m", "snapcheck", *args[:1], *extra, *args[1:]], env=env, **streams)
        getattr(proc, closed).close()  # the reader is gone before snapcheck has started
        assert proc.wait(timeout=120) == code, (closed, unbuffered)
    if extra:  # every trace was judged and reported after the pipe closed
        assert junit.read_text().count("<testsuite ") == sum(a.endswith(".jsonl") for a in args)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("args", [["check", CLEAN], ["check", "--json", ORPHAN], ["validate-trace", CLEAN]])
def test_an_output_that_cannot_be_written_is_exit_2_naming_it_never_a_traceback(args):
    """Standard output on a full disk: the command cannot deliver its verdict, so it says
    why, exit 2 (it was a traceback and exit 3, or — text through click, whose probe write
    of no bytes failed first — no output, no message and exit 0)."""
    with open("/dev/full", "w") as full:
        env = dict(os.environ, PYTHONHASHSEED="0")
        res = subprocess.run(
            [sys.executable, "-c", _CONSOLE, *args],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            env=env,
        )
    assert res.returncode == 2, res.stderr
    assert "snapcheck: cannot write to standard output: No space left on device" in res.stderr
    assert "Traceback" not in res.stderr
