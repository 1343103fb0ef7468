"""Trace events of the coordinated snapshot protocols (chandy-lamport, abs-*,
unaligned, aligned-timeout) and of the CIC protocols (bcs, hmnr) as events of
their trace specifications (``specs/ChandyLamportTrace.tla``, ``ABSTrace.tla``,
``UnalignedTrace.tla``, ``BCSTrace.tla``, ``HMNRTrace.tla``).

Spec events are records ``[op, p, c, k, n, x, s, part]``: data messages are known
by their per-channel sequence number (``k = "d"``), barriers (``"b"``) and
cancellation markers (``"cancel"``) by their round, recorded channel state by
the sequence numbers it lists, checkpoints, declines and records by their round;
``x`` is, for an unaligned barrier, the number of output records it overtook
(the size of the output part its source reports), for a decline 1 iff a
cancellation marker implies it, and for a CIC receive 1 iff a forced checkpoint
preceded it. See docs/specs.md for the table of events.

The snapshot and CIC specifications model failure-free runs: ``fail``,
``restore``, ``replay`` and ``discard`` are out of scope; declined and aborted
rounds and cancellation markers only for ``ABSTrace`` and ``UnalignedTrace``; so
are headers whose channel state is observed at restore (such a trace reports none)
where the specification records channel state, and channel state not delimited by
barriers.
A task's first cancellation marker of a round with no ``["decline", r]`` before
it implies its decline (``decline`` with ``x = 1``, right before the marker's
send: the trace format's decline, which needs no message to the coordinator).
Not mapped, and counted: external input, non-barrier messages on control
channels (acknowledgements, commits; a task's ``["decline", r]`` is mapped),
``output``, ``log``, ``log_truncate``, initial checkpoints, and ``arrive`` for
the specifications that do not model buffering. For unaligned and
aligned-timeout a message without an ``arrive`` event arrives as late as FIFO
allows (right before its receipt, or before a message behind it on its channel
arrives: sent later, or overtaken by it, as a barrier overtakes the output
records its source persists). A synthetic last event ``end`` asks that every non-empty channel
state of a round not aborted was reported by a ``record`` event.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from snapcheck.checker.tla.trace_events import OutOfScope, Prepared, causal_order, short_names, task_topology
from snapcheck.checker.tla.tracelog import snapshot_consts
from snapcheck.traces.model import Trace
from snapcheck.traces.protocol_facts import OBSERVED_AT_RESTORE, DeclaredFacts, TlaMapping

OUT_OF_SCOPE = ("fail", "restore", "replay", "discard")
MARKERS = {"barrier": "b", "cancel": "cancel"}  # trace message kind -> spec message kind
ALWAYS_IGNORED = ("output", "log", "log_truncate")
# Trace specifications that model declined, aborted and cancelled rounds.
MODELS_ABORTS = ("ABSTrace", "UnalignedTrace")
ROUND_EVENTS = {"round_start": "start", "round_complete": "complete", "round_abort": "abort"}


_ROUND_OPS = frozenset({"ckpt", "decline", "record", "start", "complete", "abort"})


def dense_rounds(events: list[dict]) -> dict[int, int]:
    """Number the rounds the mapped ``events`` name 1, 2, … in order, in place (their
    ``n``: a round for the round operations and for markers, a sequence number for data),
    when they are not already; returns the map (trace round -> specification round), or
    ``{}`` when nothing changed. The specifications start rounds at 1 and one after
    another, and compare them only by order.

    >>> evs = [{"op": "start", "k": "", "n": 5}, {"op": "send", "k": "b", "n": 5}, {"op": "send", "k": "d", "n": 5},
    ...        {"op": "start", "k": "", "n": 7}]
    >>> dense_rounds(evs), [e["n"] for e in evs]
    ({5: 1, 7: 2}, [1, 1, 5, 2])
    >>> dense_rounds([{"op": "start", "k": "", "n": 1}])
    {}
    """

    def is_round(e: dict) -> bool:
        return e["op"] in _ROUND_OPS or (e["op"] in ("send", "recv", "arrive") and e["k"] not in ("d", ""))

    named = sorted({e["n"] for e in events if is_round(e)})
    if named == list(range(1, len(named) + 1)):
        return {}
    rank = {r: k for k, r in enumerate(named, 1)}
    for e in events:
        if is_round(e):
            e["n"] = rank[e["n"]]
    return rank


def _declined_round(e, roles: dict, chans: dict) -> int | None:
    """The round a task declines with this send (its control message ``["decline", r]``
    to a coordinator), or None."""
    ch = chans.get(e.ch)
    v = e.value
    if (
        ch is None
        or ch.kind != "control"
        or roles.get(ch.dst) != "coordinator"
        or roles.get(e.proc) not in ("task", "source", "sink")
    ):
        return None
    if isinstance(v, (list, tuple)) and len(v) == 2 and v[0] == "decline" and isinstance(v[1], int):
        return v[1]
    return None


def _check_header(trace: Trace, protocol: str, recorded: list[str]) -> None:
    """Raise ``OutOfScope`` (at the header) when the header declares facts that leave out
    what the specification judges: channel state observed at restore, which a trace
    without restores never reports, on channels whose state the specification records
    (``recorded``); channel state not delimited by the barriers.

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["a", "b"], [("a>b", "a", "b")], protocol="unaligned")
    >>> rec.header.protocol["params"] = {"channel_state": "observed-at-restore"}
    >>> _check_header(rec.trace(), "abs-aligned", [])  # no channel state to report
    >>> try:
    ...     _check_header(rec.trace(), "unaligned", ["a>b"])
    ... except OutOfScope as exc:
    ...     print(exc.line, exc.category)
    1 channel state observed at restore
    """
    facts = DeclaredFacts.of(trace.header.protocol)
    if facts.observed_at_restore and recorded:
        raise OutOfScope(
            f'channel state observed at restore (header: channel_state: "{OBSERVED_AT_RESTORE}"): the TLA+ '
            f"specification of {protocol} judges the channel state of every snapshot, which this trace reports "
            "only where a restore read it, and it restores nothing",
            1,
            "channel state observed at restore",
        )
    if not facts.barriers_delimit:
        raise OutOfScope(
            "channel state not delimited by barriers (header: barriers_delimit_channel_state: false): the TLA+ "
            f"specification of {protocol} ends each channel's recorded state at the round's barrier",
            1,
            "channel state not delimited by barriers",
        )


def _message(k: str, n: int) -> str:
    return {"d": f"record seq {n}", "b": f"barrier {n}", "cancel": f"cancellation marker {n}"}[k]


def prepare_snapshot(trace: Trace, protocol: str, family: TlaMapping) -> Prepared:
    """A coordinated snapshot trace (or a CIC trace, passed on to ``prepare_cic``) as
    spec events (raises ``OutOfScope``)."""
    h = trace.header
    roles = {p.id: p.role for p in h.processes}
    chans = {c.id: c for c in h.channels}
    for e in trace.events:
        if e.type in OUT_OF_SCOPE:
            raise OutOfScope(f"{e.type!r} event: the TLA+ specification of {protocol} models failure-free runs", e.line)
        if family.module not in MODELS_ABORTS and (
            e.type == "round_abort"
            or (e.type == "send" and e.kind == "cancel")
            or (e.type == "send" and _declined_round(e, roles, chans) is not None)
        ):
            what = (
                "cancellation marker"
                if e.type == "send" and e.kind == "cancel"
                else "decline"
                if e.type == "send"
                else "'round_abort' event"
            )
            raise OutOfScope(f"{what}: the TLA+ specification of {protocol} models rounds that all complete", e.line)
    if family.kind == "cic":
        return prepare_cic(trace, protocol, family)
    for e in trace.events:
        if e.type == "checkpoint" and e.kind not in ("coordinated", "initial"):
            raise OutOfScope(f"{e.kind} checkpoint: {protocol} takes coordinated checkpoints only", e.line)
        if e.type == "checkpoint" and e.kind == "coordinated" and e.round is None:
            raise OutOfScope("coordinated checkpoint without a round", e.line)

    roles, procs, data_chans = task_topology(trace)
    coords = sorted(p for p, r in roles.items() if r == "coordinator")
    ctrl_chans = sorted(
        {
            e.ch
            for e in trace.events
            if e.type == "send"
            and e.kind in MARKERS
            and e.ch is not None  # (a send's ch is required)
            and chans[e.ch].kind == "control"
            and roles[chans[e.ch].src] == "coordinator"
            and roles[chans[e.ch].dst] != "coordinator"
        }
    )
    for c in ctrl_chans:
        if roles[chans[c].dst] not in ("task", "source", "sink"):
            raise OutOfScope(f"barrier sent on control channel {c!r} to a {roles[chans[c].dst]} process")
    modelled = set(data_chans) | set(ctrl_chans)
    back = sorted(c for c in data_chans if chans[c].back_edge) if family.back_edges else []
    _check_header(trace, protocol, back if family.aligned else data_chans)

    # message identities: mid -> (channel, kind, number)
    msg: dict[str, tuple[str, str, int]] = {}
    ckpt_round: dict[tuple[str, int], int] = {}
    for e in trace.events:
        if e.type == "send":
            assert e.mid is not None and e.ch is not None  # required of a send
            if e.kind in MARKERS:
                assert e.round is not None  # required of a marker
                msg[e.mid] = (e.ch, MARKERS[e.kind], e.round)
            else:
                assert e.seq is not None  # required of a data message
                msg[e.mid] = (e.ch, "d", e.seq)
        elif e.type == "checkpoint" and e.kind == "coordinated":
            assert e.ckpt is not None and e.round is not None  # rejected above when it has no round
            ckpt_round[(e.proc, e.ckpt)] = e.round

    # output parts (unaligned): how many records a barrier overtook
    overtaken: dict[tuple[str, str, int], int] = {}
    for e in trace.events:
        if e.type == "record" and e.part == "output":
            assert e.ckpt is not None and e.ch is not None and e.mids is not None  # required of a record
            r = ckpt_round.get((e.proc, e.ckpt))
            if r is not None:
                overtaken[(e.proc, e.ch, r)] = len(e.mids)

    arrived = {e.mid for e in trace.events if e.type == "arrive"}
    # per channel: sent, not yet arrived, in wire order (send order, but a barrier goes
    # ahead of the output records it overtook)
    in_wire: dict[str, list[str]] = defaultdict(list)
    events: list[dict] = []
    lines: list[int] = []
    descr: list[str] = []
    ignored: Counter = Counter()
    declined: set[tuple[str, int]] = set()  # (task, round): a decline mapped
    rounds = 1
    max_data = 1

    short_p, short_c = short_names([*procs, *coords], sorted(modelled))

    def add(
        line: int,
        text: str,
        op: str,
        p: str,
        c: str = "",
        k: str = "",
        n: int = 0,
        x: int = 0,
        s: tuple = (),
        part: str = "",
    ) -> None:
        events.append(
            {
                "op": op,
                "p": short_p.get(p, p),
                "c": short_c.get(c, c),
                "k": k,
                "n": n,
                "x": x,
                "s": list(s),
                "part": part,
            }
        )
        lines.append(line)
        descr.append(text)

    for e in causal_order(trace):
        where = e.line
        if e.type in ALWAYS_IGNORED:
            ignored[e.type] += 1
            continue
        if e.type == "send" and (r := _declined_round(e, roles, chans)) is not None:
            rounds = max(rounds, r)
            declined.add((e.proc, r))
            add(where, f"decline of round {r} by {e.proc} (its message to the coordinator)", "decline", e.proc, n=r)
            continue
        if (
            e.type == "send"
            and e.kind == "cancel"
            and e.ch in modelled
            and e.proc in procs
            and (e.proc, e.round) not in declined
        ):
            assert e.round is not None  # required of a marker
            declined.add((e.proc, e.round))
            add(
                where,
                f"decline of round {e.round} by {e.proc} (implied by its cancellation marker {e.mid!r}: "
                "it declines the round now unless it already declined or gave it up)",
                "decline",
                e.proc,
                n=e.round,
                x=1,
            )
        if e.type in ("send", "recv", "arrive"):
            assert e.ch is not None and e.mid is not None  # required of a message event
            if e.ch not in modelled:
                ignored[f"{e.type} (external input or control message)"] += 1
                continue
            ch, k, n = msg[e.mid]
            if k == "d" and e.ch in ctrl_chans:
                ignored[f"{e.type} (control message)"] += 1
                continue
            if k == "d":
                max_data = max(max_data, n)
            else:
                rounds = max(rounds, n)
            what = f"{e.type} of {_message(k, n)} ({e.mid!r}) on {e.ch!r} by {e.proc}"
            if e.type == "arrive" and not family.models_arrival:
                ignored["arrive"] += 1
                continue
            if e.type in ("arrive", "recv") and family.models_arrival:
                # A message without an arrive event arrives as late as FIFO allows:
                # right before its receipt or before a later message of its channel arrives.
                queue = in_wire[e.ch]
                upto = queue.index(e.mid) if e.mid in queue else 0
                for m in queue[:upto]:
                    if m not in arrived:
                        add(where, f"arrival (implied) of {m!r} on {e.ch!r}", "arrive", e.proc, *msg[m])
                del queue[:upto]
                if queue and queue[0] == e.mid:
                    queue.pop(0)
                    if e.type == "recv" and e.mid not in arrived:
                        add(where, f"arrival (implied) of {e.mid!r} on {e.ch!r}", "arrive", e.proc, ch, k, n)
            if e.type == "send":
                x = overtaken.get((e.proc, e.ch, n), 0) if k == "b" else 0
                wire = in_wire[e.ch]
                wire.insert(max(0, len(wire) - x), e.mid)
                add(where, what, "send", e.proc, ch, k, n, x)
            else:
                add(where, what, e.type, e.proc, ch, k, n)
        elif e.type == "checkpoint":
            if e.kind == "initial":
                ignored["checkpoint (initial)"] += 1
                continue
            if e.proc not in procs:
                raise OutOfScope(f"checkpoint of {e.proc}, a {roles[e.proc]} process", where)
            assert e.round is not None  # a coordinated checkpoint (checked above)
            rounds = max(rounds, e.round)
            add(where, f"checkpoint {e.ckpt} (round {e.round}) of {e.proc}", "ckpt", e.proc, n=e.round)
        elif e.type == "record":
            assert e.ckpt is not None and e.mids is not None  # required of a record
            r = ckpt_round.get((e.proc, e.ckpt))
            if r is None:
                raise OutOfScope(
                    f"record for checkpoint {e.ckpt} of {e.proc}, which is not a coordinated checkpoint", where
                )
            if e.ch not in data_chans:
                raise OutOfScope(f"record of channel {e.ch!r}, which is not a data channel between tasks", where)
            seqs = []
            for m in e.mids:
                ch, k, n = msg[m]
                if k != "d":
                    raise OutOfScope(f"record lists the barrier {m!r} as channel state", where)
                seqs.append(n)
            part = e.part or "input"
            add(
                where,
                f"record of the {part} part of {e.ch!r} for round {r} by {e.proc}: {list(e.mids)}",
                "record",
                e.proc,
                e.ch,
                n=r,
                s=tuple(seqs),
                part=part,
            )
        elif e.type in ROUND_EVENTS:
            if e.proc not in coords:
                raise OutOfScope(f"{e.type} by {e.proc}, which is not a coordinator", where)
            assert e.round is not None  # required of a round event
            rounds = max(rounds, e.round)
            add(where, f"{e.type} {e.round} by {e.proc}", ROUND_EVENTS[e.type], e.proc, n=e.round)
        else:
            raise OutOfScope(
                f"{e.type!r} events are outside the specification of {protocol}: it does not model them", where
            )
    add(
        0,
        "end of trace: every non-empty recorded channel state of a round not aborted must have "
        "been reported by a record event",
        "end",
        "",
    )

    started = {e.round for e in trace.events if e.type == "round_start" and e.round is not None}  # (required)
    resolved = {e.round for e in trace.events if e.type in ("round_complete", "round_abort")}
    notes = []
    if renumbered := dense_rounds(events):
        rounds = max(1, len(renumbered))
        ids = ", ".join(map(str, sorted(renumbered)[:5])) + (" …" if len(renumbered) > 5 else "")
        notes.append(
            f"the trace's rounds ({ids}) are numbered 1…{len(renumbered)} for the specification, which "
            "counts rounds from 1, one after another (an engine's ids may start elsewhere or skip one a failed "
            "trigger used up): in order, so nothing that compares rounds changes"
        )
    if started - resolved:
        notes.append(
            f"round(s) {sorted(started - resolved)} started and neither completed nor aborted in "
            "this trace; a trace is a finite prefix, so whether they ever are (liveness) is decided "
            "by model checking, not here"
        )
    topology = (
        family,
        tuple(short_p[p] for p in procs),
        tuple(short_p[p] for p in coords),
        tuple(short_c[c] for c in data_chans),
        tuple(short_c[c] for c in ctrl_chans),
        tuple((short_c[c], short_p[chans[c].src], short_p[chans[c].dst]) for c in sorted(modelled)),
        tuple(short_c[c] for c in back),
    )
    return Prepared(
        trace.path,
        protocol,
        family,
        topology,
        snapshot_consts(topology),
        {"TRounds": rounds, "TMaxData": max_data},
        events,
        lines,
        descr,
        ignored,
        notes,
        names=_original(short_p, short_c),
    )


def prepare_cic(trace: Trace, protocol: str, family: TlaMapping) -> Prepared:
    """CIC traces: basic checkpoints, sends and receives; a forced checkpoint is folded
    into the receive that follows it on its process (x = 1)."""
    roles, procs, data_chans = task_topology(trace)
    modelled = set(data_chans)
    by_proc = trace.by_process()
    next_of = {}
    for evs in by_proc.values():
        for a, b in zip(evs, evs[1:]):
            next_of[id(a)] = b
    forced_before: set[int] = set()
    seq_of = {e.mid: e.seq for e in trace.events if e.type == "send"}
    events: list[dict] = []
    lines: list[int] = []
    descr: list[str] = []
    ignored: Counter = Counter()
    basic: Counter = Counter()
    sends = 0

    short_p, short_c = short_names(procs, data_chans)

    def add(line, text, op, p, c="", n=0, x=0):
        events.append(
            {"op": op, "p": short_p.get(p, p), "c": short_c.get(c, c), "k": "d", "n": n, "x": x, "s": [], "part": ""}
        )
        lines.append(line)
        descr.append(text)

    for e in causal_order(trace):
        if e.type in ALWAYS_IGNORED:
            ignored[e.type] += 1
        elif e.type in ("send", "recv", "arrive"):
            if e.ch not in modelled:
                ignored[f"{e.type} (external input or control message)"] += 1
            elif e.type == "arrive":
                ignored["arrive"] += 1
            elif e.type == "send":
                if e.kind == "barrier":
                    raise OutOfScope(f"barrier on {e.ch!r}: {protocol} sends no barriers", e.line)
                sends += 1
                add(
                    e.line,
                    f"send of record seq {e.seq} ({e.mid!r}) on {e.ch!r} by {e.proc}",
                    "send",
                    e.proc,
                    e.ch,
                    e.seq,
                )
            else:
                forced = id(e) in forced_before
                seq = seq_of[e.mid]
                add(
                    e.line,
                    f"recv of record seq {seq} ({e.mid!r}) on {e.ch!r} by {e.proc}, "
                    f"{'after a forced checkpoint' if forced else 'without a forced checkpoint'}",
                    "recv",
                    e.proc,
                    e.ch,
                    seq,
                    1 if forced else 0,
                )
        elif e.type == "checkpoint":
            if e.kind == "initial":
                ignored["checkpoint (initial)"] += 1
            elif e.kind == "basic":
                basic[e.proc] += 1
                add(e.line, f"basic checkpoint {e.ckpt} of {e.proc}", "ckpt", e.proc)
            elif e.kind == "forced":
                nxt = next_of.get(id(e))
                if nxt is None or nxt.type != "recv" or nxt.ch not in modelled:
                    add(
                        e.line,
                        f"forced checkpoint {e.ckpt} of {e.proc} that no receive follows",
                        "forced-alone",
                        e.proc,
                    )
                else:
                    forced_before.add(id(nxt))
            else:
                raise OutOfScope(f"{e.kind} checkpoint: {protocol} takes basic and forced checkpoints", e.line)
        else:
            raise OutOfScope(
                f"{e.type!r} events are outside the specification of {protocol}: it does not model them", e.line
            )
    add(0, "end of trace", "end", "")
    ends = tuple(
        (short_c[c.id], short_p[c.src], short_p[c.dst])
        for c in sorted(trace.header.channels, key=lambda c: c.id)
        if c.id in modelled
    )
    topology = (family, tuple(short_p[p] for p in procs), (), tuple(short_c[c] for c in data_chans), (), ends, ())
    bounds = {"TMaxMsgs": max(1, sends), "TMaxBasic": max([1, *basic.values()])}
    return Prepared(
        trace.path,
        protocol,
        family,
        topology,
        snapshot_consts(topology),
        bounds,
        events,
        lines,
        descr,
        ignored,
        [],
        names=_original(short_p, short_c),
    )


def _original(*maps: dict) -> dict:
    return {short: name for m in maps for name, short in m.items()}
