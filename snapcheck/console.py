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

import io
import os
import re
import sys

import click
from rich.console import Console
from rich.segment import Segment

PIPED_WIDTH = 240


# characters that act on a terminal or cannot be seen: C0 controls but newline and tab, DEL, C1
# controls, line/paragraph separators, bidi controls (U+061C, U+200E/F, U+202A-E, U+2066-9),
# invisible formatting characters (soft hyphen, combining grapheme joiner, Hangul and Mongolian
# fillers, zero-width spaces and joiners, word joiner, variation selectors, U+FEFF, tag characters)
INVISIBLE = (
    "\u00ad\u034f\u061c\u115f\u1160\u180e\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\u3164"
    "\ufe00-\ufe0f\ufeff\uffa0\U000e0000-\U000e007f\U000e0100-\U000e01ef"
)
_UNPRINTABLE = re.compile(rf"[\x00-\x08\x0b-\x1f\x7f-\x9f{INVISIBLE}]")


def printable(text: str) -> str:
    r"""``text`` with every character that would act on a terminal written as an escape.

    >>> printable("O1\x07\x1b]0;pwned\x07 ok\r\n")
    'O1\\x07\\x1b]0;pwned\\x07 ok\\x0d\n'
    >>> printable("abc\u202edef")
    'abc\\u202edef'
    >>> printable("tag\U000e0041")
    'tag\\U000e0041'
    """
    return _UNPRINTABLE.sub(escape_char, text)


def escape_char(m: re.Match) -> str:
    r"""The escape that stands for the one character ``m`` matched (``\x07``, ``\u202e``).

    >>> escape_char(re.match(".", "\u202e"))
    '\\u202e'
    """
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" if c < 0x10000 else f"\\U{c:08x}"


class SafeConsole(Console):
    """A rich console whose output holds no control character of the data (``printable``);
    its own styling (control segments and the colour codes it adds) is kept."""

    def _render_buffer(self, buffer) -> str:
        return super()._render_buffer(s if s.control else Segment(printable(s.text), s.style) for s in buffer)


class _DiscardWhenClosed(io.FileIO):
    r"""The raw file of a standard stream that outlives its reader: once the pipe it writes
    to is closed (``snapcheck check … | head -1``), the descriptor is pointed at
    ``os.devnull`` and what is written, then and later, is discarded instead of raising.

    >>> r, w = os.pipe(); os.close(r)              # a pipe whose reader has gone
    >>> out = _DiscardWhenClosed(w, "w")
    >>> out.write(b"lost\n"), out.write(b"lost too\n")
    (5, 9)
    >>> out.close()
    """

    def write(self, b) -> int:
        if not len(b):  # a probe (click writes b"" to find the binary stream): /dev/full refuses even that
            return 0
        try:
            return super().write(b)
        except BrokenPipeError:
            self._discard()
            return super().write(b)
        except OSError as exc:  # a full disk, an I/O error: the output is lost, the command must say so
            self._discard()
            raise OutputUnwritable("standard output" if self.fileno() == 1 else "standard error", exc) from None

    def _discard(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self.fileno())
        os.close(devnull)


class OutputUnwritable(Exception):
    """A standard stream of the ``snapcheck`` program could not be written (not a closed
    pipe, which ``_DiscardWhenClosed`` discards): bad output, exit 2, never a traceback."""

    def __init__(self, stream: str, exc: OSError) -> None:
        super().__init__(f"cannot write to {stream}: {exc.strerror or exc}")


def survive_closed_pipes() -> None:
    """Let stdout and stderr outlive their reader (``_DiscardWhenClosed``) for the rest of
    the process: a command whose output pipe is closed early goes on to its verdict, and
    exits with the verdict's code, its output discarded. (Left to themselves, click and
    rich end the command with exit 1 at the first write to a closed pipe, the code of a
    violation.) For the ``snapcheck`` program only: in-process callers keep their streams.

    A child that prints after its reader has gone still exits with its own code:

    >>> import subprocess
    >>> child = subprocess.Popen([sys.executable, "-c", "import sys, time; from snapcheck.console import "
    ...     "survive_closed_pipes; survive_closed_pipes(); time.sleep(0.3); print('lost', flush=True); sys.exit(7)"],
    ...     stdout=subprocess.PIPE)
    >>> child.stdout.close(); child.wait(timeout=60)
    7
    """
    for name in ("stdout", "stderr"):
        old = getattr(sys, name)
        if old is None:  # started with the descriptor closed
            continue
        old.flush()
        raw = _DiscardWhenClosed(old.fileno(), "w", closefd=False)
        unbuffered = isinstance(old.buffer, io.RawIOBase)  # as Python makes stderr, or both with -u
        new = io.TextIOWrapper(
            raw if unbuffered else io.BufferedWriter(raw),
            encoding=old.encoding,
            errors=old.errors,
            line_buffering=old.line_buffering,
            write_through=old.write_through,
        )
        setattr(sys, name, new)


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
