"""Trace events of regional checkpoints on aligned barriers (protocol
``regional-aligned``, FLIP-600) as events of the trace specification
``specs/RegionalTrace.tla`` (a behaviour of ``specs/RegionalCheckpoint.tla``).

The header gives the topology: the tasks and the data channels between them,
each task's pipeline region (process ``attrs.region``), the readers (role
``source``) and sinks, the splits (``external`` processes with ``attrs.split``)
and their owners (the reader each split log's channel leads to); the protocol
parameters give the reading (``region-restart`` or ``region-continue``), the
consecutive limit, the share of failed regions a regional completion accepts and
the rounds in progress at once.

Spec events are records ``[op, p, c, n, k, r, w, sp, x, s, t]``:

=========================================  ===============================================
trace event                                spec event
=========================================  ===============================================
``send`` / ``recv`` of a data record on a  ``send`` / ``recv``: ``c`` the channel, ``k`` its
channel between tasks                      sequence number
``checkpoint`` (coordinated, round n)      ``take``: ``p`` takes its snapshot of round ``n``
task -> coordinator ``send`` of            ``decline``
``["decline", n]``
``round_start`` / ``round_complete`` /     ``trigger`` / ``complete`` (``x`` the fallback as
``round_abort``                            ``<<process, resolved round>>`` pairs, ``s`` the
                                           checkpointed split assignment, ``t = 1`` after a
                                           timeout) / ``abort`` (``w`` why: ``regions``, a
                                           forced global checkpoint's reason, ``t``)
``fail``                                   ``crash`` of the process's region ``r``
the restores of one recovery               ``restart`` of region ``r`` from completed round
                                           ``n``, ``x`` each process's restored round
coordinator ``send`` / reader ``recv``     ``assign`` / ``assigned`` of split ``sp``
with ``attrs.split``
sink ``output`` ``attrs.phase: commit``    ``publish``: ``p`` commits its transaction ``n``
(end of the trace)                         ``end``
=========================================  ===============================================

A recovery that restores the whole job of several regions at once -- a rescale, which
stops the job and deals the operators' state out anew, reading it from the checkpoints
each region's fallback names -- is outside the specification, which restores one region
from its own snapshots.

Not mapped, and counted: barriers and cancellation markers, acknowledgements and other control messages
(split requests, notifications), the split logs' records and their re-reads
(external input), stale messages discarded after a restore, pre-commits and end
of stream.
"""

from __future__ import annotations

from collections import Counter

from snapcheck.checker.rounds import find_rounds, resolve
from snapcheck.checker.tla.trace_events import OutOfScope, Prepared, SpecEvents, causal_order, tla, tla_function
from snapcheck.traces.model import MARKERS, Trace
from snapcheck.traces.protocol_facts import TlaMapping

RESCALE = "a restore of the whole job (a rescale)"  # outside: the specification models the failover of one region

READING = {"region-restart": "restart", "region-continue": "continue"}


