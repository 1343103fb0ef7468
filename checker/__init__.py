"""snapcheck's checker: verdicts on checkpointing traces, each cross-checked by an
independent method (see docs/checker.md and docs/theory.md, which explains every
definition with worked examples).

>>> from snapcheck.checker import check_trace, CheckOptions
>>> from snapcheck.traces.golden import golden
>>> report = check_trace(golden("theory_c_domino"), CheckOptions(failures=["P0"]))
>>> report.ok, report.recovery_lines["P0"]
(True, {'P0': 1, 'P1': 0})

Where each definition lives: ``intervals`` (effective history, interval indices,
message tuples), ``cuts`` (orphans, in-transit messages, snapshot completeness),
``rgraph`` (R-graph and checkpoint graph), ``zcycles`` (Z-paths, useless
checkpoints), ``rdt`` (rollback-dependency trackability), ``recovery_line`` and
``rollback_propagation`` (RL-FIX, R-MARK, CheckMate's Algorithm 1),
``recovery_report`` (the line of one failure set, with its explanation),
``z3cert`` (certificates), ``rounds`` (coordinated rounds), ``observed_recovery``
(restored lines, exactly-once), ``cic`` (BCS and HMNR), ``log_retention``,
``output_commit``, ``changelog`` and ``replication``.
"""

from snapcheck.checker.api import check_trace
from snapcheck.checker.options import PROPERTIES, CheckerUsageError, CheckOptions
from snapcheck.checker.report import PropertyResult, Report, Violation

__all__ = ["check_trace", "CheckOptions", "CheckerUsageError", "PROPERTIES", "PropertyResult", "Report", "Violation"]
