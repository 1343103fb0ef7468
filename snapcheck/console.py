"""The consoles the commands print through (rich): at a terminal they use its width;
piped to a file or a CI log they never wrap lines at 80 columns (at least 240 columns —
wide enough for every table snapcheck prints — or ``$COLUMNS`` if it asks for more)."""

from __future__ import annotations

import os
import sys

from rich.console import Console

PIPED_WIDTH = 240


def make_console(stderr: bool = False) -> Console:
    """A rich console for stdout (or stderr): no highlighting, no hard wrapping of text."""
    stream = sys.stderr if stderr else sys.stdout
    width = None
    if not stream.isatty():
        try:
            width = max(PIPED_WIDTH, int(os.environ.get("COLUMNS", PIPED_WIDTH)))
        except ValueError:
            width = PIPED_WIDTH
    return Console(stderr=stderr, highlight=False, soft_wrap=True, width=width, emoji=False)
