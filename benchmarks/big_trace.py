"""A big trace of a streaming job under Chandy-Lamport snapshots, written in constant memory.

``snapcheck simulate -p unaligned -w q12 --records R`` gives the realistic traces
of the scale benchmarks, but the reference simulator keeps about 4.5 KB per event
while it runs (1.4 GB for 300,000 events), so a 2,000,000-event simulation does
not fit next to other work on a small machine. This generator writes a trace of
the same shape and density, streaming, in O(processes) memory:

* the q12 dataflow: per partition ``i < P`` an external input ``ext:src[i]``
  (a replayable log), a source ``src[i]``, a keyed window ``win[i]`` (every
  source sends to every window by key) and a sink ``sink[i]``; a coordinator;
* each input record: the log's send, the source's processing and its send by
  key, the window's arrival, processing and send, the sink's arrival, processing
  and output — nine events, with a random network delay per message on FIFO
  channels (so messages are in flight across snapshot cuts);
* every ``interval`` ticks a snapshot round (Chandy and Lamport, "Distributed
  Snapshots: Determining Global States of Distributed Systems", 1985): the
  coordinator's ``round_start`` and barrier to each source, each task's
  coordinated checkpoint at its first barrier of the round, the barrier forwarded
  on every output, the messages that arrive on an input after the checkpoint and
  before that input's barrier recorded as its channel state, and the
  coordinator's ``round_complete`` once every task's snapshot is final (its
  checkpoint taken and the barrier of every input received).

Every round's cut is consistent and its channel state exact, so ``snapcheck
check`` finds the trace clean; it is valid for ``validate-trace``.

``--wide P`` writes instead a trace whose header has ``P`` processes (a ring, three
events each), for the benchmarks of very wide traces.

Usage: ``python benchmarks/big_trace.py OUT.jsonl [--events N] [--partitions P] [--interval T] [--seed S] [--wide P]``
"""

from __future__ import annotations

import argparse
import heapq
import random
from pathlib import Path

import orjson


class _Writer:
    def __init__(self, path: Path, header: dict, procs: list[str]):
        self.f = open(path, "wb")
        self.f.write(orjson.dumps(header) + b"\n")
        self.idx = dict.fromkeys(procs, 0)
        self.seq: dict[str, int] = {}
        self.events = 0
        self.buf: list[bytes] = []

    def ev(self, etype: str, proc: str, t: int, **fields) -> None:
        d = {"type": etype, "proc": proc, "idx": self.idx[proc]}
        d.update(fields)
        d["t"] = t
        self.idx[proc] += 1
        self.buf.append(orjson.dumps(d))
        self.events += 1
        if len(self.buf) >= 4096:
            self.flush()

    def send(self, proc: str, ch: str, t: int, **fields) -> str:
        s = self.seq[ch] = self.seq.get(ch, 0) + 1
        mid = f"{ch}:{s}"
        self.ev("send", proc, t, ch=ch, mid=mid, seq=s, **fields)
        return mid

    def flush(self) -> None:
        if self.buf:
            self.f.write(b"\n".join(self.buf) + b"\n")
            self.buf = []

    def close(self) -> None:
        self.flush()
        self.f.close()


