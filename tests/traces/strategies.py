"""Hypothesis strategies that build random valid traces through ``TraceRecorder``."""

from hypothesis import strategies as st

from snapcheck.traces import TraceRecorder


@st.composite
def recorded_traces(draw, max_procs: int = 5, max_steps: int = 60):
    """A random valid trace: random topology, sends, receives (FIFO or not), checkpoints,
    channel-state records, logs, failures and restores, rounds and outputs."""
    n = draw(st.integers(2, max_procs))
    procs = [f"P{i}" for i in range(n)]
    pairs = [(a, b) for a in procs for b in procs if a != b]
    chosen = draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=len(pairs), unique=True))
    fifo = draw(st.booleans())
    channels = [{"id": f"{a}->{b}", "src": a, "dst": b, "fifo": fifo, "logged": draw(st.booleans())} for a, b in chosen]
    rec = TraceRecorder(
        procs,
        channels,
        protocol=draw(st.sampled_from(["none", "chandy-lamport", "hmnr"])),
        params={"p": draw(st.integers(0, 3))},
        seed=draw(st.integers(0, 2**31)),
        metadata={"note": draw(st.text(max_size=8))},
    )
    in_flight = {c["id"]: [] for c in channels}
    failed: set[str] = set()
    ckpts = {p: [0] for p in procs}
    last_round: dict[str, int] = {}  # per process: the round of its last checkpoint of one
    started = [0]  # the last round started
    for _ in range(draw(st.integers(0, max_steps))):
        action = draw(
            st.sampled_from(["send", "send", "recv", "recv", "ckpt", "record", "log", "fail", "round", "output"])
        )
        p = draw(st.sampled_from(procs))
        if p in failed:
            rec.restore(p, draw(st.sampled_from(ckpts[p])), recovery=1)
            failed.discard(p)
            continue
        if action == "send":
            outs = [c for c in channels if c["src"] == p]
            if outs:
                c = draw(st.sampled_from(outs))["id"]
                in_flight[c].append(rec.send(p, c, value=draw(st.integers(-5, 5)), size=draw(st.integers(0, 99))))
        elif action == "recv":
            ins = [c for c in channels if c["dst"] == p and in_flight[c["id"]]]
            if ins:
                q = in_flight[draw(st.sampled_from(ins))["id"]]
                k = 0 if fifo else draw(st.integers(0, len(q) - 1))
                rec.recv(p, q.pop(k), vars={"x": draw(st.integers(0, 9))})
        elif action == "ckpt":
            r = draw(st.none() | st.integers(1, 3))  # a process takes one checkpoint of a round
            if r is not None:
                r = last_round[p] = last_round.get(p, 0) + r
            ckpts[p].append(rec.checkpoint(p, kind=draw(st.sampled_from(["basic", "forced", "coordinated"])), round=r))
        elif action == "record":
            ins = [c for c in channels if c["dst"] == p]
            if ins:
                c = draw(st.sampled_from(ins))["id"]
                rec.record(p, ckpts[p][-1], c, list(in_flight[c][:2]))
        elif action == "log":
            outs = [c for c in channels if c["src"] == p and in_flight[c["id"]]]
            if outs:
                c = draw(st.sampled_from(outs))["id"]
                rec.log(p, c, in_flight[c][:1])
                rec.log_truncate(p, c, 0)
        elif action == "fail":
            rec.fail(p, reason="crash")
            failed.add(p)
        elif action == "round":  # a round starts once
            started[0] += draw(st.integers(1, 3))
            rec.round_start(p, started[0])
        else:
            rec.output(p, {"k": draw(st.integers(0, 3))}, key="k")
    return rec
