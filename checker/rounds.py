"""Coordinated rounds: discovery, termination, and the global checkpoint of each round.

A round ``n`` is *started* by a ``round_start`` event or by any checkpoint with
``round = n``. Every participant (a process that is neither a coordinator nor an
external input log) must take a checkpoint of round ``n`` and every barrier of
round ``n`` sent on a data channel between participants must be received
(``arrive`` or ``recv``): only then are the recorded channel states final
(Chandy & Lamport, "Distributed Snapshots: Determining Global States of
Distributed Systems", 1985: "every channel delivered its marker, or the snapshot
is incomplete"), all of it before the round's ``round_abort`` if there is one (a
barrier arriving after the abort finds its receiver no longer recording, so the
round is aborted, not complete). A round *terminates* when it is complete, when a
``round_abort`` ends it, or when a failure (``fail``) occurs after it started —
recovery aborts pending rounds — or the protocol broke (``protocol_error``: the run
ends there). A round that never terminates is an
``incomplete-round`` violation (termination, class P6 of docs/bug-zoo.md, "Property
classes"), and the report says who waits for which barrier. A ``round_complete`` for a
round that is not complete is reported too.

A round may be declared complete only once every participant's checkpoint of it is
taken: a ``round_complete`` that precedes some participant's checkpoint of the round
in the trace is a ``premature-completion`` (property ``completion``) at the
``round_complete`` line, even when the checkpoint follows — the coordinator
acknowledged a state that was not durable yet, and a failure in between restores a
round without it (the bug class "acknowledged before durable").
"""

from __future__ import annotations

from snapcheck.checker.report import Violation


class RoundInfo:
    __slots__ = ("round", "start_line", "ckpts", "complete_line", "abort_line", "fail_line",
                 "barriers", "declared_complete")

    def __init__(self, rnd: int):
        self.round = rnd
        self.start_line = None
        self.ckpts: dict[str, object] = {}          # proc -> checkpoint Event (first of the round)
        self.complete_line = None
        self.abort_line = None
        self.fail_line = None
        self.barriers: dict[str, list] = {}         # channel -> [send Event, receive Event or None]
        self.declared_complete = False


def find_rounds(trace, participants: set[str]) -> dict[int, RoundInfo]:
    rounds: dict[int, RoundInfo] = {}
    barrier_of: dict[str, tuple[int, str]] = {}
    chans = trace.channel_map()
    fails: list[int] = []

    def get(r: int, line: int) -> RoundInfo:
        info = rounds.get(r)
        if info is None:
            info = rounds[r] = RoundInfo(r)
            info.start_line = line
        return info

    for e in trace.events:          # the most frequent types first
        t = e.type
        if t == "send":
            if e.kind == "barrier":
                c = chans.get(e.ch)
                if c is not None and c.src in participants and c.dst in participants and c.kind != "control":
                    info = get(e.round, e.line)
                    info.barriers.setdefault(e.ch, [e, None])
                    barrier_of[e.mid] = (e.round, e.ch)
        elif t == "recv" or t == "arrive":
            if e.mid in barrier_of:
                r, ch = barrier_of[e.mid]
                slot = rounds[r].barriers[ch]
                if slot[1] is None:
                    slot[1] = e
        elif t == "checkpoint":
            if e.round is not None and e.proc in participants:
                info = get(e.round, e.line)
                info.ckpts.setdefault(e.proc, e)
        elif t == "round_start":
            get(e.round, e.line)
        elif t == "round_complete":
            info = get(e.round, e.line)
            info.declared_complete = True
            info.complete_line = info.complete_line or e.line
        elif t == "round_abort":
            info = get(e.round, e.line)
            info.abort_line = info.abort_line or e.line
        elif t == "fail" or t == "protocol_error":     # the run was cut: pending rounds are not judged
            fails.append(e.line)
    for info in rounds.values():
        after = [ln for ln in fails if ln > info.start_line]
        info.fail_line = after[0] if after else None
    return rounds


