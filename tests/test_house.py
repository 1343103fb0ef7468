"""The house rules: the import contracts (``[tool.importlinter]`` in pyproject.toml) and the
type check of the base layer (``[tool.mypy]``). Imports:
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


def test_the_base_layer_type_checks():
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "typecheck.py")], capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "Success: no issues found" in run.stdout
