"""Coordinated rounds: discovery, termination, and the global checkpoint of each round.

A round ``n`` is *started* by a ``round_start`` event or by any checkpoint with
``round = n``. Every participant (a process that is neither a coordinator nor an
external input log) must take a checkpoint of round ``n`` and every barrier of
round ``n`` sent on a data channel between participants must be received
(``arrive`` or ``recv``): only then are the recorded channel states final
(Chandy & Lamport, "Distributed Snapshots: Determining Global States of
Distributed Systems", 1985: "every channel delivered its marker, or the snapshot
is incomplete"). A round *terminates* when it is complete, when a
``round_abort`` ends it, or when a failure (``fail``) occurs after it started —
recovery aborts pending rounds. A round that never terminates is an
``incomplete-round`` violation (termination, bug-zoo P6), and the report says who
waits for which barrier. A ``round_complete`` for a round that is not complete
is reported too.

Regional checkpoints (FLIP-600): a ``round_complete`` whose ``attrs.fallback`` maps
participants to older rounds completes although those participants did not
checkpoint the round: each keeps its state of the round it names (following the
chain when that round's completion names an older one in turn; round 0 is the
initial checkpoint). The round's global checkpoint is then the *cut* of those
states (``round_cut``), and barriers sent to those participants need not arrive.
"""

from __future__ import annotations

from snapcheck.checker.report import Violation


class RoundInfo:
    __slots__ = ("round", "start_line", "ckpts", "complete_line", "abort_line", "fail_line",
                 "barriers", "barrier_dst", "declared_complete", "fallback", "complete_attrs")

    def __init__(self, rnd: int):
        self.round = rnd
        self.start_line = None
        self.ckpts: dict[str, object] = {}          # proc -> checkpoint Event (first of the round)
        self.complete_line = None
        self.abort_line = None
        self.fail_line = None
        self.barriers: dict[str, list] = {}         # channel -> [send Event, receive Event or None]
        self.barrier_dst: dict[str, str] = {}        # channel -> its destination
        self.declared_complete = False
        self.fallback: dict[str, int] = {}          # participant -> round it keeps (regional completion)
        self.complete_attrs: dict = {}              # attrs of the (first) round_complete


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
                    info.barrier_dst[e.ch] = c.dst
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
            if not info.declared_complete:
                info.complete_attrs = dict(e.attrs or {})
                fallback = info.complete_attrs.get("fallback")
                if isinstance(fallback, dict):
                    info.fallback = {p: r for p, r in fallback.items() if p in participants and isinstance(r, int)}
            info.declared_complete = True
            info.complete_line = info.complete_line or e.line
        elif t == "round_abort":
            info = get(e.round, e.line)
            info.abort_line = info.abort_line or e.line
        elif t == "fail":
            fails.append(e.line)
    for info in rounds.values():
        after = [ln for ln in fails if ln > info.start_line]
        info.fail_line = after[0] if after else None
    return rounds


def is_complete(info: RoundInfo, participants: list[str]) -> bool:
    fb = info.fallback
    return (all(p in info.ckpts or p in fb for p in participants)
            and all(rcv is not None for ch, (_, rcv) in info.barriers.items() if info.barrier_dst[ch] not in fb))


def resolve(rounds: dict[int, RoundInfo], r: int, proc: str) -> tuple[object, list[int]]:
    """The checkpoint of ``proc`` in completed round ``r``'s global checkpoint: its
    checkpoint of ``r``, or of the round the completion's fallback names (followed
    through further fallbacks). Returns ``(checkpoint, chain)``: the checkpoint Event,
    0 for the initial checkpoint, or None when the chain names no checkpoint of
    ``proc`` (or loops); ``chain`` the rounds visited."""
    chain = [r]
    m = r
    while True:
        info = rounds.get(m)
        nxt = info.fallback.get(proc) if info is not None else None
        if nxt is None or nxt == m:
            if m == 0:
                return 0, chain
            return (info.ckpts.get(proc) if info is not None else None), chain
        if nxt in chain:
            return None, chain + [nxt]
        chain.append(nxt)
        m = nxt


def round_cut(rounds: dict[int, RoundInfo], r: int, participants) -> dict[str, tuple[object, list[int]]]:
    """Participant -> ``resolve(rounds, r, participant)`` for round ``r``."""
    return {p: resolve(rounds, r, p) for p in participants}


def waiting_for(info: RoundInfo, participants: list[str], trace) -> list[str]:
    """Who waits for which barrier of this round (human-readable lines)."""
    out = []
    inputs: dict[str, list] = {p: [] for p in participants}
    for c in trace.channels:
        if c.dst in inputs and c.src in inputs and c.kind != "control":
            inputs[c.dst].append(c)
    for p in participants:
        if p in info.fallback:
            continue
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


def round_status(info: RoundInfo, participants: list[str]) -> str:
    if is_complete(info, participants):
        return "complete"
    if info.abort_line is not None:
        return "aborted"
    if info.fail_line is not None:
        return "interrupted by failure"
    return "incomplete"
