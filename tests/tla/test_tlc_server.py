"""Warm TLC servers (``checker.tla.server``): a job run in a server gives exactly the
result it gives in a JVM of its own, whatever ran in that server before it; a server
that dies or hangs never costs a verdict."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from snapcheck.checker.tla import conform, server, tlc
from snapcheck.checker.tla.tlc import TlcJob, run_tlc
from snapcheck.reference.catalogue import tla_mappings
from snapcheck.traces import TraceRecorder

pytestmark = pytest.mark.tlc
real_cold = tlc._run_cold

COUNTER = (
    "---- MODULE Counter ----\nEXTENDS Naturals\nVARIABLE x\nInit == x = 0\n"
    "Next == x < {n} /\\ x' = x + 1\nSpec == Init /\\ [][Next]_x\nSmall == x < 3\n====\n"
)


def _specs(tmp_path: Path) -> list[TlcJob]:
    """Jobs whose settings differ (deadlock checking, the specification and its
    variables, the invariant), in an order where a setting carried over from the
    previous job would change the verdict."""
    jobs = []
    for n, cfg, deadlock in [(5, "ok", False), (5, "ok", True), (7, "bad", True), (4, "ok", False), (2, "bad", True)]:
        d = tmp_path / f"c{len(jobs)}"
        d.mkdir()
        (d / "Counter.tla").write_text(COUNTER.format(n=n))
        (d / "ok.cfg").write_text("SPECIFICATION Spec\n")
        (d / "bad.cfg").write_text("SPECIFICATION Spec\nINVARIANT Small\n")
        jobs.append(TlcJob(d, "Counter", f"{cfg}.cfg", deadlock=deadlock))
    other = tmp_path / "other"
    other.mkdir()  # another spec, other variable names, in the same server
    (other / "Pair.tla").write_text(
        "---- MODULE Pair ----\nEXTENDS Naturals\nVARIABLES y, x\nInit == y = 0 /\\ x = 1\n"
        "Next == y < 3 /\\ y' = y + 1 /\\ x' = x\nSpec == Init /\\ [][Next]_<<y, x>>\nSmall == x = 1\n====\n"
    )
    (other / "p.cfg").write_text("SPECIFICATION Spec\nINVARIANT Small\n")
    jobs.insert(2, TlcJob(other, "Pair", "p.cfg"))
    return jobs


def _summary(r) -> tuple:
    return (r.result, r.exit_code, r.distinct, r.generated, r.depth, r.trace)


def test_a_server_gives_every_job_the_result_of_a_jvm_of_its_own(tmp_path, monkeypatch):
    jobs = _specs(tmp_path)
    monkeypatch.setenv(server.SERVER_ENV, "0")
    cold = [_summary(run_tlc(j)) for j in jobs]
    assert [c[0] for c in cold] == ["pass", "deadlock", "deadlock", "invariant:Small", "pass", "deadlock"]
    monkeypatch.setenv(server.SERVER_ENV, "1")
    server.close_all()
    warm = [_summary(run_tlc(j)) for j in jobs]
    assert warm == cold
    assert len(server._idle) == 1 and server._idle[0].jobs == len(jobs)  # one server ran them all


def test_a_server_that_died_costs_no_verdict(tmp_path, monkeypatch):
    monkeypatch.setenv(server.SERVER_ENV, "1")
    server.close_all()
    first, second = _specs(tmp_path)[:2]
    assert run_tlc(first).result == "pass"
    (s,) = server._idle
    os.killpg(s.proc.pid, signal.SIGKILL)
    s.proc.wait()
    assert run_tlc(second).result == "deadlock"  # a new server, or a JVM of its own


def test_a_server_that_dies_before_reading_its_job_costs_no_verdict(tmp_path, monkeypatch):
    """A server JVM that exits at its start (e.g. JVM flags it refuses): writing the job
    breaks the pipe, and closing the server must not raise on the bytes it could not
    take; the job runs in a JVM of its own."""
    import subprocess

    monkeypatch.setenv(server.SERVER_ENV, "1")
    server.close_all()

    def dead_on_arrival(key, jvm_flags, jar, java):
        proc = subprocess.Popen(["true"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
        proc.wait()
        tmp = tmp_path / "dead-server"
        tmp.mkdir(exist_ok=True)
        return server.Server(key, proc, tmp)

    monkeypatch.setattr(server, "_start", dead_on_arrival)
    first, second = _specs(tmp_path)[:2]
    assert run_tlc(first).result == "pass"
    assert run_tlc(second).result == "deadlock"
    assert not server._idle


def test_a_job_past_its_time_limit_kills_its_server_and_the_next_job_runs(tmp_path, monkeypatch):
    monkeypatch.setenv(server.SERVER_ENV, "1")
    server.close_all()
    (tmp_path / "Forever.tla").write_text(
        "---- MODULE Forever ----\nEXTENDS Naturals\nVARIABLE x\nInit == x = 0\n"
        "Next == x' = x + 1\nSpec == Init /\\ [][Next]_x\n====\n"
    )
    (tmp_path / "f.cfg").write_text("SPECIFICATION Spec\n")
    jobs = _specs(tmp_path)
    assert run_tlc(jobs[0]).result == "pass"  # a warm server now waits
    r = run_tlc(TlcJob(tmp_path, "Forever", "f.cfg", timeout=3))
    assert r.result == "timeout" and r.exit_code is None and r.seconds < 60
    assert not server._idle  # it was killed
    assert run_tlc(jobs[1]).result == "deadlock"


def test_a_server_is_replaced_after_its_jobs(tmp_path, monkeypatch):
    monkeypatch.setenv(server.SERVER_ENV, "1")
    monkeypatch.setattr(server, "MAX_JOBS", 2)
    server.close_all()
    jobs = _specs(tmp_path)[:3]
    assert [run_tlc(j).result for j in jobs] == ["pass", "deadlock", "deadlock"]
    assert len(server._idle) == 1 and server._idle[0].jobs == 1  # the first server retired after 2 jobs


def test_an_error_is_judged_in_a_jvm_of_its_own(tmp_path, monkeypatch):
    """TLC ending in an error (here a parse error) may be the server's doing (e.g. out of
    memory after past jobs): the job runs again in a JVM of its own, the server is closed."""
    monkeypatch.setenv(server.SERVER_ENV, "1")
    server.close_all()
    jobs = _specs(tmp_path)
    assert run_tlc(jobs[0]).result == "pass"
    (first,) = server._idle
    (jobs[1].directory / "Counter.tla").write_text("---- MODULE Counter ----\nVARIABLE x\nInit == x = \n====\n")
    cold = []
    monkeypatch.setattr(tlc, "_run_cold", lambda *a: cold.append(a) or real_cold(*a))
    r = run_tlc(jobs[1])
    assert r.result == "parse-error" and len(cold) == 1
    assert first.proc.poll() is not None and not server._idle


def test_an_idle_server_is_closed(tmp_path, monkeypatch):
    monkeypatch.setenv(server.SERVER_ENV, "1")
    monkeypatch.setattr(server, "IDLE_SECONDS", 3.0)
    server.close_all()
    assert run_tlc(_specs(tmp_path)[0]).result == "pass"
    (s,) = server._idle
    s.proc.wait(timeout=60)  # closed by the reaper, not by this test
    deadline = time.monotonic() + 30
    while s.tmp.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not server._idle and not s.tmp.exists()


def _two_messages(path: Path, reordered: bool) -> str:
    """a sends two messages to b; b processes them in order, or the second first."""
    rec = TraceRecorder(["a", "b"], [("a>b", "a", "b")], protocol="chandy-lamport")
    m1, m2 = rec.send("a", "a>b"), rec.send("a", "a>b")
    for m in (m2, m1) if reordered else (m1, m2):
        rec.recv("b", m)
    rec.write(path)
    return str(path)


def test_each_conformance_job_reads_its_own_trace(tmp_path, monkeypatch):
    """TLC's operator override ``TraceLog`` keeps the trace it read in a static field:
    a server sharing classes between jobs would validate the first job's trace again."""
    paths = [
        _two_messages(tmp_path / f"{i}.jsonl", reordered) for i, reordered in enumerate([False, True, False, True])
    ]

    def verdicts() -> list[tuple]:
        return [
            (v.verdict, v.matched, v.location)
            for path in paths
            for v in conform.conform([path], tla_mappings())  # one TLC job per trace
        ]

    monkeypatch.setenv(server.SERVER_ENV, "0")
    cold = verdicts()
    assert [v[0] for v in cold] == [conform.ACCEPT, conform.REJECT] * 2
    monkeypatch.setenv(server.SERVER_ENV, "1")
    server.close_all()
    assert verdicts() == cold
    assert server._idle and server._idle[0].jobs >= len(paths)


