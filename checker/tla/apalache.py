"""Optional second engine: Apalache (symbolic, bounded model checking with SMT).

Apalache cannot be installed in every environment (it is downloaded from GitHub
releases), so it is used only when ``apalache-mc`` is on PATH (or named by
``$SNAPCHECK_APALACHE``); otherwise ``find_apalache`` raises a ``UsageError`` that
says how to get it. The run is ``apalache-mc check --config=C --length=N
--out-dir=TMP M.tla`` in ``specs/``; Apalache's exit codes are TLC-compatible:
0 no error, 12 counterexample, 75 evaluation failure, 120 type-checking error,
150 parse error, 255 other errors. Apalache checks invariants up to ``length``
steps; it does not check the temporal (liveness) properties of the ``liveness``
configurations, which are reported as ``skipped``.

Note: Apalache's type checker (Snowcat) needs type annotations on constants and
variables, which the specifications do not carry yet; ``docs/specs.md`` says so.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from snapcheck.traces.errors import UsageError

APALACHE_ENV = "SNAPCHECK_APALACHE"
EXIT_RESULTS = {0: "pass", 12: "violation", 75: "eval-error", 120: "type-error", 150: "parse-error", 255: "error"}
_INVARIANT = re.compile(r"[Ii]nvariant (\w+) (?:is )?violated")


@dataclass
class ApalacheResult:
    exit_code: int | None
    result: str
    seconds: float
    output: str


def find_apalache() -> str:
    exe = os.environ.get(APALACHE_ENV) or shutil.which("apalache-mc")
    if not exe:
        raise UsageError(
            "Apalache is not installed: no 'apalache-mc' on PATH. Get a release from "
            "https://github.com/apalache-mc/apalache/releases (unpack it and put its bin/ on "
            f"PATH, or set {APALACHE_ENV}), or use the default TLC backend."
        )
    return exe


def parse_apalache(output: str, exit_code: int | None) -> str:
    if exit_code is None:
        return "timeout"
    result = EXIT_RESULTS.get(exit_code, "error")
    if result == "violation":
        m = _INVARIANT.search(output)
        if m:
            return f"invariant:{m.group(1)}"
    return result


def _is_temporal(config: Path) -> bool:
    text = config.read_text()
    return bool(re.search(r"^\s*PROPERT(Y|IES)\b", text, re.M)) and "FairSpec" in text


def run_apalache(directory: Path, module: str, config: str, length: int = 10, timeout: float = 900.0) -> ApalacheResult:
    exe = find_apalache()
    if _is_temporal(directory / config):
        return ApalacheResult(None, "skipped", 0.0, "liveness configurations are TLC-only")
    with tempfile.TemporaryDirectory(prefix="snapcheck-apalache-") as tmp:
        cmd = [exe, "check", f"--config={config}", f"--length={length}", f"--out-dir={tmp}", module + ".tla"]
        start = time.monotonic()
        proc = subprocess.Popen(
            cmd, cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        try:
            out, _ = proc.communicate(timeout=timeout)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            code = None
        elapsed = time.monotonic() - start
    return ApalacheResult(code, parse_apalache(out, code), elapsed, out)
