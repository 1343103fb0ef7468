"""What the simulator's traces mean: FIFO delivery and replay order, credit-based
buffers, blocking, recovery structure, and committed output checked against an
independent computation from the input."""

from collections import Counter, defaultdict

import pytest

from snapcheck.reference import SimConfig, simulate
from snapcheck.traces.jsonl import parse_trace

COORDINATED = ("chandy-lamport", "abs-aligned", "abs-cyclic", "unaligned", "aligned-timeout")


def run(**kw):
    return simulate(SimConfig(**kw))


def _seq_of(events):
    """mid -> (channel, seq) of every data message, replays resolved to their original."""
    seq, orig = {}, {}
    for e in events:
        if e.type == "send" and e.kind != "barrier":
            seq[e.mid] = (e.ch, e.seq)
        elif e.type == "replay":
            orig[e.mid] = e.replay_of

    def resolve(mid):
        while mid in orig:
            mid = orig[mid]
        return seq.get(mid)

    return resolve


@pytest.mark.parametrize("protocol", COORDINATED)
def test_traces_are_valid_v1_and_match_the_in_memory_events(protocol):
    wl = "q3" if protocol == "abs-aligned" else "reachability"
    res = run(protocol=protocol, workload=wl, seed=3, records=6, failures=(("join[0]", 700),))
    t = parse_trace(res.dumps().decode())  # the validator raises on any problem
    assert [(e.type, e.proc, e.idx, e.line) for e in t.events] == [(e.type, e.proc, e.idx, e.line) for e in res.events]
    assert t.header.protocol["name"] == protocol
    assert t.header.protocol["params"]["aligned"] == (protocol in ("abs-aligned", "abs-cyclic"))


@pytest.mark.parametrize("protocol", COORDINATED)
def test_fifo_channels_process_in_send_order_within_each_epoch_including_replays(protocol):
    wl = "q12" if protocol == "abs-aligned" else "random-cyclic"
    res = run(
        protocol=protocol, workload=wl, seed=5, records=12, gap=40, failures=(("sink[0]", 600), ("sink[0]", 1500))
    )
    resolve = _seq_of(res.events)
    last: dict = {}
    epoch = Counter()
    for e in res.events:
        if e.type == "restore":
            epoch[e.proc] += 1
        elif e.type == "recv" and e.proc != "coordinator" and resolve(e.mid) is not None:
            ch, seq = resolve(e.mid)  # (acks to the never-restored coordinator are control traffic)
            key = (ch, epoch[e.proc])
            assert seq > last.get(key, 0), f"{e.mid} (seq {seq}) processed after seq {last[key]} on {ch}"
            last[key] = seq
    assert sum(epoch.values()) > 0


def test_non_fifo_channels_can_reorder():
    res = run(protocol="chandy-lamport", workload="q12", seed=1, records=20, gap=20, jitter=400, fifo=False)
    resolve = _seq_of(res.events)
    last, reordered = {}, 0
    for e in res.events:
        if e.type == "recv" and resolve(e.mid):
            ch, seq = resolve(e.mid)
            reordered += seq < last.get(ch, 0)
            last[ch] = max(seq, last.get(ch, 0))
    assert reordered > 0
    assert all(c.fifo is False for c in res.header.channels if c.kind == "data" and not c.logged)


@pytest.mark.parametrize("buffer", [1, 3])
def test_credit_based_buffers_never_hold_more_than_their_capacity(buffer):
    res = run(
        protocol="unaligned",
        workload="q12",
        seed=2,
        records=25,
        gap=20,
        buffer=buffer,
        stragglers=(("window_count[0]", 3),),
    )
    queued = Counter()
    peak = 0
    for e in res.events:
        if e.type == "arrive":
            queued[e.ch] += 1
        elif e.type == "recv" and queued.get(e.ch):
            queued[e.ch] -= 1
        peak = max(peak, max(queued.values(), default=0))
    assert peak == buffer  # backpressure reached, never exceeded


def test_aligned_tasks_process_nothing_from_a_channel_between_its_barrier_and_the_checkpoint():
    res = run(protocol="abs-aligned", workload="q12", parallelism=3, seed=4, records=30, gap=40, jitter=200)
    blocked: dict = defaultdict(set)  # task -> channels whose barrier arrived, awaiting the checkpoint
    checked = 0
    for e in res.events:
        if e.type == "recv" and e.mid.split(":")[-1].startswith("b") and not e.ch.startswith("coordinator"):
            blocked[e.proc].add(e.ch)
        elif e.type == "checkpoint":
            blocked[e.proc].clear()
        elif e.type == "recv" and e.ch in blocked[e.proc]:
            pytest.fail(f"line {e.line}: {e.proc} processed {e.mid} from a blocked channel")
        elif e.type == "recv":
            checked += 1
    assert checked > 100
    assert not any(e.type in ("record", "arrive") for e in res.events)


