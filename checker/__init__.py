"""snapcheck's checker: verdicts on checkpointing traces, each cross-checked by an
independent method (see docs/checker.md and docs/theory.md).

    from snapcheck.checker import check_trace, CheckOptions
    report = check_trace(trace, CheckOptions(failures=["P0"]))
"""

from snapcheck.checker.api import check_trace
from snapcheck.checker.options import PROPERTIES, CheckerUsageError, CheckOptions
from snapcheck.checker.report import PropertyResult, Report, Violation

__all__ = ["check_trace", "CheckOptions", "CheckerUsageError", "PROPERTIES", "PropertyResult", "Report",
           "Violation"]
