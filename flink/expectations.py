"""What a Flink trace must show beyond the generic checks (trace-level, no checker needed).

* **latest completed checkpoint** — Flink's contract for a failover: every subtask
  restores the same checkpoint, and that checkpoint is at least as recent as the
  latest one whose completion was notified before the failure (a checkpoint may
  also complete at the JobManager without any subtask having seen the
  notification yet, so a *newer* restored checkpoint is fine). Finding kinds
  ``restore-disagreement`` and ``stale-restore``.
* **no skipped reassignment** — on a restore at another parallelism, an operator with no
  state of its own in the restored checkpoint still takes part in Flink's state
  assignment when an exchange it is on carries channel state (its upstream's output
  part toward it, or its downstream's input part from it): its new subtasks are told
  that they were restored and get the rescaling descriptors of their channels. A
  new subtask that reports no restore (the merge infers one: ``attrs.inferred``)
  while the checkpoint (``_metadata``, read by the adapter: run.json's
  ``rescale.restored_state``) holds channel state on one of its operator's
  exchanges was skipped. Kind ``skipped-reassignment`` (FLINK-31963 is such a
  skip).
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
    completed: dict[int, int] = {}  # round -> line of its round_complete
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
            out.append(
                Finding(
                    "restore-disagreement",
                    f"The subtasks of {name} restore different checkpoints: "
                    f"{detail}; Flink restores one checkpoint for the whole job.",
                    sorted(e.line for e in restores),
                )
            )
            continue
        restored = ckpts.pop()
        limit = trigger.line if trigger is not None else first
        done = [(r, ln) for r, ln in completed.items() if ln < limit]
        if not done:
            continue
        latest, line = max(done)
        if restored < latest:
            why = f"the failure at line {trigger.line} ({trigger.proc})" if trigger is not None else "the recovery"
            out.append(
                Finding(
                    "stale-restore",
                    f"{name} restores checkpoint {restored} (line {first}), but "
                    f"checkpoint {latest} was completed at line {line}, before {why}: Flink must restore "
                    f"the latest completed checkpoint.",
                    [line, first] + ([trigger.line] if trigger else []),
                )
            )
    return out


def _restored_round(e) -> int:
    """The round a restore goes back to (0: from scratch); after a rescale the new processes
    restore their own checkpoint 0 with the round of the old processes' checkpoint."""
    return e.round if e.round is not None else e.ckpt


def anomaly_findings(trace) -> list[Finding]:
    flink = (trace.header.metadata or {}).get("flink") or {}
    return [Finding("flink-anomaly", a) for a in flink.get("anomalies", [])]


@dataclass
class StatelessOperator:
    """An operator without state of its own in a restored checkpoint, and the channel state of
    its exchanges (``adjacent``: one description per neighbouring subtask that holds some)."""

    op: str
    adjacent: list[str]
    restores: list  # the restore events of its new subtasks
    skipped: list  # those the merge inferred: the subtask reported no restore

    def describe(self) -> str:
        told = (
            "none reported a restore"
            if len(self.skipped) == len(self.restores)
            else f"{len(self.restores) - len(self.skipped)} of {len(self.restores)} reported a restore"
        )
        return (
            f"{self.op} (channel state on its exchanges: {'; '.join(self.adjacent) or 'none'}; "
            f"its new subtasks: {told})"
        )


def stateless_operators(trace) -> tuple[int | None, list[StatelessOperator]]:
    """The restored checkpoint of a rescale and its operators without state of their own.

    An operator is *without state of its own* when no subtask of it holds anything in the
    checkpoint (run.json's ``rescale.restored_state``, read from ``_metadata``, lists it without
    subtasks); the channel state of its exchanges is what its upstream subtasks hold as output
    part toward it (``output_to``) and its downstream subtasks as input part from it
    (``input_from``).

    >>> from snapcheck.traces.model import Header, Trace
    >>> stateless_operators(Trace(Header(processes=[], channels=[]), []))
    (None, [])
    """
    rescale = ((trace.header.metadata or {}).get("flink") or {}).get("rescale") or {}
    restored = rescale.get("restored_state") or {}
    state = restored.get("operators") or {}
    appearing = {p.id: p.operator for p in trace.processes if p.appears}
    first: dict[str, object] = {}  # the restore with which each appearing process starts
    for e in trace.events:
        if e.type == "restore" and e.proc in appearing:
            first.setdefault(e.proc, e)
    restores: dict[str, list] = {}
    for proc, e in first.items():
        restores.setdefault(appearing[proc], []).append(e)
    out = []
    for op, st in state.items():
        if st.get("subtasks") or op not in restores:
            continue
        subs = [(other, i, sub) for other, o in state.items() for i, sub in (o.get("subtasks") or {}).items()]
        adjacent = [
            f"{other}[{i}]: {sub['output_to'][op]} output-part handle(s) toward {op}"
            for other, i, sub in subs
            if (sub.get("output_to") or {}).get(op)
        ]
        adjacent += [
            f"{other}[{i}]: {sub['input_from'][op]} input-part handle(s) from {op}"
            for other, i, sub in subs
            if (sub.get("input_from") or {}).get(op)
        ]
        skipped = [e for e in restores[op] if (e.attrs or {}).get("inferred") is not None]
        out.append(StatelessOperator(op, adjacent, restores[op], skipped))
    return restored.get("checkpoint_id"), out


def skipped_reassignment_findings(trace) -> list[Finding]:
    """``skipped-reassignment``: an operator without state of its own whose exchanges carry
    channel state of the restored checkpoint, and whose new subtasks were given no state (they
    report no restore): Flink's state assignment left it out (see the module docstring)."""
    ckpt, ops = stateless_operators(trace)
    return [
        Finding(
            "skipped-reassignment",
            f"Flink's state assignment skipped operator {s.op} when it restored checkpoint {ckpt} at another "
            f"parallelism: {s.op} has no state of its own in the checkpoint, but its exchanges carry channel "
            f"state ({'; '.join(s.adjacent)}), and its new subtasks {', '.join(e.proc for e in s.skipped)} "
            f"were given no state and report no restore. An operator on an exchange with channel state must "
            f"take part in the reassignment, so that its subtasks get the rescaling descriptors of their "
            f"channels (the skip of FLINK-31963).",
            sorted(e.line for e in s.skipped),
        )
        for s in ops
        if s.adjacent and s.skipped
    ]
