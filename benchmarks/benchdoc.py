"""Write a benchmark's figures into its own section of docs/benchmarks.md.

Each benchmark owns the text between ``<!-- bench:NAME -->`` and
``<!-- /bench:NAME -->``; ``write_section`` replaces it (or appends the section)
and leaves every other section alone.
"""

from __future__ import annotations

import platform
import re
from datetime import date
from pathlib import Path

from snapcheck.traces.atomic import write_atomic

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
PREAMBLE = """# Benchmarks

Figures measured by the scripts in `benchmarks/` (each rewrites only its own
section below). Timings are from the machine named in each section; compare
the side-by-side ratios, which are robust to a noisy machine, more than the
absolute numbers.
"""


def machine() -> str:
    import os

    return (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {date.today().isoformat()}"
    )


def _section(name: str) -> re.Pattern:
    """Section ``name`` between its markers; group 1 is its text."""
    return re.compile(re.escape(f"<!-- bench:{name} -->") + r"\n?(.*?)\n?" + re.escape(f"<!-- /bench:{name} -->"), re.S)


def read_section(name: str, doc: Path = DOC) -> str:
    """The text of section ``name`` as it stands ('' when there is none)."""
    m = _section(name).search(doc.read_text()) if doc.exists() else None
    return m.group(1) if m else ""


def write_section(name: str, markdown: str, doc: Path = DOC) -> None:
    text = doc.read_text() if doc.exists() else PREAMBLE
    block = f"<!-- bench:{name} -->\n{markdown.strip()}\n<!-- /bench:{name} -->"
    pattern = _section(name)
    text = pattern.sub(lambda _m: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    write_atomic(doc, text)
