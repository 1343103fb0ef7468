"""What a Flink trace must show beyond the generic checks (trace-level, no checker needed).

* **latest completed checkpoint** — Flink's contract for a failover: every subtask
  restores the same checkpoint, and that checkpoint is at least as recent as the
  latest one whose completion was notified before the failure (a checkpoint may
  also complete at the JobManager without any subtask having seen the
  notification yet, so a *newer* restored checkpoint is fine). Finding kinds
  ``restore-disagreement`` and ``stale-restore``.
* **anomalies of the merge** — what the merger found Flink doing that the trace
  format cannot express (a record routed against the partitioner, a restore of a
  checkpoint the subtask never took, ...): kind ``flink-anomaly``.

In unaligned modes a checkpoint's channel state is internal to Flink and visible
only through what a restore of it replays; the merged trace says so (protocol
param ``channel_state: observed-at-restore``) and the checker itself then leaves
in-transit records on channels without a ``record`` for that checkpoint unjudged
(``checker/cuts.py``; counted in the report's ``stats.unobservable_in_transit``).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Finding:
    kind: str
    message: str
    lines: list[int] = field(default_factory=list)


def latest_checkpoint_findings(trace) -> list[Finding]:
    """``stale-restore`` / ``restore-disagreement`` for each recovery (restores grouped by ``recovery``)."""
    completed: dict[int, int] = {}       # round -> line of its round_complete
    groups: dict[int, list] = {}
    order: list[int] = []
    fails: list = []
    for e in trace.events:
        if e.type == "round_complete":
            completed.setdefault(e.round, e.line)
        elif e.type == "fail":
            fails.append(e)
        elif e.type == "restore":
            key = e.recovery if e.recovery is not None else -len(order) - 1
            if key not in groups:
                groups[key] = []
                order.append(key)
            groups[key].append(e)
    out = []
    prev_end = 0
    for key in order:
        restores = groups[key]
        first = min(e.line for e in restores)
        trigger = next((f for f in fails if prev_end < f.line < first), None)
        prev_end = max(e.line for e in restores)
        ckpts = {_restored_round(e) for e in restores}
        name = f"recovery {key}" if key >= 0 else "a recovery"
        if len(ckpts) > 1:
            detail = ", ".join(f"{e.proc}: {_restored_round(e)} (line {e.line})" for e in restores)
            out.append(Finding("restore-disagreement", f"The subtasks of {name} restore different checkpoints: "
                               f"{detail}; Flink restores one checkpoint for the whole job.",
                               sorted(e.line for e in restores)))
            continue
        restored = ckpts.pop()
        limit = trigger.line if trigger is not None else first
        done = [(r, ln) for r, ln in completed.items() if ln < limit]
        if not done:
            continue
        latest, line = max(done)
        if restored < latest:
            why = f"the failure at line {trigger.line} ({trigger.proc})" if trigger is not None else "the recovery"
            out.append(Finding("stale-restore", f"{name} restores checkpoint {restored} (line {first}), but "
                               f"checkpoint {latest} was completed at line {line}, before {why}: Flink must restore "
                               f"the latest completed checkpoint.", [line, first] + ([trigger.line] if trigger else [])))
    return out


def _restored_round(e) -> int:
    """The round a restore goes back to (0: from scratch); after a rescale the new processes
    restore their own checkpoint 0 with the round of the old processes' checkpoint."""
    return e.round if e.round is not None else e.ckpt


def anomaly_findings(trace) -> list[Finding]:
    flink = (trace.header.metadata or {}).get("flink") or {}
    return [Finding("flink-anomaly", a) for a in flink.get("anomalies", [])]
