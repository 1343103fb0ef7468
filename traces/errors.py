"""Errors raised for malformed traces: always ``FILE:LINE: reason``, never a traceback."""

from __future__ import annotations

from dataclasses import dataclass


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
