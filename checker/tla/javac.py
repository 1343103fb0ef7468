"""Compile the kit's Java helpers for TLC (``checker/tla/java``) once, and cache them.

A helper is compiled with the ``javac`` next to the ``java`` that runs TLC (or on
PATH) against ``tla2tools.jar``, into ``$SNAPCHECK_CACHE/tlc-classes/KEY`` where KEY
is a digest of the source and of the jar; the directory appears atomically, so
concurrent processes and threads never see half a compilation.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from snapcheck.checker.tla import packaged

JAVA_DIR = Path(__file__).resolve().parent / "java"  # the helpers' sources (inside the kit's zip on an executor)


def cache_root() -> Path:
    return packaged.cache_root() / "tlc-classes"


def compiled(helper: str, jar: Path, java: str) -> Path | None:
    """The directory holding the classes of the helper ``java/HELPER.java`` (its public
    class is ``HELPER``), compiled now if needed; None if no ``javac`` is found next to
    ``java`` or on PATH, or it fails."""
    source = packaged.on_disk(JAVA_DIR) / f"{helper}.java"
    main = f"{helper}.class"
    key = hashlib.sha256(
        source.read_bytes() + str(jar.resolve()).encode() + str(jar.stat().st_size).encode()
    ).hexdigest()[:16]
    target = cache_root() / key
    if (target / main).is_file():
        return target
    javac = Path(os.path.realpath(java)).with_name("javac")
    javac_cmd = str(javac) if javac.is_file() else shutil.which("javac")
    if not javac_cmd:
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{key}.tmp", dir=target.parent))  # unique per thread and process
    try:
        proc = subprocess.run(
            [javac_cmd, "-nowarn", "-cp", str(jar), "-d", str(tmp), str(source)],
            capture_output=True,
            text=True,
            timeout=300,
        )
    except (OSError, subprocess.TimeoutExpired):
        shutil.rmtree(tmp, ignore_errors=True)
        return None
    if proc.returncode != 0 or not (tmp / main).is_file():
        shutil.rmtree(tmp, ignore_errors=True)
        return None
    try:
        tmp.rename(target)  # atomic; a concurrent compiler may have won
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return target if (target / main).is_file() else None
