"""Finished tasks (FLIP-147): the final checkpoint and its notification.

A task that reached the end of its input records ``finish`` (Flink's FLIP-147,
"Support Checkpoints After Tasks Finished"). From then on it sends no data; it keeps
taking checkpoints until one of them belongs to a completed round (its *final
checkpoint*) and it has received the completion notification of that round or of a
later one — a ``send`` whose ``attrs`` carry ``{"notify": n}``, in practice the
coordinator's on a control channel (later notifications subsume earlier ones) — and
then it retires. A ``finish`` undone by a later restore is not judged. Checkpoints of rounds that start after a task retired hold its
final state: the round's global checkpoint puts it at its end (``checker.lifetimes``),
so ``consistency`` and ``channel-state`` judge everything it sent as sent.

``finished-tasks`` (applies to traces with ``finish``; the trace is taken to end
quiescent, as a simulation or a finished job does):

* ``send-after-finish``: a data message sent after the task finished (barriers and
  cancellation markers are not data: a finished task still takes part in rounds);
* ``retired-before-final-checkpoint``: the task retires before a completed round
  holds a checkpoint it took after finishing, or before it was notified of one
  (its final output may never be committed);
* ``final-checkpoint-unnotified`` (liveness, FLINK-21080): a round holding the
  task's final checkpoint completed, but the task never receives a notification
  of it or of a later round, so it waits forever;
* ``final-checkpoint-missing`` (liveness): the task finished and never retires,
  and no completed round holds a checkpoint it took after finishing.
"""

from __future__ import annotations

from snapcheck.checker.report import Violation
from snapcheck.traces.model import MARKERS


def _notifications(ix) -> tuple[dict, dict]:
    """``(sent, received)``: notify sends by mid, and per process the rounds it was
    notified of with the line of the receive."""
    sent = {e.mid: e for e in ix.with_attr("send", "notify")}
    received: dict[str, list[tuple[int, int]]] = {}
    for e in ix.of_type("recv"):
        s = sent.get(e.mid)
        if s is not None:
            received.setdefault(e.proc, []).append((s.attrs["notify"], e.line))
    return sent, received