def is_complete(info: RoundInfo, participants: list[str]) -> bool:
    """Every participant checkpointed and every barrier of the round was received —
    all of it before the round's ``round_abort``, if any: a barrier that arrives after
    the abort finds its receiver no longer recording (the abort cancelled the channel
    state), so the cut it would close is not a snapshot anyone kept."""
    if not all(p in info.ckpts for p in participants) or any(rcv is None for _, rcv in info.barriers.values()):
        return False
    if info.abort_line is None:
        return True
    last = max([e.line for e in info.ckpts.values()] + [rcv.line for _, rcv in info.barriers.values()])
    return last < info.abort_line


def waiting_for(info: RoundInfo, participants: list[str], trace) -> list[str]:
    """Who waits for which barrier of this round (human-readable lines)."""
    out = []
    inputs: dict[str, list] = {p: [] for p in participants}
    for c in trace.channels:
        if c.dst in inputs and c.src in inputs and c.kind != "control":
            inputs[c.dst].append(c)
    for p in participants:
        missing_ckpt = p not in info.ckpts
        pending = []
        for c in inputs[p]:
            slot = info.barriers.get(c.id)
            if slot is None:
                why = (f"{c.src} never sent it" + (f" ({c.src} has no checkpoint of round {info.round})"
                                                   if c.src not in info.ckpts else ""))
                pending.append(f"the barrier on {c.id} from {c.src}: {why}")
            elif slot[1] is None:
                pending.append(f"the barrier on {c.id} from {c.src}: sent at line {slot[0].line}, never received")
        if pending:
            head = f"{p} (no checkpoint of round {info.round})" if missing_ckpt else f"{p} (checkpointed at line {info.ckpts[p].line}, still recording)"
            out.append(f"{head} waits for " + "; ".join(pending))
        elif missing_ckpt:
            out.append(f"{p} never takes its checkpoint of round {info.round} (no barrier is missing on its inputs)")
    return out


def round_violations(info: RoundInfo, participants: list[str], trace) -> list[Violation]:
    complete = is_complete(info, participants)
    subject = f"round {info.round}"
    if complete:
        return []
    lines = sorted({ln for ln in (info.start_line, info.complete_line) if ln}
                   | {slot[0].line for slot in info.barriers.values() if slot[1] is None})
    waits = waiting_for(info, participants, trace)
    if info.declared_complete:
        msg = (f"Round {info.round} is declared complete at line {info.complete_line}, but it is not: "
               + "; ".join(waits) + ".")
        return [Violation("incomplete-round", "termination", subject, msg, lines,
                          {"round": info.round, "waiting": waits})]
    if info.abort_line is not None or info.fail_line is not None:
        return []
    msg = (f"Round {info.round} starts at line {info.start_line} and never completes or aborts before the trace "
           f"ends: " + "; ".join(waits) + ".")
    return [Violation("incomplete-round", "termination", subject, msg, lines,
                      {"round": info.round, "waiting": waits})]


def completion_violations(info: RoundInfo) -> list[Violation]:
    """``premature-completion``: round ``info`` declared complete before some
    participant's checkpoint of it (see the module docstring)."""
    if not info.declared_complete:
        return []
    late = sorted((e.line, p) for p, e in info.ckpts.items() if e.line > info.complete_line)
    if not late:
        return []
    who = ", ".join(f"{p} (line {ln})" for ln, p in late)
    msg = (f"Round {info.round} is declared complete at line {info.complete_line}, before the checkpoint of "
           f"round {info.round} of {who}: the round was acknowledged while that state was not durable yet. A "
           f"failure between line {info.complete_line} and line {late[0][0]} recovers to a round that has no "
           f"checkpoint of {late[0][1]}.")
    return [Violation("premature-completion", "completion", f"round {info.round}", msg,
                      [info.complete_line] + [ln for ln, _ in late], {"round": info.round, "late": [p for _, p in late]})]


def round_status(info: RoundInfo, participants: list[str]) -> str:
    if is_complete(info, participants):
        return "complete"
    if info.abort_line is not None:
        return "aborted"
    if info.fail_line is not None:
        return "interrupted by failure"
    return "incomplete"
