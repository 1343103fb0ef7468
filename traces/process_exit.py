"""Leaving what a command built to the operating system when its process ends right after.

Freeing the objects of a trace of millions of events (the events, and the checker's
history and indexes) visits and deallocates every one of them: a few percent of the time
it took to build them, and wasted work in a process that exits next, whose memory the
operating system takes back at once. So, in that case only, they are not freed:

* the ``snapcheck`` console script (``snapcheck.cli.console``) declares that its process
  ends when the command returns (``ends_after_command()``);
* a command opens ``holding()`` around its last piece of work (the last trace it checks),
  and ``hold(obj)`` there keeps ``obj`` to the end instead of letting its last reference go;
* once the command is done, the console script writes out the standard streams, runs the
  ``atexit`` handlers and, when something is held (``held()``), ends the process with
  ``os._exit`` (``exit_without_freeing``); every output file is written and closed by
  the command before it returns.

Everywhere else (the library, ``snapcheck.cli.main`` called in-process by tests and
benchmarks, a command's pieces of work before its last, any block outside ``holding()``)
``hold`` does nothing and objects are freed as usual, so nothing accumulates.

>>> with holding():
...     hold([1, 2, 3])
>>> held()
False
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

_ends = False  # the process ends when the command returns (the console script)
_holding = False  # inside ``holding()``, in such a process
_held: list = []


def ends_after_command() -> None:
    """Declare that this process ends when the command returns (the console script only)."""
    global _ends
    _ends = True


@contextmanager
def holding(last: bool = True) -> Iterator[None]:
    """Within the block, ``hold`` keeps what it is given until the process ends, if the
    process ends after the command and this is its ``last`` piece of work."""
    global _holding
    if not (_ends and last):
        yield
        return
    _holding = True
    try:
        yield
    finally:
        _holding = False


def hold(*objs: object) -> None:
    """Keep ``objs`` to the end of the process inside ``holding()`` (module docstring);
    elsewhere nothing: the caller's references are the last and go as usual."""
    if _holding:
        _held.extend(objs)


def held() -> bool:
    """Is anything held (so the process should end without freeing it)?"""
    return bool(_held)


def exit_without_freeing(code: int) -> NoReturn:
    """End the process with ``code`` after writing out the standard streams and running the
    ``atexit`` handlers, without freeing the objects still alive."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can be written
            pass
    atexit._run_exitfuncs()
    os._exit(code)
