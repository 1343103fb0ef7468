"""Regenerate the README's sample outputs from real runs of its two commands.

    python scripts/update_readme_outputs.py               # both (several minutes)
    python scripts/update_readme_outputs.py verify-all    # only the main job's
    python scripts/update_readme_outputs.py test          # only the test suite's

Each sample sits between ``<!-- output:NAME -->`` and ``<!-- /output:NAME -->``: a fenced
block with the command's output, abridged where a table would fill pages (the mutant
table of the Spark stage, the per-configuration lines of the TLC stage, pytest's
progress dots), followed by the prose already there after the block, which is kept.
The commands run exactly as the README gives them, from the repository root.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
COMMANDS = {"verify-all": ["./quickstart.sh"], "test": ["./quickstart.sh", "test", "--runslow"]}
TABLE_LINE = re.compile(r"^[┏┃┡│└┗┣┠┯┷━─]")


def run(name: str) -> str:
    res = subprocess.run(
        COMMANDS[name],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(Path.home()), "COLUMNS": "240"},
    )
    return res.stdout + res.stderr


def abridge_verify_all(text: str) -> str:
    """The main job's output without the per-configuration TLC lines and the mutant table."""
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("model checking ") and "configuration(s) with TLC" in line:
            out.append(line)
            j = i + 1
            while j < len(lines) and (
                lines[j].startswith("  ") or TABLE_LINE.match(lines[j]) or lines[j].startswith("TLC model checking")
            ):
                j += 1
            out.append("  ... one line per configuration, then the table of configurations ...")
            i = j
            continue
        if line.strip() == "Mutants" or line.startswith("Mutants ("):
            j = i + 1
            rows = 0
            while j < len(lines) and TABLE_LINE.match(lines[j]):
                rows += lines[j].startswith("│") and bool(lines[j].split("│")[1].strip())  # (not a wrapped line)
                j += 1
            out += [line, f"  ... the table of {rows} mutants: runs, caught, catch rate, runs to the first catch ..."]
            i = j
            continue
        if line.startswith("not explored "):
            i += 1
            continue
        out.append(line.rstrip())
        i += 1
    return "\n".join(out)


def abridge_test(text: str) -> str:
    """Setup lines, the first progress line, and pytest's closing summary."""
    lines = [ln.rstrip() for ln in text.splitlines()]
    setup = [ln for ln in lines if ln.startswith("[setup]")]
    progress = [ln for ln in lines if re.match(r"^[.sFxE]+ +\[ *\d+%\]$", ln)]
    summary = [ln for ln in lines if re.match(r"^=+ .*(passed|failed).* =+$", ln)]
    return "\n".join(setup + progress[:1] + ["..."] + summary[-1:])


def replace(name: str, body: str) -> None:
    text = README.read_text()
    pattern = re.compile(rf"(<!-- output:{re.escape(name)} -->\n```\n)(.*?)(\n```)", re.S)
    if not pattern.search(text):
        raise SystemExit(f"README.md has no <!-- output:{name} --> block")
    tmp = README.with_name(README.name + ".tmp")  # then renamed: an interrupted run leaves README intact
    tmp.write_text(pattern.sub(lambda m: m.group(1) + body + m.group(3), text, count=1))
    tmp.replace(README)


def main(argv: list[str]) -> int:
    names = argv or list(COMMANDS)
    for name in names:
        text = run(name)
        replace(name, abridge_verify_all(text) if name == "verify-all" else abridge_test(text))
        print(f"README.md: {name} output regenerated")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
