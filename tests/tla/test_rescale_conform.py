"""Trace validation of recoveries (checker/tla/map_rescale.py, specs/RescaleTrace.tla):
restores at the same and at another parallelism are accepted, the rescale mutants are
rejected at their faulty step; CIC traces with failures go to UncoordinatedTrace."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from snapcheck.checker.tla import conform as conformance
from snapcheck.checker.tla.conform import ACCEPT, ERROR, REJECT
from snapcheck.checker.tla.map_rescale import prepare_recovery
from snapcheck.reference import MUTANTS, SimConfig, simulate
from snapcheck.reference.catalogue import tla_mappings
from snapcheck.traces import read_trace

CORRECT = {
    "savepoint-up": SimConfig(
        protocol="unaligned", workload="q3", parallelism=2, seed=3, rescale=(("savepoint", 1500, 3),)
    ),
    "failure-down": SimConfig(
        protocol="unaligned", workload="q12", parallelism=3, seed=3, records=40, gap=30, rescale=(("failure", 1500, 1),)
    ),
    "aligned-down": SimConfig(
        protocol="abs-aligned", workload="q3", parallelism=3, seed=4, records=20, rescale=(("savepoint", 1200, 2),)
    ),
    "timeout-fail": SimConfig(
        protocol="aligned-timeout",
        workload="q12",
        parallelism=2,
        seed=5,
        records=20,
        failures=(("window_count[0]", 1300),),
    ),
    "cl-fail": SimConfig(
        protocol="chandy-lamport", workload="q3", parallelism=2, seed=6, records=20, failures=(("join[1]", 1300),)
    ),
    # a failure recovery whose recovered records are still in flight at the next checkpoint,
    # then a rescale from it: the old tasks retire with those records pending (they are
    # that checkpoint's channel state, taken by the new tasks' restores)
    "fail-then-rescale": SimConfig(
        protocol="unaligned",
        workload="q1",
        parallelism=2,
        seed=5,
        records=13,
        gap=20,
        failures=(("sink[0]", 255),),
        interval=100,
        aligned_timeout=200,
        latency=4,
        jitter=1,
        buffer=1,
        out_buffer=1,
        rescale=(("savepoint", 243, 3),),
        max_parallelism=4,
    ),
    # two rescales restoring the same round (the first rescale's tasks fail before a round
    # completes): the second takes their checkpoint 0, which holds the records the first
    # recovered onto their channels; they are the round's records, recorded under the old
    # channels, and are taken through both rescales' mappings
    "rescale-twice-same-round": SimConfig(
        protocol="aligned-timeout",
        workload="q12",
        parallelism=1,
        seed=7425019,
        records=21,
        gap=20,
        failures=(("sink[0]", "recovery", 1),),
        interval=250,
        aligned_timeout=50,
        latency=1,
        jitter=5,
        buffer=1,
        out_buffer=1,
        control_latency=1,
        detect_delay=600,
        rescale=(("failure", 702, 3), ("failure", 1630, 2)),
    ),
    "hmnr-fail": SimConfig(
        protocol="hmnr", workload="q3", parallelism=2, seed=7, records=10, interval=300, failures=(("join[0]", 700),)
    ),
}


def _write(tmp_path, name, cfg):
    path = tmp_path / f"{name}.jsonl"
    simulate(cfg).write(path)
    return str(path)


def test_restores_at_the_same_and_another_parallelism_are_accepted(tmp_path):
    paths = [_write(tmp_path, n, c) for n, c in CORRECT.items()]
    for name, v in zip(CORRECT, conformance.conform(paths, tla_mappings(), parallel=2)):
        assert v.verdict == ACCEPT, f"{name}: {v.render()}"
        assert name.startswith("hmnr") or any("RescaleTrace" in n for n in v.notes)


# the event type at which each mutant's trace must be rejected
FAULTY_STEP = {"rescale-race": "discard", "rescale-skip-stateless": "restore", "rescale-undispatched": "recv"}


@pytest.mark.parametrize("name", sorted(FAULTY_STEP))
def test_rescale_mutants_are_rejected_at_the_faulty_step(tmp_path, name):
    m = MUTANTS[name]
    path = _write(tmp_path, name, replace(SimConfig(protocol=m.mutant_of, mutant=name, seed=0), **m.demo))
    (v,) = conformance.conform([path], tla_mappings())
    assert v.verdict == REJECT, v.render()
    line = int(v.location.rsplit(":", 1)[1])
    event = next(e for e in read_trace(path).events if e.line == line)
    assert event.type == FAULTY_STEP[name], (v.render(), event)


# rescale-race runs of the conformance campaign at scale that the checker caught
# (in-flight-lost) and RescaleTrace accepted: the late recovered buffers of the merged
# old channels were never replayed (no live record on their channel came to drop them),
# so they stayed pending at the new task until it left them unprocessed — retiring at a
# checkpoint for the second rescale (7006169), or restoring its checkpoint of a later
# round after a crash (7006245) — and that checkpoint had not recorded them: lost
RACE_LOST = {
    "retire": SimConfig(
        protocol="unaligned",
        workload="q8",
        parallelism=2,
        seed=7006169,
        records=9,
        gap=30,
        hot_ratio=0.8,
        failures=(("persons[1]", "snapshot", 32), ("persons[0]", "recovery", 3)),
        mutant="rescale-race",
        interval=300,
        aligned_timeout=200,
        latency=21,
        buffer=6,
        out_buffer=1,
        rescale=(("savepoint", 429, 1), ("savepoint", 818, 2)),
    ),
    "restore": SimConfig(
        protocol="unaligned",
        workload="diamond",
        parallelism=2,
        seed=7006245,
        records=11,
        gap=30,
        failures=(("self", "snapshot", 48), ("op1[1]", "recovery", 1)),
        mutant="rescale-race",
        interval=300,
        aligned_timeout=400,
        latency=38,
        jitter=30,
        buffer=6,
        out_buffer=4,
        rescale=(("savepoint", 697, 1),),
    ),
}


@pytest.mark.parametrize("step", sorted(RACE_LOST))
def test_recovered_records_never_replayed_are_rejected_where_the_task_leaves_them(tmp_path, step):
    """A new task's pending recovered records are handed on when it retires at, or
    restores, a checkpoint only as that checkpoint's channel state: RescaleTrace rejects
    the retire (or restore) whose checkpoint recorded none of them, where the checker
    finds them lost at the rescale."""
    from snapcheck.checker import CheckOptions, check_trace

    path = _write(tmp_path, step, RACE_LOST[step])
    assert "in-flight-lost" in check_trace(read_trace(path), CheckOptions()).kinds
    (v,) = conformance.conform([path], tla_mappings())
    assert v.verdict == REJECT, v.render()
    line = int(v.location.rsplit(":", 1)[1])
    event = next(e for e in read_trace(path).events if e.line == line)
    assert (event.type, event.proc, line) == {
        "retire": ("retire", "g1.window_join[0]", 378),
        "restore": ("restore", "g1.op0[0]", 1212),
    }[step], v.render()
    assert "must be channel state of round" in v.render()


def test_restored_state_is_the_checkers_to_judge():
    """docs/specs.md (RescaleTrace, what it does not judge): a rescale whose new task
    restores no state (key group 3 of the old agg[1] is named by no restore's sources)
    moves no in-flight record wrongly, so RescaleTrace ACCEPTS it; the checker's
    rescale-state property finds key-group-lost, and the oracle does not count that
    as a disagreement."""
    from snapcheck.checker import CheckOptions, check_trace
    from snapcheck.checker.tla.oracles import MODELLED

    path = str(Path(__file__).parents[1] / "data" / "rescale" / "key_group_lost.jsonl")
    (verdict,) = conformance.conform([path], tla_mappings())
    assert verdict.verdict == ACCEPT, verdict.render()
    assert any("is not judged" in n and "rescale-state" in n for n in verdict.notes)  # and it says so
    kinds = check_trace(read_trace(path), CheckOptions()).kinds
    assert "key-group-lost" in kinds and not kinds & MODELLED["RescaleTrace"]


DATA = Path(__file__).parents[1] / "data" / "recovery"


def test_a_restore_maps_to_the_round_of_the_checkpoint_it_restores():
    """tests/data/recovery/stale_labelled_round1.jsonl: after round 1 completed, both tasks
    restore their initial state (``ckpt`` 0) labelled ``"round": 1``. The specification's
    ``restore`` takes the round restored, the empty state's 0, which it rejects (round 1
    is the latest completed); the label made it round 1, accepted. A restore labelled
    with an older round than its checkpoint's is not a trace (aborted_labelled_round1)."""
    path = str(DATA / "stale_labelled_round1.jsonl")
    prepared = prepare_recovery(read_trace(path), "abs-aligned", tla_mappings()["abs-aligned"])
    restores = [e for e in prepared.events if e["op"] == "restore"]
    assert [e["r"] for e in restores] == [0, 0]
    (v,) = conformance.conform([str(DATA / "aborted_labelled_round1.jsonl")], tla_mappings())
    assert v.verdict == ERROR and "of round 2, as round 1" in v.render(), v.render()