def prepare_regional(trace: Trace, protocol: str, family: TlaMapping) -> Prepared:
    h = trace.header
    params = h.protocol.get("params") or {}
    if not params.get("aligned"):
        raise OutOfScope(
            "the specification models regional checkpoints on aligned barriers; this trace's "
            "protocol does not declare params.aligned"
        )
    named = params.get("reading")
    reading = READING.get(named) if isinstance(named, str) else None
    if reading is None or not isinstance(params.get("max_consecutive"), int):
        raise OutOfScope("protocol.params must give reading (region-restart or region-continue) and max_consecutive")
    roles = {p.id: p.role for p in h.processes}
    procs = sorted(p.id for p in h.processes if p.role in ("task", "source", "sink"))
    region = {}
    for p in h.processes:
        if p.id in procs:
            r = (p.attrs or {}).get("region")
            if not isinstance(r, int):
                raise OutOfScope(
                    f"process {p.id} has no attrs.region: the pipeline regions are not declared",
                    category="a process without a declared region",
                )
            region[p.id] = r
    chans = {c.id: c for c in h.channels}
    data = sorted(c.id for c in h.channels if c.kind == "data" and c.src in region and c.dst in region)
    splits = {
        p.id: p.attrs["split"] for p in h.processes if roles[p.id] == "external" and p.attrs and "split" in p.attrs
    }
    readers: dict = {}  # split -> the readers its log has a channel to
    for link in h.channels:
        if link.src in splits:
            readers.setdefault(splits[link.src], set()).add(link.dst)
    if set(readers) != set(splits.values()):
        raise OutOfScope("a split log has no channel to a reader")
    # A split whose log has channels to several readers (declared when a rescale may move it)
    # belongs to the reader its log actually feeds; feeding two is a moved split.
    fed: dict = {}
    for e in trace.events:
        if e.type == "send" and e.proc in splits and e.ch in chans:
            fed.setdefault(splits[e.proc], set()).add(chans[e.ch].dst)
    owner = {}
    for sp, rs in readers.items():
        used = fed.get(sp, set()) if len(rs) > 1 else rs
        if len(used) > 1:
            raise OutOfScope(
                f"split {sp} is read by {sorted(used)}: it moved between readers, as a rescale does: "
                "a whole-job restore (rescale) is outside the regional specification",
                category=RESCALE,
            )
        owner[sp] = min(used or rs)
    regions = sorted(set(region.values()))
    max_failed = int(float(params.get("max_failure_ratio", 1.0)) * len(regions) + 1e-9)

    markers = {e.mid for e in trace.events if e.type == "send" and e.kind in MARKERS}  # barriers, cancellations
    seq_of: dict[str, tuple[str, int]] = {}
    assign_of: dict[str, int] = {}
    round_of_ckpt: dict[tuple[str, int], int] = {}
    for e in trace.events:
        if e.type == "send" and e.kind not in MARKERS and e.ch in data:
            assert e.ch is not None and e.mid is not None and e.seq is not None  # required of a data message
            seq_of[e.mid] = (e.ch, e.seq)
        elif e.type == "send" and e.attrs and "split" in e.attrs:
            assert e.mid is not None  # required of a send
            assign_of[e.mid] = e.attrs["split"]
        elif e.type == "checkpoint" and e.kind == "coordinated":
            assert e.ckpt is not None  # required of a checkpoint
            if e.round is None:
                raise OutOfScope("coordinated checkpoint without a round", e.line)
            round_of_ckpt[(e.proc, e.ckpt)] = e.round
    rounds = find_rounds(trace, set(procs))

    out = SpecEvents()
    fields = {"op": "", "p": "", "c": "", "n": 0, "k": 0, "r": 0, "w": "", "sp": 0, "x": [], "s": set(), "t": 0}

    def add(e, text, **kw):
        out.add(e.line if e is not None else 0, text, **{**fields, **kw})

    max_round, max_data, crashes = 1, 1, 0
    restored: set = set()
    for e in causal_order(trace):
        t = e.type
        c = chans.get(e.ch) if e.ch else None
        if t in ("send", "recv"):
            if e.ch in data:
                if e.kind in MARKERS or e.mid in markers:
                    out.ignored["barrier or cancellation marker"] += 1
                    continue
                if e.mid not in seq_of:
                    raise OutOfScope(
                        f"{t} of {e.mid!r} on {e.ch!r}, a message the specification does not know "
                        "(a replay of recorded channel state?)",
                        e.line,
                    )
                ch, k = seq_of[e.mid]
                max_data = max(max_data, k)
                add(e, f"{t} of record seq {k} ({e.mid!r}) on {ch!r} by {e.proc}", op=t, c=ch, k=k)
            elif e.mid in assign_of:
                assert c is not None  # a send or recv names its channel
                sp = assign_of[e.mid]
                what = "assign" if t == "send" else "assigned"
                add(e, f"split {sp} {'handed to' if t == 'send' else 'received by'} {c.dst}", op=what, sp=sp)
            elif t == "send" and e.proc in region and isinstance(e.value, list) and e.value[:1] == ["decline"]:
                add(e, f"{e.proc} declines round {e.value[1]}", op="decline", p=e.proc, n=e.value[1])
            elif t == "send" and e.proc in region and c is not None and c.kind == "control" and e.value is None:
                raise OutOfScope(
                    "a control message without its value: declines cannot be told from acknowledgements", e.line
                )
            else:
                out.ignored[f"{t} (control message or external input)"] += 1
        elif t == "checkpoint":
            if e.kind != "coordinated":
                out.ignored[f"checkpoint ({e.kind})"] += 1
                continue
            assert e.round is not None  # checked above
            max_round = max(max_round, e.round)
            add(e, f"checkpoint {e.ckpt} (round {e.round}) of {e.proc}", op="take", p=e.proc, n=e.round)
        elif t == "round_start":
            assert e.round is not None  # required of a round event
            max_round = max(max_round, e.round)
            add(e, f"round_start {e.round}", op="trigger", n=e.round)
        elif t == "round_complete":
            assert e.round is not None
            info = rounds[e.round]
            pairs: list[list] = []  # [process, the round whose state it keeps]
            for proc in sorted(info.fallback):
                ev, chain = resolve(rounds, e.round, proc)
                if ev is None:
                    raise OutOfScope(f"round {e.round}'s fallback for {proc} names no checkpoint", e.line)
                pairs.append([proc, chain[-1]])
            assignment = (e.attrs or {}).get("assignment") or {}
            add(
                e,
                f"round_complete {e.round}" + (f" keeping {dict(pairs)}" if pairs else ""),
                op="complete",
                n=e.round,
                x=pairs,
                s={int(s) for s in assignment},
                t=1 if (e.attrs or {}).get("timeout") else 0,
            )
        elif t == "round_abort":
            why = (e.attrs or {}).get("forced_global") or "regions"
            timeout = str(e.reason or "").startswith("timeout")
            add(e, f"round_abort {e.round} ({e.reason})", op="abort", n=e.round, w=why, t=1 if timeout else 0)
        elif t == "fail":
            crashes += 1
            add(e, f"crash of {e.proc} (region {region[e.proc]})", op="crash", r=region[e.proc])
        elif t == "restore":
            key = e.recovery
            if key in restored:
                out.ignored["restore (same recovery)"] += 1
                continue
            restored.add(key)
            group = [x for x in trace.events if x.type == "restore" and x.recovery == key]
            regs = {region[x.proc] for x in group}
            if len(regs) > 1 and {x.proc for x in group} == set(procs):
                raise OutOfScope(
                    f"recovery {key} restores the whole job (every process, {len(regs)} regions) at once, "
                    "as a rescale does: a whole-job restore (rescale) is outside the regional specification, "
                    "which models the failover of one region",
                    e.line,
                    RESCALE,
                )
            if len(regs) != 1 or {x.proc for x in group} != {p for p in procs if region[p] in regs}:
                raise OutOfScope(
                    f"recovery {key} restores {sorted(x.proc for x in group)}: not one whole region",
                    e.line,
                    "a recovery that restores other than one whole region",
                )
            pairs = [[x.proc, round_of_ckpt.get((x.proc, x.ckpt), 0) if x.ckpt else 0] for x in group]
            add(
                e,
                f"restore of region {regs.pop()} from completed round {e.round or 0}",
                op="restart",
                r=region[e.proc],
                n=e.round or 0,
                x=pairs,
            )
        elif t == "output":
            attrs = e.attrs or {}
            if attrs.get("phase") == "commit":
                add(e, f"{e.proc} commits transaction {attrs['txn']}", op="publish", p=e.proc, n=attrs["txn"])
            else:
                out.ignored["output (pre-commit, end of stream)"] += 1
        elif t in ("discard", "replay"):
            out.ignored[t] += 1
        else:
            raise OutOfScope(f"{t!r} events are not part of the regional specification", e.line)
    add(None, "end of trace", op="end")
    topology = (
        family,
        tuple(procs),
        tuple(data),
        tuple(sorted(region.items())),
        tuple(sorted(owner.items())),
        reading,
        params["max_consecutive"],
        max_failed,
        params.get("max_concurrent", 1),
    )
    consts = [
        ("TProcs", tla(set(procs))),
        ("TChans", tla(set(data))),
        ("TSrc", tla_function({c: chans[c].src for c in data})),
        ("TDst", tla_function({c: chans[c].dst for c in data})),
        ("TRegion", tla_function(region)),
        ("TReaders", tla({p for p in procs if roles[p] == "source"})),
        ("TSinks", tla({p for p in procs if roles[p] == "sink"})),
        ("TSplits", tla(set(owner))),
        ("TOwner", tla_function(owner)),
        ("TReading", tla(reading)),
        ("TMaxConsecutive", tla(params["max_consecutive"])),
        ("TMaxFailed", tla(max_failed)),
        ("TMaxPending", tla(params.get("max_concurrent", 1))),
    ]
    notes = []
    joined = [c for c in data if region[chans[c].src] != region[chans[c].dst]]
    unproven = {}
    if joined:  # the composed checkpoint is a consistent snapshot only for independent regions
        c = chans[joined[0]]
        why = (
            f"channel {c.id!r} joins regions {region[c.src]} and {region[c.dst]}"
            + (f" ({len(joined) - 1} more channel(s) join regions)" if len(joined) > 1 else "")
            + ": a checkpoint composed of the regions' own rounds is a consistent snapshot only when no "
            "data channel joins two regions"
        )
        unproven = dict.fromkeys(("ComposedConsistent", "ComposedChannelStateExact"), why)
    started = {e.round for e in trace.events if e.type == "round_start" and e.round is not None}  # (required)
    ended = {e.round for e in trace.events if e.type in ("round_complete", "round_abort")}
    if started - ended:
        notes.append(f"round(s) {sorted(started - ended)} started and never ended in this trace")
    return Prepared(
        trace.path,
        protocol,
        family,
        topology,
        consts,
        {"TRounds": max_round, "TMaxData": max_data, "TMaxRestarts": crashes},
        out.events,
        out.lines,
        out.descr,
        Counter(out.ignored),
        notes,
        unproven=unproven,
    )
