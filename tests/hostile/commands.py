"""Run every trace-reading command of the CLI on one input, in process, and collect
(exit code, output) — the harness of the hostile-input corpus and of the fuzzer."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from snapcheck.cli import main

# name -> arguments after the trace (OUT is replaced by a path in a scratch directory)
COMMANDS = {
    "validate-trace": [],
    "check": [],
    "check-json-junit": ["--json", "--junit", "OUT.xml"],
    "convert-parquet": ["-o", "OUT.parquet"],
    "convert-jsonl": ["-o", "OUT.jsonl"],
    "replay": ["--until", "0"],
    "render": ["-o", "OUT.svg"],
    "shiviz": ["-o", "OUT.log"],
}
CHEAP = ("validate-trace", "check", "convert-parquet", "replay")


def argv(command: str, trace: str, scratch: Path, options=()) -> list[str]:
    name = command.split("-")[0] if command.startswith(("check", "convert")) else command
    rest = [str(scratch / a.replace("OUT", "out")) if a.startswith("OUT") else a for a in COMMANDS[command]]
    return [*options, name, trace, *rest]


def run(args: list[str]) -> tuple[int, str]:
    """``snapcheck ARGS`` through ``cli.main`` (its error handling included): (exit code,
    stdout + stderr). Exit 3 is an internal error: the traceback is in the output."""
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
    err = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(args)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    out.flush()
    return code, raw.getvalue().decode("utf-8", "replace") + err.getvalue()