def test_a_recovery_restores_every_task_to_the_last_completed_round_then_replays():
    res = run(protocol="unaligned", workload="q12", seed=3, records=30, gap=40, failures=(("window_count[1]", 900),))
    ev = res.events
    fail = next(e for e in ev if e.type == "fail")
    restores = [e for e in ev if e.type == "restore"]
    tasks = [p.id for p in res.header.processes if p.role in ("task", "source", "sink")]
    assert sorted(e.proc for e in restores) == sorted(tasks)
    assert {e.recovery for e in restores} == {1}
    completed = [e.round for e in ev if e.type == "round_complete" and e.line < restores[0].line]
    assert {e.round for e in restores} == {completed[-1]}
    ckpt_of = {(e.proc, e.round): e.ckpt for e in ev if e.type == "checkpoint"}
    assert all(e.ckpt == ckpt_of[(e.proc, e.round)] for e in restores)
    assert fail.line < restores[0].line and fail.t + 300 == restores[0].t  # detect + restart delay
    # channel state recorded with the restored checkpoints is replayed by its recorder, exactly once
    restored = {(e.proc, e.ckpt) for e in restores}
    recorded = Counter(m for e in ev if e.type == "record" and (e.proc, e.ckpt) in restored for m in e.mids)
    replayed = Counter(e.replay_of for e in ev if e.type == "replay" and e.source == "channel_state")
    assert recorded == replayed
    # sources re-read exactly the input after their restored offsets
    src_replays = [e for e in ev if e.type == "replay" and e.source == "source"]
    assert src_replays and all(e.proc.startswith("ext:") for e in src_replays)
    # mids of the new epoch are distinct incarnations
    after = [e for e in ev if e.type == "send" and e.line > restores[-1].line and e.proc == "bids[0]"]
    assert after and all(e.mid.endswith("@1") for e in after)


def test_messages_of_the_failed_epoch_still_in_flight_are_discarded():
    res = run(protocol="unaligned", workload="q12", seed=0, records=30, gap=40, failures=(("sink[0]", 500),))
    discards = [e for e in res.events if e.type == "discard"]
    restore_line = next(e.line for e in res.events if e.type == "restore")
    assert discards and all(e.reason == "stale epoch" and e.line > restore_line for e in discards)
    assert res.metrics["discarded"] == len(discards)


def _inputs(res):
    return [e.value for e in res.events if e.type == "send" and e.proc.startswith("ext:")]


def _outputs(res):
    """The records the sinks published: the value of every committed transaction."""
    return Counter(
        tuple(_tuple(x) for x in record)
        for e in res.events
        if e.type == "output" and (e.attrs or {}).get("phase") == "commit"
        for record in e.value
    )


def _tuple(x):
    return tuple(_tuple(y) for y in x) if isinstance(x, list) else x


@pytest.mark.parametrize("protocol", COORDINATED)
def test_committed_output_equals_an_independent_computation_from_the_input(protocol):
    fails = (("map[1]", 800),)
    q1 = run(protocol=protocol, workload="q1", seed=7, records=15, gap=60, failures=fails)
    want = Counter(("B", b[1], b[2], b[3] * 908 // 1000, b[4]) for b in _inputs(q1))
    assert _outputs(q1) == want

    q12 = run(protocol=protocol, workload="q12", seed=7, records=15, gap=60, failures=(("window_count[0]", 800),))
    per_key = Counter((b[4] // 2000, b[2]) for b in _inputs(q12))
    want = Counter((w, k, c) for (w, k), n in per_key.items() for c in range(1, n + 1))
    assert _outputs(q12) == want

    q3 = run(protocol=protocol, workload="q3", seed=7, records=15, gap=60, failures=(("join[1]", 800),))
    ins = _inputs(q3)
    persons = [p for p in ins if p[0] == "P" and p[2] in ("OR", "ID", "CA")]
    auctions = [a for a in ins if a[0] == "A" and a[3] == 10]
    want = Counter((p[1], p[2], a[1]) for p in persons for a in auctions if a[2] == p[1])
    assert _outputs(q3) == want and sum(want.values()) > 0


def test_metrics_agree_with_the_trace():
    res = run(protocol="unaligned", workload="q8", seed=2, records=20, gap=50, failures=(("window_join[0]", 900),))
    m, ev = res.metrics, res.events
    count = Counter(e.type for e in ev)
    assert m["events"] == len(ev)
    assert m["checkpoints"] == count["checkpoint"]
    assert m["rounds_completed"] == count["round_complete"]
    assert m["rounds_started"] == count["round_start"]
    assert m["outputs"] == sum(len(e.value) for e in ev if e.type == "output" and e.attrs["phase"] == "commit")
    assert m["replayed_messages"] == count["replay"]
    assert m["discarded"] == count["discard"]
    assert m["persisted_messages"] == sum(len(e.mids) for e in ev if e.type == "record")
    assert m["data_messages"] == sum(
        1
        for e in ev
        if e.type == "send" and e.kind != "barrier" and "coordinator" not in e.ch and not e.proc.startswith("ext:")
    )
    assert m["barrier_messages"] == sum(
        1 for e in ev if e.type == "send" and e.kind == "barrier" and e.proc != "coordinator"
    )
    assert m["restart_time_mean"] == 200 and m["failures"] == 1
    assert m["recovery_time_mean"] >= 300
    assert 1 < m["overhead_ratio"] < 3
    assert m["latency_p50"] <= m["latency_p99"]
    aligned = simulate(SimConfig(protocol="abs-aligned", workload="q8", seed=2, records=20, gap=50)).metrics
    assert aligned["persisted_messages"] == 0 and aligned["alignment_time_total"] > 0
