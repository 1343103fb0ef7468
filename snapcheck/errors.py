"""Exit codes and user-facing errors of the command line.

0 clean, 1 a violation was found, 2 bad input or usage (3: an internal error,
a bug in snapcheck, which is never confused with a verdict). A user mistake never
shows a Python traceback: commands raise ``UsageError`` or ``TraceErrors`` and
``cli.main`` prints the message and exits 2.
"""

EXIT_CLEAN = 0
EXIT_VIOLATION = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3   # a bug in snapcheck itself (prints a traceback), never a verdict


class UsageError(Exception):
    """Bad input or usage that is not a trace-format problem (exit 2)."""
