"""A small generator of rescale traces with known faults, for the checker's tests.

Job: input logs ``in[i]`` -> sources ``src[i]`` -> keyed edge -> ``agg[j]`` (``p_old``
subtasks, ``M`` key groups, Flink's contiguous key-group ranges). Round 1 is an
unaligned checkpoint: each aggregate has processed a random prefix of what reached
it and records the rest as input channel state, then keeps processing (undone by
its ``retire``). The job is restored at parallelism ``p_new`` as ``g1.src[i]`` and
``g1.agg[j]``; key groups and in-flight records are redistributed as Flink does;
the input logs replay what the old sources had not processed. ``faults`` breaks
the redistribution in named ways (``FAULTS``).

``oracle(trace)`` is the independent brute-force check the tests compare the
checker with: it rebuilds each key's count from the effective history (old state
taken at the restored checkpoints, for the key groups each new process took, plus
everything the new processes processed) and compares it with the input.
"""

from __future__ import annotations

import random
from collections import Counter

from snapcheck.traces import TraceRecorder
from snapcheck.traces.model import Process

FAULTS = (
    "drop",
    "misroute",
    "duplicate",
    "skip-mapping",
    "live-first",
    "kg-drop",
    "kg-dup",
    "kg-wrong",
    "input-drop",
    "input-reread",
)
# faults that change the data the job ends with (the oracle sees them); the others break
# ordering or provenance only
DATA_FAULTS = {"drop", "misroute", "duplicate", "skip-mapping", "kg-drop", "kg-dup", "input-drop", "input-reread"}


def kg_range(M: int, p: int, j: int) -> tuple[int, int]:
    """Flink's KeyGroupRangeAssignment: the inclusive key-group range of subtask j of p."""
    return (j * M + p - 1) // p, ((j + 1) * M - 1) // p


def owner(M: int, p: int, kg: int) -> int:
    return kg * p // M


