"""Where a user's protocol code was when it failed, for messages that name the line of
the user's own file (protocol errors in a trace, mistakes in a protocol's hooks)."""

from __future__ import annotations

import hashlib
import os
import re
import sysconfig
from pathlib import Path

# the directories of the installed libraries and the standard library, as path prefixes
_LIBRARIES = tuple(
    {os.path.abspath(sysconfig.get_paths()[k]) + os.sep for k in ("stdlib", "platstdlib", "purelib", "platlib")}
)

_PREFIX = "snapcheck_user_"
_SHIPPED = re.compile(rf"^{_PREFIX}[0-9a-f]{{12}}_")  # a file name that is a module_name


def module_name(path: Path) -> str:
    """The module name under which the protocol file at resolved ``path`` is imported
    (``reference.catalogue``), and shipped to Spark executors: one per file, whatever
    directory the command runs from; ``user_frame`` gives the user's file name back.

    >>> name = module_name(Path("/home/me/mine.py"))
    >>> name.startswith("snapcheck_user_") and name.endswith("_mine"), _SHIPPED.sub("", name + ".py")
    (True, 'mine.py')
    """
    return f"{_PREFIX}{hashlib.sha1(str(path).encode()).hexdigest()[:12]}_{path.stem}"


def user_frame(tb) -> str:
    """Where the protocol's own code was when it raised: `` (at FILE:LINE, in FUNCTION)``
    for the innermost frame of ``tb`` outside the kit, the installed libraries and Python's
    frozen import machinery (the
    file's base name, so the same run gives the same trace wherever the file lives: on a
    Spark executor too, which imports the shipped copy of the user's file under the module
    name the driver gave it, ``module_name``), or
    empty when there is none (the kit's own protocols).

    >>> user_frame(None)  # no traceback, or only the kit's own frames
    ''
    """
    where = ""
    while tb is not None:
        code = tb.tb_frame.f_code
        module = tb.tb_frame.f_globals.get("__name__", "")
        path = os.path.abspath(code.co_filename)
        if not module.startswith("snapcheck.") and not path.startswith(_LIBRARIES) and "<frozen " not in path:
            where = f" (at {_SHIPPED.sub('', os.path.basename(path))}:{tb.tb_lineno}, in {code.co_name})"
        tb = tb.tb_next
    return where
