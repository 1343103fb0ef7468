"""Warm TLC: a process that runs many TLC jobs reuses its JVMs.

Each TLC job in a JVM of its own costs about 0.7 s of CPU before TLC reads the first
state (the JVM's start, loading and compiling TLC's classes, SANY), more than the
job itself for a campaign's trace of a few hundred events. A *TLC server*
(``java/TlcServer.java``) is a JVM, a child of this process, that runs the jobs it
is sent one after another; jobs after the first skip the JVM's start and run with
the JDK's classes already loaded and compiled.

What a job sees is what it would see in a JVM of its own: each job runs in a fresh
class loader (no static field of TLC survives a job), with its own system
properties, output and working directory, and TLC's exit code computed as
``tlc2.TLC.main`` computes it. A server is a child of one process: it ends when
that process closes it or exits (end of its input), after ``IDLE_SECONDS`` without
a job, and it is replaced after ``MAX_JOBS`` jobs, or sooner when it says that past
jobs left too much on its heap. A job the server cannot run (no ``javac`` to compile the server; a configuration
given as an absolute path; the server dying under it, e.g. TLC calling
``System.exit``), and a job whose exit code is not one of ``keep_exits`` (TLC's
verdicts: an error such as running out of memory may be the server's doing),
run again in a JVM of their own, and that server is closed: the verdict never
depends on the server. A job that exceeds its time limit kills its server.

``SNAPCHECK_TLC_SERVER=0`` runs every job in a JVM of its own.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from snapcheck.checker.tla.javac import compiled

SERVER_ENV = "SNAPCHECK_TLC_SERVER"
MAX_JOBS = 10  # jobs per server before it is replaced (past jobs' classes are not all collected)
MAX_IDLE = 2  # idle servers a process keeps; more are closed (each holds a heap)
IDLE_SECONDS = 30.0  # a server idle this long is closed
HEAD = ">iqii"  # a response's head: exit code, CPU nanoseconds, retire, output length


def keep_idle(seconds: float) -> None:
    """Keep idle servers for ``seconds`` (a process that serves commands keeps them as
    long as it waits for its next command)."""
    global IDLE_SECONDS
    IDLE_SECONDS = seconds


def enabled() -> bool:
    """Whether TLC jobs run in warm servers (``$SNAPCHECK_TLC_SERVER`` is not ``0``)."""
    return os.environ.get(SERVER_ENV, "1") != "0"


@dataclass
class Server:
    """One running TLC server and the temporary directory it owns (``java.io.tmpdir``)."""

    key: tuple
    proc: subprocess.Popen
    tmp: Path
    pid: int = field(default_factory=os.getpid)  # the process that started it
    jobs: int = 0
    idle_since: float = 0.0

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:  # a job's bytes still buffered for a server that is gone: a broken pipe
                    pass
        self.proc.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


_idle: list[Server] = []
_lock = threading.Lock()


def _forget_after_fork() -> None:
    """A forked child (e.g. a Spark Python worker) must not use its parent's servers."""
    _idle.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


@atexit.register
def close_all() -> None:
    """Close every idle server of this process."""
    with _lock:
        servers = [s for s in _idle if s.pid == os.getpid()]
        _idle.clear()
    for s in servers:
        s.close()


def close_larger_than(mb: float) -> None:
    """Close every idle server of this process whose JVM holds more than ``mb`` MiB
    resident (a JVM keeps the heap a long trace made it grow). For a process that keeps
    servers between commands (``snapcheck.command_server``)."""
    with _lock:
        mine = [s for s in _idle if s.pid == os.getpid()]
        large = [s for s in mine if resident_mb(s.proc.pid) > mb]
        _idle[:] = [s for s in _idle if not any(s is x for x in large)]
    for s in large:
        s.close()


