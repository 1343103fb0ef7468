"""Small hand-built traces for the debugging tools (worked examples of docs/theory.md and
barrier protocols), and an independent orphan oracle used as a shrink test."""

from __future__ import annotations

import random

from snapcheck.debug.history import message_table
from snapcheck.traces import TraceRecorder
from snapcheck.traces.jsonl import parse_trace
from snapcheck.traces.writer import dumps_trace


def _finish(rec: TraceRecorder, name: str):
    """Round-trip through JSONL so events carry real file lines (and are validated)."""
    return parse_trace(rec.dumps().decode(), name)


def example_a():
    """Worked example A of docs/theory.md: C0,1 is on a Z-cycle (m1 then m2) without a
    causal cycle."""
    rec = TraceRecorder(["P0", "P1"], [("c01", "P0", "P1"), ("c10", "P1", "P0")], protocol="uncoordinated")
    m2 = rec.send("P1", "c10")
    rec.recv("P0", m2)
    rec.checkpoint("P0")
    m1 = rec.send("P0", "c01")
    rec.checkpoint("P0")
    rec.recv("P1", m1)
    rec.checkpoint("P1")
    return _finish(rec, "example_a.jsonl")


def example_c():
    """docs/theory.md, "Worked example C: the domino effect"."""
    rec = TraceRecorder(["P0", "P1"], [("c01", "P0", "P1"), ("c10", "P1", "P0")], protocol="uncoordinated")
    rec.checkpoint("P0")
    a = rec.send("P0", "c01")
    rec.recv("P1", a)
    rec.checkpoint("P1")
    b = rec.send("P1", "c10")
    rec.recv("P0", b)
    rec.checkpoint("P0")
    c = rec.send("P0", "c01")
    rec.recv("P1", c)
    rec.checkpoint("P1")
    d = rec.send("P1", "c10")
    rec.recv("P0", d)
    rec.checkpoint("P0")
    e = rec.send("P0", "c01")
    rec.recv("P1", e)
    return _finish(rec, "example_c.jsonl")


def aligned():
    """ABS aligned checkpoint, round 1: S -> A, S -> B, A -> B; B blocks s2b until
    the barrier of a2b arrives, then checkpoints."""
    rec = TraceRecorder(
        ["S", "A", "B"], [("s2a", "S", "A"), ("s2b", "S", "B"), ("a2b", "A", "B")], protocol="abs-aligned"
    )
    m1 = rec.send("S", "s2a", piggyback={"tdv": [1, 0, 0]})
    rec.checkpoint("S", kind="coordinated", round=1)  # L3
    b1 = rec.barrier("S", "s2a", 1)
    b2 = rec.barrier("S", "s2b", 1)
    rec.arrive("A", m1)
    rec.arrive("A", b1)  # L7: A blocks s2a
    rec.recv("A", m1, vars={"count": 1})
    rec.recv("A", b1)
    rec.checkpoint("A", kind="coordinated", round=1)  # L10: A releases s2a
    b3 = rec.barrier("A", "a2b", 1)
    m2 = rec.send("S", "s2b")
    rec.arrive("B", b2)  # L13: B blocks s2b
    rec.arrive("B", m2)
    rec.arrive("B", b3)  # L15: B blocks a2b too
    rec.recv("B", b2)
    rec.recv("B", b3)
    rec.checkpoint("B", kind="coordinated", round=1)  # L18: B releases both
    rec.recv("B", m2)
    return _finish(rec, "aligned.jsonl")


def unaligned():
    """An unaligned checkpoint: B snapshots at the first barrier (from A) and records
    the in-flight s2b message until s2b's barrier arrives."""
    rec = TraceRecorder(
        ["S", "A", "B"], [("s2a", "S", "A"), ("s2b", "S", "B"), ("a2b", "A", "B")], protocol="unaligned"
    )
    m1 = rec.send("S", "s2b")
    rec.checkpoint("S", kind="coordinated", round=1)  # L3
    b1 = rec.barrier("S", "s2a", 1)
    b2 = rec.barrier("S", "s2b", 1)
    rec.recv("A", b1)
    rec.checkpoint("A", kind="coordinated", round=1)
    b3 = rec.barrier("A", "a2b", 1)
    rec.arrive("B", b3)  # L9
    rec.checkpoint("B", kind="coordinated", round=1)  # L10: s2b now recording
    rec.recv("B", b3)
    rec.arrive("B", m1)
    rec.arrive("B", b2)  # L13: s2b recording stops
    rec.record("B", 1, "s2b", [m1])
    rec.recv("B", b2)
    rec.recv("B", m1)
    return _finish(rec, "unaligned.jsonl")


