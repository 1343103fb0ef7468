"""Check the import contracts of pyproject.toml (``[tool.importlinter]``: one-way layers,
no import circles) with import-linter.

The repository keeps each layer in a top-level directory that the build maps onto
``snapcheck.*``; import-linter reads a package from one directory tree, so this
script assembles the tree the wheel installs (the ``[tool.setuptools.package-dir]``
mapping) in a temporary directory and runs ``lint-imports`` on it. Exit status is
lint-imports'.

    python scripts/lint_imports.py
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def assemble(dest: Path) -> None:
    """Copy the Python sources of every mapped package to ``dest``, laid out as installed."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    for package, directory in sorted(config["package-dir"].items(), key=lambda kv: kv[0].count(".")):
        target = dest.joinpath(*package.split("."))
        shutil.copytree(
            ROOT / directory,
            target,
            dirs_exist_ok=True,
            ignore=lambda d, names: [
                n for n in names if not (n.endswith(".py") or (Path(d) / n).is_dir()) or n == "__pycache__"
            ],
        )


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="snapcheck-imports-") as tmp:
        assemble(Path(tmp))
        shutil.copy(ROOT / "pyproject.toml", Path(tmp) / "pyproject.toml")
        lint = Path(sys.executable).with_name("lint-imports")
        return subprocess.run([str(lint), "--no-cache"], cwd=tmp, env={"PYTHONPATH": tmp, "PATH": ""}).returncode


if __name__ == "__main__":
    sys.exit(main())
