"""Random checkpointing traces with known kinds of mistakes, for Parquet checking at scale.

``random_trace(seed)`` plays a small message-passing system (2–5 processes,
random channels, FIFO queues) through ``traces.TraceRecorder``: data sends and
receives, coordinated rounds (each process checkpoints with the round, sends a
barrier on each output channel and records, for each input channel, the
messages in transit at its checkpoint), sender-side logs and truncations,
failures with restores of a still-effective checkpoint and replay of recorded
channel state. Checkpoint times are random, so orphans occur naturally; with
probability ``mistakes`` a recording is damaged (a message left out, a
processed message added, a duplicate, a swapped pair, a wrong channel), so
every violation kind the SQL check (``native_check``) reports is exercised. Traces are
valid v1 traces by construction; everything flows from ``seed``.

Used by the Spark/checker cross-check test and by the Parquet-checking
benchmark (``benchmarks/bench_spark.py``); ``write_parquet`` writes many traces
into one v1 Parquet file.
"""

from __future__ import annotations

import random
from typing import Any

from snapcheck.traces import TraceRecorder


def random_trace(
    seed: int, max_procs: int = 5, steps: int = 80, mistakes: float = 0.15, failures: bool = True
) -> tuple[dict, list[dict]]:
    """(header, events) of one random trace, as JSON objects."""
    rnd = random.Random(seed)
    n = rnd.randint(2, max_procs)
    procs = [f"P{i}" for i in range(n)]
    pairs = [(a, b) for a in procs for b in procs if a != b]
    chosen = rnd.sample(pairs, rnd.randint(1, len(pairs)))
    channels: list[dict[str, Any]] = [  # header channels (JSON objects)
        {"id": f"{a}>{b}", "src": a, "dst": b, "logged": rnd.random() < 0.1, "back_edge": rnd.random() < 0.1}
        for a, b in chosen
    ]
    ext = rnd.random() < 0.3
    all_procs: list = list(procs)
    if ext:
        all_procs.append({"id": "in", "role": "external"})
        channels.append({"id": f"in>{procs[0]}", "src": "in", "dst": procs[0]})
    # a quarter of the traces declare aligned snapshots (the checker then judges any in-flight message)
    protocol, params = rnd.choice(
        [("chandy-lamport", {}), ("unaligned", {}), ("abs-aligned", {"aligned": True}), ("synthetic", {})]
    )
    rec = TraceRecorder(all_procs, channels, protocol=protocol, params=params, seed=seed)
    outs = {p: [c["id"] for c in channels if c["src"] == p] for p in procs + ["in"]}
    ins = {p: [c["id"] for c in channels if c["dst"] == p] for p in procs}
    src_of = {c["id"]: c["src"] for c in channels}
    queue: dict[str, list[str]] = {c["id"]: [] for c in channels}  # FIFO in flight (mids)
    sent_before: dict[tuple[str, int], dict[str, list[str]]] = {}  # (proc, ckpt) -> ch -> mids sent so far
    sent_so_far: dict[str, list[str]] = {c["id"]: [] for c in channels}
    received: dict[str, set[str]] = {p: set() for p in procs}
    effective: dict[str, list[int]] = {p: [0] for p in procs}
    records: dict[tuple[str, int], list[str]] = {}
    round_no = 0
    for p in procs:
        sent_before[(p, 0)] = {c: [] for c in outs[p]}
    if ext:
        sent_before[("in", 0)] = {}
    for _ in range(steps):
        a = rnd.random()
        p = rnd.choice(procs)
        if a < 0.35:
            src = "in" if ext and rnd.random() < 0.2 else p
            if outs[src]:
                c = rnd.choice(outs[src])
                m = rec.send(src, c, value=rnd.randint(0, 9), logged=True if rnd.random() < 0.1 else None)
                queue[c].append(m)
                sent_so_far[c].append(m)
        elif a < 0.7:
            ready = [c for c in ins[p] if queue[c]]
            if ready:
                m = queue[rnd.choice(ready)].pop(0)
                rec.recv(p, m)
                received[p].add(m)
        elif a < 0.85:
            round_no += 1
            _round(
                rec,
                rnd,
                round_no,
                procs,
                outs,
                ins,
                queue,
                sent_so_far,
                sent_before,
                received,
                effective,
                records,
                src_of,
                mistakes,
            )
        elif a < 0.92:
            logged_ch = [c for c in outs[p] if sent_so_far[c]]
            if logged_ch:
                c = rnd.choice(logged_ch)
                rec.log(p, c, rnd.sample(sent_so_far[c], min(2, len(sent_so_far[c]))))
                if rnd.random() < 0.3:
                    rec.log_truncate(p, c, rnd.randint(0, 3))
        elif failures and a < 0.97 and len(effective[p]) > 1:
            rec.fail(p, reason="crash")
            target = rnd.choice(effective[p])
            del effective[p][effective[p].index(target) + 1 :]
            rec.restore(p, target, recovery=round_no)
            for mid in records.get((p, target), []):
                if rnd.random() < 0.8:
                    rec.recv(p, rec.replay(p, mid, source="channel_state"))
        else:
            c = rnd.choice(ins[p]) if ins[p] else None
            if c and queue[c]:
                rec.arrive(p, queue[c][0])
    header = rec.header.to_dict()
    events = rec.events
    explicit = [p for p in procs if rnd.random() < 0.2]
    if explicit:  # the initial checkpoint C_{i,0} written out for some processes
        shifted = []
        for p in explicit:
            shifted.append({"type": "checkpoint", "proc": p, "idx": 0, "kind": "initial", "ckpt": 0})
        for d in events:
            if d["proc"] in explicit:
                d = dict(d, idx=d["idx"] + 1)
            shifted.append(d)
        events = shifted
    return header, events


