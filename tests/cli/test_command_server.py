"""The warm server of ``snapcheck conform`` (``snapcheck.command_client``,
``snapcheck.command_server``): a command it runs prints and exits exactly as one run in
its own process, and the server never outlives what it should."""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from snapcheck import command_client
from snapcheck.command_client import BUSY, place, served
from tests.tla.test_tla_conform import two_messages
from tests.tla.test_tlc_server import _alive, _tlc_jvms

pytestmark = [pytest.mark.tlc, pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")]


@pytest.fixture
def runtime():
    """A private runtime directory of this test (short: a socket path has ~100 bytes)."""
    d = tempfile.mkdtemp(prefix="sc-", dir="/tmp")
    yield Path(d)
    for pid in _servers(Path(d)):
        _kill(pid)
    shutil.rmtree(d, ignore_errors=True)


def _env(runtime: Path, **extra) -> dict:
    return {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "SNAPCHECK_SERVER_IDLE": "60", **extra}


def snapcheck(*args, env, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "snapcheck", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600
    )


def _servers(runtime: Path) -> list[int]:
    """Pids of the servers whose pid files are in ``runtime`` and that are alive."""
    found = []
    for f in (runtime / "snapcheck").glob("*.pid"):
        try:
            pid = int(f.read_text())
        except (OSError, ValueError):
            continue
        if _alive(pid):
            found.append(pid)
    return found


def _kill(pid: int) -> None:
    for j in _tlc_jvms(pid):
        os.kill(j, signal.SIGKILL)
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _timeless(text: str) -> str:
    return re.sub(r"in \d+\.\d+s", "in Ts", text)


@pytest.fixture
def traces(tmp_path):
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    two_messages().write(good)
    two_messages(reordered=True).write(bad)
    return tmp_path


@pytest.mark.parametrize(
    "args, code",
    [
        (["conform", "good.jsonl"], 0),
        (["conform", "good.jsonl", "bad.jsonl"], 1),
        (["conform", "good.jsonl", "missing.jsonl"], 2),
        (["conform", "--timeout", "0", "good.jsonl"], 2),  # a usage error
        (["--max-line-bytes", "40", "conform", "good.jsonl"], 2),  # the program's own option
        (["conform", "--help"], 0),
    ],
)
def test_a_served_command_prints_and_exits_as_in_its_own_process(runtime, traces, args, code):
    alone = snapcheck(*args, env=_env(runtime, SNAPCHECK_SERVER="0"), cwd=traces)
    assert not _servers(runtime)
    first = snapcheck(*args, env=_env(runtime), cwd=traces)  # starts the server
    (pid,) = _servers(runtime)
    again = snapcheck(*args, env=_env(runtime), cwd=traces)
    assert _servers(runtime) == [pid]
    for served_run in (first, again):
        assert served_run.returncode == alone.returncode
        assert _timeless(served_run.stdout) == _timeless(alone.stdout)
        assert served_run.stderr == alone.stderr
    assert alone.returncode == code, alone.stdout + alone.stderr


def test_other_commands_and_a_disabled_server_run_in_their_own_process(runtime, traces):
    assert not served(["check", "good.jsonl"]) and served(["conform", "good.jsonl"])
    r = snapcheck("check", "good.jsonl", env=_env(runtime), cwd=traces)
    assert "good.jsonl" in r.stdout and not _servers(runtime)
    r = snapcheck("conform", "good.jsonl", env=_env(runtime, SNAPCHECK_SERVER="0"), cwd=traces)
    assert r.returncode == 0 and not _servers(runtime)


def test_a_busy_server_leaves_the_command_to_its_own_process(runtime, traces, monkeypatch):
    env = _env(runtime)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    where = place(command_client.key(env))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(where.socket))
    listener.listen(4)
    refused = []

    def busy():
        conn, _ = listener.accept()
        with conn:
            _, fds, _, _ = socket.recv_fds(conn, 1 << 16, 2)
            refused.append(len(fds))
            for fd in fds:
                os.close(fd)
            conn.sendall(BUSY)

    t = threading.Thread(target=busy, daemon=True)
    t.start()
    try:
        r = snapcheck("conform", "good.jsonl", "bad.jsonl", env=env, cwd=traces)
    finally:
        listener.close()
    assert refused == [2]
    assert r.returncode == 1 and "1 accepted, 1 rejected" in r.stdout


def test_the_clients_exit_codes_are_the_kits():
    from snapcheck.traces import errors

    assert (command_client.EXIT_INTERNAL, command_client.EXIT_INTERRUPTED) == (
        errors.EXIT_INTERNAL,
        errors.EXIT_INTERRUPTED,
    )


def test_a_server_of_another_version_of_the_kit_is_not_used(monkeypatch):
    env = {"PATH": "/usr/bin"}
    before = command_client.key(env)
    modules = command_client._modules()
    path, size, mtime = modules[0]
    monkeypatch.setattr(command_client, "_modules", lambda: [(path, size, mtime + 1), *modules[1:]])
    assert command_client.key(env) != before