def _tlc_jvms(pid: int) -> list[int]:
    """The TLC JVMs (a server or ``tlc2.TLC``) whose parent is ``pid`` (Linux ``/proc``;
    not the ``java -version`` or ``javac`` the kit runs first)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if int(stat[1]) == pid and (b"tlc2.TLC" in cmdline or b"TlcServer\x00" in cmdline):
                found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


STARTER = (
    "import sys\nfrom pathlib import Path\nfrom snapcheck.checker.tla.tlc import TlcJob, run_tlc\n"
    "run_tlc(TlcJob(Path(sys.argv[1]), 'Counter', 'ok.cfg', timeout=600))\n"
)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
@pytest.mark.parametrize("warm", ["1", "0"])
def test_a_tlc_job_whose_starter_is_killed_stops_with_it(tmp_path, warm):
    """A job runs in a JVM of its own session (a Ctrl-C of the command must not reach
    it first); when the process that started it is killed, not ended, the JVM stops
    too, in the middle of its job, instead of running for minutes for no one."""
    import subprocess
    import sys

    (tmp_path / "Counter.tla").write_text(COUNTER.format(n=10**9))  # minutes of TLC
    (tmp_path / "ok.cfg").write_text("SPECIFICATION Spec\n")
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTER, str(tmp_path)], env={**os.environ, server.SERVER_ENV: warm}
    )
    try:
        deadline = time.monotonic() + 120
        while not (jvms := _tlc_jvms(starter.pid)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert jvms, "no TLC JVM started"
        time.sleep(3)  # well into the job
        assert all(_alive(j) for j in jvms)
        starter.kill()
        starter.wait()
        deadline = time.monotonic() + 20
        while any(_alive(j) for j in jvms) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(j) for j in jvms)
    finally:
        starter.kill()
        for j in _tlc_jvms(starter.pid):
            os.kill(j, signal.SIGKILL)
