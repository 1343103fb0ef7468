"""Trace events of uncoordinated checkpointing with message logging (protocol
``unc``, CheckMate's UNC) as events of the trace specification
``specs/UncoordinatedTrace.tla`` (see its header for the refinement-style
mapping to ``Uncoordinated.tla``).

Spec events are records ``[op, p, c, n, m, x, s]``:

=====================  =========================================================
trace event            spec event
=====================  =========================================================
``send`` (data)        ``send``: ``n`` its sequence number, ``m`` the message's
                       identity, ``x = 1`` iff the send or its channel is
                       ``logged``
``recv``               ``recv``: ``n`` / ``m`` of the message processed
``discard``            ``discard``: a message of a purged epoch dropped
``replay`` (from log)  ``replay``: ``n`` the sequence number of the original
                       (``replay_of``), ``m`` the identity of the new copy
``checkpoint`` basic   ``ckpt``: ``n`` the checkpoint number
``log``                ``log``: ``s`` the sequence numbers logged
``log_truncate``       ``truncate``: ``n`` = ``through_seq``
``fail`` / ``restore``  ``fail`` / ``restore`` (``n`` the checkpoint restored)
(end of the trace)     ``end``: no recovery left half done
=====================  =========================================================

Modelled are the tasks, sources and sinks and the data channels between them.
Not modelled, and counted in the verdict: external input (sources' input logs,
their re-reads after a restore: ``replay`` ``from: "source"``), control
messages (checkpoint metadata to the coordinator, sink commits), ``output``,
``arrive``, initial checkpoints. Forced or coordinated checkpoints, barriers,
rounds and replays from recorded channel state are not UNC: an ERROR.
"""

from __future__ import annotations

from snapcheck.checker.tla.trace_events import (
    OutOfScope,
    Prepared,
    SpecEvents,
    TlaMapping,
    causal_order,
    task_topology,
    tla,
    tla_function,
)
from snapcheck.traces.model import Trace

RECOVERY_MODES = ("restart-all", "partial")


