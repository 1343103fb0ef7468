"""Output datasets a command writes anew: a directory an earlier run wrote (Spark's
``part-*`` files and bookkeeping) is replaced, never one that holds anything else.

A Parquet dataset is a directory of ``part-*`` files, with ``_SUCCESS``, ``.crc``
checksums and, while it is written, ``_temporary``, ``_started_*`` and
``_committed_*``. Spark's ``overwrite`` mode and a plain ``rmtree`` delete whatever the
directory holds: an ``--output`` pointed at a folder of the user's would lose its files
without a word.
"""

from __future__ import annotations

import os
import re
import shutil

from snapcheck.traces.errors import UsageError

DATASET_ENTRY = re.compile(r"part-.*|_SUCCESS|_committed_.*|_started_.*|_temporary|\..*\.crc")


def foreign_entries(path: str) -> list[str]:
    """The entries of directory ``path`` that no dataset writer makes (sorted; [] when
    ``path`` is not a directory).

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> for name in ("part-00000.parquet", "_SUCCESS", ".part-00000.parquet.crc", "mine.txt"):
    ...     open(os.path.join(d, name), "w").close()
    >>> foreign_entries(d)
    ['mine.txt']
    >>> shutil.rmtree(d)
    """
    if not os.path.isdir(path):
        return []
    return sorted(n for n in os.listdir(path) if not DATASET_ENTRY.fullmatch(n))


def check_replaceable(path: str, option: str = "--output") -> None:
    """``UsageError`` (exit 2) when ``path`` is a directory holding files an earlier run
    did not write, which replacing the dataset would delete."""
    foreign = foreign_entries(path)
    if foreign:
        shown = ", ".join(foreign[:3]) + (", …" if len(foreign) > 3 else "")
        raise UsageError(
            f"{path} holds {len(foreign)} file(s) snapcheck did not write ({shown}), which writing its results "
            f"there would delete: choose another {option} directory, or move them"
        )


def replace_dataset(path: str) -> None:
    """Remove the dataset (a directory an earlier run wrote, ``check_replaceable``) or
    output file at ``path``, to write it anew."""
    check_replaceable(path)
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)