def test_a_directory_others_can_enter_is_not_used(runtime, traces):
    (runtime / "snapcheck").mkdir(mode=0o755)
    os.chmod(runtime / "snapcheck", 0o755)
    r = snapcheck("conform", "good.jsonl", env=_env(runtime), cwd=traces)
    assert r.returncode == 0 and "1 accepted" in r.stdout
    assert not list((runtime / "snapcheck").iterdir())


def test_a_killed_server_is_replaced_and_an_idle_one_ends(runtime, traces):
    env = _env(runtime, SNAPCHECK_SERVER_IDLE="2")
    assert snapcheck("conform", "good.jsonl", env=env, cwd=traces).returncode == 0
    (pid,) = _servers(runtime)
    _kill(pid)  # its socket and pid file stay behind
    r = snapcheck("conform", "good.jsonl", env=env, cwd=traces)
    assert r.returncode == 0 and "1 accepted" in r.stdout
    (new,) = _servers(runtime)
    assert new != pid
    jvms = _tlc_jvms(new)
    assert jvms
    deadline = time.monotonic() + 30
    while (_alive(new) or any(_alive(j) for j in jvms)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(new) and not any(_alive(j) for j in jvms)
    assert not list((runtime / "snapcheck").glob("*.sock")) and not list((runtime / "snapcheck").glob("*.pid"))


def test_status_and_stop(runtime, traces):
    env = _env(runtime)
    assert snapcheck("conform", "good.jsonl", env=env, cwd=traces).returncode == 0
    (pid,) = _servers(runtime)
    r = snapcheck("server", "status", env=env)
    assert f"pid {pid}" in r.stdout and "(this environment)" in r.stdout and "1 server(s) running" in r.stdout
    r = snapcheck("server", "stop", env=env)
    assert r.returncode == 0 and "1 server(s) stopped" in r.stdout
    assert not _alive(pid)
    assert not list((runtime / "snapcheck").iterdir())  # no file of a server that is gone
    assert "0 server(s) running" in snapcheck("server", "status", env=env).stdout


def test_ctrl_c_in_the_client_ends_the_server_and_its_jvms(runtime, tmp_path):
    trace = tmp_path / "long.jsonl"
    sim = snapcheck("simulate", "-p", "abs-aligned", "-w", "q1", "--records", "2250", "-o", str(trace), env=os.environ)
    assert sim.returncode == 0, sim.stderr
    env = _env(runtime)
    client = subprocess.Popen(
        [sys.executable, "-m", "snapcheck", "conform", str(trace)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 60
    while not ((servers := _servers(runtime)) and _tlc_jvms(servers[0])) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert servers and client.poll() is None, "the command ended before a JVM of its server started"
    jvms = _tlc_jvms(servers[0])
    client.send_signal(signal.SIGINT)
    out, err = client.communicate(timeout=60)
    assert client.returncode == 130 and "interrupted" in err
    deadline = time.monotonic() + 20
    while (_alive(servers[0]) or any(_alive(j) for j in jvms)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(servers[0]) and not any(_alive(j) for j in jvms)
    assert not list((runtime / "snapcheck").glob("*.sock"))


def _ask(where, request: dict) -> bytes:
    """Send ``request`` with a pipe's write end as both streams; the server's first reply
    byte. The pipe must reach its end at once: the server
    keeps no copy of a client's stream it did not run a command on."""
    import json

    r, w = os.pipe()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(str(where.socket))
            socket.send_fds(conn, [json.dumps(request).encode()], [w, w])
            os.close(w)
            w = -1
            reply = conn.recv(1)
        conn_closed_at = time.monotonic()
        os.set_blocking(r, True)
        assert os.read(r, 1) == b""  # end of file: no descriptor of it left in the server
        assert time.monotonic() - conn_closed_at < 5
        return reply
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)


def test_a_server_runs_nothing_where_it_does_not_see_the_clients_directory(runtime, traces, monkeypatch):
    env = _env(runtime)
    assert snapcheck("conform", "good.jsonl", env=env, cwd=traces).returncode == 0
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    where = place(command_client.key(env))
    cwd_id = command_client.directory_id(str(traces))
    other = [cwd_id[0], cwd_id[1] + 1]  # the same path, another directory (another mount)
    assert _ask(where, {"argv": ["conform", "good.jsonl"], "cwd": str(traces), "cwd_id": other}) == BUSY
    gone = str(traces / "nowhere")
    assert _ask(where, {"argv": ["conform", "good.jsonl"], "cwd": gone, "cwd_id": cwd_id}) == BUSY
    r = snapcheck("conform", "good.jsonl", env=env, cwd=traces)  # the server still serves
    assert r.returncode == 0 and len(_servers(runtime)) == 1
