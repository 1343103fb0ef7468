"""A watchdog for protocol handlers that never return, and for a real Ctrl-C.

A handler stuck in a loop (waiting, say, for ``ctx.queued(ch)`` to change, which it
cannot while the handler runs: the simulator is single-threaded) would hang the
simulation, and with it a whole campaign. While a simulation runs, a real-time
interval timer (``SIGALRM``) looks ``LOOKS`` times per ``budget`` seconds at the
innermost protocol handler on the stack; once the same handler call (the same frame) has
been on the stack at ``LOOKS`` looks after the first that saw it (``budget`` seconds),
``HandlerTimeout`` is raised inside it, so a stuck handler is stopped between 1 and 1.25
budgets after it was called, and
raised again at every later look while that call still runs (a handler that swallows it
in a loop is stopped all the same). ``HandlerTimeout`` is a ``BaseException``, so an
``except Exception`` of the protocol's does not catch it. The simulator ends the run with
a ``protocol_error`` (``Simulator.run``), which names the handler and the line of the
protocol's code it was at.

It also notes whether ``SIGINT`` arrived (``Watch.interrupted``): a ``KeyboardInterrupt``
that a protocol raises itself is the protocol's error; one that Ctrl-C raised stops the
kit.

Only the main thread can take signals: elsewhere (and where ``setitimer`` does not
exist) the watchdog does nothing.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass

from snapcheck.reference.protocol import TaskProtocol

HANDLER_BUDGET = 60.0  # seconds a single protocol handler call may run
LOOKS = 4  # looks per budget: a stuck handler is stopped within 1.25 budgets


class HandlerTimeout(BaseException):
    """A protocol handler ran longer than the watchdog's budget (a ``BaseException``: a
    protocol's ``except Exception`` does not swallow it)."""


@dataclass
class Watch:
    """What the watchdog saw while it ran."""

    interrupted: bool = False  # SIGINT arrived (a real Ctrl-C, not a protocol's own raise)


def _innermost_handler(frame):
    """The innermost frame of a ``TaskProtocol`` method on ``frame``'s stack, or None."""
    while frame is not None:
        if isinstance(frame.f_locals.get("self"), TaskProtocol):
            return frame
        frame = frame.f_back
    return None


@contextmanager
def handler_watchdog(budget: float | None = None):
    """Raise ``HandlerTimeout`` in a protocol handler call that runs ``budget`` seconds
    (default ``HANDLER_BUDGET``) or more while the ``with`` block runs; yields the
    ``Watch`` (module docstring).

    >>> with handler_watchdog(0.05) as watch:
    ...     sum(range(10))
    45
    >>> watch.interrupted
    False
    """
    budget = HANDLER_BUDGET if budget is None else budget
    watch = Watch()
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield watch
        return
    since: dict = {}  # the handler frame seen at the last look -> when it was first seen

    def look(signum, frame) -> None:
        handler = _innermost_handler(frame)
        if handler is None:
            since.clear()
            return
        seen = since.get(handler, -1) + 1  # looks since it was first seen (a periodic timer: counting
        since.clear()  # them is steadier than the clock, whose reading at the LOOKS-th look can
        since[handler] = seen  # fall a hair short of the budget and wait one look more)
        if seen >= LOOKS:
            raise HandlerTimeout(f"{handler.f_code.co_name} has not returned after {budget:g} s")

    def interrupt(signum, frame) -> None:
        watch.interrupted = True
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, look)
    previous_int = (
        signal.signal(signal.SIGINT, interrupt)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler
        else None
    )
    signal.setitimer(signal.ITIMER_REAL, budget / LOOKS, budget / LOOKS)
    try:
        yield watch
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if previous_int is not None:
            signal.signal(signal.SIGINT, previous_int)