def finished_violations(run) -> list[Violation]:
    """The ``finished-tasks`` violations of a ``check_trace`` run (the four kinds of the
    module docstring), at most one of each kind per finished task, in the order of the
    ``finish`` events. The final checkpoint is the first checkpoint taken after
    ``finish`` whose round completes (before the task retires, if it does); the
    notification must be of that round or a later one, received before retiring.

    ``T`` finishes; round 1 completes with a checkpoint of ``T`` taken after that, but
    nobody tells ``T``, which therefore waits forever. Once the coordinator's
    notification arrives, ``T`` may retire:

    >>> from snapcheck.checker import CheckOptions, check_trace
    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["T", {"id": "C", "role": "coordinator"}],
    ...                     [{"id": "c2t", "src": "C", "dst": "T", "kind": "control"}])
    >>> rec.finish("T")
    >>> rec.round_start("C", 1); _ = rec.checkpoint("T", round=1); rec.round_complete("C", 1)
    >>> only = CheckOptions(properties=["finished-tasks"])
    >>> [(v.kind, v.lines) for v in check_trace(rec.trace(), only).violations]
    [('final-checkpoint-unnotified', [2, 4, 5])]
    >>> rec.recv("T", rec.send("C", "c2t", attrs={"notify": 1})); rec.retire("T")
    >>> check_trace(rec.trace(), only).violations
    []
    """
    h, ix = run.h, run.ix
    completed = {e.round: e.line for e in ix.of_type("round_complete")}
    sent, received = _notifications(ix)
    sent_to: dict[str, list] = {}
    chans = ix.channels
    for s in sent.values():
        c = chans.get(s.ch)
        if c is not None:
            sent_to.setdefault(c.dst, []).append(s)
    retired = {e.proc: e for e in ix.of_type("retire")}
    # processes whose state a rescale's restore takes (``sources``): a finished one that
    # retires handing its checkpoint over lives on in its successor, which owes the final
    # checkpoint and its notification (it finishes again and is judged as itself)
    handed = {s.get("proc") for e in ix.of_type("restore") for s in e.sources or ()}
    out: list[Violation] = []
    for fin in ix.of_type("finish"):
        p = fin.proc
        i = h.index.get(p)
        if i is None:
            continue
        eff = h.eff[i]
        if not any(e is fin for e in eff):
            continue  # rolled back by a later restore
        for e in eff:
            if e.line > fin.line and e.type == "send" and e.kind not in MARKERS and e.ch in h.ch_ends:
                out.append(
                    Violation(
                        "send-after-finish",
                        "finished-tasks",
                        f"process {p}",
                        f"{p} finished at line {fin.line} (end of input) but sends data message {e.mid} at line "
                        f"{e.line}.",
                        [fin.line, e.line],
                        {"process": p, "messages": [e.mid]},
                    )
                )
                break
        end = retired.get(p)
        if end is not None and end.ckpt is not None and p in handed:
            continue
        finals = [e for e in eff if e.line > fin.line and e.type == "checkpoint" and e.round in completed]
        limit = end.line if end is not None else float("inf")
        final = next((c for c in finals if completed[c.round] < limit), None)
        notified = None
        if final is not None:
            notified = next(((n, ln) for n, ln in received.get(p, ()) if n >= final.round and ln < limit), None)
        if end is not None:
            if final is None or notified is None:
                why = (
                    "no completed round holds a checkpoint it took after finishing"
                    if final is None
                    else f"it was not notified that round {final.round} (its final checkpoint {p}:{final.ckpt}, "
                    f"line {final.line}) completed"
                )
                out.append(
                    Violation(
                        "retired-before-final-checkpoint",
                        "finished-tasks",
                        f"process {p}",
                        f"{p} finished at line {fin.line} and retires at line {end.line}, but {why}.",
                        [fin.line, end.line] + ([final.line] if final else []),
                        {"process": p},
                    )
                )
            continue
        if final is None:
            out.append(
                Violation(
                    "final-checkpoint-missing",
                    "finished-tasks",
                    f"process {p}",
                    f"{p} finished at line {fin.line} and never retires: no completed round holds a checkpoint it took "
                    "after finishing, so it waits for its final checkpoint forever.",
                    [fin.line],
                    {"process": p},
                )
            )
        elif notified is None:
            lost = [s for s in sent_to.get(p, ()) if s.attrs["notify"] >= final.round]
            how = (
                f"the notification sent at line {lost[0].line} ({lost[0].mid}) is never received"
                if lost
                else "no notification of it or of a later round is ever sent to it"
            )
            out.append(
                Violation(
                    "final-checkpoint-unnotified",
                    "finished-tasks",
                    f"process {p}",
                    f"{p} finished at line {fin.line}; its final checkpoint {p}:{final.ckpt} (line {final.line}) belongs "
                    f"to round {final.round}, completed at line {completed[final.round]}, but {how}: {p} waits "
                    "forever for the completion of its final checkpoint.",
                    [fin.line, final.line, completed[final.round]] + [s.line for s in lost[:1]],
                    {
                        "process": p,
                        "round": final.round,
                        "checkpoints": [[p, final.ckpt]],
                        "messages": [s.mid for s in lost[:1]],
                    },
                )
            )
    return out


def check_finished(run) -> None:
    """Add one ``finished-tasks`` result (subject ``trace``) to a ``check_trace`` run when
    the trace has ``finish`` events and the property is selected (the default: all);
    otherwise the report lists it as not judged.

    A task that keeps sending data after the end of its input, and then takes no final
    checkpoint (no round completes):

    >>> from snapcheck.checker import check_trace
    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["T", "U"], [("t2u", "T", "U")])
    >>> rec.finish("T"); rec.recv("U", rec.send("T", "t2u", value=1))
    >>> report = check_trace(rec.trace())
    >>> [(r.property, r.subject, [v.kind for v in r.violations]) for r in report.results]
    [('finished-tasks', 'trace', ['send-after-finish', 'final-checkpoint-missing'])]
    >>> from snapcheck.traces.golden import golden
    >>> check_trace(golden("theory_a_zcycle")).not_judged["finished-tasks"]
    'no task of the trace finishes (no finish event)'
    """
    if run.ix.has("finish") and run.want("finished-tasks"):
        run.add("finished-tasks", "trace", finished_violations(run))