def build(
    seed: int, p_old: int, p_new: int, M: int = 8, sources: int = 1, n: int = 12, faults: frozenset = frozenset()
) -> TraceRecorder:
    rng = random.Random(seed)
    procs = [Process("coord", "coordinator")]
    chans = []
    for i in range(sources):
        procs += [
            Process(f"in[{i}]", "external"),
            Process(f"src[{i}]", "source", "src", i, partitions=[f"in[{i}]"]),
            Process(f"g1.src[{i}]", "source", "src", i, appears=True),
        ]
        chans += [
            (f"in[{i}]>src[{i}]", f"in[{i}]", f"src[{i}]", True, "data", False, True),
            (f"in[{i}]>g1.src[{i}]", f"in[{i}]", f"g1.src[{i}]", True, "data", False, True),
        ]
    for j in range(p_old):
        procs.append(
            Process(f"agg[{j}]", "task", "agg", j, key_groups=[list(kg_range(M, p_old, j))], max_parallelism=M)
        )
    for j in range(p_new):
        procs.append(Process(f"g1.agg[{j}]", "task", "agg", j, appears=True, max_parallelism=M))
    for i in range(sources):
        chans += [(f"src[{i}]>agg[{j}]", f"src[{i}]", f"agg[{j}]") for j in range(p_old)]
        chans += [(f"g1.src[{i}]>g1.agg[{j}]", f"g1.src[{i}]", f"g1.agg[{j}]") for j in range(p_new)]
    rec = TraceRecorder(procs, chans, protocol="unaligned", params={"interval": 100}, seed=seed)
    keys = [f"k{x}" for x in range(2 * M)]
    kg_of = {k: int(k[1:]) % M for k in keys}
    inputs = {i: [rng.choice(keys) for _ in range(n)] for i in range(sources)}
    ext_mids = {i: [] for i in range(sources)}
    queue = {j: [] for j in range(p_old)}  # (mid, key) arrived at agg[j], not yet processed
    processed_by_src = {}
    rec.round_start("coord", 1)
    for i in range(sources):
        cut = rng.randint(0, n)  # src[i] checkpoints after this many records
        for x, k in enumerate(inputs[i]):
            m = rec.send(f"in[{i}]", f"in[{i}]>src[{i}]", value=k)
            ext_mids[i].append(m)
            if x < cut:
                rec.recv(f"src[{i}]", m)
                j = owner(M, p_old, kg_of[k])
                queue[j].append((rec.send(f"src[{i}]", f"src[{i}]>agg[{j}]", key=k, key_group=kg_of[k]), k))
        processed_by_src[i] = cut
        rec.checkpoint(f"src[{i}]", kind="coordinated", round=1)
        for j in range(p_old):
            rec.barrier(f"src[{i}]", f"src[{i}]>agg[{j}]", 1)
    recorded = {}
    for j in range(p_old):
        q = queue[j]
        done = rng.randint(0, len(q))
        for mid, _ in q[:done]:
            rec.recv(f"agg[{j}]", mid)
        for i in range(sources):
            rec.recv(f"agg[{j}]", f"src[{i}]>agg[{j}]:b1")
        rec.checkpoint(f"agg[{j}]", kind="coordinated", round=1)
        rest = q[done:]
        for i in range(sources):
            mids = [mid for mid, _ in rest if mid.startswith(f"src[{i}]>")]
            rec.record(f"agg[{j}]", 1, f"src[{i}]>agg[{j}]", mids)
            recorded.update({mid: (i, j, k) for mid, k in rest if mid.startswith(f"src[{i}]>")})
        for mid, _ in rest[: rng.randint(0, len(rest))]:
            rec.recv(f"agg[{j}]", mid)  # after the checkpoint: undone by the retire
    rec.round_complete("coord", 1)
    for i in range(sources):
        rec.retire(f"src[{i}]", ckpt=1, reason="rescaled")
    for j in range(p_old):
        rec.retire(f"agg[{j}]", ckpt=1, reason="rescaled")
    # -- restore at p_new ---------------------------------------------------------------
    for i in range(sources):
        rec.restore(
            f"g1.src[{i}]",
            0,
            recovery=1,
            round=1,
            sources=[{"proc": f"src[{i}]", "ckpt": 1, "partitions": [f"in[{i}]"]}],
            channels=[{"old": f"in[{i}]>src[{i}]", "new": f"in[{i}]>g1.src[{i}]"}],
        )
    new_ranges = {j: kg_range(M, p_new, j) for j in range(p_new)}
    for j in range(p_new):
        lo, hi = new_ranges[j]
        srcs, maps = [], []
        for q in range(p_old):
            olo, ohi = kg_range(M, p_old, q)
            a, b = max(lo, olo), min(hi, ohi)
            if a > b:
                continue
            srcs.append({"proc": f"agg[{q}]", "ckpt": 1, "key_groups": [[a, b]]})
            for i in range(sources):
                maps.append({"old": f"src[{i}]>agg[{q}]", "new": f"g1.src[{i}]>g1.agg[{j}]", "key_groups": [[a, b]]})
        if "kg-drop" in faults and j == 0:
            if len(srcs) > 1:
                srcs = srcs[1:]
            elif hi > lo:
                srcs = [dict(srcs[0], key_groups=[[lo, hi - 1]])]
        if "kg-dup" in faults and j == p_new - 1 and p_new > 1:
            plo, _ = new_ranges[j - 1]
            q = owner(M, p_old, plo)
            if not any(s["proc"] == f"agg[{q}]" for s in srcs):
                srcs.append({"proc": f"agg[{q}]", "ckpt": 1, "key_groups": [[plo, plo]]})
        if "kg-wrong" in faults and j == 0 and p_old > 1:
            srcs = [dict(s, proc=f"agg[{(int(s['proc'][4:-1]) + 1) % p_old}]") for s in srcs[:1]] + srcs[1:]
            if len({s["proc"] for s in srcs}) < len(srcs):
                srcs = srcs[:1]
        if "skip-mapping" in faults:
            maps = []
        rec.restore(f"g1.agg[{j}]", 0, recovery=1, round=1, sources=srcs or None, channels=maps or None)
    # recovered in-flight records, then live data
    pending = sorted(recorded.items(), key=lambda kv: kv[0])
    first_recovered = True
    live_first_done = False
    pending_live = []
    for i in range(sources):
        start = processed_by_src[i]
        if "input-reread" in faults and i == 0 and start > 0:
            start -= 1  # the source's offset rewound by one: a record its checkpoint holds is read again
        for x in range(start, n):
            if "input-drop" in faults and i == 0 and x == processed_by_src[i]:
                continue
            m = rec.replay(f"in[{i}]", ext_mids[i][x], "source", ch=f"in[{i}]>g1.src[{i}]")
            rec.recv(f"g1.src[{i}]", m)
            k = inputs[i][x]
            j = owner(M, p_new, kg_of[k])
            live = rec.send(f"g1.src[{i}]", f"g1.src[{i}]>g1.agg[{j}]", key=k, key_group=kg_of[k])
            if (
                "live-first" in faults
                and not live_first_done
                and any(owner(M, p_new, kg_of[kk]) == j and ii == i for _, (ii, _, kk) in pending)
            ):
                rec.recv(f"g1.agg[{j}]", live)
                live_first_done = True
            else:
                pending_live.append((j, live))
    if "skip-mapping" not in faults:
        for mid, (i, q, k) in pending:
            j = owner(M, p_new, kg_of[k])
            if "drop" in faults and first_recovered:
                first_recovered = False
                continue
            olo, ohi = kg_range(M, p_old, q)
            others = [w for w in range(p_new) if w != j and max(olo, new_ranges[w][0]) <= min(ohi, new_ranges[w][1])]
            if "misroute" in faults and first_recovered and others:
                first_recovered = False
                wrong = others[0]
                r = rec.replay(f"g1.agg[{wrong}]", mid, "channel_state", ch=f"g1.src[{i}]>g1.agg[{wrong}]")
                rec.recv(f"g1.agg[{wrong}]", r)
                continue
            first_recovered = False
            r = rec.replay(f"g1.agg[{j}]", mid, "channel_state", ch=f"g1.src[{i}]>g1.agg[{j}]")
            rec.recv(f"g1.agg[{j}]", r)
            if "duplicate" in faults and mid == pending[0][0]:
                r2 = rec.replay(f"g1.agg[{j}]", mid, "channel_state", ch=f"g1.src[{i}]>g1.agg[{j}]")
                rec.recv(f"g1.agg[{j}]", r2)
    for j, live in pending_live:
        rec.recv(f"g1.agg[{j}]", live)
    return rec


