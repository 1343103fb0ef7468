"""The house rules, checked from the imports (``[tool.importlinter]`` in pyproject.toml):
the layers depend one way (traces at the base; checker and reference on it; then Spark
and Flink; then the CLI) and no package has an import circle."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "lint_imports.py")], capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "Contracts: 2 kept, 0 broken." in run.stdout
