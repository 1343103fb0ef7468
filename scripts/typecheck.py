"""Type-check the packages named in pyproject.toml (``[tool.mypy] packages``: the
base layer ``snapcheck.traces``, ``snapcheck.checker`` with ``checker/tla``,
``snapcheck.reference`` and ``snapcheck.spark_validation``) with mypy.

Like ``lint_imports.py``, it assembles the tree the wheel installs (the repository
keeps each layer in a top-level directory the build maps onto ``snapcheck.*``) in a
temporary directory and runs mypy there with the project's configuration, after
printing the packages it checks. Exit status is mypy's.

    python scripts/typecheck.py
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from lint_imports import ROOT, assemble


def checked_packages() -> list[str]:
    """The packages ``[tool.mypy]`` in pyproject.toml names."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["packages"]


def main() -> int:
    print("type-checking " + ", ".join(checked_packages()), flush=True)
    with tempfile.TemporaryDirectory(prefix="snapcheck-types-") as tmp:
        assemble(Path(tmp))
        shutil.copy(ROOT / "pyproject.toml", Path(tmp) / "pyproject.toml")
        mypy = Path(sys.executable).with_name("mypy")
        return subprocess.run([str(mypy), "--config-file", "pyproject.toml", "--no-incremental"], cwd=tmp).returncode


if __name__ == "__main__":
    sys.exit(main())
