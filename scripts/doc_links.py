"""Do the repository's citations resolve? Links and document mentions in the
Markdown files and in the code, checked against the files and headings that exist.

``broken_references(root)`` returns one ``FILE:LINE: reason`` per problem:

* in every Markdown file, each relative link or image ``[text](target#anchor)``
  names an existing file (relative to the Markdown file), and an ``#anchor`` names a
  heading of the target (GitHub's heading anchors, ``github_slug``);
* in Markdown and in every other text file of the repository, each mention of a
  Markdown document resolves from the repository root (in Markdown, a bare name may
  also resolve from the mentioning file's directory). In code a document is named by
  its path from the root, such as docs/theory.md; a bare document name names no file
  there. A quoted heading right after a mention (docs/theory.md, "Recovery lines";
  docs/results.md ("CheckMate reproduction"); docs/benchmarks.md, section
  *Checker*) must start some heading of that document;
* a section *number* right after a document mention (the section sign, or
  "section" and a digit) is reported: cite the heading, whose name survives
  renumbering;
* in Markdown, a path in backticks that starts with a top-level directory of the
  repository (``checker/cuts.py``) must exist (globs and placeholders are skipped);
* in Markdown, a module path in backticks is the one a user imports: it starts with
  ``snapcheck.`` (``snapcheck.checker.check_trace``, not ``checker.check_trace``, which
  works only inside the repository; ``PACKAGE_DIRS``), file names aside (``traces.parquet``).

Names of files the kit *writes* (``OUTPUT_NAMES``) and string literals that are a
bare file name (a path being built in code) are not citations.

Usage::

    python scripts/doc_links.py          # print broken references; exit 1 if any
"""

from __future__ import annotations

