"""Trace events of LiveRobin active replication (protocol ``liverobin``, Algorithm 1 of
"Active Replication for Latency-Sensitive Stream Processing in Apache Flink") as events
of the trace specification
``specs/LiveRobinTrace.tla``.

The header names the replicated task's two replicas
(``protocol.params.replicas``) and each replica's merge configuration
(``merge_config``: its round-robin order of input queues). Queue ``k`` is the
``k``-th queue of the *first* replica's configuration; the specification makes
both replicas use it, so a replica configured otherwise is rejected where it
consumes differently. The merger of a queue is the process that sends on it
(in the reference, the source, which inserts the heartbeats of ``HG``).

Spec events are records ``[op, r, k, n, v, h]``:

====================================  ============================================
trace event                           spec event
====================================  ============================================
``send`` merger -> replica r          ``emit``: ``n`` its sequence number, ``v``
                                      the event number (per merger) or heartbeat
                                      number (``attrs.heartbeat``), ``h = 1`` for
                                      a heartbeat
``arrive`` / ``recv`` by replica r    ``arrive`` / ``consume`` (Algorithm 1)
``send`` replica r -> sink            ``out``: ``n`` its sequence number, ``v``
                                      the heartbeat number of a propagated one
``recv`` / ``discard`` by the sink    ``pick`` / ``drop`` (first come, first picked)
``fail`` of a replica                 ``fail``
(end of the trace)                    ``end``: every live replica sent the outputs
                                      of what it consumed
====================================  ============================================

Not mapped, and counted: the heartbeat generator's messages to the mergers
(the specification's HG is the heartbeat numbering of the streams), ``output``.
"""

from __future__ import annotations

from collections import Counter

from snapcheck.checker.tla.trace_events import OutOfScope, Prepared, SpecEvents, TlaMapping, causal_order, tla
from snapcheck.traces.model import Trace