def _upscale(keyed=True, n0_filter=((0, 1),), n1_filter=((2, 3),), again_at_n1=False) -> str:
    """JSONL of a hand-written upscale of a keyed operator from 1 to 2 subtasks (unaligned):
    two recorded records (key groups 1 and 2, or none), ``g1.agg[0]`` owning key groups 0..1
    and ``g1.agg[1]`` 2..3, each mapping the old channel with a filter (None: none), each
    processing one record (``again_at_n1``: ``g1.agg[1]`` processes the first one too)."""
    import json

    ch = "src[0]>agg[0]"
    header = {
        "format": "snapcheck-trace",
        "version": 1,
        "processes": [
            {"id": "coord", "role": "coordinator"},
            {"id": "src[0]", "operator": "src"},
            {"id": "agg[0]", "operator": "agg", "key_groups": [[0, 3]], "max_parallelism": 4},
            {"id": "g1.agg[0]", "operator": "agg", "appears": True, "max_parallelism": 4},
            {"id": "g1.agg[1]", "operator": "agg", "appears": True, "max_parallelism": 4},
        ],
        "channels": [
            {"id": ch, "src": "src[0]", "dst": "agg[0]"},
            {"id": "src[0]>g1.agg[0]", "src": "src[0]", "dst": "g1.agg[0]"},
            {"id": "src[0]>g1.agg[1]", "src": "src[0]", "dst": "g1.agg[1]"},
        ],
        "protocol": {"name": "unaligned", "params": {}},
    }
    events: list[dict] = []
    idx: dict[str, int] = {}

    def ev(**d):
        d["idx"] = idx[d["proc"]] = idx.get(d["proc"], -1) + 1
        events.append(d)

    ev(type="round_start", proc="coord", round=1)
    for seq, key_group in ((1, 1), (2, 2)):
        ev(
            type="send",
            proc="src[0]",
            ch=ch,
            mid=f"{ch}:{seq}",
            seq=seq,
            key=str(seq),
            **({"key_group": key_group} if keyed else {}),
        )
    ev(type="checkpoint", proc="src[0]", kind="coordinated", round=1, ckpt=1)
    ev(type="send", proc="src[0]", ch=ch, mid=f"{ch}:b1", kind="barrier", round=1)
    ev(type="recv", proc="agg[0]", ch=ch, mid=f"{ch}:b1")
    ev(type="checkpoint", proc="agg[0]", kind="coordinated", round=1, ckpt=1)
    ev(type="record", proc="agg[0]", ch=ch, ckpt=1, part="input", mids=[f"{ch}:1", f"{ch}:2"])
    ev(type="round_complete", proc="coord", round=1)
    ev(type="retire", proc="agg[0]", ckpt=1, reason="rescaled")
    for sub, groups, kept in ((0, [[0, 1]], n0_filter), (1, [[2, 3]], n1_filter)):
        mapping = {"old": ch, "new": f"src[0]>g1.agg[{sub}]"}
        if kept is not None:
            mapping["key_groups"] = [list(r) for r in kept]
        sources = [{"proc": "agg[0]", "ckpt": 1, "key_groups": groups}]
        ev(type="restore", proc=f"g1.agg[{sub}]", round=1, ckpt=0, recovery=1, sources=sources, channels=[mapping])
    for sub, seq, copy in [(0, 1, "r1"), (1, 2, "r1")] + ([(1, 1, "r2")] if again_at_n1 else []):
        new, mid = f"src[0]>g1.agg[{sub}]", f"{ch}:{seq}/{copy}"
        ev(type="replay", proc=f"g1.agg[{sub}]", ch=new, mid=mid, replay_of=f"{ch}:{seq}", **{"from": "channel_state"})
        ev(type="recv", proc=f"g1.agg[{sub}]", ch=new, mid=mid)
    return "".join(json.dumps(x) + "\n" for x in [header, *events])


