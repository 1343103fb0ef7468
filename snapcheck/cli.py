"""The ``snapcheck`` command: a click group whose subcommands live in
``snapcheck.commands.*`` (one module per capability, registered below)."""

from __future__ import annotations

import importlib
import os
import re
import sys

import click

from snapcheck import __version__
from snapcheck.console import OutputUnwritable, make_console, survive_closed_pipes
from snapcheck.traces.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, UsageError
from snapcheck.traces.lines import DEFAULT_MAX_LINE_BYTES, set_max_line_bytes
from snapcheck.traces.lines import max_line_bytes as current_max_line_bytes

# Each module defines click commands and a ``register(group)`` function.
COMMAND_MODULES = [
    "snapcheck.commands.trace_tools",
    "snapcheck.commands.main_job",
    "snapcheck.commands.check",
    "snapcheck.commands.debug",
    "snapcheck.commands.simulate",
    "snapcheck.commands.protocols",
    "snapcheck.commands.flink",
    "snapcheck.commands.specs",
    "snapcheck.commands.validate",
    "snapcheck.commands.server",
]

err_console = make_console(stderr=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="snapcheck")
@click.option(
    "--max-line-bytes",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_LINE_BYTES,
    show_default=True,
    metavar="N",
    help="Longest trace line any command reads; a longer one is bad input (exit 2).",
)
def cli(max_line_bytes: int) -> None:
    """Verify checkpointing protocols of streaming dataflows from their traces.

    Exit codes: 0 clean, 1 violation found, 2 bad input or usage, 4 nothing judged (check).
    """
    before = current_max_line_bytes()
    set_max_line_bytes(max_line_bytes)
    # main() called in-process leaves the limit as it found it for the caller's own readers
    click.get_current_context().call_on_close(lambda: set_max_line_bytes(before))


for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(cli)


def _not_utf8(args: list[str]) -> str | None:
    """The first argument that is not valid UTF-8 (a file name in another encoding, which
    Python holds with surrogate escapes), written with byte escapes; None if all are."""
    for a in args:
        try:
            a.encode("utf-8")
        except UnicodeEncodeError:
            return os.fsencode(a).decode("utf-8", "backslashreplace")
    return None


_LINE_BREAKING = re.compile("[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029]")


def _line_breaking(args: list[str]) -> str | None:
    r"""The first argument (a JSON text aside) holding a control character a report line
    would carry, escaped; None if none does. A file name with a newline would print a line
    of its own in every text report ("OK" forged under a violation's trace); trace ids
    holding one are refused alike.

    >>> _line_breaking(["check", "evil\nOK: clean.jsonl"])
    'evil\\x0aOK: clean.jsonl'
    >>> _line_breaking(["shrink", "--simulate", '{"records":\n 3}']) is None
    True
    """
    from snapcheck.console import printable

    for a in args:
        if _LINE_BREAKING.search(a) and not a.lstrip().startswith(("{", "[")):
            return printable(a).replace("\n", "\\x0a")
    return None


def main(argv: list[str] | None = None) -> None:
    from snapcheck.traces.errors import TraceErrors

    args = sys.argv[1:] if argv is None else argv
    bad = _not_utf8(args)
    if bad is not None:  # every report, JSON, JUnit and image names its trace in UTF-8
        err_console.print(
            f"snapcheck: {bad}: the argument is not valid UTF-8 (a file name in another encoding?); "
            "rename the file or link it under a UTF-8 name",
            markup=False,
        )
        sys.exit(EXIT_BAD_INPUT)
    bad = _line_breaking(args)
    if bad is not None:
        err_console.print(
            f"snapcheck: {bad}: the argument holds a control character (a line break, say), which would "
            "print as a line of its own in the reports; rename the file or link it under another name",
            markup=False,
        )
        sys.exit(EXIT_BAD_INPUT)
    try:
        try:
            cli.main(args=argv, prog_name="snapcheck", standalone_mode=False)
        finally:  # what is still buffered, before the exit code is decided (a full disk is exit 2)
            sys.stdout.flush()
    except TraceErrors as exc:
        err_console.print(exc.render(), markup=False)
        sys.exit(EXIT_BAD_INPUT)
    except UsageError as exc:
        err_console.print(f"snapcheck: {exc}", markup=False)
        sys.exit(EXIT_BAD_INPUT)
    except click.exceptions.Abort as exc:
        if isinstance(exc.__context__, KeyboardInterrupt):  # Ctrl-C: the shell's convention
            err_console.print("snapcheck: interrupted", markup=False)
            sys.exit(EXIT_INTERRUPTED)
        err_console.print("aborted", markup=False)  # end of input at a prompt
        sys.exit(EXIT_BAD_INPUT)
    except KeyboardInterrupt:  # outside click's own handling (e.g. while a Spark job stops)
        err_console.print("snapcheck: interrupted", markup=False)
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(EXIT_BAD_INPUT if exc.exit_code not in (0,) else 0)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        sys.exit(0)
    except OutputUnwritable as exc:
        err_console.print(f"snapcheck: {exc}", markup=False)
        sys.exit(EXIT_BAD_INPUT)
    except MemoryError:  # said in few words (printing a traceback may need memory there is none of)
        sys.stderr.write(
            "snapcheck: out of memory: the input or the configuration (a trace's size, a simulation's records) "
            "needs more memory than this process has\n"
        )
        sys.exit(EXIT_INTERNAL)
    except Exception:  # a bug in snapcheck, not a verdict: never exit 1 (= violation) for it
        import traceback

        traceback.print_exc()
        err_console.print(
            "snapcheck: internal error (the traceback above is a bug in snapcheck; please report it)", markup=False
        )
        sys.exit(EXIT_INTERNAL)


HASH_SEED = "0"  # what PySpark gives its Python workers unless the driver has another


def _pin_string_hashing() -> None:
    """Start again (``exec``) with ``PYTHONHASHSEED=0`` unless it is set so: Python salts
    string hashes per process, so a user protocol that iterates a set of strings would
    take another order in ``snapcheck simulate`` (a reproduction command) than on the
    Spark executors, which PySpark runs with 0. The same seed everywhere makes the order
    part of the run: the pasted command gives the campaign's trace."""
    if os.environ.get("PYTHONHASHSEED") == HASH_SEED or not sys.executable:
        return
    again = [sys.executable, "-P", "-c", "from snapcheck.cli import console; console()", *sys.argv[1:]]
    try:  # (-P: the current directory does not go first on the import path, as for the console script)
        os.execve(sys.executable, again, dict(os.environ, PYTHONHASHSEED=HASH_SEED))
    except OSError:  # cannot start again: run as is
        return


def console() -> None:
    """The ``snapcheck`` console script: ``main`` in a process that ends when the command
    returns. What the command held for that end (``snapcheck.traces.process_exit``: the
    last trace ``check`` read and the checker's state of it) is left to the operating
    system instead of being freed; the streams are written out first."""
    from snapcheck.traces import process_exit

    _pin_string_hashing()
    survive_closed_pipes()  # `snapcheck check … | head` exits with the verdict's code
    process_exit.ends_after_command()
    try:
        main()
        code = 0
    except SystemExit as exc:
        if not process_exit.held() or not isinstance(exc.code, int | None):
            raise
        code = exc.code or 0
    if process_exit.held():
        process_exit.exit_without_freeing(code)
