"""Traces of the reference simulator (``snapcheck simulate``) against the TLA+
specifications: correct runs of every coordinated protocol, of the CIC
protocols, of uncoordinated checkpointing with failures and of LiveRobin
replication are accepted, the reference mutants are rejected at the faulty step."""

import json
from dataclasses import replace

import pytest

from snapcheck.checker.tla import conform as conformance
from snapcheck.checker.tla.conform import ACCEPT, REJECT
from snapcheck.reference.catalogue import MUTANTS, tla_mappings
from snapcheck.reference.simulation import SimConfig, simulate
from snapcheck.reference.uncoordinated.protocol import UNC
from snapcheck.traces import read_trace

pytestmark = pytest.mark.tlc

PROTOCOLS = {
    "chandy-lamport": "q3",
    "abs-aligned": "q3",
    "abs-cyclic": "reachability",
    "unaligned": "q8",
    "aligned-timeout": "q8",
    "bcs": "q8",
    "hmnr": "reachability",
}

# The specification each mutant breaks, the event kind where the trace stops
# matching, and why.
REJECTED = {
    "chandy-lamport-no-channel-state": "end",  # in-flight messages never reported
    "chandy-lamport-non-fifo": "recv",  # a record overtakes another on its channel
    "abs-aligned-no-block": "recv",  # a record processed from a blocked input
    "abs-cyclic-as-printed": "record",  # a back-edge log with a post-barrier record
    "abs-cyclic-early-back-edge": "recv",  # a record behind an early back-edge barrier, before the snapshot
    "unaligned-no-output-part": "arrive",  # a barrier arrives ahead of records it did not overtake
    "unaligned-late-snapshot": "recv",  # records consumed between barrier and snapshot
    "unaligned-channel-alias": "record",  # channel state recorded for the wrong channel
    "unaligned-obsolete-barrier": "end",  # in-flight records after a declined round never reported
    "hmnr-no-c1": "recv",  # a receive without the forced checkpoint C1 requires
    "hmnr-no-c2": "recv",  # a receive without the forced checkpoint C2 requires
    "hmnr-min-to-every-send": "recv",  # a receive after a spurious forced checkpoint
    "unc-no-logging": "restore",  # the line's in-transit messages are not in the log
    "unc-no-rollback-propagation": "restore",  # a restored checkpoint not on the recovery line
    "unc-colocated-channels": "restore",  # idem (an orphan on a same-worker channel)
    "unc-open-interval-edges": "restore",  # idem (an orphan sent after the last checkpoint)
    "unc-replay-skip-single": "send",  # the sender goes on without replaying its window
    "unc-early-log-truncation": "log_truncate",  # entries the recovery line still needs dropped
    "replication-no-ordering": "recv",  # a replica consumes a queue Algorithm 1 does not poll
    "replication-mixed-merge-config": "recv",  # idem: the second replica's round robin starts elsewhere
}
UNC_MUTANTS = [n for n in REJECTED if n.startswith(("unc-", "replication-"))]
DEFAULT_MUTANTS = (
    "chandy-lamport-no-channel-state",
    "abs-aligned-no-block",
    "abs-cyclic-as-printed",
    "hmnr-no-c1",
    *UNC_MUTANTS,
)


def conform(paths, **kw):
    """``snapcheck.checker.tla.conform.conform`` with the catalogue's specifications."""
    return conformance.conform(paths, tla_mappings(), **kw)


def run(tmp_path, name: str, cfg: SimConfig) -> str:
    path = tmp_path / f"{name}.jsonl"
    simulate(cfg).write(str(path))
    return str(path)


def mutant_trace(tmp_path, name: str) -> str:
    m = MUTANTS[name]
    return run(tmp_path, name, SimConfig(protocol=m.mutant_of, mutant=name, **m.demo))


def check_rejected(tmp_path, names):
    paths = [mutant_trace(tmp_path, n) for n in names]
    for name, v in zip(names, conform(paths, parallel=2)):
        assert v.verdict == REJECT, f"{name}: {v.render()}"
        assert v.matched < v.total
        if REJECTED[name] == "end":
            assert v.location.endswith(":end"), v.render()
        else:
            line = int(v.location.rsplit(":", 1)[1])
            with open(v.path) as f:
                text = f.readlines()[line - 1]
            assert f'"type":"{REJECTED[name]}"' in text or (REJECTED[name] == "arrive" and '"type":"recv"' in text), (
                name,
                text,
            )


def test_correct_traces_of_every_protocol_are_accepted(tmp_path):
    paths = [
        run(tmp_path, p, SimConfig(protocol=p, workload=w, parallelism=2, seed=3, records=5))
        for p, w in PROTOCOLS.items()
    ]
    for p, v in zip(PROTOCOLS, conform(paths, parallel=2)):
        assert v.verdict == ACCEPT, f"{p}: {v.render()}"
        assert v.total > 40