UPSCALES = {  # name: (arguments, the checker's kinds, conform's verdict)
    "keyed": ({}, set(), ACCEPT),
    # without a key group, the two filtered mappings share each record: one processes it
    "no-key-group": ({"keyed": False}, set(), ACCEPT),
    "no-key-group-twice": ({"keyed": False, "again_at_n1": True}, {"in-flight-duplicated"}, REJECT),
    # Flink's receivers filter by key group: a mapping without a filter, or a wider one, is harmless
    "no-filter": ({"n0_filter": None}, set(), ACCEPT),
    "wider-filter": ({"n0_filter": ((0, 3),)}, set(), ACCEPT),
    "non-owner-processes": ({"n1_filter": ((0, 3),), "again_at_n1": True}, {"in-flight-misrouted"}, REJECT),
}


@pytest.mark.parametrize("name", sorted(UPSCALES))
def test_conform_and_the_checker_agree_on_filters_and_records_without_a_key_group(tmp_path, name):
    """Both oracles on one trace (docs/specs.md, "Two oracles"): conform rejected the first
    two kinds of correct traces below (a record without a key group pending at both filtered
    mappings; a keyed record kept by a filter wider than its task owns) that check passed."""
    from snapcheck.checker import check_trace

    args, kinds, verdict = UPSCALES[name]
    path = tmp_path / f"{name}.jsonl"
    path.write_text(_upscale(**args))
    assert check_trace(read_trace(str(path))).kinds == kinds
    [v] = conformance.conform([str(path)], tla_mappings())
    assert v.verdict == verdict, v.render()
    if verdict == REJECT:  # at the second processing, where the checker's witness ends
        assert v.location == f"{path}:{len(path.read_text().splitlines())}", v.render()


