"""Aligned ABS with two-phase-commit sinks over lossy control channels, and its
mutants (one real bug each). See ``reference.commit.simulator`` for the model.

Parameters (``TwoPhaseCommitABS(notify_loss=..., ...)``, written to the trace
header): ``notify_loss`` / ``notify_jitter`` — loss probability and extra delay of
completion notifications; ``event_loss`` / ``event_jitter`` — the same for
operator events; ``events`` — operator events per source.
"""

from __future__ import annotations

from snapcheck.reference.commit.simulator import CommitSimulator
from snapcheck.reference.coordinated.abs_aligned import AlignedABS
from snapcheck.reference.operators import Sink

DEFAULTS = {"notify_loss": 0.3, "notify_jitter": 300, "event_loss": 0.3, "event_jitter": 300, "events": 3}


class TwoPhaseCommitABS(AlignedABS):
    name = "abs-aligned-2pc"
    family = "commit"
    tla = None  # no trace specification models its sinks and control channels
    summary = (
        "aligned ABS + two-phase-commit sinks; lossy, reordering notifications and "
        "operator events; reliable final commit and end of stream"
    )
    simulator = CommitSimulator
    sink_class = Sink
    commit_on_checkpoint = False  # publish at the checkpoint instead of on global completion
    final_resend = True  # re-send the last notification until acknowledged
    eos_early = False  # end of stream sent when the final round completes
    await_event_acks = True  # FLINK-21996 fix: no completion with unacknowledged events
    restore_policy = "latest-completed"

    def __init__(self, **params) -> None:
        super().__init__(**{**DEFAULTS, **params})
