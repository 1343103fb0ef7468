"""Every citation in the repository resolves: relative links and anchors in the Markdown
files, document mentions (docs/theory.md, "Recovery lines") in the docs and the code, and
repository paths named in the docs (``scripts/doc_links.py``)."""

from __future__ import annotations

from pathlib import Path

from doc_scripts import ROOT, load

MD = ".md"  # fixtures spell file names with it, so this file cites nothing itself
DL = load("doc_links")


def test_every_citation_of_the_repository_resolves():
    problems = DL.broken_references(ROOT)
    assert problems == [], "broken references (python scripts/doc_links.py lists them):\n" + "\n".join(problems)


def test_the_documentation_the_code_cites_exists():
    for name in ("theory", "bug-zoo"):
        doc = ROOT / "docs" / f"{name}{MD}"
        assert doc.is_file() and DL.headings(doc), doc


def test_github_slugs():
    assert DL.github_slug("Worked example C: the domino effect") == "worked-example-c-the-domino-effect"
    assert DL.github_slug("Channel state — completeness of a snapshot") == "channel-state--completeness-of-a-snapshot"
    assert DL.github_slug("Pitfall: Algorithm 2 as printed") == "pitfall-algorithm-2-as-printed"
    assert DL.github_slug("`abs-cyclic-as-printed`") == "abs-cyclic-as-printed"
    assert DL.github_slug("Netzer and Xu's theorems") == "netzer-and-xus-theorems"
    assert DL.github_slug("Output (`--out DIR`)") == "output---out-dir"
    assert DL.github_slug("Ünïcode stays") == "ünïcode-stays"


def test_repeated_headings_get_numbered_anchors(tmp_path):
    doc = tmp_path / f"a{MD}"
    doc.write_text("# T\n\n## Notes\n\n```\n## not a heading\n```\n\n## Notes\n")
    assert DL.headings(doc) == ["T", "Notes", "Notes"]
    assert DL.anchors(doc) == {"t", "notes", "notes-1"}


def _fake_repo(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "docs" / f"theory{MD}").write_text(
        "# Theory\n\n## Recovery lines\n\n### RL-FIX\n\n## Z-paths and Z-cycles\n"
    )
    (tmp_path / "pkg" / "mod.py").write_text("x = 1\n")
    return tmp_path


def _problems(tmp_path: Path, name: str, text: str) -> list[str]:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return [p for p in DL.broken_references(tmp_path) if p.startswith(name + ":")]


def test_markdown_links_and_anchors(tmp_path):
    root = _fake_repo(tmp_path)
    good = (
        f"See [lines](theory{MD}#recovery-lines), [RL-FIX](theory{MD}#rl-fix), [top](#guide), "
        "[web](https://example.org/x#y), `pkg/mod.py` and `pkg/*.py`.\n"
    )
    assert _problems(root, f"docs/guide{MD}", "# Guide\n\n" + good) == []
    bad = _problems(
        root,
        f"docs/guide{MD}",
        f"# Guide\n\n[a](missing{MD}) [b](theory{MD}#no-such-heading) [c](#nowhere)\n\n`pkg/gone.py`\n",
    )
    assert len(bad) == 4
    assert any(f"link target missing{MD}" in p for p in bad)
    assert any("#no-such-heading is not a heading" in p for p in bad)
    assert any("#nowhere is not a heading" in p for p in bad)
    assert any("`pkg/gone.py` is not a path" in p for p in bad)


def test_module_paths_in_markdown_are_the_ones_a_user_imports(tmp_path):
    root = _fake_repo(tmp_path)
    good = (
        "Python: `snapcheck.spark_validation.main_job.run_validation(n, out_dir)`, "
        "`snapcheck.checker.check_trace`; files `traces.parquet`, `spark_validation/configs.py`, "
        "`checker.json`.\n"
    )
    assert _problems(root, f"docs/guide{MD}", "# Guide\n\n" + good) == []
    bad = _problems(root, f"docs/guide{MD}", "# Guide\n\n`spark_validation.main_job.run_validation(n)`\n")
    assert bad == [
        f"docs/guide{MD}:3: `spark_validation.main_job.run_validation`: a user imports it as "
        "snapcheck.spark_validation.main_job.run_validation"
    ]


def test_document_mentions_in_code(tmp_path):
    root = _fake_repo(tmp_path)
    ok = (
        f'"""After docs/theory{MD}, "Recovery lines"; docs/theory{MD} ("RL-FIX");\n'
        f'docs/theory{MD}#z-paths-and-z-cycles."""\n'
        f'OUT = "summary{MD}"\nDOC = ROOT / "docs" / "theory{MD}"\n'
    )
    assert _problems(root, "pkg/ok.py", ok) == []
    bad = _problems(
        root,
        "pkg/bad.py",
        f'"""See theory{MD}.\n'  # bare name: no file from the root
        f"docs/theory{MD} §3.5 and docs/theory{MD}, section 3.\n"
        f'docs/theory{MD}, "Recovery line for all"\n'  # no heading starts so
        f'docs/theory{MD}#rl-fix-2 and docs/design{MD}."""\n',
    )
    reasons = [p.split(": ", 1)[1] for p in bad]
    assert any(r.startswith(f"theory{MD} names no file") for r in reasons), reasons
    assert sum("cited by section number" in r for r in reasons) == 2, reasons
    assert any("no heading starting with 'Recovery line for all'" in r for r in reasons), reasons
    assert any("#rl-fix-2 is not a heading" in r for r in reasons), reasons
    assert any(r.startswith(f"docs/design{MD} names no file") for r in reasons), reasons
    assert len(bad) == 6, bad


def test_bare_names_in_markdown_resolve_from_the_mentioning_directory(tmp_path):
    root = _fake_repo(tmp_path)
    assert _problems(root, f"docs/guide{MD}", f"# Guide\n\nAs theory{MD} says.\n") == []
    assert _problems(root, f"README{MD}", f"# R\n\nAs docs/theory{MD} says.\n") == []
    assert len(_problems(root, f"README{MD}", f"# R\n\nAs theory{MD} says.\n")) == 1
    assert len(_problems(root, f"README{MD}", f"# R\n\nAs docs/theory{MD} §2 says.\n")) == 1
