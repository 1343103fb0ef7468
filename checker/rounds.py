"""Coordinated rounds: discovery, termination, and the global checkpoint of each round.

A round ``n`` *starts* at the first event that names it: a ``round_start``, a
participant's checkpoint, a barrier between participants, a ``round_complete`` or a
``round_abort`` with ``round = n``. Every participant (a process that is neither a
coordinator nor an external input log) must take a checkpoint of round ``n`` and
every barrier of round ``n`` sent on a data channel between participants must be
received (``arrive`` or ``recv``, matched by ``mid`` wherever it is in the file, which
may list it before its send): only then are the recorded channel states final
(in Chandy and Lamport, "Distributed Snapshots: Determining Global States of
Distributed Systems", 1985, a snapshot is complete once every channel has delivered
its marker), all of it before the round's ``round_abort`` if there is one (a
barrier arriving after the abort finds its receiver no longer recording, so the
round is aborted, not complete). A round *terminates* when it is complete, when a ``round_abort`` ends
it, or when a failure (``fail``) occurs after it started — recovery aborts pending
rounds — or the protocol broke (``protocol_error``: the run ends there). A round
that never terminates is an ``incomplete-round`` violation (termination, class P6 of
docs/bug-zoo.md, "Property classes"), and the report says who waits for which
barrier. A ``round_complete`` for a round that is not complete is reported too.

A round may be declared complete only once every participant's checkpoint of it is
taken: a ``round_complete`` that precedes some participant's checkpoint of the round
in the trace is a ``premature-completion`` (property ``completion``) at the
``round_complete`` line, even when the checkpoint follows — the coordinator
acknowledged a state that was not durable yet, and a failure in between restores a
round without it (the bug class "acknowledged before durable"). Likewise for the
round's channel state: a ``record`` of messages persisted with a participant's checkpoint
of the round, or a barrier of the round between participants received after the
``round_complete`` by a participant that had already taken its checkpoint of the round
(and so was recording that channel), is a ``completion-before-channel-state`` (property ``completion``):
the round was declared complete while its channel state was still being recorded (in
Chandy and Lamport's terms, before every channel had delivered its marker), and a
failure in between restores it with part of that state missing. (In a trace whose channel
state is observed at restore, ``channel_state: observed-at-restore``, a ``record`` is written
when a restore reads it, so only the barriers are judged.) A coordinator decides a
round's outcome once: a round declared complete and also aborted (in either order), or
complete twice, is a ``contradictory-outcome`` (property ``completion``) naming every
such line.

A protocol whose barriers only make tasks checkpoint, and which ends each channel's
recording by other means (counters of messages sent and received, colours: Lai and
Yang, "On distributed snapshots", 1987; Mattern, "Efficient algorithms for distributed
snapshots and global virtual time approximation", 1993), declares
``barriers_delimit_channel_state: false`` in its header: its rounds are complete once
every participant checkpointed them, barriers still travelling do not keep a round
open, and only a ``record`` after the ``round_complete`` is a
``completion-before-channel-state``.

Regional checkpoints (FLIP-600): a ``round_complete`` whose ``attrs.fallback`` maps
participants to older rounds completes although those participants did not
checkpoint the round: each keeps its state of the round it names (following the
chain when that round's completion names an older one in turn; round 0 is the
initial checkpoint). The round's global checkpoint is then the *cut* of those
states (``round_cut``), and barriers sent to those participants need not arrive.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from snapcheck.checker.report import Violation
from snapcheck.traces.model import Event, Trace


@dataclass(slots=True)
class Barrier:
    """A round's barrier sent on a data channel between participants: its send event and
    the event that received it (None while it is in flight).

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["A", "B"], [("a2b", "A", "B")])
    >>> b = rec.barrier("A", "a2b", round=1); rec.recv("B", b)
    >>> barrier = find_rounds(rec.trace(), {"A", "B"})[1].barriers["a2b"]
    >>> barrier.send.line, barrier.recv.line
    (2, 3)
    """

    send: Event
    recv: Event | None = None


class RoundInfo:
    """What the trace shows of coordinated round ``round``: where it starts, each
    participant's (first) checkpoint of it, the barriers sent on data channels between
    participants with their receipt (``channel -> [send, receive or None]``) and
    destination (``barrier_dst``), the lines of its declared completion, abort and of a
    failure after its start, and what its (first) ``round_complete`` declares: its attrs
    and the regional ``fallback`` (participant -> the older round whose state it keeps).

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["A", "B"], [("a2b", "A", "B")])
    >>> _ = rec.checkpoint("A", "coordinated", round=1); b = rec.barrier("A", "a2b", round=1)
    >>> info = find_rounds(rec.trace(), {"A", "B"})[1]
    >>> barrier = info.barriers["a2b"]
    >>> info.start_line, sorted(info.ckpts), barrier.send.line, barrier.recv
    (2, ['A'], 3, None)
    """

    __slots__ = (
        "round",
        "start_line",
        "ckpts",
        "complete_line",
        "abort_line",
        "abort_reason",
        "fail_line",
        "barriers",
        "barrier_dst",
        "declared_complete",
        "announced",
        "fallback",
        "complete_attrs",
        "records",
        "outcomes",
        "barriers_delimit",
    )

    def __init__(self, rnd: int, start_line: int, barriers_delimit: bool = True):
        self.round = rnd
        self.start_line = start_line
        # the round waits for its barriers (false: barriers_delimit_channel_state: false, barriers only trigger)
        self.barriers_delimit = barriers_delimit
        self.ckpts: dict[str, Event] = {}  # proc -> checkpoint Event (first of the round)
        self.complete_line: int | None = None
        self.abort_line: int | None = None
        self.abort_reason: str | None = None  # the reason of the (first) round_abort
        self.fail_line: int | None = None
        self.barriers: dict[str, Barrier] = {}  # channel -> its barrier of the round and its receipt
        self.barrier_dst: dict[str, str] = {}  # channel -> its destination
        self.declared_complete = False
        self.announced = False  # a coordinator started it (round_start)
        self.fallback: dict[str, int] = {}  # participant -> round it keeps (regional completion)
        self.complete_attrs: dict = {}  # attrs of the (first) round_complete
        self.records: list[Event] = []  # record events persisted with a participant's checkpoint of the round
        self.outcomes: list[Event] = []  # every round_complete and round_abort of the round, in file order


_MARKERS_ONLY = (
    " (Only the barriers are missing. If the protocol's barriers end each channel's recording, as Chandy and "
    "Lamport's and Flink's do, the round was acknowledged too early. Only a protocol whose barriers merely "
    "make tasks checkpoint, and which ends the recording by other means (counters, colours), may declare so: "
    "params.barriers_delimit_channel_state: false in its trace header, barriers_delimit_channel_state = False "
    "on its Protocol class; declared otherwise, it would hide this bug.)"
)


def find_rounds(trace: Trace, participants: set[str], barriers_delimit: bool = True) -> dict[int, RoundInfo]:
    """Every coordinated round of ``trace``, by number: its start (the first event that
    names it), checkpoints, barriers, completion, abort and failure (module docstring).
    ``participants``: the processes that take part in global checkpoints. Without
    ``barriers_delimit`` (the header declares ``barriers_delimit_channel_state: false``)
    a barrier only makes its receiver checkpoint: it names its round but is not one of
    the round's barriers, which the round waits for.

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["A", "B"], [("a2b", "A", "B")])
    >>> _ = rec.checkpoint("A", "coordinated", round=1); b = rec.barrier("A", "a2b", round=1)
    >>> rec.recv("B", b); _ = rec.checkpoint("B", "coordinated", round=1)
    >>> rounds = find_rounds(rec.trace(), {"A", "B"})
    >>> sorted(rounds), {p: e.line for p, e in rounds[1].ckpts.items()}
    ([1], {'A': 2, 'B': 5})
    """
    rounds: dict[int, RoundInfo] = {}
    # A barrier's receipt is matched to its send by mid wherever each is in the file (a
    # merge of per-process logs may list a receive before its send: docs/trace-format.md,
    # convention 5), so the barriers' mids are known before the receipts are visited.
    markers = {e.mid for e in trace.events if e.type == "send" and e.kind == "barrier"} if barriers_delimit else set()
    receipt: dict[str, Event] = {}  # barrier mid -> its receiver's first arrive or recv
    barrier_of: dict[str, Barrier] = {}  # mid of a round's barrier -> the round's slot for its channel
    round_of: dict[tuple[str, int], int] = {}  # (participant, checkpoint number) -> its round
    chans = trace.channel_map()
    fails: list[int] = []

    def get(r: int, line: int) -> RoundInfo:
        info = rounds.get(r)
        if info is None:
            info = rounds[r] = RoundInfo(r, line, barriers_delimit)
        return info

    for e in trace.events:  # the most frequent types first
        t = e.type
        if t == "send":
            if e.kind == "barrier":
                ch, mid, rnd = e.ch, e.mid, e.round
                assert ch is not None and mid is not None and rnd is not None  # the validator requires them
                c = chans.get(ch)
                if c is not None and c.src in participants and c.dst in participants and c.kind != "control":
                    info = get(rnd, e.line)
                    if not barriers_delimit:
                        continue
                    barrier_of[mid] = info.barriers.setdefault(ch, Barrier(e))
                    info.barrier_dst[ch] = c.dst
        elif t == "recv" or t == "arrive":
            if e.mid in markers:
                assert e.mid is not None  # a recv or arrive names its message
                receipt.setdefault(e.mid, e)
        elif t == "checkpoint":
            if e.round is not None and e.proc in participants:
                info = get(e.round, e.line)
                info.ckpts.setdefault(e.proc, e)
                if e.ckpt is not None:
                    round_of[(e.proc, e.ckpt)] = e.round
        elif t == "record":
            of = round_of.get((e.proc, e.ckpt)) if e.ckpt is not None else None
            if of is not None and rounds[of].ckpts[e.proc].ckpt == e.ckpt:
                rounds[of].records.append(e)
        elif t == "round_start":
            assert e.round is not None  # required by the trace format, as for the other round_* events
            get(e.round, e.line).announced = True
        elif t == "round_complete":
            assert e.round is not None
            info = get(e.round, e.line)
            info.outcomes.append(e)
            if not info.declared_complete:
                info.complete_attrs = dict(e.attrs or {})
                info.fallback = {p: r for p, r in completion_fallback(e).items() if p in participants}
            info.declared_complete = True
            info.complete_line = info.complete_line or e.line
        elif t == "round_abort":
            assert e.round is not None
            info = get(e.round, e.line)
            info.outcomes.append(e)
            if info.abort_line is None:
                info.abort_line, info.abort_reason = e.line, e.reason
        elif t == "fail" or t == "protocol_error":  # the run was cut: pending rounds are not judged
            fails.append(e.line)
    for info in rounds.values():
        after = [ln for ln in fails if ln > info.start_line]
        info.fail_line = after[0] if after else None
    for mid, slot in barrier_of.items():
        got = receipt.get(mid)
        if got is not None and (slot.recv is None or got.line < slot.recv.line):
            slot.recv = got
    return rounds


def is_complete(info: RoundInfo, participants: list[str]) -> bool:
    """Is the round complete: every participant checkpointed for it (or, in a regional
    completion, keeps the state of the older round its ``fallback`` names), and every
    barrier of it sent on a data channel between participants was received (except those
    sent to a participant that fell back)? Only then is its
    recorded channel state final (Chandy and Lamport, "Distributed Snapshots:
    Determining Global States of Distributed Systems", 1985). All of it must happen
    before the round's ``round_abort``, if any: a barrier that arrives after the abort
    finds its receiver no longer recording (the abort cancelled the channel state), so
    the cut it would close is not a snapshot anyone kept.

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["A", "B"], [("a2b", "A", "B")])
    >>> _ = rec.checkpoint("A", "coordinated", round=1); b = rec.barrier("A", "a2b", round=1)
    >>> _ = rec.checkpoint("B", "coordinated", round=1)
    >>> is_complete(find_rounds(rec.trace(), {"A", "B"})[1], ["A", "B"])   # the barrier is in flight
    False
    >>> rec.recv("B", b)
    >>> is_complete(find_rounds(rec.trace(), {"A", "B"})[1], ["A", "B"])
    True
    """
    fb = info.fallback
    received = [slot.recv for ch, slot in info.barriers.items() if info.barrier_dst[ch] not in fb]
    if not all(p in info.ckpts or p in fb for p in participants) or any(rcv is None for rcv in received):
        return False
    if info.abort_line is None:
        return True
    last = max(
        [e.line for p, e in info.ckpts.items() if p not in fb] + [rcv.line for rcv in received if rcv is not None],
        default=0,
    )
    return last < info.abort_line


def resolve(rounds: dict[int, RoundInfo], r: int, proc: str) -> tuple[object, list[int]]:
    """The checkpoint of ``proc`` in completed round ``r``'s global checkpoint: its
    checkpoint of ``r``, or of the round the completion's fallback names (followed
    through further fallbacks). Returns ``(checkpoint, chain)``: the checkpoint Event,
    0 for the initial checkpoint, or None when the chain names no checkpoint of
    ``proc`` (or loops); ``chain`` the rounds visited.

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["A", "B", {"id": "C", "role": "coordinator"}], [])
    >>> for n in (1, 2):
    ...     _ = rec.checkpoint("A", "coordinated", round=n)
    >>> _ = rec.checkpoint("B", "coordinated", round=1)
    >>> rec.round_complete("C", 1)
    >>> rec.round_complete("C", 2, attrs={"fallback": {"B": 1}})    # B keeps its state of round 1
    >>> rounds = find_rounds(rec.trace(), {"A", "B"})
    >>> ev, chain = resolve(rounds, 2, "B")
    >>> ev.ckpt, ev.round, chain
    (1, 1, [2, 1])
    """
    chain = fallback_chain(lambda m: rounds[m].fallback if m in rounds else {}, r, proc)
    m = chain[-1]
    if m in chain[:-1]:
        return None, chain
    if m == 0:
        return 0, chain
    return (rounds[m].ckpts.get(proc) if m in rounds else None), chain


def completion_fallback(e: Event) -> dict[str, int]:
    """The fallback ``round_complete`` ``e`` declares (``attrs.fallback``): process -> the
    older round whose state it keeps; entries that name no round number are ignored.

    >>> from snapcheck.traces.model import Event
    >>> completion_fallback(Event.from_dict({"type": "round_complete", "proc": "C", "idx": 0, "round": 2,
    ...                                      "attrs": {"fallback": {"B": 1, "D": "x"}}}))
    {'B': 1}
    """
    fallback = (e.attrs or {}).get("fallback")
    return {p: r for p, r in fallback.items() if isinstance(r, int)} if isinstance(fallback, dict) else {}


def completion_fallbacks(events) -> dict[int, dict[str, int]]:
    """Round -> the fallback its first ``round_complete`` among ``events`` declares
    (``completion_fallback``).

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["A", "B", {"id": "C", "role": "coordinator"}], [])
    >>> rec.round_complete("C", 1); rec.round_complete("C", 2, attrs={"fallback": {"B": 1}})
    >>> rec.round_complete("C", 2)    # a second completion of round 2 changes nothing
    >>> completion_fallbacks(rec.trace().events)
    {1: {}, 2: {'B': 1}}
    """
    out: dict[int, dict[str, int]] = {}
    for e in events:
        if e.type == "round_complete" and e.round not in out:
            out[e.round] = completion_fallback(e)
    return out


def fallback_chain(fallback: Callable[[int], Mapping[str, int]], r: int, proc: str) -> list[int]:
    """The rounds whose state ``proc`` keeps in completed round ``r``, in the order the
    fallbacks name them: ``r``, then the round ``r``'s completion names for ``proc``
    (``fallback(m)``: the fallback of round ``m``'s completion, empty when it has none),
    and so on; the last is the round of the state kept, unless it is one visited before
    (the chain loops).

    >>> fb = {3: {"B": 2}, 2: {"B": 1}, 5: {"B": 4}, 4: {"B": 5}}
    >>> fallback_chain(lambda m: fb.get(m, {}), 3, "B"), fallback_chain(lambda m: fb.get(m, {}), 3, "A")
    ([3, 2, 1], [3])
    >>> fallback_chain(lambda m: fb.get(m, {}), 5, "B")
    [5, 4, 5]
    """
    chain = [r]
    while (nxt := fallback(chain[-1]).get(proc)) is not None and nxt != chain[-1]:
        chain.append(nxt)
        if nxt in chain[:-1]:
            break
    return chain


def round_cut(rounds: dict[int, RoundInfo], r: int, participants) -> dict[str, tuple[object, list[int]]]:
    """Participant -> ``resolve(rounds, r, participant)`` for round ``r``: the states
    the (possibly regional) completion of ``r`` is made of.

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["A", "B", {"id": "C", "role": "coordinator"}], [])
    >>> _ = rec.checkpoint("A", "coordinated", round=1)
    >>> rec.round_complete("C", 1, attrs={"fallback": {"B": 0}})     # B keeps its initial state
    >>> cut = round_cut(find_rounds(rec.trace(), {"A", "B"}), 1, ["A", "B"])
    >>> {p: (ev if ev == 0 else ev.ckpt, chain) for p, (ev, chain) in cut.items()}
    {'A': (1, [1]), 'B': (0, [1, 0])}
    """
    return {p: resolve(rounds, r, p) for p in participants}


def waiting_for(info: RoundInfo, participants: list[str], trace) -> list[str]:
    """Who waits for which barrier of this round, one sentence per participant that
    misses a barrier or its checkpoint of the round.

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["A", "B"], [("a2b", "A", "B")])
    >>> _ = rec.checkpoint("A", "coordinated", round=1); b = rec.barrier("A", "a2b", round=1)
    >>> trace = rec.trace()
    >>> waiting_for(find_rounds(trace, {"A", "B"})[1], ["A", "B"], trace)
    ['B (no checkpoint of round 1) waits for the barrier on a2b from A: sent at line 3, never received']

    A round whose barriers only trigger checkpoints (``barriers_delimit_channel_state:
    false``) waits for the checkpoints alone:

    >>> waiting_for(find_rounds(trace, {"A", "B"}, barriers_delimit=False)[1], ["A", "B"], trace)
    ['B never takes its checkpoint of round 1 (no barrier is missing on its inputs)']

    So does a round of a trace without any barrier (a Kafka Streams commit interval):

    >>> rec = TraceRecorder(["A", "B"], [("a2b", "A", "B")])
    >>> _ = rec.checkpoint("A", "coordinated", round=1)
    >>> waiting_for(find_rounds(rec.trace(), {"A", "B"})[1], ["A", "B"], rec.trace())
    ['B never takes its checkpoint of round 1 (no barrier is missing on its inputs)']
    """
    out = []
    with_barriers = any(e.type == "send" and e.kind == "barrier" for e in trace.events)
    inputs: dict[str, list] = {p: [] for p in participants}
    for c in trace.channels:
        if c.dst in inputs and c.src in inputs and c.kind != "control":
            inputs[c.dst].append(c)
    for p in participants:
        if p in info.fallback:
            continue
        missing_ckpt = p not in info.ckpts
        pending = []
        # a round whose barriers only trigger checkpoints, or of a trace without any barrier (a
        # transaction-commit interval, a micro-batch), waits for the checkpoints alone
        for c in inputs[p] if info.barriers_delimit and with_barriers else ():
            slot = info.barriers.get(c.id)
            if slot is None:
                why = f"{c.src} never sent it" + (
                    f" ({c.src} has no checkpoint of round {info.round})" if c.src not in info.ckpts else ""
                )
                pending.append(f"the barrier on {c.id} from {c.src}: {why}")
            elif slot.recv is None:
                pending.append(f"the barrier on {c.id} from {c.src}: sent at line {slot.send.line}, never received")
        if pending:
            head = (
                f"{p} (no checkpoint of round {info.round})"
                if missing_ckpt
                else f"{p} (checkpointed at line {info.ckpts[p].line}, still recording)"
            )
            out.append(f"{head} waits for " + "; ".join(pending))
        elif missing_ckpt:
            out.append(f"{p} never takes its checkpoint of round {info.round} (no barrier is missing on its inputs)")
    return out


def round_violations(
    info: RoundInfo, participants: list[str], trace, coordinated: bool = False, whole: bool | None = None
) -> list[Violation]:
    """``incomplete-round`` (property ``termination``): the round is declared complete and
    is not, or it never completes, aborts or meets a failure before the trace ends. The
    witness says who waits for which barrier (``waiting_for``). With ``coordinated`` (the
    trace has a coordinator that starts rounds or declares their outcome: some round has a
    ``round_start``, ``round_complete`` or ``round_abort``), a round whose checkpoints and
    barriers are all there but which the coordinator neither completes nor aborts before
    the trace ends is one too: an acknowledgement never reached the coordinator, and the
    round hangs — when it has a participant (a round of no one, say a trace cut down to
    its coordinator, has nothing to wait for). ``whole``: ``is_complete(info,
    participants)``, if the caller has it.

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["A", "B"], [("a2b", "A", "B")])
    >>> _ = rec.checkpoint("A", "coordinated", round=1); b = rec.barrier("A", "a2b", round=1)
    >>> trace = rec.trace()
    >>> info = find_rounds(trace, {"A", "B"})[1]
    >>> [(v.kind, v.subject, v.lines) for v in round_violations(info, ["A", "B"], trace)]
    [('incomplete-round', 'round 1', [2, 3])]
    >>> rec = TraceRecorder(["A", "B", {"id": "C", "role": "coordinator"}], [("a2b", "A", "B")])
    >>> _ = rec.checkpoint("A", "coordinated", round=1); b = rec.barrier("A", "a2b", round=1)
    >>> rec.recv("B", b); _ = rec.checkpoint("B", "coordinated", round=1)   # whole, never declared
    >>> trace = rec.trace()
    >>> info = find_rounds(trace, {"A", "B"})[1]
    >>> [(v.kind, v.lines) for v in round_violations(info, ["A", "B"], trace, coordinated=True)]
    [('incomplete-round', [2, 5])]
    """
    subject = f"round {info.round}"
    if is_complete(info, participants) if whole is None else whole:
        if not coordinated or info.declared_complete or info.abort_line is not None or info.fail_line is not None:
            return []
        if not participants:  # a round of no one: nothing waits, nothing hangs
            return []
        last = max(
            [e.line for e in info.ckpts.values()] + [slot.recv.line for slot in info.barriers.values() if slot.recv],
            default=info.start_line,
        )
        msg = (
            f"Round {info.round} starts at line {info.start_line}, and by line {last} every participant took its "
            "checkpoint of it and every barrier of it was received, but the coordinator, which starts rounds "
            "or declares their outcome in this trace, neither completes nor aborts it before the trace ends: an "
            "acknowledgement of it never reached the coordinator (a participant gave the round up without "
            "declining it, or its acknowledgement was lost), and the round hangs."
        )
        waiting = ["the coordinator waits for an acknowledgement of the round"]
        return [
            Violation(
                "incomplete-round",
                "termination",
                subject,
                msg,
                sorted({info.start_line, last}),
                {"round": info.round, "waiting": waiting},
            )
        ]
    lines = sorted(
        {ln for ln in (info.start_line, info.complete_line) if ln}
        | {slot.send.line for slot in info.barriers.values() if slot.recv is None}
    )
    waits = waiting_for(info, participants, trace)
    if info.declared_complete:
        msg = (
            f"Round {info.round} is declared complete at line {info.complete_line}, but it is not: "
            + "; ".join(waits)
            + "."
        )
        if all(p in info.ckpts or p in info.fallback for p in participants):  # only barriers are missing
            msg += _MARKERS_ONLY
        return [
            Violation(
                "incomplete-round",
                "termination",
                subject,
                msg,
                lines,
                {"round": info.round, "waiting": waits, "declared_complete": True},
            )
        ]
    if info.abort_line is not None or info.fail_line is not None:
        return []
    msg = (
        f"Round {info.round} starts at line {info.start_line} and never completes or aborts before the trace "
        f"ends: " + "; ".join(waits) + "."
    )
    return [Violation("incomplete-round", "termination", subject, msg, lines, {"round": info.round, "waiting": waits})]


def completion_violations(info: RoundInfo, observed_at_restore: bool = False, causality=None) -> list[Violation]:
    """``contradictory-outcome`` (property ``completion``): round ``info`` is declared
    complete and also aborted, or complete twice; ``premature-completion``: it is declared
    complete before some participant's checkpoint of it; ``completion-before-channel-state``:
    it is declared complete before its channel state is final — a ``record`` persisted
    with a participant's checkpoint of it, or one of its barriers between participants
    received by a participant that had taken its checkpoint of the round (it was
    recording that channel), comes later (module docstring). A participant the completion's fallback
    names keeps an older state, so its late checkpoint of the round, and what is
    recorded with it or sent to it, is not part of it. With ``observed_at_restore`` (the
    trace declares ``channel_state: observed-at-restore``: its ``record`` events are written
    when a restore reads the state, not when it was persisted) the position of a ``record``
    says nothing about when the state became durable, and only the barriers are judged.
    "Later" is later in the file, unless ``causality`` (a ``checker.causality.Causality``)
    says the event happened before the completion all the same (a file whose order is
    not causal: merged per-process logs).

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["A", "B", {"id": "C", "role": "coordinator"}], [("a2b", "A", "B")])
    >>> _ = rec.checkpoint("A", "coordinated", round=1)
    >>> rec.round_complete("C", 1)
    >>> _ = rec.checkpoint("B", "coordinated", round=1)          # after the round was declared complete
    >>> info = find_rounds(rec.trace(), {"A", "B"})[1]
    >>> [(v.kind, v.lines, v.witness["late"]) for v in completion_violations(info)]
    [('premature-completion', [3, 4], ['B'])]
    >>> m = rec.send("A", "a2b"); b = rec.barrier("A", "a2b", round=1); rec.recv("B", m); rec.recv("B", b)
    >>> rec.record("B", 1, "a2b", [m])                           # B's channel state, after the completion
    >>> info = find_rounds(rec.trace(), {"A", "B"})[1]
    >>> [(v.kind, v.lines) for v in completion_violations(info)][1]
    ('completion-before-channel-state', [3, 8, 9])
    >>> rec.round_abort("C", 1)                                  # and given up as well
    >>> info = find_rounds(rec.trace(), {"A", "B"})[1]
    >>> [(v.kind, v.lines) for v in completion_violations(info)][0]
    ('contradictory-outcome', [3, 10])
    """
    if not info.declared_complete:
        return []
    assert info.complete_line is not None  # set with declared_complete
    done, fb = info.complete_line, info.fallback
    out = []
    if len(info.outcomes) > 1:
        said = "; ".join(
            f"{'complete' if e.type == 'round_complete' else 'aborted'} at line {e.line}" for e in info.outcomes
        )
        msg = f"Round {info.round} is declared {said}: a coordinator decides the outcome of a round once. " + (
            "A sink that commits on the completion and one that discards on the abort disagree about "
            "its output, and a recovery may restore a round that was given up."
            if info.abort_line is not None
            else "Every completion notifies the sinks, which commit the round's output again."
        )
        out.append(
            Violation(
                "contradictory-outcome",
                "completion",
                f"round {info.round}",
                msg,
                [e.line for e in info.outcomes],
                {"round": info.round, "outcomes": [[e.type, e.line] for e in info.outcomes]},
            )
        )
    complete = next(e for e in info.outcomes if e.type == "round_complete" and e.line == done)

    def after(e) -> bool:  # later than the completion: in the file, and not before it by a message chain
        return e.line > done and (causality is None or not causality.before(e, complete))

    late = sorted((e.line, p) for p, e in info.ckpts.items() if after(e) and p not in fb)
    if late:
        who = ", ".join(f"{p} (line {ln})" for ln, p in late)
        msg = (
            f"Round {info.round} is declared complete at line {done}, before the checkpoint of "
            f"round {info.round} of {who}: the round was acknowledged while that state was not durable yet. A "
            f"failure between line {done} and line {late[0][0]} recovers to a round that has no "
            f"checkpoint of {late[0][1]}."
        )
        out.append(
            Violation(
                "premature-completion",
                "completion",
                f"round {info.round}",
                msg,
                [done] + [ln for ln, _ in late],
                {"round": info.round, "late": [p for _, p in late]},
            )
        )
    records = [] if observed_at_restore else [e for e in info.records if after(e) and e.proc not in fb and e.mids]
    barriers = [  # a barrier ends its receiver's recording of a channel only once the receiver checkpointed
        (ch, slot.recv)
        for ch, slot in info.barriers.items()
        if slot.recv is not None
        and after(slot.recv)
        and info.barrier_dst[ch] not in fb
        and (ck := info.ckpts.get(info.barrier_dst[ch])) is not None
        and ck.line < slot.recv.line
    ]
    if records or barriers:
        what = [f"{e.proc} records channel state of {e.ch} at line {e.line}" for e in records] + [
            f"the barrier on {ch} reaches {rcv.proc} at line {rcv.line}" for ch, rcv in barriers
        ]
        first = min([e.line for e in records] + [rcv.line for _, rcv in barriers])
        msg = (
            f"Round {info.round} is declared complete at line {done}, before its channel state is final: "
            + "; ".join(what)
            + f". The round was acknowledged while its snapshot was still being recorded; a failure between line "
            f"{done} and line {first} recovers to it with that channel state missing."
        )
        if not records:
            msg += _MARKERS_ONLY
        out.append(
            Violation(
                "completion-before-channel-state",
                "completion",
                f"round {info.round}",
                msg,
                sorted({done} | {e.line for e in records} | {rcv.line for _, rcv in barriers}),
                {
                    "round": info.round,
                    "records": [[e.proc, e.ch, e.line] for e in records],
                    "barriers": [[ch, rcv.line] for ch, rcv in barriers],
                },
            )
        )
    return out


def round_status(info: RoundInfo, participants: list[str], coordinated: bool = False, whole: bool | None = None) -> str:
    """``complete``, ``aborted``, ``interrupted by failure`` or ``incomplete``. Only
    complete rounds are judged for consistency and channel state.

    Without coordinator events a round is complete when ``is_complete`` holds. In a
    ``coordinated`` trace (a coordinator starts rounds or declares their outcome: some
    round has a ``round_start``, ``round_complete`` or ``round_abort``), it must also be
    declared complete (``round_complete``): a whole round the coordinator aborted, or
    never completed before a failure or the end of the trace, is a snapshot nobody keeps
    -- no recovery may restore it (``restore-aborted``) -- and a task may have given it
    up without a word: a task that takes a newer round while the older one still records
    channel state stops recording the older one, which the coordinator then aborts as
    subsumed. Its channel state is not final; ``discarded_snapshot`` says why it is not
    judged, for the report's notes. ``whole``: ``is_complete(info, participants)``, if the
    caller has it.

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["A", "B"], [("a2b", "A", "B")])
    >>> _ = rec.checkpoint("A", "coordinated", round=1); b = rec.barrier("A", "a2b", round=1)
    >>> rec.fail("B")
    >>> round_status(find_rounds(rec.trace(), {"A", "B"})[1], ["A", "B"])
    'interrupted by failure'
    >>> rec = TraceRecorder(["A", "B", "C"], [("a2b", "A", "B")])
    >>> _ = rec.checkpoint("A", "coordinated", round=1); b = rec.barrier("A", "a2b", round=1)
    >>> rec.recv("B", b); _ = rec.checkpoint("B", "coordinated", round=1)
    >>> rec.round_abort("C", 1, reason="subsumed by round 2")
    >>> info = find_rounds(rec.trace(), {"A", "B"})[1]
    >>> is_complete(info, ["A", "B"]), round_status(info, ["A", "B"], coordinated=True)
    (True, 'aborted')
    """
    if whole is None:
        whole = is_complete(info, participants)
    if whole and (info.declared_complete or not coordinated):
        return "complete"
    if info.abort_line is not None:
        return "aborted"
    if info.fail_line is not None:
        return "interrupted by failure"
    return "incomplete"


def discarded_snapshot(info: RoundInfo, status: str, whole: bool) -> str | None:
    """Why a round whose snapshot was ``whole`` (``is_complete``) is not judged as one: its
    ``status`` (``round_status``) is not ``complete``, as the coordinator of a coordinated
    trace never declared it complete; None if it is judged or was never whole.

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["A", "B", "C"], [("a2b", "A", "B")])
    >>> _ = rec.checkpoint("A", "coordinated", round=1); b = rec.barrier("A", "a2b", round=1)
    >>> rec.recv("B", b); _ = rec.checkpoint("B", "coordinated", round=1)
    >>> rec.round_abort("C", 1, reason="timeout")
    >>> info = find_rounds(rec.trace(), {"A", "B"})[1]
    >>> print(discarded_snapshot(info, round_status(info, ["A", "B"], coordinated=True), whole=True))
    aborted at line 6 (timeout) after every checkpoint and barrier of it: the coordinator discarded its snapshot, so its consistency and channel state are not judged
    """
    if status == "complete" or not whole:
        return None
    if status == "aborted":
        reason = f" ({info.abort_reason})" if info.abort_reason else ""
        what = f"aborted at line {info.abort_line}{reason} after every checkpoint and barrier of it: the coordinator "
        what += "discarded its snapshot"
    elif status == "interrupted by failure":
        what = (
            f"whole but not declared complete before the failure at line {info.fail_line}, which discarded its snapshot"
        )
    else:
        what = "whole but never declared complete before the trace ends: the coordinator never kept its snapshot"
    return f"{what}, so its consistency and channel state are not judged"
