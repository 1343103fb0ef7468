"""The errors every layer raises for a user's mistake, and the exit codes.

Exit codes everywhere: 0 clean, 1 a violation was found, 2 bad input or usage
(3: an internal error, a bug in snapcheck, which is never confused with a
verdict; 4, from ``snapcheck check`` only: nothing was judged, so there is no
verdict, neither clean nor a violation). A user mistake never shows a Python traceback: code raises
``UsageError`` (bad options, an unknown name, a protocol module that fails to
import) or ``TraceErrors`` (a malformed trace, always ``FILE:LINE: reason``), and
the command line prints the message and exits 2."""

from __future__ import annotations

from dataclasses import dataclass

EXIT_CLEAN = 0
EXIT_VIOLATION = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3  # a bug in snapcheck itself (prints a traceback), never a verdict
EXIT_NOT_JUDGED = 4  # check: no property applied to a trace (or none of those selected): no verdict
EXIT_INTERRUPTED = 130  # Ctrl-C (SIGINT), as shells report it: 128 + the signal number


class UsageError(ValueError):
    """Bad input or usage that is not a trace-format problem (exit 2)."""


class RecorderError(ValueError):
    """An event given to ``TraceRecorder`` (or a checked ``TraceWriter``) that the trace
    format does not allow, raised at the call that gave it; nothing was recorded."""


@dataclass(frozen=True)
class TraceError:
    """One problem in a trace, located by file and 1-based line number (0 = whole file)."""

    file: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}" if self.line else f"{self.file}: {self.reason}"


class TraceErrors(Exception):
    """A trace failed validation. ``errors`` holds the first problems found (capped);
    ``total`` counts all of them."""

    def __init__(self, errors: list[TraceError], total: int | None = None):
        self.errors = list(errors)
        self.total = total if total is not None else len(errors)
        super().__init__(self.render())

    def render(self) -> str:
        lines = [str(e) for e in self.errors]
        hidden = self.total - len(self.errors)
        if hidden > 0:
            lines.append(f"... and {hidden} more error(s) not shown")
        return "\n".join(lines)
