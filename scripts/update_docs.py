"""Regenerate the generated sections of the docs (between ``<!-- generated:NAME ... -->``
and ``<!-- /generated:NAME -->`` markers) from the code they describe.

    python scripts/update_docs.py           # rewrite the sections in place
    python scripts/update_docs.py --check   # exit 1 and name the sections that drifted

Sections: ``catalogue`` in docs/protocols.md (``snapcheck protocols --markdown``); the
mutant table of docs/bug-zoo.md (``scripts/make_bug_zoo.py``, which links each bug to its
public report).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def catalogue() -> str:
    from snapcheck.commands.protocols import catalogue_rows, markdown_tables

    return markdown_tables(catalogue_rows())


SECTIONS = {("docs/protocols.md", "catalogue"): catalogue}


def replace_section(text: str, name: str, body: str) -> str:
    """``text`` with the body of generated section ``name`` replaced by ``body``."""
    pattern = re.compile(rf"(<!-- generated:{re.escape(name)}[^>]*-->\n)(.*?)(<!-- /generated:{re.escape(name)} -->)",
                         re.S)
    if not pattern.search(text):
        raise SystemExit(f"update_docs: no generated section {name!r}")
    return pattern.sub(lambda m: m.group(1) + body + m.group(3), text, count=1)


def bug_zoo_table(check: bool) -> list[str]:
    """Regenerate (or, with ``check``, compare) the mutant table of docs/bug-zoo.md."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import make_bug_zoo

    return [] if make_bug_zoo.main(["--check"] if check else []) == 0 else ["docs/bug-zoo.md [mutants]"]


def main(argv: list[str]) -> int:
    check = "--check" in argv
    drifted = bug_zoo_table(check)
    for (path, name), make in SECTIONS.items():
        f = ROOT / path
        old = f.read_text()
        new = replace_section(old, name, make())
        if new != old:
            drifted.append(f"{path} [{name}]")
            if not check:
                f.write_text(new)
    if check and drifted:
        print("generated sections out of date (run python scripts/update_docs.py): " + ", ".join(drifted))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