def to_jsonl(header: dict, events: list[dict]) -> str:
    import orjson

    return b"".join(orjson.dumps(d) + b"\n" for d in [header, *events]).decode()


def _round(
    rec, rnd, r, procs, outs, ins, queue, sent_so_far, sent_before, received, effective, records, src_of, mistakes
) -> None:
    """Every process checkpoints with round ``r`` (in random order, with traffic in between),
    sends barriers, and records the in-transit messages of each input channel."""
    order = rnd.sample(procs, len(procs))
    taken: dict[str, int] = {}
    for p in order:
        k = rec.checkpoint(p, kind="coordinated", round=r)
        taken[p] = k
        effective[p].append(k)
        sent_before[(p, k)] = {c: list(sent_so_far[c]) for c in outs[p]}
        if outs[p] and rnd.random() < mistakes:  # post-checkpoint data ahead of the barrier
            c = rnd.choice(outs[p])
            m = rec.send(p, c, value=1)
            queue[c].append(m)
            sent_so_far[c].append(m)
        for c in outs[p]:
            queue[c].append(rec.barrier(p, c, r))
        # traffic between checkpoints of the round makes orphans and in-flight data
        for _ in range(rnd.randint(0, 3)):
            q = rnd.choice(procs)
            if rnd.random() < 0.5 and outs[q]:
                c = rnd.choice(outs[q])
                m = rec.send(q, c, value=0)
                queue[c].append(m)
                sent_so_far[c].append(m)
            else:
                ready = [c for c in ins[q] if queue[c] and not queue[c][0].split(":")[-1].startswith("b")]
                if ready:
                    m = queue[rnd.choice(ready)].pop(0)
                    rec.recv(q, m)
                    received[q].add(m)
    for p in procs:
        for c in ins[p]:
            src = src_of[c]
            if src not in taken:
                continue
            sent = sent_before[(src, taken[src])].get(c, [])
            transit = [m for m in sent if m not in received[p]]
            transit = _damage(rnd, transit, sent, received[p], mistakes)
            if transit or rnd.random() < 0.5:
                wrong = [x for x in ins[p] if x != c and sent_so_far[x]]
                if rnd.random() < mistakes / 4 and wrong:
                    transit = transit + [sent_so_far[rnd.choice(wrong)][0]]
                k = rnd.randint(0, len(transit)) if rnd.random() < 0.3 else len(transit)
                rec.record(p, taken[p], c, transit[:k])  # input part, by the destination
                if k < len(transit):
                    rec.record(src, taken[src], c, transit[k:], part="output")  # overtaken output buffers
                records[(p, taken[p])] = records.get((p, taken[p]), []) + transit[:k]
        # the barriers are processed once everything before them is
        for c in ins[p]:
            while queue[c]:
                m = queue[c].pop(0)
                rec.recv(p, m)
                if ":b" not in m:
                    received[p].add(m)
                else:
                    break


def _damage(rnd, transit: list, sent: list, received: set, mistakes: float) -> list:
    if rnd.random() >= mistakes:
        return transit
    kind = rnd.randrange(4)
    out = list(transit)
    if kind == 0 and out:
        out.pop(rnd.randrange(len(out)))  # dropped
    elif kind == 1:
        done = [m for m in sent if m in received]
        if done:
            out.append(rnd.choice(done))  # phantom
    elif kind == 2 and out:
        out.append(out[0])  # duplicate-recorded
    elif kind == 3 and len(out) >= 2:
        out[0], out[1] = out[1], out[0]  # order
    return out


def write_parquet(seeds, path: str, **kwargs) -> int:
    """Write ``random_trace(seed)`` for every seed into one v1 Parquet file (trace_id = "t<seed>")."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from snapcheck.traces.parquet import SCHEMA, row_of

    writer = pq.ParquetWriter(path, SCHEMA)
    n = 0
    try:
        batch: list[dict] = []
        for seed in seeds:
            header, events = random_trace(seed, **kwargs)
            tid = f"t{seed}"
            batch.append(row_of(tid, 1, header, is_header=True))
            batch.extend(row_of(tid, line, d) for line, d in enumerate(events, 2))
            if len(batch) >= 100_000:
                writer.write_table(pa.Table.from_pylist(batch, SCHEMA))
                n += len(batch)
                batch = []
        if batch:
            writer.write_table(pa.Table.from_pylist(batch, SCHEMA))
            n += len(batch)
    finally:
        writer.close()
    return n
