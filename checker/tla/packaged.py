"""Package data as real files: a directory of the kit on disk, even when the kit is
imported from a zip archive.

A Spark executor imports the kit from the zip the driver shipped
(``SparkContext.addPyFile``), so the specifications (``snapcheck/specs``) and the
Java source of the trace-data override (``snapcheck/checker/tla/java``) are
members of that archive, not files TLC or ``javac`` can open. ``on_disk(path)``
returns ``path`` itself when it is a directory, and otherwise, when it lies
inside a zip archive, a copy of that directory's files extracted once into a
cache directory named by a digest of their content (so concurrent tasks and later
kits never see a half-written or stale copy).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import zipfile
from pathlib import Path


def cache_root() -> Path:
    """``$SNAPCHECK_CACHE`` or ``~/.cache/snapcheck``."""
    return Path(os.environ.get("SNAPCHECK_CACHE") or Path.home() / ".cache" / "snapcheck")


def _archive_of(path: Path) -> tuple[Path, str] | None:
    """(zip archive, directory inside it) when ``path`` lies inside a zip file, else None."""
    for parent in path.parents:
        if parent.is_file() and zipfile.is_zipfile(parent):
            return parent, path.relative_to(parent).as_posix().strip("/") + "/"
    return None


def on_disk(path: Path) -> Path:
    """``path`` if it is a directory; the files directly under it extracted from the zip
    archive it lies inside otherwise (``path`` unchanged when it is neither).

    >>> on_disk(Path(__file__).parent) == Path(__file__).parent
    True
    """
    if path.is_dir():
        return path
    found = _archive_of(path)
    if found is None:
        return path
    archive, inner = found
    with zipfile.ZipFile(archive) as z:
        members = sorted(n for n in z.namelist() if n.startswith(inner) and "/" not in n[len(inner) :] and n != inner)
        digest = hashlib.sha256()
        contents = {}
        for n in members:
            contents[n[len(inner) :]] = data = z.read(n)
            digest.update(n.encode() + b"\0" + data + b"\0")
    target = cache_root() / "extracted" / f"{path.name}-{digest.hexdigest()[:16]}"
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{target.name}.tmp", dir=target.parent))
    for name, data in contents.items():
        (tmp / name).write_bytes(data)
    try:
        tmp.rename(target)  # atomic; a concurrent task may have won
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
