"""Random traces for the checker's property tests (every choice flows from one seed).

``random_trace`` builds a failure-free execution of 2–4 processes over random
channels (FIFO or not): sends, deliveries (FIFO: head of the channel; non-FIFO:
any pending message), basic checkpoints, recorded channel state (input and output
parts: mostly the messages pending at the checkpoint, sometimes extra, missing,
duplicated or misfiled ones, so that every channel-state kind occurs), durable
logs (logged channels, ``send.logged``, ``log`` and ``log_truncate`` events) and an
optional external input process.
"""

from __future__ import annotations

import random

from snapcheck.traces import TraceRecorder


def random_trace(
    seed: int,
    *,
    n: int | None = None,
    steps: int | None = None,
    fifo: bool | None = None,
    records: bool = True,
    logs: bool = True,
    external: bool | None = None,
    protocol: str = "none",
    nras: bool = False,
):
    """``nras``: take a forced checkpoint before a receive that follows a send in the
    same interval (No-Receive-After-Send, an RDT protocol: docs/theory.md, "ZCF and RDT")."""
    rnd = random.Random(seed)
    n = n or rnd.randint(2, 4)
    steps = steps if steps is not None else rnd.randint(6, 48)
    fifo = rnd.random() < 0.5 if fifo is None else fifo
    external = rnd.random() < 0.25 if external is None else external
    procs = [f"P{i}" for i in range(n)]
    pairs = [(a, b) for a in procs for b in procs if a != b]
    rnd.shuffle(pairs)
    chosen = pairs[: rnd.randint(1, len(pairs))]
    channels = [
        {"id": f"{a}>{b}", "src": a, "dst": b, "fifo": fifo, "logged": logs and rnd.random() < 0.2} for a, b in chosen
    ]
    processes = [{"id": p} for p in procs]
    if external:
        processes.append({"id": "X", "role": "external"})
        channels.append({"id": f"X>{procs[0]}", "src": "X", "dst": procs[0], "fifo": True})
    rec = TraceRecorder(processes, channels, protocol=protocol, seed=seed)
    out_ch = {p: [c["id"] for c in channels if c["src"] == p] for p in procs + (["X"] if external else [])}
    in_ch = {p: [c["id"] for c in channels if c["dst"] == p] for p in procs}
    pending: dict[str, list[str]] = {c["id"]: [] for c in channels}
    sent: dict[str, list[str]] = {c["id"]: [] for c in channels}
    sent_since = {p: False for p in procs + ["X"]}
    senders = [q for q in procs + (["X"] if external else []) if out_ch[q]]
    for _ in range(steps):
        a = rnd.random()
        p = rnd.choice(procs)
        if a < 0.35 and senders:
            q = rnd.choice(senders)
            ch = rnd.choice(out_ch[q])
            mid = rec.send(q, ch, logged=True if (logs and q != "X" and rnd.random() < 0.15) else None)
            pending[ch].append(mid)
            sent[ch].append(mid)
            sent_since[q] = True
        elif a < 0.75:
            ready = [c for c in pending if pending[c]]
            if ready:
                ch = rnd.choice(ready)
                p = rec.header.channels[[c.id for c in rec.header.channels].index(ch)].dst
                k = 0 if fifo else rnd.randrange(len(pending[ch]))
                if nras and sent_since[p]:
                    rec.checkpoint(p, kind="forced")
                    sent_since[p] = False
                rec.recv(p, pending[ch].pop(k))
        elif a < 0.92:
            ck = rec.checkpoint(p)
            sent_since[p] = False
            if records:
                _records(rnd, rec, p, ck, in_ch[p], out_ch[p], pending, sent)
        elif logs and out_ch[p]:
            ch = rnd.choice(out_ch[p])
            if sent[ch] and rnd.random() < 0.6:
                rec.log(p, ch, rnd.sample(sent[ch], rnd.randint(1, len(sent[ch]))))
            elif sent[ch]:
                rec.log_truncate(p, ch, rnd.randint(1, len(sent[ch])))
    return rec.trace()


def _records(rnd, rec, p, ck, inputs, outputs, pending, sent) -> None:
    """Channel state recorded with checkpoint ``ck`` of ``p`` (sometimes wrong on purpose)."""
    if inputs and rnd.random() < 0.7:
        ch = rnd.choice(inputs)
        mids = list(pending[ch])
        mids = _perturb(rnd, mids, sent, ch)
        rec.record(p, ck, ch, mids, part="input")
    if outputs and rnd.random() < 0.25:
        ch = rnd.choice(outputs)
        mids = _perturb(rnd, list(pending[ch][-1:]), sent, ch)
        rec.record(p, ck, ch, mids, part="output")


