"""The ``snapcheck`` console script: a command a warm server runs (``command_client``:
``snapcheck conform``) goes there first, before anything heavy is imported; every
other command, and one no server takes, runs in this process (``cli.console``)."""

from __future__ import annotations

import sys


def console() -> None:
    from snapcheck.command_client import run

    code = run(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from snapcheck.cli import console as in_process

    in_process()