def failure():
    """P0 logs its sends, fails and restores C1; the lost message is replayed from the log."""
    rec = TraceRecorder(["P0", "P1"], [("c01", "P0", "P1")], protocol="uncoordinated")
    m1 = rec.send("P0", "c01", logged=True)
    rec.checkpoint("P0", vars={"lc": 1})
    m2 = rec.send("P0", "c01")
    rec.log("P0", "c01", [m2])
    rec.recv("P1", m1)
    rec.checkpoint("P1")
    rec.fail("P1", reason="crash")
    rec.restore("P1", 1, recovery=1)
    r2 = rec.replay("P0", m2, source="log")
    rec.recv("P1", r2)
    rec.log_truncate("P0", "c01", 1)
    m3 = rec.send("P0", "c01")
    rec.recv("P1", m3)
    return _finish(rec, "failure.jsonl")


def rescaled(lose_a1: bool = False):
    """``a0`` and ``a1`` (key groups 0..1 and 2..3) take part in rounds 1 and 2, retire
    handing over their checkpoints of round 2, and ``n0`` restores all four key groups
    from them (``lose_a1``: only ``a0``'s, so key groups 2..3 are lost)."""
    agg = {"operator": "agg", "max_parallelism": 4}
    rec = TraceRecorder(
        [
            {"id": "C", "role": "coordinator"},
            dict(agg, id="a0", key_groups=[[0, 1]]),
            dict(agg, id="a1", key_groups=[[2, 3]]),
            dict(agg, id="n0", appears=True),
        ],
        [("a0>a1", "a0", "a1")],
    )
    for r in (1, 2):
        rec.round_start("C", r)
        rec.recv("a1", rec.send("a0", "a0>a1"))
        rec.checkpoint("a0", round=r)
        rec.checkpoint("a1", round=r)
        rec.round_complete("C", r)
    rec.retire("a0", 2)
    rec.retire("a1", 2)
    sources = [{"proc": "a0", "ckpt": 2, "key_groups": [[0, 1]]}]
    if not lose_a1:
        sources.append({"proc": "a1", "ckpt": 2, "key_groups": [[2, 3]]})
    rec.restore("n0", 0, recovery=1, round=2, sources=sources)
    return _finish(rec, "rescaled.jsonl")


def random_trace(seed: int, n: int = 4, steps: int = 60, fail: bool = False):
    """A random uncoordinated run (sends, receives in any order, checkpoints; with
    ``fail`` also failures followed by restores)."""
    rnd = random.Random(seed)
    procs = [f"P{i}" for i in range(n)]
    if n <= 6:  # full mesh
        chans = [(f"c{i}{j}", f"P{i}", f"P{j}") for i in range(n) for j in range(n) if i != j]
    else:  # a ring both ways plus chords: every process has 6 channels
        chans = [(f"c{i}_{j % n}", f"P{i}", f"P{j % n}") for i in range(n) for j in (i + 1, i - 1 + n, i + 3)]
    rec = TraceRecorder(procs, chans, protocol="uncoordinated", seed=seed)
    pending = []
    ckpts = {p: [0] for p in procs}
    for _ in range(steps):
        r = rnd.random()
        if r < 0.4:
            ch = rnd.choice(chans)
            pending.append((rec.send(ch[1], ch[0]), ch[2]))
        elif r < 0.75 and pending:
            m, dst = pending.pop(rnd.randrange(len(pending)))
            rec.recv(dst, m)
        elif fail and r > 0.96:
            p = rnd.choice(procs)
            rec.fail(p)
            rec.restore(p, rnd.choice(ckpts[p]))
        else:
            p = rnd.choice(procs)
            ckpts[p].append(rec.checkpoint(p))
    return _finish(rec, f"random-{seed}.jsonl")


def orphan_wrt_last(trace, options=None, names=None) -> bool:
    """Independent oracle: some message is an orphan of the global checkpoint made of
    every process's last checkpoint (r <= g_dst and s > g_src: docs/theory.md, "Orphans,
    in-transit messages and consistency")."""
    last = {p.id: 0 for p in trace.processes}
    for e in trace.events:
        if e.type == "checkpoint":
            last[e.proc] = e.ckpt
    return any(
        m.r is not None and m.r <= last[m.dst] and m.s > last[m.src]
        for m in message_table(trace).values()
        if m.replay_of is None
    )


def as_text(trace) -> str:
    return dumps_trace(trace.header, trace.events).decode()
