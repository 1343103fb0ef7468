"""Work done in a forked child process, its result sent back pickled, so that the memory
the work leaves fragmented is given back to the system.

Reading and mapping a trace of a million events leaves a Python process about 800 MiB
resident although about a third of that is live: the freed trace objects sit between
the mapped events in the allocator's arenas, and an arena goes back to the system only
when all of it is free. TLC's JVMs then run beside that memory. A child that does the
work gives all of its memory back when it exits; the parent holds only the result,
built afresh and compact (measured at 989,398 events: 340 MiB instead of 815 MiB, for
about 1.3 s of pickling; docs/benchmarks.md, "TLA+ trace validation").
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def call(fn: Callable[..., T], *args) -> T:
    """``fn(*args)``, computed in a forked child when the platform can fork, and computed
    here when it cannot or when the child does not deliver a result (it raised, died, or
    its result cannot be pickled): the outcome is always what ``fn(*args)`` here gives,
    exceptions included. ``fn`` must not print (the child shares this process's output)
    and its effects on this process's state are lost.

    >>> call(sum, [1, 2, 3])
    6
    >>> call(divmod, 7, 2)
    (3, 1)
    """
    if not hasattr(os, "fork"):
        return fn(*args)
    read, write = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return fn(*args)
    if pid == 0:  # the child: deliver the result, or nothing, and never return
        code = 1
        try:
            os.close(read)
            with os.fdopen(write, "wb") as out:
                pickle.dump(fn(*args), out, protocol=pickle.HIGHEST_PROTOCOL)
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    try:
        with os.fdopen(read, "rb") as received:
            result = pickle.load(received)
        delivered = True
    except Exception:  # nothing or a truncated result: the child raised or died
        delivered = False
    finally:
        _, status = os.waitpid(pid, 0)
    if delivered and os.waitstatus_to_exitcode(status) == 0:
        return result
    return fn(*args)
