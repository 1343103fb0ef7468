"""Finished tasks (FLIP-147): the final checkpoint and its notification.

A task that reached the end of its input records ``finish``. From then on it sends
no data; it keeps taking checkpoints until one of them belongs to a completed round
(its *final checkpoint*) and it has received the completion notification of that
round or of a later one — a coordinator ``send`` on a control channel whose
``attrs`` carry ``{"notify": n}`` (later notifications subsume earlier ones) — and
then it retires. Checkpoints of rounds that start after a task retired hold its
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
    out: list[Violation] = []
    for fin in ix.of_type("finish"):
        p = fin.proc
        i = h.index.get(p)
        if i is None:
            continue
        eff = h.eff[i]
        if not any(e is fin for e in eff):
            continue                                  # rolled back by a later restore
        for e in eff:
            if e.line > fin.line and e.type == "send" and e.kind not in MARKERS and e.ch in h.ch_ends:
                out.append(Violation(
                    "send-after-finish", "finished-tasks", f"process {p}",
                    f"{p} finished at line {fin.line} (end of input) but sends data message {e.mid} at line "
                    f"{e.line}.", [fin.line, e.line], {"process": p, "messages": [e.mid]}))
                break
        finals = [e for e in eff if e.line > fin.line and e.type == "checkpoint" and e.round in completed]
        end = retired.get(p)
        limit = end.line if end is not None else float("inf")
        final = next((c for c in finals if completed[c.round] < limit), None)
        notified = None
        if final is not None:
            notified = next(((n, ln) for n, ln in received.get(p, ()) if n >= final.round and ln < limit), None)
        if end is not None:
            if final is None or notified is None:
                why = ("no completed round holds a checkpoint it took after finishing" if final is None else
                       f"it was not notified that round {final.round} (its final checkpoint {p}:{final.ckpt}, "
                       f"line {final.line}) completed")
                out.append(Violation(
                    "retired-before-final-checkpoint", "finished-tasks", f"process {p}",
                    f"{p} finished at line {fin.line} and retires at line {end.line}, but {why}.",
                    [fin.line, end.line, final.line if final else None], {"process": p}))
            continue
        if final is None:
            out.append(Violation(
                "final-checkpoint-missing", "finished-tasks", f"process {p}",
                f"{p} finished at line {fin.line} and never retires: no completed round holds a checkpoint it took "
                "after finishing, so it waits for its final checkpoint forever.",
                [fin.line], {"process": p}))
        elif notified is None:
            lost = [s for s in sent_to.get(p, ()) if s.attrs["notify"] >= final.round]
            how = (f"the notification sent at line {lost[0].line} ({lost[0].mid}) is never received" if lost else
                   "no notification of it or of a later round is ever sent to it")
            out.append(Violation(
                "final-checkpoint-unnotified", "finished-tasks", f"process {p}",
                f"{p} finished at line {fin.line}; its final checkpoint {p}:{final.ckpt} (line {final.line}) belongs "
                f"to round {final.round}, completed at line {completed[final.round]}, but {how}: {p} waits "
                "forever for the completion of its final checkpoint.",
                [fin.line, final.line, completed[final.round]] + [s.line for s in lost[:1]],
                {"process": p, "round": final.round, "checkpoints": [[p, final.ckpt]],
                 "messages": [s.mid for s in lost[:1]]}))
    return out


def check_finished(run) -> None:
    """Add ``finished-tasks`` to a ``check_trace`` run for traces with ``finish`` events."""
    if run.want("finished-tasks") and (run.ix.has("finish") or run.explicit("finished-tasks")):
        run.add("finished-tasks", "trace", finished_violations(run))