import re
import subprocess
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Markdown files the kit writes at run time: mentioning them cites nothing.
OUTPUT_NAMES = frozenset({"summary.md"})

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_MD_MENTION = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w.-]+\.md)(#[\w-]+)?(?![\w-])")
_QUOTED = re.compile(r"""\s*(?:,|:)?\s*\(?\s*(?:section\s+)?(?:"([^"\n]+)"|“([^”\n]+)”|\*([^*\n]+)\*)""")
_SECTION_NUMBER = re.compile(r"\s*,?\s*(?:§|section\s+\d|sections\s+\d)")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_SKIP_SUFFIXES = {".png", ".svg", ".jpg", ".gif", ".jsonl", ".parquet", ".jar", ".class", ".pdf"}
#: The directories the build installs as ``snapcheck.<name>`` (pyproject.toml, package-dir).
PACKAGE_DIRS = ("traces", "checker", "reference", "spark_validation", "flink", "specs")
_FILE_SUFFIXES = _SKIP_SUFFIXES | {".md", ".py", ".json", ".toml", ".tla", ".cfg", ".java", ".txt", ".html", ".xml"}
_MODULE_PATH = re.compile(rf"(?<![\w./-])((?:{'|'.join(PACKAGE_DIRS)})(?:\.[A-Za-z_]\w*)+)")


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading (without duplicate suffixes).

    >>> github_slug("Worked example C: the domino effect")
    'worked-example-c-the-domino-effect'
    >>> github_slug("Channel state — completeness of a snapshot")
    'channel-state--completeness-of-a-snapshot'
    >>> github_slug("Changelog checkpoints (`checker/changelog.py`)")
    'changelog-checkpoints-checkerchangelogpy'
    """
    text = plain_heading(heading).lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def plain_heading(heading: str) -> str:
    """A heading's text as rendered: link targets, code and emphasis marks removed.

    >>> plain_heading("**Bold** [link](docs/theory.md) `code`")
    'Bold link code'
    """
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "")
    return re.sub(r"(\*+|(?<!\w)_+|_+(?!\w))", "", text).strip()


def headings(path: Path) -> list[str]:
    """The headings of a Markdown file, in order, outside fenced code blocks."""
    out, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else _HEADING.match(line)
        if m:
            out.append(m.group(2))
    return out


def anchors(path: Path) -> set[str]:
    """Every anchor of a Markdown file's headings, with GitHub's ``-1``, ``-2`` for repeats."""
    seen: dict[str, int] = {}
    out = set()
    for h in headings(path):
        slug = github_slug(h)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _starts_heading(path: Path, title: str) -> bool:
    want = _norm(title)
    return any(_norm(plain_heading(h)).startswith(want) for h in headings(path))


def _norm(text: str) -> str:
    return " ".join(plain_heading(text).lower().replace("‘", "'").replace("’", "'").split())


def _tracked_files(root: Path) -> list[Path]:
    """The repository's files: git's list when it is a checkout, else a walk."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=root, check=True, capture_output=True).stdout
        names = [n for n in out.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        names = [
            str(p.relative_to(root))
            for p in root.rglob("*")
            if p.is_file()
            and not any(part.startswith(".") or part.endswith(".egg-info") for part in p.relative_to(root).parts)
        ]
    return [root / n for n in sorted(names) if (root / n).is_file()]


def _top_dirs(root: Path, files: list[Path]) -> set[str]:
    return {f.relative_to(root).parts[0] for f in files if len(f.relative_to(root).parts) > 1}


class _Checker:
    def __init__(self, root: Path):
        self.root = root
        self.problems: list[str] = []

    def report(self, path: Path, lineno: int, reason: str) -> None:
        self.problems.append(f"{path.relative_to(self.root)}:{lineno}: {reason}")

    # -- one mention of a document, with what follows it ----------------------------------
    def mention(self, path: Path, lineno: int, line: str, m: re.Match, bases: list[Path]) -> None:
        name, anchor = m.group(1), m.group(2)
        if Path(name).name in OUTPUT_NAMES:
            return
        target = next((b / name for b in bases if (b / name).is_file()), None)
        if target is None:
            where = " or ".join(
                sorted(
                    {
                        str((b / name).resolve().relative_to(self.root.resolve()))
                        if (b / name).resolve().is_relative_to(self.root.resolve())
                        else str(b / name)
                        for b in bases
                    }
                )
            )
            self.report(path, lineno, f"{name} names no file of the repository (looked for {where})")
            return
        rest = line[m.end() :]
        if _SECTION_NUMBER.match(rest):
            self.report(path, lineno, f"{name} is cited by section number; cite the heading by name")
        if anchor:
            self.anchor(path, lineno, target, anchor[1:])
        q = _QUOTED.match(rest)
        if q:
            title = next(g for g in q.groups() if g)
            if not _starts_heading(target, title):
                self.report(path, lineno, f"{name} has no heading starting with {title!r}")

    def anchor(self, path: Path, lineno: int, target: Path, anchor: str) -> None:
        if target.suffix != ".md":
            self.report(path, lineno, f"#{anchor}: {target.name} is not a Markdown file")
        elif anchor not in anchors(target):
            self.report(path, lineno, f"#{anchor} is not a heading of {target.relative_to(self.root)}")

    # -- Markdown -----------------------------------------------------------------------
    def markdown(self, path: Path, top_dirs: set[str]) -> None:
        fenced = False
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _FENCE.match(line):
                fenced = not fenced
                continue
            if fenced:
                continue
            link_spans = []
            for m in _LINK.finditer(line):
                link_spans.append(m.span(1))
                self.link(path, lineno, m.group(1))
            for m in _MD_MENTION.finditer(line):
                if any(a <= m.start() < b for a, b in link_spans):
                    continue
                self.mention(path, lineno, line, m, [self.root, path.parent])
            for m in _CODE_SPAN.finditer(line):
                self.repo_path(path, lineno, m.group(1), top_dirs)
                self.module_path(path, lineno, m.group(1))

    def link(self, path: Path, lineno: int, target: str) -> None:
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
            return  # http:, https:, mailto:
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part) if file_part else path
        if not dest.exists():
            self.report(path, lineno, f"link target {target} does not exist")
        elif anchor:
            self.anchor(path, lineno, dest, anchor)

    def repo_path(self, path: Path, lineno: int, span: str, top_dirs: set[str]) -> None:
        cand = span.split()[0].rstrip(".,;:") if span.split() else ""
        first = cand.split("/", 1)[0]
        if "/" not in cand or first not in top_dirs or re.search(r"[*<>{}\[\]$]", cand):
            return
        file_part = cand.split("#", 1)[0].split("::", 1)[0]
        if not (self.root / file_part).exists():
            self.report(path, lineno, f"`{cand}` is not a path of the repository")

    def module_path(self, path: Path, lineno: int, span: str) -> None:
        for m in _MODULE_PATH.finditer(span):
            if Path(m.group(1)).suffix not in _FILE_SUFFIXES:
                self.report(path, lineno, f"`{m.group(1)}`: a user imports it as snapcheck.{m.group(1)}")

    # -- any other text file --------------------------------------------------------------
    def code(self, path: Path) -> None:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            return
        for lineno, line in enumerate(text.splitlines(), 1):
            for m in _MD_MENTION.finditer(line):
                before, after = line[: m.start()], line[m.end() :]
                if before[-1:] in "\"'" and after[:1] in "\"'":
                    continue  # a literal file name: code building a path
                self.mention(path, lineno, line, m, [self.root])


def broken_references(root: Path = ROOT) -> list[str]:
    """Every citation in the repository under ``root`` that does not resolve."""
    files = _tracked_files(root)
    top_dirs = _top_dirs(root, files)
    chk = _Checker(root)
    for f in files:
        if f.suffix == ".md":
            chk.markdown(f, top_dirs)
        elif f.suffix not in _SKIP_SUFFIXES:
            chk.code(f)
    return chk.problems


def main() -> int:
    problems = broken_references()
    for p in problems:
        print(p)
    print(f"{len(problems)} broken reference(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
