"""The consoles the commands print through (rich): at a terminal they use its width;
piped to a file or a CI log they never wrap lines at 80 columns (at least 240 columns —
wide enough for every table snapcheck prints — or ``$COLUMNS`` if it asks for more).

What they print never carries a control character from the data: a trace's process
name, a protocol's name or a file name may hold an escape sequence that would rewrite
the terminal (clear it, set its title, move the cursor) or a carriage return that would
print a forged verdict over the real one. ``printable`` writes such characters as
escapes (``\x1b``); the consoles apply it to all they print but their own styling, and
``echo`` to the plain-text reports."""

from __future__ import annotations

import os
import re
import sys

import click
from rich.console import Console
from rich.segment import Segment

PIPED_WIDTH = 240


# C0 controls but newline and tab, DEL, C1 controls, line/paragraph separators, bidi overrides
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    r"""``text`` with every character that would act on a terminal written as an escape.

    >>> printable("O1\x07\x1b]0;pwned\x07 ok\r\n")
    'O1\\x07\\x1b]0;pwned\\x07 ok\\x0d\n'
    >>> printable("abc\u202edef")
    'abc\\u202edef'
    """
    return _UNPRINTABLE.sub(_escape, text)


def _escape(m: re.Match) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


class SafeConsole(Console):
    """A rich console whose output holds no control character of the data (``printable``);
    its own styling (control segments and the colour codes it adds) is kept."""

    def _render_buffer(self, buffer) -> str:
        return super()._render_buffer(s if s.control else Segment(printable(s.text), s.style) for s in buffer)


def echo(message: str = "", err: bool = False, nl: bool = True) -> None:
    """``click.echo`` of plain text, ``printable``."""
    click.echo(printable(message), err=err, nl=nl)


def make_console(stderr: bool = False) -> Console:
    """A rich console for stdout (or stderr): no highlighting, no hard wrapping of text."""
    stream = sys.stderr if stderr else sys.stdout
    width = None
    if not stream.isatty():
        try:
            width = max(PIPED_WIDTH, int(os.environ.get("COLUMNS", PIPED_WIDTH)))
        except ValueError:
            width = PIPED_WIDTH
    return SafeConsole(stderr=stderr, highlight=False, soft_wrap=True, width=width, emoji=False)