def _perturb(rnd, mids, sent, ch):
    r = rnd.random()
    if r < 0.6:
        return mids
    if r < 0.7 and mids:
        return mids[1:]  # drop one
    if r < 0.8 and sent[ch]:
        return mids + [rnd.choice(sent[ch])]  # extra (phantom or duplicate)
    if r < 0.85 and len(mids) > 1:
        a, b = sorted(rnd.sample(range(len(mids)), 2))
        mids[a], mids[b] = mids[b], mids[a]
        return mids  # out of send order
    if r < 0.9 and len(sent[ch]) > 1:
        a, b = sorted(rnd.sample(range(len(sent[ch])), 2))
        return [sent[ch][b], sent[ch][a]]  # out of send order
    others = [c for c in sent if c != ch and sent[c]]
    if others:
        return mids + [rnd.choice(sent[rnd.choice(others)])]  # wrong channel
    return mids


def random_failure_trace(seed: int, *, n: int | None = None, steps: int | None = None):
    """A random execution with failures and recoveries: crashed processes (and sometimes
    survivors) restore a random checkpoint of their effective history under one
    ``recovery`` id; senders then replay random logged messages; stale messages may still
    be delivered from the network; logs are written and truncated."""
    rnd = random.Random(seed)
    n = n or rnd.randint(2, 4)
    steps = steps if steps is not None else rnd.randint(8, 40)
    fifo = rnd.random() < 0.5
    procs = [f"P{i}" for i in range(n)]
    pairs = [(a, b) for a in procs for b in procs if a != b]
    rnd.shuffle(pairs)
    chosen = pairs[: rnd.randint(1, len(pairs))]
    channels = [{"id": f"{a}>{b}", "src": a, "dst": b, "fifo": fifo, "logged": rnd.random() < 0.4} for a, b in chosen]
    rec = TraceRecorder(procs, channels, protocol="unc", seed=seed)
    src_of = {c["id"]: c["src"] for c in channels}
    dst_of = {c["id"]: c["dst"] for c in channels}
    out_ch = {p: [c["id"] for c in channels if c["src"] == p] for p in procs}
    pending: dict[str, list[str]] = {c["id"]: [] for c in channels}
    sent: dict[str, list[str]] = {c["id"]: [] for c in channels}
    ckpts = {p: [0] for p in procs}
    recovery = 0
    for _ in range(steps):
        a = rnd.random()
        p = rnd.choice(procs)
        if a < 0.3 and out_ch[p]:
            ch = rnd.choice(out_ch[p])
            mid = rec.send(p, ch)
            pending[ch].append(mid)
            sent[ch].append(mid)
        elif a < 0.62:
            ready = [c for c in pending if pending[c]]
            if ready:
                ch = rnd.choice(ready)
                k = 0 if fifo else rnd.randrange(len(pending[ch]))
                mid = pending[ch].pop(k)
                if rnd.random() < 0.15:
                    rec.discard(dst_of[ch], mid)
                else:
                    rec.recv(dst_of[ch], mid)
        elif a < 0.8:
            ckpts[p].append(rec.checkpoint(p))
        elif a < 0.88:
            recovery += 1
            victims = rnd.sample(procs, rnd.randint(1, n))
            for q in victims:
                if rnd.random() < 0.7:
                    rec.fail(q)
                k = rnd.randrange(len(ckpts[q])) if rnd.random() < 0.4 else len(ckpts[q]) - 1
                rec.restore(q, ckpts[q][k], recovery=recovery)
                del ckpts[q][k + 1 :]
            for ch in rnd.sample(list(sent), min(2, len(sent))):
                if sent[ch] and rnd.random() < 0.6:
                    pending[ch].append(rec.replay(src_of[ch], rnd.choice(sent[ch])))
        elif out_ch[p]:
            ch = rnd.choice(out_ch[p])
            if sent[ch] and rnd.random() < 0.7:
                rec.log(p, ch, rnd.sample(sent[ch], rnd.randint(1, len(sent[ch]))))
            elif sent[ch]:
                rec.log_truncate(p, ch, rnd.randint(1, len(sent[ch])))
    return rec.trace()
