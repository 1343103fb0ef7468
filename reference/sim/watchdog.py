"""A watchdog for protocol handlers that never return.

A handler stuck in a loop (waiting, say, for ``ctx.queued(ch)`` to change, which it
cannot while the handler runs: the simulator is single-threaded) would hang the
simulation, and with it a whole campaign. While a simulation runs, a real-time
interval timer (``SIGALRM``) looks every ``budget`` seconds at the innermost protocol
handler on the stack; a handler call (the same frame) found at two consecutive looks
has run for ``budget`` seconds at least, and ``HandlerTimeout`` is raised inside it.
The simulator ends the run with a ``protocol_error`` (``Simulator.run``), which names the
handler and the line of the protocol's code it was at.

Only the main thread can take signals: elsewhere (and where ``setitimer`` does not
exist) the watchdog does nothing.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

from snapcheck.reference.protocol import TaskProtocol

HANDLER_BUDGET = 60.0  # seconds a single protocol handler call may run


class HandlerTimeout(Exception):
    """A protocol handler ran longer than the watchdog's budget."""


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
    (default ``HANDLER_BUDGET``) or more while the ``with`` block runs (module docstring).

    >>> with handler_watchdog(0.05):
    ...     sum(range(10))
    45
    """
    budget = HANDLER_BUDGET if budget is None else budget
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return
    seen: list = [None]

    def look(signum, frame) -> None:
        handler = _innermost_handler(frame)
        if handler is not None and handler is seen[0]:
            seen[0] = None
            raise HandlerTimeout(f"{handler.f_code.co_name} has not returned after {budget:g} s")
        seen[0] = handler

    previous = signal.signal(signal.SIGALRM, look)
    signal.setitimer(signal.ITIMER_REAL, budget, budget)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