def test_a_recovery_without_a_coordinator_restores_a_round_its_checkpoints_completed(tmp_path):
    """Without ``round_complete`` events a round is complete by its checkpoints and barriers
    (docs/checker.md): RescaleTrace rejected a correct Chandy-Lamport recovery ("it must be
    the latest completed round") that the checker passed."""
    from snapcheck.checker import check_trace
    from snapcheck.traces import TraceRecorder

    rec = TraceRecorder(["A", "B"], [("ab", "A", "B"), ("ba", "B", "A")], protocol="chandy-lamport")
    m = rec.send("A", "ab")
    ca = rec.checkpoint("A", round=1)
    rec.recv("B", rec.barrier("A", "ab", round=1))
    cb = rec.checkpoint("B", round=1)
    rec.recv("A", rec.barrier("B", "ba", round=1))
    rec.record("A", ca, "ba", [])
    rec.record("B", cb, "ab", [m])
    rec.fail("B")
    rec.restore("A", ca, recovery=1)
    rec.restore("B", cb, recovery=1)
    rec.recv("B", rec.replay("B", m, source="channel_state"))
    path = tmp_path / "cl.jsonl"
    rec.write(path)
    assert check_trace(read_trace(str(path))).kinds == set()
    [v] = conformance.conform([str(path)], tla_mappings())
    assert v.verdict == ACCEPT, v.render()
