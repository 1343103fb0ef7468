"""Where a user's protocol code was when it failed, for messages that name the line of
the user's own file (protocol errors in a trace, mistakes in a protocol's hooks)."""

from __future__ import annotations

import os
import sysconfig

# the directories of the installed libraries and the standard library, as path prefixes
_LIBRARIES = tuple(
    {os.path.abspath(sysconfig.get_paths()[k]) + os.sep for k in ("stdlib", "platstdlib", "purelib", "platlib")}
)


def user_frame(tb) -> str:
    """Where the protocol's own code was when it raised: `` (at FILE:LINE, in FUNCTION)``
    for the innermost frame of ``tb`` outside the kit and the installed libraries (the
    file's base name, so the same run gives the same trace wherever the file lives), or
    empty when there is none (the kit's own protocols).

    >>> user_frame(None)  # no traceback, or only the kit's own frames
    ''
    """
    where = ""
    while tb is not None:
        code = tb.tb_frame.f_code
        module = tb.tb_frame.f_globals.get("__name__", "")
        path = os.path.abspath(code.co_filename)
        if not module.startswith("snapcheck.") and not path.startswith(_LIBRARIES):
            where = f" (at {os.path.basename(path)}:{tb.tb_lineno}, in {code.co_name})"
        tb = tb.tb_next
    return where