def resident_mb(pid: int) -> float:
    """Resident MiB of process ``pid`` (Linux ``/proc``; 0 where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


def _take(key: tuple) -> Server | None:
    with _lock:
        for i, s in enumerate(_idle):
            if s.key == key and s.pid == os.getpid():
                del _idle[i]
                if s.proc.poll() is None:
                    return s
                s.close()
                return None
    return None


def _give_back(server: Server) -> None:
    if server.jobs >= MAX_JOBS:
        server.close()
        return
    server.idle_since = since = time.monotonic()
    with _lock:
        _idle.append(server)
        surplus = _idle[:-MAX_IDLE] if len(_idle) > MAX_IDLE else []
        del _idle[: len(surplus)]
    for s in surplus:
        s.close()
    reaper = threading.Timer(IDLE_SECONDS, _close_if_idle, (server, since))
    reaper.daemon = True
    reaper.start()


def _close_if_idle(server: Server, since: float) -> None:
    """Close ``server`` if it has been idle since ``since`` (it ran no job after)."""
    with _lock:
        if server.idle_since != since or not any(s is server for s in _idle):
            return
        _idle[:] = [s for s in _idle if s is not server]
    server.close()


def _start(key: tuple, jvm_flags: list[str], jar: Path, java: str) -> Server | None:
    classes = compiled("TlcServer", jar, java)
    if classes is None:
        return None
    tmp = Path(tempfile.mkdtemp(prefix="snapcheck-tlc-server-"))
    cmd = [
        java,
        *jvm_flags,
        "-Djava.system.class.loader=TlcServer$Loader",
        f"-Djava.io.tmpdir={tmp}",
        "-cp",
        str(classes),
        "TlcServer",
    ]
    try:
        proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True
        )
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        return None
    return Server(key, proc, tmp)


def _string(value: str) -> bytes:
    b = value.encode()
    return struct.pack(">i", len(b)) + b


def _strings(values: list[str]) -> bytes:
    return struct.pack(">i", len(values)) + b"".join(_string(v) for v in values)


def _read_exactly(stream, n: int) -> bytes | None:
    data = bytearray()
    while len(data) < n:
        chunk = stream.read(n - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


@dataclass
class Outcome:
    """What a server returned for one job: TLC's output and exit code (None: timed
    out), wall-clock seconds and the CPU seconds of the server's JVM during the job
    (of a job that timed out: its wall-clock seconds)."""

    output: str
    exit_code: int | None
    seconds: float
    cpu_seconds: float


def run(
    jvm_flags: list[str],
    jar: Path,
    java: str,
    directory: Path,
    classpath: list[Path],
    properties: dict[str, str],
    args: list[str],
    timeout: float,
    keep_exits: frozenset[int],
) -> Outcome | None:
    """Run TLC with ``args`` (the module given by its absolute path) as if in a JVM
    started with ``jvm_flags`` in ``directory``; None if no server could run it or
    TLC's exit code is not in ``keep_exits`` (the caller then starts a JVM of its own)."""
    key = (java, str(jar), tuple(jvm_flags))
    server = _take(key) or _start(key, jvm_flags, jar, java)
    if server is None:
        return None
    props = {"java.io.tmpdir": str(server.tmp), **properties}
    request = (
        _string(str(directory))
        + _strings([str(p) for p in [jar, *classpath]])
        + _strings([x for kv in props.items() for x in kv])
        + _strings(args)
    )
    timed_out = threading.Event()

    def kill() -> None:
        timed_out.set()
        try:
            os.killpg(server.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    start = time.monotonic()
    timer = threading.Timer(timeout, kill)
    timer.start()
    try:
        assert server.proc.stdin is not None and server.proc.stdout is not None  # PIPE
        server.proc.stdin.write(request)
        server.proc.stdin.flush()
        head = _read_exactly(server.proc.stdout, 20)
        body = _read_exactly(server.proc.stdout, struct.unpack(HEAD, head)[3]) if head else None
    except OSError:
        head = body = None
    finally:
        timer.cancel()
    elapsed = time.monotonic() - start
    if head is None or body is None:
        server.close()
        if timed_out.is_set():
            return Outcome("", None, elapsed, elapsed)
        return None
    exit_code, cpu_ns, tired, _ = struct.unpack(HEAD, head)
    server.jobs += 1
    if exit_code not in keep_exits:
        server.close()
        return None
    if tired:
        server.close()
    else:
        _give_back(server)
    return Outcome(body.decode("utf-8", "replace"), exit_code, elapsed, cpu_ns / 1e9)