def generate(
    path: str | Path,
    events: int = 2_000_000,
    partitions: int = 2,
    interval: int = 3000,
    seed: int = 0,
    latency: int = 40,
    jitter: int = 60,
    gap: int = 100,
) -> int:
    """Write the trace to ``path``; returns the number of events written (about ``events``)."""
    rng = random.Random(seed)
    P = partitions
    src = [f"src[{i}]" for i in range(P)]
    ext = [f"ext:src[{i}]" for i in range(P)]
    win = [f"win[{i}]" for i in range(P)]
    sink = [f"sink[{i}]" for i in range(P)]
    tasks = src + win + sink
    processes = (
        [{"id": p, "role": "source"} for p in src]
        + [{"id": p} for p in win]
        + [{"id": p, "role": "sink"} for p in sink]
        + [{"id": p, "role": "external"} for p in ext]
        + [{"id": "coordinator", "role": "coordinator"}]
    )
    channels = (
        [{"id": f"{ext[i]}->{src[i]}", "src": ext[i], "dst": src[i], "logged": True} for i in range(P)]
        + [{"id": f"{src[i]}->{win[j]}", "src": src[i], "dst": win[j]} for i in range(P) for j in range(P)]
        + [{"id": f"{win[i]}->{sink[i]}", "src": win[i], "dst": sink[i]} for i in range(P)]
        + [{"id": f"coordinator->{src[i]}", "src": "coordinator", "dst": src[i], "kind": "control"} for i in range(P)]
    )
    inputs = (
        {w: [f"{s}->{w}" for s in src] for w in win}
        | {sink[i]: [f"{win[i]}->{sink[i]}"] for i in range(P)}
        | {src[i]: [f"coordinator->{src[i]}"] for i in range(P)}
    )
    outputs = (
        {src[i]: [f"{src[i]}->{w}" for w in win] for i in range(P)}
        | {win[i]: [f"{win[i]}->{sink[i]}"] for i in range(P)}
        | {s: [] for s in sink}
    )
    header = {
        "format": "snapcheck-trace",
        "version": 1,
        "processes": processes,
        "channels": channels,
        "protocol": {"name": "chandy-lamport", "params": {"aligned": False, "interval": interval}},
        "seed": seed,
        "metadata": {
            "generator": {"script": "benchmarks/big_trace.py", "events": events, "partitions": P, "interval": interval}
        },
    }
    w = _Writer(Path(path), header, [p["id"] for p in processes])
    heap: list[tuple[int, int, str, tuple]] = []  # (time, tiebreak, action, data)
    last_arrival: dict[str, int] = {}
    tick = 0

    def at(t: int, action: str, *data) -> None:
        nonlocal tick
        tick += 1
        heapq.heappush(heap, (t, tick, action, data))

    def deliver(ch: str, dst: str, mid: str, t: int, barrier_round: int | None = None) -> None:
        arrival = max(t + latency + rng.randrange(jitter), last_arrival.get(ch, 0) + 1)  # FIFO
        last_arrival[ch] = arrival
        at(arrival, "arrive", dst, ch, mid, barrier_round)

    role = dict.fromkeys(src, "source") | dict.fromkeys(win, "window") | dict.fromkeys(sink, "sink")
    ckpt = dict.fromkeys(tasks, 0)  # last round checkpointed
    recording: dict[str, dict[str, list[str]]] = {p: {} for p in tasks}  # input channel -> mids recorded
    done_round: dict[int, int] = {}
    for i in range(P):
        at(rng.randrange(gap), "read", i)
    at(interval, "round", 1)
    budget = events
    while heap:
        t, _, action, data = heapq.heappop(heap)
        if action == "read":
            if w.events < budget:
                i = data[0]
                key = rng.randrange(1 << 15)
                value = ["B", rng.randrange(30000), key, rng.randrange(1000), t]
                m = w.send(ext[i], f"{ext[i]}->{src[i]}", t, size=32, value=value)
                w.ev("recv", src[i], t, ch=f"{ext[i]}->{src[i]}", mid=m)
                ch = f"{src[i]}->{win[key % P]}"
                deliver(ch, win[key % P], w.send(src[i], ch, t, size=32, key=key, value=value), t)
                at(t + 1 + rng.randrange(2 * gap), "read", i)
        elif action == "round":
            r = data[0]
            if w.events < budget:
                w.ev("round_start", "coordinator", t, round=r)
                for s in src:
                    ch = f"coordinator->{s}"
                    mid = f"{ch}:b{r}"
                    w.ev("send", "coordinator", t, ch=ch, mid=mid, kind="barrier", round=r, size=16)
                    deliver(ch, s, mid, t, r)
                at(t + interval, "round", r + 1)
        elif action == "arrive":
            p, ch, mid, r = data
            if role[p] != "source":  # sources take barriers from the coordinator
                w.ev("arrive", p, t, ch=ch, mid=mid)
            w.ev("recv", p, t, ch=ch, mid=mid)
            if r is not None:  # a barrier of round r
                if ckpt[p] < r:
                    ckpt[p] = r
                    w.ev("checkpoint", p, t, kind="coordinated", round=r, ckpt=r, size=16)
                    recording[p] = {c: [] for c in inputs[p] if c != ch and not c.startswith("coordinator")}
                    for out in outputs[p]:
                        mid_b = f"{out}:b{r}"
                        w.ev("send", p, t, ch=out, mid=mid_b, kind="barrier", round=r, size=16)
                        deliver(out, out.split("->")[1], mid_b, t, r)
                elif ch in recording[p]:
                    mids = recording[p].pop(ch)
                    if mids:
                        w.ev("record", p, t, ch=ch, ckpt=r, part="input", mids=mids)
                else:
                    continue
                if not recording[p]:  # p's snapshot of round r is final: checkpoint and channel states
                    done_round[r] = done_round.get(r, 0) + 1
                    if done_round[r] == len(tasks):
                        w.ev("round_complete", "coordinator", t, round=r)
                        del done_round[r]
                continue
            if ch in recording[p]:
                recording[p][ch].append(mid)
            if role[p] == "window":
                downstream = outputs[p][0]
                deliver(
                    downstream,
                    downstream.split("->")[1],
                    w.send(p, downstream, t, size=32, value=[0, rng.randrange(1 << 15), 1]),
                    t,
                )
            elif role[p] == "sink":
                w.ev("output", p, t, value=mid)
    w.close()
    return w.events


def wide(path: str | Path, processes: int = 100_000) -> int:
    """A trace whose header declares ``processes`` processes in a ring: each sends one
    message to the next, processes the one it receives, and takes a checkpoint (three
    events per process). Returns the number of events."""
    procs = [f"P{i}" for i in range(processes)]
    header = {
        "format": "snapcheck-trace",
        "version": 1,
        "processes": [{"id": p} for p in procs],
        "channels": [
            {"id": f"{p}>{procs[(i + 1) % processes]}", "src": p, "dst": procs[(i + 1) % processes]}
            for i, p in enumerate(procs)
        ],
        "protocol": {"name": "none"},
        "seed": 0,
    }
    w = _Writer(Path(path), header, procs)
    for i, p in enumerate(procs):
        w.send(p, f"{p}>{procs[(i + 1) % processes]}", i)
    for i, p in enumerate(procs):
        prev = procs[i - 1]
        w.ev("recv", p, processes + i, ch=f"{prev}>{p}", mid=f"{prev}>{p}:1")
        w.ev("checkpoint", p, processes + i, kind="basic", ckpt=1)
    w.close()
    return w.events


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--events", type=int, default=2_000_000)
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--interval", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--wide",
        type=int,
        default=None,
        metavar="P",
        help="instead: a ring of P processes, three events each (a header with P processes)",
    )
    args = ap.parse_args()
    if args.wide:
        n = wide(args.out, args.wide)
    else:
        n = generate(args.out, args.events, args.partitions, args.interval, args.seed)
    print(f"{args.out}: {n:,} events")


if __name__ == "__main__":
    main()
