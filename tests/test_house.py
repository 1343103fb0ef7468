"""The house rules: the import contracts (``[tool.importlinter]`` in pyproject.toml: the
layers depend one way — traces at the base; checker and reference on it; then Spark and
Flink; then the CLI — and no package has an import circle), the type check of the base
layer and the checker (``[tool.mypy]``), and ruff's lint and format (``[tool.ruff]``)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "lint_imports.py")], capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "Contracts: 2 kept, 0 broken." in run.stdout


def test_the_base_layer_the_checker_the_reference_and_the_spark_validation_type_check():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    checked = {"snapcheck.traces", "snapcheck.checker", "snapcheck.reference", "snapcheck.spark_validation"}
    assert checked <= set(config["packages"])
    assert not config.get("overrides"), "no module may be exempted ([[tool.mypy.overrides]])"
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "typecheck.py")], capture_output=True, text=True, timeout=900
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "Success: no issues found" in run.stdout


def test_the_code_is_linted_and_formatted():
    ruff = Path(sys.executable).with_name("ruff")
    lint = subprocess.run([str(ruff), "check", "."], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert lint.returncode == 0, lint.stdout[-3000:]
    fmt = subprocess.run([str(ruff), "format", "--check", "."], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert fmt.returncode == 0, fmt.stdout[-3000:]