def oracle(trace) -> dict:
    """Per key: how many input records the final aggregate state reflects minus how many
    the input has (0 everywhere: exactly-once), rebuilt from the effective history; a
    record processed by a new aggregate that did not take its key group counts as
    misplaced (key ``("misplaced", key)``)."""
    from snapcheck.checker.intervals import History

    h = History(trace)
    procs = trace.process_map()
    want = Counter()
    for e in trace.events:
        if e.type == "send" and procs[e.proc].role == "external":
            want[e.value] += 1
    key_of = {e.mid: e.key for e in trace.events if e.type == "send" and e.key is not None}
    have = Counter()
    restores = {e.proc: e for e in trace.events if e.type == "restore"}
    for p, proc in procs.items():
        if proc.operator != "agg" or proc.appears:
            continue
        i = h.index[p]
        kept = Counter(key_of[h.resolve(e.mid)] for e in h.eff[i] if e.type == "recv" and h.resolve(e.mid) in key_of)
        for r in restores.values():
            for s in r.sources or ():
                if s["proc"] != p:
                    continue
                groups = {k for lo, hi in s.get("key_groups") or () for k in range(lo, hi + 1)}
                for key, c in kept.items():
                    if int(key[1:]) % proc.max_parallelism in groups:
                        have[key] += c
    for p, proc in procs.items():
        if proc.operator == "agg" and proc.appears:
            i = h.index[p]
            took = {
                k for s in restores[p].sources or () for lo, hi in s.get("key_groups") or () for k in range(lo, hi + 1)
            }
            for e in h.eff[i]:
                if e.type == "recv":
                    o = h.resolve(e.mid)
                    if o in key_of:
                        key = key_of[o]
                        have[key if int(key[1:]) % proc.max_parallelism in took else ("misplaced", key)] += 1
    return {k: have[k] - want[k] for k in set(want) | set(have) if have[k] != want[k]}


def data_violation_kinds() -> set[str]:
    """The checker's kinds that mean the data the job ends with is wrong."""
    return {
        "in-flight-lost",
        "in-flight-duplicated",
        "in-flight-misrouted",
        "key-group-lost",
        "key-group-duplicated",
        "key-group-wrong-owner",
        "input-lost",
        "duplicate-processing",
    }