def prepare_replication(trace: Trace, protocol: str, family: TlaMapping) -> Prepared:
    h = trace.header
    params = h.protocol.get("params", {})
    replicated = params.get("replicas") or {}
    if len(replicated) != 1:
        raise OutOfScope(
            f"{len(replicated)} replicated tasks in protocol.params.replicas: the "
            "specification models one task with two replicas"
        )
    ((task, replicas),) = replicated.items()
    if len(replicas) != 2:
        raise OutOfScope(
            f"task {task} has {len(replicas)} replicas: the specification models two", category="not two replicas"
        )
    rep_no = {rid: n for n, rid in enumerate(replicas, 1)}
    chans = {c.id: c for c in h.channels}
    order = [c.src for c in h.channels if c.dst == replicas[0] and c.kind == "data"]
    config = (params.get("merge_config") or {}).get(replicas[0], list(range(len(order))))
    if sorted(config) != list(range(len(order))):
        raise OutOfScope(
            f"merge_config of {replicas[0]} is not an order of its {len(order)} input queues",
            category="a merge_config that is not an order of the input queues",
        )
    queue = {order[j]: k for k, j in enumerate(config, 1)}  # merger -> queue number
    for r in replicas[1:]:
        mine = sorted(c.src for c in h.channels if c.dst == r and c.kind == "data")
        if mine != sorted(order):
            raise OutOfScope(
                f"replica {r} does not read the same queues as {replicas[0]}",
                category="replicas that read different queues",
            )
    sinks = {c.dst for c in h.channels if c.src in rep_no}
    if len(sinks) != 1:
        raise OutOfScope(
            f"the replicas send to {sorted(sinks)}: the specification models one sink",
            category="replicas that send to more than one sink",
        )
    (sink,) = sinks

    numbers: Counter = Counter()
    item: dict[str, tuple[int, int]] = {}  # mid -> (v, h)
    for e in trace.events:
        if e.type != "send":
            continue
        assert e.ch is not None and e.mid is not None  # required of a send
        if e.ch in chans and chans[e.ch].dst in rep_no and chans[e.ch].src in queue:
            beat = (e.attrs or {}).get("heartbeat")
            if beat is None:
                numbers[e.ch] += 1
                item[e.mid] = (numbers[e.ch], 0)
            else:
                item[e.mid] = (int(beat), 1)
    out = SpecEvents()
    seq_of = {e.mid: e.seq for e in trace.events if e.type == "send"}
    max_ev, max_hb = 1, 1

    def add(e, text, op, r=0, k=0, n=0, v=0, hb=0):
        out.add(e.line, text, op=op, r=r, k=k, n=n, v=v, h=hb)

    for e in causal_order(trace):
        t = e.type
        c = chans.get(e.ch) if e.ch else None
        if t == "output":
            out.ignored[t] += 1
        elif t == "fail" and e.proc in rep_no:
            add(e, f"failure of replica {e.proc}", "fail", rep_no[e.proc])
        elif c is None:  # the other events the specification models are on channels
            raise OutOfScope(f"{t!r} event of {e.proc} is not part of the LiveRobin specification", e.line)
        elif t == "send" and c.dst in rep_no and c.src in queue:
            assert e.mid is not None  # a message event names its message
            v, hb = item[e.mid]
            if hb:
                max_hb = max(max_hb, v)
            else:
                max_ev = max(max_ev, v)
            add(
                e,
                f"{'heartbeat ' if hb else 'event '}{v} of queue {queue[c.src]} ({e.mid!r}) sent to {c.dst}",
                "emit",
                rep_no[c.dst],
                queue[c.src],
                e.seq,
                v,
                hb,
            )
        elif t in ("arrive", "recv") and c.dst in rep_no and c.src in queue:
            assert e.mid is not None  # a message event names its message
            v, hb = item[e.mid]
            what = "arrival" if t == "arrive" else "consumption"
            add(
                e,
                f"{what} of {'heartbeat ' if hb else 'event '}{v} of queue {queue[c.src]} ({e.mid!r}) "
                f"at {e.proc}" + ("" if t == "arrive" else ": Algorithm 1 must poll this queue now"),
                "arrive" if t == "arrive" else "consume",
                rep_no[e.proc],
                queue[c.src],
                seq_of[e.mid],
                v,
                hb,
            )
        elif t == "send" and c.src in rep_no and c.dst == sink:
            beat = (e.attrs or {}).get("heartbeat")
            add(
                e,
                f"output {e.seq} of {e.proc} ({'heartbeat ' + str(beat) if beat else 'an event'})",
                "out",
                rep_no[e.proc],
                0,
                e.seq,
                int(beat or 0),
                1 if beat else 0,
            )
        elif t in ("recv", "discard") and e.proc == sink and c.src in rep_no:
            add(
                e,
                f"{'pick' if t == 'recv' else 'discard'} of output {seq_of[e.mid]} of {c.src} by the sink",
                "pick" if t == "recv" else "drop",
                rep_no[c.src],
                0,
                seq_of[e.mid],
            )
        elif t in ("send", "recv") and c.dst not in rep_no and c.src not in rep_no:
            out.ignored[f"{t} (heartbeat generator to merger)"] += 1
        else:
            raise OutOfScope(f"{t!r} event of {e.proc} is not part of the LiveRobin specification", e.line)
    out.add(
        0, "end of trace: every live replica sent the outputs of what it consumed", op="end", r=0, k=0, n=0, v=0, h=0
    )
    notes = []
    if not any(hb for _, hb in item.values()):
        notes.append(
            "no heartbeat in this trace: Algorithm 1 then polls the queues in plain round robin; "
            "such a finite run can be a prefix of a LiveRobin behaviour, and whether the replicas "
            "stall when a source goes quiet (liveness) is decided by model checking "
            "(MCLiveRobin_bug_plain_rr), not here"
        )
    topology = (family, len(queue))
    return Prepared(
        trace.path,
        protocol,
        family,
        topology,
        [("TN", tla(len(queue)))],
        {"TMaxEvents": max_ev, "TMaxHB": max_hb},
        out.events,
        out.lines,
        out.descr,
        out.ignored,
        notes,
    )
