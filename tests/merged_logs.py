"""Traces made of per-process logs merged in any order, which the tests of happened-before share."""

from __future__ import annotations

import orjson
from hypothesis import strategies as st

PROCS = ("A", "B", "C")


@st.composite
def merged_logs(draw, checkpoints: bool = False):
    """Three processes exchanging messages (and, with ``checkpoints``, taking a few local
    checkpoints, which only process order links); each process's events in program
    order, the processes' logs merged at random, so receives may precede their sends.
    Returns (per-process events, the merge order as process ids)."""
    per_proc: dict[str, list[tuple]] = {p: [] for p in PROCS}
    for k in range(draw(st.integers(1, 8 if checkpoints else 7))):
        src, dst = draw(st.sampled_from([(a, b) for a in PROCS for b in PROCS if a != b]))
        per_proc[src].insert(draw(st.integers(0, len(per_proc[src]))), ("send", f"{src}{dst}", f"m{k}"))
        per_proc[dst].insert(draw(st.integers(0, len(per_proc[dst]))), ("recv", f"{src}{dst}", f"m{k}"))
    for p in PROCS if checkpoints else ():
        for _ in range(draw(st.integers(0, 2))):
            per_proc[p].insert(draw(st.integers(0, len(per_proc[p]))), ("checkpoint", None, None))
    order = draw(st.permutations([p for p in PROCS for _ in per_proc[p]]))
    return per_proc, order


def trace_lines(per_proc: dict, order: list) -> list[bytes]:
    """The JSON Lines of the trace ``merged_logs`` drew: a header, then the events in merge order."""
    header = {
        "format": "snapcheck-trace",
        "version": 1,
        "processes": [{"id": p} for p in per_proc],
        "channels": [{"id": a + b, "src": a, "dst": b} for a in per_proc for b in per_proc if a != b],
    }
    lines, cursor, seq, ckpt = [orjson.dumps(header)], dict.fromkeys(per_proc, 0), {}, dict.fromkeys(per_proc, 0)
    for p in order:
        kind, ch, mid = per_proc[p][cursor[p]]
        ev: dict = {"type": kind, "proc": p, "idx": cursor[p]}
        if kind == "checkpoint":
            ckpt[p] += 1
            ev.update(ckpt=ckpt[p], kind="basic")
        else:
            ev.update(ch=ch, mid=mid)
        if kind == "send":
            seq[ch] = seq.get(ch, 0) + 1
            ev["seq"] = seq[ch]
        lines.append(orjson.dumps(ev))
        cursor[p] += 1
    return lines