def test_reference_mutants_are_rejected(tmp_path):
    check_rejected(tmp_path, DEFAULT_MUTANTS)


@pytest.mark.slow
def test_more_reference_mutants_are_rejected(tmp_path):
    check_rejected(tmp_path, [n for n in REJECTED if n not in DEFAULT_MUTANTS])


@pytest.mark.slow
@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_many_seeds_in_one_tlc_run_are_accepted(tmp_path, protocol):
    base = SimConfig(protocol=protocol, workload=PROTOCOLS[protocol], parallelism=2, records=12)
    paths = [run(tmp_path, f"{protocol}-{s}", replace(base, seed=s)) for s in range(12)]
    verdicts = conform(paths)
    assert [v.verdict for v in verdicts] == [ACCEPT] * len(paths), [v.render() for v in verdicts]


def early_back_edge_barriers(path: str) -> int:
    """Barriers processed from a back-edge before the receiver's snapshot of their round."""
    trace = read_trace(path)
    back = {c.id for c in trace.header.channels if c.back_edge}
    barrier_round = {e.mid: e.round for e in trace.events if e.type == "send" and e.kind == "barrier"}
    early, snapshotted = 0, set()
    for e in trace.events:
        if e.type == "checkpoint":
            snapshotted.add((e.proc, e.round))
        elif e.type == "recv" and e.ch in back and e.mid in barrier_round:
            early += (e.proc, barrier_round[e.mid]) not in snapshotted
    return early


@pytest.mark.slow
def test_held_early_back_edge_barriers_are_accepted(tmp_path):
    """abs-cyclic holds a back-edge whose barrier came round the loop before the task's
    snapshot; ABSTrace requires the hold (the mutant that does not hold is rejected) and
    accepts the correct protocol on the configurations where it happens."""
    demo = MUTANTS["abs-cyclic-early-back-edge"].demo
    paths = [run(tmp_path, f"early-{s}", SimConfig(protocol="abs-cyclic", seed=s, **demo)) for s in (0, 1)]
    assert all(early_back_edge_barriers(p) > 0 for p in paths)
    for v in conform(paths, parallel=2):
        assert v.verdict == ACCEPT, v.render()


def test_a_timed_out_barrier_behind_a_queued_cancellation_marker_is_accepted(tmp_path):
    """aligned-timeout on the diamond with short rounds and declines: a task's
    cancellation marker of round 4 still waited behind a record in its output buffer
    when round 5 timed out there. The priority barrier goes right behind the marker
    and overtakes only the records after it, as Unaligned.tla's SendMarker says (it
    overtook the marker too, and the record ahead of it, and was rejected at its send)."""
    cfg = SimConfig(
        protocol="aligned-timeout",
        workload="diamond",
        seed=2,
        records=6,
        interval=60,
        aligned_timeout=30,
        decline_prob=0.15,
    )
    (v,) = conform([run(tmp_path, "timed-out-behind-cancel", cfg)])
    assert v.verdict == ACCEPT, v.render()


def test_a_cancellation_of_an_overtaken_logged_round_is_not_forwarded(tmp_path):
    """abs-cyclic campaign run 7004900 (two rounds in flight, declines, timeouts):
    join[2] snapshotted round 34, still logged a back-edge, then gave round 35 up on a
    cancellation marker and forwarded it; round 34's cancellation came round the loop
    after that. Forwarding it too put a marker of 34 behind one of 35 on join[2]'s
    output, which ABSTrace rejected (GiveUpTaken: only the newest round a task handled);
    the reference now gives such a round up silently, as Flink ignores a cancellation
    older than its current checkpoint."""
    cfg = SimConfig(
        protocol="abs-cyclic",
        workload="reachability",
        parallelism=3,
        seed=7004900,
        records=12,
        gap=20,
        hot_ratio=0.8,
        interval=200,
        max_concurrent=2,
        checkpoint_timeout=300,
        aligned_timeout=20,
        latency=8,
        jitter=30,
        buffer=2,
        out_buffer=1,
        control_latency=75,
        control_jitter=75,
        decline_prob=0.1,
    )
    (v,) = conform([run(tmp_path, "stale-cancel", cfg)])
    assert v.verdict == ACCEPT, v.render()


def declining_runs(tmp_path, protocols):
    """Runs in which tasks decline 15 % of their snapshots."""
    out = {}
    for p in protocols:
        cfg = SimConfig(
            protocol=p,
            workload="reachability" if p == "abs-cyclic" else "q3",
            parallelism=2,
            seed=4,
            records=10,
            decline_prob=0.15,
        )
        out[p] = run(tmp_path, f"declines-{p}", cfg)
    return out


