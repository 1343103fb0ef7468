"""``snapcheck server status|stop``: the warm servers that run ``snapcheck conform``
commands (``snapcheck.command_client``, ``snapcheck.command_server``)."""

from __future__ import annotations

import fcntl
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import click

from snapcheck.command_client import IDLE_ENV, IDLE_SECONDS, SERVER_ENV, home, key, place
from snapcheck.console import echo

STOP_WAIT = 10.0  # seconds ``stop`` waits for a server to finish its command and end


@dataclass
class Running:
    key: str
    pid: int
    lock: Path


def running() -> list[Running]:
    """The servers of this user that are up (each holds the lock of its key)."""
    try:
        base = home()
    except OSError:
        return []
    found = []
    for pidfile in sorted(base.glob("conform-*.pid")):
        k = pidfile.stem.removeprefix("conform-")
        try:
            pid = int(pidfile.read_text().strip())
        except (OSError, ValueError):
            continue
        if _held(place(k).lock):
            found.append(Running(k, pid, place(k).lock))
    return found


def _held(lock: Path) -> bool:
    """Whether a server holds ``lock`` (it cannot be taken now)."""
    try:
        with open(lock, "a") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return True
            fcntl.flock(f, fcntl.LOCK_UN)
            return False
    except OSError:
        return False


def _exists(pid: int) -> bool:
    """Whether process ``pid`` still exists (a server that let go of its lock may still
    be closing its JVMs)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


@click.group("server")
def server_group() -> None:
    """The warm servers of ``snapcheck conform``.

    A ``snapcheck conform`` command runs in a server that keeps the kit imported and TLC's
    JVMs warm between commands (started by the first command, ended after $SNAPCHECK_SERVER_IDLE
    seconds without one, default 300); commands of another installation, another version of
    the kit's modules or another environment use a server of their own. SNAPCHECK_SERVER=0
    runs every command in its own process.
    """


@server_group.command("status")
def status_cmd() -> None:
    """List this user's running servers (pid, key; the one this environment's commands use)."""
    mine = key()
    servers = running()
    for s in servers:
        echo(f"pid {s.pid}  key {s.key}{'  (this environment)' if s.key == mine else ''}")
    idle = os.environ.get(IDLE_ENV, f"{IDLE_SECONDS:g}")
    state = "off" if os.environ.get(SERVER_ENV, "1") == "0" else f"on, idle limit {idle} s"
    echo(f"{len(servers)} server(s) running; warm servers {state} ({SERVER_ENV}, {IDLE_ENV})")


def remove_stale() -> int:
    """Remove the files of servers that are not running (a server killed outright leaves
    its socket and pid file; every key leaves its lock file); returns how many keys."""
    try:
        base = home()
    except OSError:
        return 0
    stale = 0
    for lock in sorted(base.glob("conform-*.lock")):
        if _held(lock):
            continue
        stale += 1
        for f in place(lock.stem.removeprefix("conform-")):
            f.unlink(missing_ok=True)
    return stale


@server_group.command("stop")
def stop_cmd() -> None:
    """Stop this user's servers (a command running in one is finished first) and remove
    the files of those that are gone."""
    servers = running()
    for s in servers:
        try:
            os.kill(s.pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + STOP_WAIT
    left = list(servers)
    while left and time.monotonic() < deadline:
        left = [s for s in left if _held(s.lock) or _exists(s.pid)]
        time.sleep(0.05)
    gone = remove_stale()
    echo(
        f"{len(servers) - len(left)} server(s) stopped"
        + (f", {len(left)} still running" if left else "")
        + (f"; the files of {gone} key(s) without a server removed" if gone else "")
    )


def register(group: click.Group) -> None:
    group.add_command(server_group)
