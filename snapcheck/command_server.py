"""The warm command server: a detached process that runs ``snapcheck conform``
commands for clients (``command_client``) with the kit already imported and TLC's
servers (``checker.tla.server``) kept warm between commands.

``python -m snapcheck.command_server SOCKET PIDFILE LOCKFILE`` (the client starts
it): takes the lock (another server of the key holds it: exit 0), listens on
``SOCKET``, writes its pid, and serves one command at a time. A command is run by
``snapcheck.cli.main`` with the client's standard output and error in place of its
own and in the client's working directory, so it prints, exits and fails exactly as
the ``snapcheck`` program would; its exit code goes back to the client. A client
that connects while a command runs is told the server is busy (it runs the command
itself).

The server ends, closing its JVMs, after ``$SNAPCHECK_SERVER_IDLE`` seconds without
a command (default ``command_client.IDLE_SECONDS``), on ``SIGTERM`` (``snapcheck
server stop``), after a command that left it holding more than ``MAX_RSS_MB`` of
memory (a very long trace), and when the client of the command it runs goes away
before the command ends (Ctrl-C): then its JVMs are killed with it.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import queue
import signal
import socket
import struct
import sys
import threading
import time
from pathlib import Path

from snapcheck.checker.tla import server as tlc_server
from snapcheck.command_client import ACCEPTED, BUSY, EXIT_INTERRUPTED, IDLE_ENV, IDLE_SECONDS, directory_id

MAX_RSS_MB = 768  # a server holding more after a command ends instead of idling with it
MAX_JVM_MB = 512  # an idle TLC JVM holding more after a command is closed (a long trace grew its heap)
LOCK_WAIT = 5.0  # seconds a new server waits for the lock of its key


class CommandServer:
    """One server: a thread accepting clients (``_accept``) and the main thread running
    their commands one at a time (``serve``)."""

    def __init__(self, listener: socket.socket, idle: float, files: list[Path]) -> None:
        self.listener = listener
        self.files = files  # the socket and pid file, removed when it ends
        self.idle = idle
        self.busy = threading.Event()  # a command accepted and not yet finished
        self.pending: queue.Queue[socket.socket] = queue.Queue()
        self.stop = threading.Event()
        self.gate = threading.Lock()  # between taking a client and ending

    def serve(self) -> None:
        """Run the commands clients send until idle for ``self.idle`` seconds or asked
        to stop (a command running then is finished first)."""
        threading.Thread(target=self._accept, daemon=True).start()
        last = time.monotonic()
        while not self.stop.is_set() and time.monotonic() - last < self.idle:
            try:
                conn = self.pending.get(timeout=0.5)
            except queue.Empty:
                continue
            self._command(conn)
            last = time.monotonic()
            if tlc_server.resident_mb(os.getpid()) > MAX_RSS_MB:
                break
            tlc_server.close_larger_than(MAX_JVM_MB)
            self.busy.clear()
        with self.gate:
            self.stop.set()
        while not self.pending.empty():
            _refuse(self.pending.get())

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:  # the listener is closed: the server is ending
                return
            with self.gate:
                take = not (self.busy.is_set() or self.stop.is_set())
                if take:
                    self.busy.set()
                    self.pending.put(conn)
            if not take:
                _refuse(conn)

    def _command(self, conn: socket.socket) -> None:
        done = threading.Event()
        fds: list[int] = []
        try:
            with conn:
                msg, fds, _, _ = socket.recv_fds(conn, 1 << 20, 2)
                request = json.loads(msg)
                if len(fds) != 2 or not _same_directory(request["cwd"], request["cwd_id"]):
                    conn.sendall(BUSY)  # not the client's directory (or a malformed request): its own process
                    return
                conn.sendall(ACCEPTED)
                threading.Thread(target=self._watch, args=(conn, done), daemon=True).start()
                code = _run(request["argv"], request["cwd"], fds)
                done.set()
                _close(fds)  # before the exit code: the client's reader sees the end of its output
                conn.sendall(struct.pack(">i", code))
        except (OSError, ValueError, KeyError, TypeError):
            pass
        finally:
            done.set()
            _close(fds)  # the client's streams: held no longer than its command

    def _watch(self, conn: socket.socket, done: threading.Event) -> None:
        """End the server, its JVMs first, if the client goes away while its command runs."""
        try:
            conn.recv(1)
        except OSError:
            pass
        if not done.is_set():
            _kill_children()
            for f in self.files:
                f.unlink(missing_ok=True)
            os._exit(EXIT_INTERRUPTED)


def _same_directory(path: str, seen: list[int]) -> bool:
    """Whether this process sees ``path`` as the directory the client saw (``seen``)."""
    try:
        return directory_id(path) == seen
    except OSError:  # not there at all
        return False


def _close(fds: list[int]) -> None:
    """Close the descriptors a client passed, once (``fds`` is emptied)."""
    while fds:
        os.close(fds.pop())


def _refuse(conn: socket.socket) -> None:
    """Tell a client the server is busy (it runs its command itself)."""
    with conn:
        try:
            _, fds, _, _ = socket.recv_fds(conn, 1 << 20, 2)
            _close(fds)
            conn.sendall(BUSY)
        except OSError:
            pass


def _kill_children() -> None:
    """SIGKILL every child process (TLC's JVMs) and its process group (Linux ``/proc``):
    at once, not when a TLC server notices its starter is gone (seconds or more)."""
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == me:
            pid = int(entry)
            try:
                os.killpg(pid, signal.SIGKILL) if os.getpgid(pid) == pid else os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def _run(argv: list[str], cwd: str, fds: list[int]) -> int:
    """Run ``snapcheck ARGV`` in ``cwd`` with ``fds`` as standard output and error (the
    caller closes ``fds``)."""
    from snapcheck.cli import main
    from snapcheck.console import survive_closed_pipes

    saved = [os.dup(1), os.dup(2)]
    streams = (sys.stdout, sys.stderr)
    try:
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        # streams buffered as the program's would be at this terminal or pipe
        out = io.BufferedWriter(io.FileIO(1, "w", closefd=False))
        sys.stdout = io.TextIOWrapper(out, line_buffering=os.isatty(1))
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), errors="backslashreplace", write_through=True)
        survive_closed_pipes()
        os.chdir(cwd)
        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
            if not isinstance(exc.code, int | None):  # as Python ends a program with sys.exit("…")
                print(exc.code, file=sys.stderr)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except OSError:
                pass
        return code
    finally:
        sys.stdout, sys.stderr = streams
        os.chdir("/")
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)


def _warm() -> None:
    """Import what a command needs before the first one arrives."""
    import snapcheck.checker.tla.conform  # noqa: F401
    import snapcheck.cli  # noqa: F401
    from snapcheck.reference.catalogue import tla_mappings

    tla_mappings()
    tlc_server.keep_idle(_idle())


def _idle() -> float:
    try:
        return max(1.0, float(os.environ.get(IDLE_ENV, IDLE_SECONDS)))
    except ValueError:
        return IDLE_SECONDS


def main(sock: str, pidfile: str, lockfile: str) -> int:
    lock = open(lockfile, "a")
    deadline = time.monotonic() + LOCK_WAIT
    while True:  # a server of this key that is ending releases it soon; one that is up, not
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError:
            if time.monotonic() > deadline:
                return 0
            time.sleep(0.05)
    _warm()
    Path(sock).unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sock)
    listener.listen(16)
    Path(pidfile).write_text(f"{os.getpid()}\n")
    server = CommandServer(listener, _idle(), [Path(sock), Path(pidfile)])
    signal.signal(signal.SIGTERM, lambda *_: server.stop.set())  # the command running is finished
    try:
        server.serve()
    finally:
        listener.close()
        tlc_server.close_all()
        for f in server.files:
            f.unlink(missing_ok=True)
        lock.close()
    os._exit(0)  # not the interpreter's teardown: freeing what a long trace left takes seconds


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