def prepare_unc(trace: Trace, protocol: str, family: TlaMapping, forced: bool = False) -> Prepared:
    """``forced``: the trace is a communication-induced protocol's (bcs, hmnr) with
    failures; its forced checkpoints are checkpoints like the basic ones here (whether
    each was due is the CIC specifications' business, in failure-free traces)."""
    h = trace.header
    mode = str(h.protocol.get("params", {}).get("recovery", "restart-all"))
    if mode not in RECOVERY_MODES:
        raise OutOfScope(f"recovery mode {mode!r} (the specification knows {', '.join(RECOVERY_MODES)})")
    roles, procs, data_chans = task_topology(trace)
    modelled = set(data_chans)
    chans = {c.id: c for c in h.channels}
    seq_of: dict[str, int] = {}
    ident: dict[str, int] = {}

    def number(mid: str) -> int:
        return ident.setdefault(mid, len(ident) + 1)

    for e in trace.events:
        if e.type == "send":
            assert e.mid is not None  # required of a send
            if e.seq is not None:  # every data message has one (markers and control messages need not)
                seq_of[e.mid] = e.seq
        elif e.type == "replay" and e.replay_of in seq_of:
            assert e.mid is not None and e.replay_of is not None  # required of a replay
            seq_of[e.mid] = seq_of[e.replay_of]

    out = SpecEvents()

    def add(e, text, op, c="", n=0, m=0, x=0, s=()):
        out.add(e.line, text, op=op, p=e.proc, c=c, n=n, m=m, x=x, s=list(s))

    for e in causal_order(trace):
        t = e.type
        if t in ("output", "arrive"):
            out.ignored[t] += 1
        elif t in ("send", "recv", "discard", "replay", "log", "log_truncate"):
            assert e.ch is not None  # required of the six
            if e.ch not in modelled:
                kind = "external input" if roles.get(chans[e.ch].src) == "external" else "control message"
                out.ignored[f"{t} ({kind})"] += 1
            elif t == "send":
                if e.kind == "barrier":
                    raise OutOfScope(f"barrier on {e.ch!r}: {protocol} sends no barriers", e.line)
                assert e.mid is not None
                logged = bool(e.logged) or chans[e.ch].logged
                add(
                    e,
                    f"send of record seq {e.seq} ({e.mid!r}) on {e.ch!r} by {e.proc}{'' if logged else ', not logged'}",
                    "send",
                    e.ch,
                    e.seq,
                    number(e.mid),
                    1 if logged else 0,
                )
            elif t in ("recv", "discard"):
                assert e.mid is not None
                what = "processing" if t == "recv" else "discard"
                add(
                    e,
                    f"{what} of record seq {seq_of[e.mid]} ({e.mid!r}) on {e.ch!r} by {e.proc}",
                    t,
                    e.ch,
                    seq_of[e.mid],
                    number(e.mid),
                )
            elif t == "replay":
                if e.source != "log":
                    raise OutOfScope(
                        f"replay from {e.source!r} on {e.ch!r}: {protocol} replays from its senders' logs", e.line
                    )
                assert e.mid is not None
                add(
                    e,
                    f"replay from the log of record seq {seq_of[e.mid]} ({e.replay_of!r} as {e.mid!r}) "
                    f"on {e.ch!r} by {e.proc}",
                    "replay",
                    e.ch,
                    seq_of[e.mid],
                    number(e.mid),
                )
            elif t == "log":
                assert e.mids is not None  # required of a log event
                seqs = [seq_of[m] for m in e.mids]
                add(e, f"logging of {list(e.mids)} on {e.ch!r} by {e.proc}", "log", e.ch, s=seqs)
            else:
                add(
                    e,
                    f"log truncation of {e.ch!r} through seq {e.through_seq} by {e.proc}: only entries "
                    "the recovery line for the failure of every process covers may go",
                    "truncate",
                    e.ch,
                    e.through_seq,
                )
        elif t == "checkpoint":
            if e.kind == "initial":
                out.ignored["checkpoint (initial)"] += 1
            elif e.kind != "basic" and not (forced and e.kind == "forced"):
                raise OutOfScope(f"{e.kind} checkpoint: {protocol} takes basic checkpoints only", e.line)
            elif e.proc not in procs:
                raise OutOfScope(f"checkpoint of {e.proc}, a {roles[e.proc]} process", e.line)
            else:
                add(e, f"{e.kind} checkpoint {e.ckpt} of {e.proc}", "ckpt", n=e.ckpt)
        elif t in ("fail", "restore"):
            if e.proc not in procs:
                raise OutOfScope(f"{t} of {e.proc}, a {roles[e.proc]} process", e.line)
            if t == "fail":
                add(e, f"failure of {e.proc}", "fail")
            else:
                add(
                    e,
                    f"restore of checkpoint {e.ckpt} by {e.proc}: the recovery line (rollback "
                    "propagation) must hold it, and every in-transit message of the line must be "
                    "in its sender's log",
                    "restore",
                    n=e.ckpt,
                )
        else:
            raise OutOfScope(f"{t!r} events are not part of {protocol}", e.line)
    out.add(
        0,
        "end of trace: every recovery completed (all restores, all replays)",
        op="end",
        p="",
        c="",
        n=0,
        m=0,
        x=0,
        s=[],
    )
    ends = tuple((c, chans[c].src, chans[c].dst) for c in data_chans)
    topology = (family, tuple(procs), ends, mode)
    consts = [
        ("TProcs", tla(set(procs))),
        ("TChans", tla(set(data_chans))),
        ("TSrc", tla_function({c: s for c, s, _ in ends})),
        ("TDst", tla_function({c: d for c, _, d in ends})),
        ("TMode", tla(mode)),
    ]
    return Prepared(
        trace.path, protocol, family, topology, consts, {}, out.events, out.lines, out.descr, out.ignored, []
    )
