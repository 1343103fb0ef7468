"""The client side of the warm command server (``command_server``): a ``snapcheck
conform`` command handed to a process that already has the kit imported and TLC's
JVMs running, so that a command costs what its traces cost, not a Python start, a
JVM start and the loading of TLC's classes (docs/specs.md, "Requirements and how TLC is run").

How a command reaches the server:

* A server belongs to one installation and one environment: its *key* hashes the
  Python executable and version, the path, size and modification time of every
  module of the kit, and the environment variables that change what a command does
  (``SNAPCHECK_*``, ``JAVA*``, ``PATH``, ``PYTHON*``, ``TMPDIR``, ...). An edited
  module, another ``$SNAPCHECK_TLC_JAR`` or another ``java`` on the ``PATH`` is
  another key, hence another server: a server never runs code or settings older
  than the command's.
* Its socket and pid file live in a directory of this user only (``0700``, owned by
  the user: ``$XDG_RUNTIME_DIR/snapcheck`` or ``$TMPDIR/snapcheck-UID``); anything
  else there, or a socket path too long for the system, and the command runs in its
  own process.
* The client passes its standard output and error (the descriptors themselves,
  ``SCM_RIGHTS``), its arguments and its working directory (which the server must
  see as the same directory, by device and inode); the server runs the
  command as the ``snapcheck`` program would, writing straight to the client's
  terminal or pipe, and sends back the exit code. No server yet: the client starts
  one (detached, in a session of its own) and waits for it. A server busy with
  another command answers so, and the command runs in its own process.
* Ctrl-C in the client ends the server, its JVMs with it: the next command starts
  a fresh one.

``SNAPCHECK_SERVER=0`` runs every command in its own process.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import socket
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

SERVER_ENV = "SNAPCHECK_SERVER"  # "0": never use a warm server
IDLE_ENV = "SNAPCHECK_SERVER_IDLE"  # seconds a server waits for its next command (default below)
IDLE_SECONDS = 300.0
SERVED = ("conform",)  # the commands a server runs (those that start JVMs)
START_SECONDS = 30.0  # how long a client waits for the server it started
# Environment variables that change what a command does, hence part of a server's key.
KEY_PREFIXES = ("SNAPCHECK_", "JAVA", "JDK_", "_JAVA_OPTIONS", "TLC", "PYTHON", "XDG_RUNTIME_DIR")
KEY_NAMES = ("PATH", "TMPDIR", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "COLUMNS")
NOT_KEY = ("PYTHONHASHSEED",)  # every command runs with 0 (``cli._pin_string_hashing``), as the server
# The exit codes of ``snapcheck.traces.errors`` (not imported: the client stays light).
EXIT_INTERNAL, EXIT_INTERRUPTED = 3, 130
ACCEPTED, BUSY = b"A", b"B"


class Place(NamedTuple):
    """Where the server of one key listens (``socket``), says who it is (``pid``) and
    holds its lock (``lock``: held for its whole life, so one server per key)."""

    socket: Path
    pid: Path
    lock: Path


def served(argv: list[str]) -> bool:
    """Whether ``argv`` (the program's arguments) is a command a server runs: its first
    word, after the program's own ``--max-line-bytes N``, is one of ``SERVED``.

    >>> served(["conform", "a.jsonl"]), served(["--max-line-bytes", "9", "conform", "a.jsonl"])
    (True, True)
    >>> served(["check", "a.jsonl"]), served(["--help"]), served([])
    (False, False, False)
    """
    i = 0
    while i < len(argv) and argv[i].startswith("--max-line-bytes"):
        i += 1 if "=" in argv[i] else 2
    return i < len(argv) and argv[i] in SERVED


def key(environ: dict[str, str] | None = None) -> str:
    """The key of the server a command of this installation and environment may use
    (see the module's docstring): 16 hex digits.

    >>> k = key({"PATH": "/usr/bin"})
    >>> len(k), k == key({"PATH": "/usr/bin", "PWD": "/elsewhere", "PYTHONHASHSEED": "0"}), k == key({"PATH": "/bin"})
    (16, True, False)
    """
    env = os.environ if environ is None else environ
    h = hashlib.blake2b(digest_size=8)
    h.update(f"{sys.executable}\0{sys.version}\0".encode(errors="surrogateescape"))
    for name in sorted(env):
        if (name.startswith(KEY_PREFIXES) or name in KEY_NAMES) and name not in NOT_KEY:
            h.update(f"{name}={env[name]}\0".encode(errors="surrogateescape"))
    for path, size, mtime in _modules():
        h.update(f"{path}\0{size}\0{mtime}\0".encode(errors="surrogateescape"))
    return h.hexdigest()


def _modules() -> list[tuple[str, int, int]]:
    """Path, size and modification time (ns) of every Python module of the kit."""
    roots = {str(Path(__file__).resolve().parent)}
    for sub in ("traces", "checker", "reference", "spark_validation", "flink"):
        spec = importlib.util.find_spec(f"snapcheck.{sub}")
        if spec is not None and spec.submodule_search_locations:
            roots.update(spec.submodule_search_locations)
    found = []
    for root in sorted(roots):
        for where, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    st = os.stat(os.path.join(where, name))
                    found.append((os.path.join(where, name), st.st_size, st.st_mtime_ns))
    return found


def home() -> Path:
    """The directory of this user's servers, created ``0700``; ``OSError`` if it is not
    a directory of this user that only this user can enter."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = Path(runtime, "snapcheck") if runtime else Path(tempfile.gettempdir(), f"snapcheck-{os.getuid()}")
    base.mkdir(mode=0o700, exist_ok=True)
    st = os.lstat(base)
    if not os.path.isdir(base) or os.path.islink(base) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise OSError(f"{base} is not a private directory of this user")
    return base


def directory_id(path: str) -> list[int]:
    """Device and inode of directory ``path``: a server runs a command only where it sees
    the client's working directory as the same directory (not another file system that
    mounts the same path, e.g. a container sharing the socket's directory).

    >>> directory_id("/") == directory_id("/.")
    True
    """
    st = os.stat(path)
    return [st.st_dev, st.st_ino]


def place(k: str) -> Place:
    """The socket, pid file and lock of the server of key ``k``."""
    base = home()
    return Place(base / f"conform-{k}.sock", base / f"conform-{k}.pid", base / f"conform-{k}.lock")


def run(argv: list[str]) -> int | None:
    """Run the ``snapcheck`` command ``argv`` on a warm server (starting one if need be)
    and return its exit code; None if no server takes it (disabled, busy, or none can
    start): the caller runs it in its own process. Output already written by a server
    that then fails is not written again: that is exit 3 with a message."""
    if os.environ.get(SERVER_ENV, "1") == "0" or not served(argv) or sys.stdout is None or sys.stderr is None:
        return None  # (a closed standard stream: the command's own process reports it)
    try:
        return _served(argv)
    except KeyboardInterrupt:  # a server running the command sees the connection close and ends
        print("snapcheck: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _served(argv: list[str]) -> int | None:
    try:
        where = place(key())
        cwd = os.getcwd()
        request = json.dumps({"argv": argv, "cwd": cwd, "cwd_id": directory_id(cwd)}).encode()
        conn = _connect(where) or _start(where)
    except (OSError, ValueError):
        return None
    if conn is None:
        return None
    with conn:
        try:
            socket.send_fds(conn, [request], [sys.stdout.fileno(), sys.stderr.fileno()])
            if _read(conn, 1) != ACCEPTED:  # busy, or ending: nothing was run
                return None
        except OSError:
            return None
        try:
            reply = _read(conn, 4)
        except OSError:
            reply = b""
    if len(reply) != 4:
        print(
            f"snapcheck: the warm server ended before the command did; run it again, or with {SERVER_ENV}=0",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    return struct.unpack(">i", reply)[0]


def _read(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def _connect(where: Place) -> socket.socket | None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(where.socket))
    except (FileNotFoundError, ConnectionRefusedError):
        conn.close()
        return None
    except OSError:
        conn.close()
        raise
    return conn


def _start(where: Place) -> socket.socket | None:
    """Start a server for ``where`` and connect to it (None: it did not come up)."""
    import subprocess

    if len(os.fsencode(where.socket)) >= 100:  # sockaddr_un holds about 108 bytes
        raise OSError(f"socket path too long: {where.socket}")
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "snapcheck.command_server", str(where.socket), str(where.pid), str(where.lock)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd="/",
        env=dict(os.environ, PYTHONHASHSEED="0"),  # as the ``snapcheck`` program runs (``cli._pin_string_hashing``)
        start_new_session=True,
    )
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        conn = _connect(where)
        if conn is not None:
            return conn
        if proc.poll() is not None:  # failed, or found another server of the key (gone since)
            return _connect(where)
        time.sleep(0.01)
    return None
