"""Writing output files without ever destroying one: atomically, and never onto an input.

Every file snapcheck writes goes through ``atomic_open``: the content is written
to a temporary file in the target's directory and renamed over the target only
when the write succeeded (``os.replace``, atomic on POSIX), so a failed or
interrupted run leaves an existing file exactly as it was and a reader never
sees half a file. The new file gets the mode an ordinary ``open`` would give it
(the existing file's mode, else 0666 minus the umask). A symbolic link is followed:
the file it points to is replaced, in that file's directory, and the link stays. A
target that exists and is not a regular file (``/dev/null``, ``/dev/stdout``, a named
pipe) is written to directly, as ``open`` would: renaming a file over it would replace
the device or pipe itself.

``refuse_inputs`` rejects an output that *is* one of the command's inputs (the
same path, a symbolic link to it or a hard link: the same device and inode)
before anything is opened for writing. A missing output directory is a usage
error naming the directory (it is not created: a typo in a path should not
silently create directories).

>>> import os, tempfile
>>> d = tempfile.mkdtemp()
>>> p = os.path.join(d, "out.txt")
>>> write_atomic(p, b"one\\n")
>>> try:
...     with atomic_open(p) as f:
...         _ = f.write(b"half")
...         raise RuntimeError("interrupted")
... except RuntimeError:
...     pass
>>> open(p, "rb").read()
b'one\\n'
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import IO

from snapcheck.traces.errors import UsageError


def _same_file(a: str, b: str) -> bool:
    try:
        sa, sb = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def refuse_inputs(output: str | os.PathLike, inputs: Iterable[str | os.PathLike]) -> None:
    """Raise ``UsageError`` if ``output`` is one of ``inputs`` (same path, symlink or hard link).

    >>> refuse_inputs("a.jsonl", ["a.jsonl"])
    Traceback (most recent call last):
    ...
    snapcheck.traces.errors.UsageError: a.jsonl: the output is the input a.jsonl; write to another file
    """
    out = os.fspath(output)
    for src in inputs:
        src = os.fspath(src)
        if os.path.realpath(out) == os.path.realpath(src) or _same_file(out, src):
            raise UsageError(f"{out}: the output is the input {src}; write to another file")


def distinct_outputs(*outputs: str | os.PathLike | None) -> None:
    """Raise ``UsageError`` if two of a command's outputs (None: not asked for) name the same
    file, also through a symbolic link to a file that does not exist yet: one would silently
    replace the other.

    >>> distinct_outputs("r.xml", None, "r.html")
    >>> distinct_outputs("same.out", "./same.out")
    Traceback (most recent call last):
    ...
    snapcheck.traces.errors.UsageError: same.out and ./same.out name the same file: give each output its own
    """
    given = [os.fspath(o) for o in outputs if o is not None]
    for i, a in enumerate(given):
        for b in given[i + 1 :]:
            if a == b:
                raise UsageError(f"{a} is given for two outputs: give each output its own file")
            if os.path.realpath(a) == os.path.realpath(b) or _same_file(a, b):  # (a link to a file not yet written)
                raise UsageError(f"{a} and {b} name the same file: give each output its own")


def ensure_writable(path: str | os.PathLike, inputs: Iterable[str | os.PathLike] = ()) -> None:
    """Fail fast, before any work: ``path`` is not one of ``inputs``, and its directory
    exists and takes a new file (not read-only, not ``/proc/self/fd``)."""
    refuse_inputs(path, inputs)
    path = os.fspath(path)
    if _is_special(path):
        return
    directory = _check_directory(os.path.realpath(path) if os.path.islink(path) else path)
    try:  # the directory takes a new file (the temporary one atomic_open will make)
        fd, probe = tempfile.mkstemp(dir=directory, prefix=".snapcheck-probe.", suffix=".tmp")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
    os.close(fd)
    os.unlink(probe)


def _check_directory(path: str) -> str:
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise UsageError(f"cannot write {path}: directory {os.path.dirname(path) or directory} does not exist")
    if os.path.isdir(path):
        raise UsageError(f"cannot write {path}: it is a directory")
    return directory


def _is_special(path: str) -> bool:
    """Does ``path`` (links followed) exist and is something other than a regular file or
    a directory: a device, a named pipe, a socket?"""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _mode_for(path: str) -> int:
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@contextmanager
def atomic_open(
    path: str | os.PathLike, mode: str = "wb", inputs: Iterable[str | os.PathLike] = (), encoding: str | None = None
) -> Iterator[IO]:
    """Open a temporary file next to ``path`` for writing; on a clean exit of the
    ``with`` block it replaces ``path``, on an exception it is removed (``path`` untouched).

    ``inputs``: files the command reads, which the output must not be (``refuse_inputs``).
    Errors opening or renaming are a ``UsageError`` naming the file."""
    path = os.fspath(path)
    refuse_inputs(path, inputs)
    if "b" not in mode and encoding is None:
        encoding = "utf-8"
    if _is_special(path):
        with _writing(path, path):
            with open(path, mode, encoding=encoding) as f:
                yield f
        return
    target = os.path.realpath(path) if os.path.islink(path) else path
    directory = _check_directory(target)
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(target)}.", suffix=".tmp")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
    try:
        with _writing(path, tmp, target):
            with os.fdopen(fd, mode, encoding=encoding) as f:
                yield f
            os.chmod(tmp, _mode_for(target))
            os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


@contextmanager
def _writing(path: str, *names: str) -> Iterator[None]:
    """Turn an ``OSError`` of writing ``path`` (the error names one of ``names``, or no
    file) into a ``UsageError`` naming ``path``; other errors (reading an input) pass."""
    try:
        yield
    except OSError as exc:
        if exc.filename in (None, path, *names):
            raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise


def write_atomic(path: str | os.PathLike, data: bytes | str, inputs: Iterable[str | os.PathLike] = ()) -> None:
    """Write ``data`` to ``path`` atomically (see ``atomic_open``)."""
    with atomic_open(path, "wb" if isinstance(data, bytes) else "w", inputs) as f:
        f.write(data)


class StagedFiles:
    """Files written as a set: with ``staged``, into a hidden temporary directory next to
    ``targets`` (its ``paths``; the targets share one directory), moved into place together by
    ``publish``; the directory is removed on leaving the ``with`` block, also when the run is
    interrupted (Ctrl-C), so that no partial set of new files is left beside older ones (the
    pages of ``snapcheck check --html`` and their index). Without ``staged``, ``paths`` are the
    targets themselves. A target may be None (nothing to write)."""

    def __init__(self, targets: list[str | None], staged: bool):
        self.targets = targets
        self.dir: str | None = None
        self.paths = list(targets)
        if staged:
            first = next((t for t in targets if t), ".")
            self.dir = tempfile.mkdtemp(prefix=".snapcheck-staged-", dir=os.path.dirname(os.path.abspath(first)))
            self.paths = [os.path.join(self.dir, os.path.basename(t)) if t else None for t in targets]

    def publish(self) -> None:
        """Move every file written into its place."""
        for path, target in zip(self.paths, self.targets):
            if path and target and path != target and os.path.exists(path):
                os.replace(path, target)

    def __enter__(self) -> StagedFiles:
        return self

    def __exit__(self, *exc) -> None:
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
