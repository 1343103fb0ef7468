"""Regenerate the generated sections of the docs (between ``<!-- generated:NAME ... -->``
and ``<!-- /generated:NAME -->`` markers) from the code they describe.

    python scripts/update_docs.py           # rewrite the sections in place
    python scripts/update_docs.py --check   # exit 1 and name the sections that drifted

Sections: ``catalogue`` in docs/protocols.md (``snapcheck protocols --markdown``);
``manifest`` in docs/specs.md (every TLC configuration of ``specs/manifest.json``: expected
result, states, depth, measured CPU time, and the totals); the mutant table of
docs/bug-zoo.md (``scripts/make_bug_zoo.py``, which links each bug to its public report).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from snapcheck.traces.atomic import write_atomic

ROOT = Path(__file__).resolve().parents[1]


def catalogue() -> str:
    from snapcheck.commands.protocols import catalogue_rows, markdown_tables

    return markdown_tables(catalogue_rows())


def manifest() -> str:
    import json

    configs = json.loads((ROOT / "specs" / "manifest.json").read_text())["configs"]
    default = [c for c in configs if not c.get("heavy")]
    heavy = [c for c in configs if c.get("heavy")]

    def cpu(cs) -> str:
        return f"{sum(c.get('cpu_seconds') or 0 for c in cs):.0f}"

    out = [
        f"{len(default)} default configurations, {cpu(default)} s of CPU in total; {len(heavy)} heavy ones "
        f"(`--heavy`), {cpu(heavy)} s.",
        "",
        "| spec | configuration | kind | expected | distinct states | depth | CPU s | what it shows |",
        "|---|---|---|---|---:|---:|---:|---|",
    ]
    for c in configs:
        t = c.get("cpu_seconds")
        kind = c["kind"] + (" (heavy)" if c.get("heavy") else "")
        out.append(
            f"| {c['spec']} | `{c['name']}` | {kind} | `{c['expected']}` | {c['distinct']} | {c['depth']} "
            f"| {'' if t is None else t} | {c['description']} |"
        )
    return "\n".join(out) + "\n"


SECTIONS = {("docs/protocols.md", "catalogue"): catalogue, ("docs/specs.md", "manifest"): manifest}


def replace_section(text: str, name: str, body: str) -> str:
    """``text`` with the body of generated section ``name`` replaced by ``body``."""
    pattern = re.compile(
        rf"(<!-- generated:{re.escape(name)}[^>]*-->\n)(.*?)(<!-- /generated:{re.escape(name)} -->)", re.S
    )
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
                write_atomic(f, new)
    if check and drifted:
        print("generated sections out of date (run python scripts/update_docs.py): " + ", ".join(drifted))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