def test_runs_with_declined_rounds(tmp_path):
    """Declined and aborted rounds are in the specifications of the aligned protocols
    and of unaligned checkpoints. The aligning ones must send cancellation markers
    when they decline: a reference that sends none is rejected at the
    decliner's first event after its decline; one that sends them is accepted.
    Unaligned checkpoints need none (and today's reference sends none)."""
    paths = declining_runs(tmp_path, ["abs-aligned", "abs-cyclic", "aligned-timeout", "unaligned"])
    for (protocol, path), v in zip(paths.items(), conform(list(paths.values()), parallel=2)):
        header, *events = [json.loads(line) for line in open(path)]
        roles = {p["id"]: p.get("role", "task") for p in header["processes"]}
        between_tasks = {
            c["id"]
            for c in header["channels"]
            if c.get("kind", "data") == "data" and roles[c["src"]] != "external" and roles[c["dst"]] != "external"
        }
        declines = [n for n, e in enumerate(events) if e["type"] == "send" and e.get("value", [None])[0] == "decline"]
        assert declines and any(e["type"] == "round_abort" for e in events), protocol
        if protocol == "unaligned" or any(e.get("kind") == "cancel" for e in events):
            assert v.verdict == ACCEPT, f"{protocol}: {v.render()}"
            continue
        assert v.verdict == REJECT, f"{protocol}: {v.render()}"
        first = declines[0]
        decliner = events[first]["proc"]
        # its first step on a channel between tasks, where a cancellation marker was due
        after = next(
            n
            for n in range(first + 1, len(events))
            if events[n]["proc"] == decliner and events[n].get("ch") in between_tasks
        )
        assert v.location == f"{path}:{after + 2}", (protocol, v.render())


@pytest.mark.slow
def test_recovery_without_deduplication_is_rejected_where_a_stale_record_is_processed(tmp_path):
    """A trace with restores goes to RescaleTrace (its recoveries): unaligned-no-dedup
    processes a record of the failed epoch after the restore."""
    (v,) = conform([mutant_trace(tmp_path, "unaligned-no-dedup")])
    assert v.verdict == REJECT and "failed epoch" in v.message


def unc_configs():
    """Correct UNC runs with failures: the unc mutants' demo configuration, partial
    recovery with two failures, a cyclic dataflow."""
    demo = MUTANTS["unc-no-rollback-propagation"].demo
    return {
        "unc-restart-all": SimConfig(protocol="unc", seed=0, **demo),
        "unc-partial": SimConfig(
            protocol=UNC(recovery="partial"),
            workload="q3",
            parallelism=2,
            seed=1,
            records=8,
            interval=300,
            failures=(("join[1]", 300), ("sink[0]", 900)),
        ),
        "unc-cyclic": SimConfig(
            protocol="unc",
            workload="reachability",
            parallelism=2,
            seed=2,
            records=4,
            interval=300,
            failures=(("join[0]", 400),),
        ),
    }


def test_uncoordinated_and_liverobin_traces_with_failures_are_accepted(tmp_path):
    cfgs = {
        **unc_configs(),
        "liverobin": SimConfig(protocol="liverobin", seed=1, records=8),
        "liverobin-crash": SimConfig(protocol="liverobin", seed=2, records=15, failures=(("U[0]#1", 200),)),
    }
    paths = [run(tmp_path, name, cfg) for name, cfg in cfgs.items()]
    for name, path in zip(cfgs, paths):
        with open(path) as f:
            text = f.read()
        assert name == "liverobin" or '"type":"fail"' in text, name  # the run did fail
        if name.startswith("unc"):
            assert '"type":"restore"' in text and '"type":"replay"' in text, name
    for name, v in zip(cfgs, conform(paths, parallel=2)):
        assert v.verdict == ACCEPT, f"{name}: {v.render()}"


def test_plain_round_robin_is_accepted_as_a_finite_prefix(tmp_path):
    (v,) = conform([mutant_trace(tmp_path, "replication-plain-round-robin")])
    assert v.verdict == ACCEPT and any("liveness" in n for n in v.notes), v.render()


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["unc", "liverobin"])
def test_many_drawn_configurations_are_accepted(tmp_path, protocol):
    """Configurations as the Spark validation campaign draws them (half with failures)."""
    from snapcheck.spark_validation.configs import Selection, draw_config

    sel = Selection.of(protocols=[protocol], mutants=())
    paths = [run(tmp_path, f"{protocol}-{s}", draw_config(s, 700 + s, sel)) for s in range(12)]
    verdicts = conform(paths, parallel=2)
    assert [v.verdict for v in verdicts] == [ACCEPT] * len(paths), [v.render() for v in verdicts]
