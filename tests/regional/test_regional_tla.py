"""Trace validation of regional checkpoints (RegionalTrace): the kit's reference traces are
behaviours of RegionalCheckpoint, in both readings and with failovers, and the traces of
the protocol's mutants are not."""

import random
from dataclasses import replace

import orjson
import pytest

from snapcheck.checker.tla.conform import ACCEPT, ERROR, REJECT, conform, prepare
from snapcheck.checker.tla.map_regional import RESCALE as WHOLE_JOB_RESTORE
from snapcheck.checker.tla.trace_events import OutOfScope
from snapcheck.reference import PROTOCOLS, SimConfig, simulate
from snapcheck.reference.catalogue import resolve, tla_mappings
from snapcheck.reference.regional.rescale import RESCALE
from snapcheck.traces import read_trace


def _write(tmp_path, cfg, name):
    path = tmp_path / name
    simulate(cfg).write(str(path))
    return str(path)


def _random(seed, **changes):
    fields = PROTOCOLS["regional-aligned"].random_config(random.Random(seed), True, seed=seed)
    return SimConfig(**{"protocol": "regional-aligned", "seed": seed, **fields, **changes})


def test_the_mapping_covers_every_event_of_a_reference_trace(tmp_path):
    path = _write(tmp_path, _random(9), "r.jsonl")
    p = prepare(read_trace(path), tla_mappings())
    ops = {e["op"] for e in p.events}
    assert {"send", "recv", "take", "trigger", "complete", "assign", "assigned", "publish", "end"} <= ops
    assert {"crash", "restart"} & ops
    consts = dict(p.consts)
    assert consts["TReading"] == '"restart"' and "src[0]" in consts["TReaders"]
    assert set(p.ignored) <= {
        "barrier or cancellation marker",
        "output (pre-commit, end of stream)",
        "recv (control message or external input)",
        "send (control message or external input)",
        "replay",
        "discard",
        "restore (same recovery)",
    }


def test_traces_without_declared_regions_or_of_unaligned_barriers_are_outside_the_specification(tmp_path):
    path = _write(tmp_path, _random(9), "r.jsonl")
    lines = [orjson.loads(x) for x in open(path, "rb").read().splitlines()]
    for p in lines[0]["processes"]:
        if p.get("attrs", {}).get("region") is not None:
            del p["attrs"]
    bad = tmp_path / "noregion.jsonl"
    bad.write_bytes(b"\n".join(orjson.dumps(x) for x in lines) + b"\n")
    with pytest.raises(OutOfScope, match="no attrs.region"):
        prepare(read_trace(str(bad)), tla_mappings())
    assert "regional-unaligned" not in tla_mappings() or resolve("regional-unaligned").tla is None
    [v] = conform(
        [_write(tmp_path, _random(9, protocol="regional-unaligned", max_concurrent=1), "u.jsonl")], tla_mappings()
    )
    assert v.verdict == ERROR and "no TLA+ trace specification" in v.message


def test_a_coordinated_checkpoint_without_a_round_is_outside_the_specification(tmp_path):
    # the trace format allows it; the specification's checkpoints all belong to a round
    path = _write(tmp_path, _random(9), "r.jsonl")
    lines = [orjson.loads(x) for x in open(path, "rb").read().splitlines()]
    at = next(n for n, x in enumerate(lines) if x.get("type") == "checkpoint" and x.get("kind") == "coordinated")
    del lines[at]["round"]
    bad = tmp_path / "noround.jsonl"
    bad.write_bytes(b"\n".join(orjson.dumps(x) for x in lines) + b"\n")
    [v] = conform([str(bad)], tla_mappings())
    assert v.verdict == ERROR, v.render()
    assert v.location == f"{bad}:{at + 1}" and "coordinated checkpoint without a round" in v.message


def test_reference_traces_conform_in_both_readings(tmp_path):
    paths = [
        _write(tmp_path, _random(1, recovery="region-restart"), "restart.jsonl"),
        _write(tmp_path, _random(3, recovery="region-continue"), "continue.jsonl"),
    ]
    for v in conform(paths, tla_mappings()):
        assert v.verdict == ACCEPT, v.render()


def test_a_round_triggered_before_a_crash_is_detected_waits_for_the_detection(tmp_path):
    """Campaign run 7000418: op1[0] crashes at 999, its region's failover is detected at
    1099; round 6, triggered at 1050, used to be aborted at once as if region 0 were
    already failing over ("every region is failing over") while src[0] still read split 2
    and took its snapshot -- a coordinator acting on a crash it had not detected, which
    RegionalTrace rejects (a region is failed in a round only once its failover is
    detected, and a detected region runs no more). Now the detection aborts it."""
    cfg = SimConfig(
        protocol="regional-aligned",
        parallelism=2,
        seed=7000418,
        records=7,
        gap=150,
        interval=175,
        failures=(("sink[1]", 802), ("op1[0]", "acknowledged-fallback", 2)),
        max_concurrent=2,
        recovery="region-continue",
        latency=52,
        jitter=30,
        buffer=5,
        out_buffer=3,
        stragglers=(("op1[0]", 3.0),),
        decline_prob=0.025,
    )
    path = _write(tmp_path, cfg, "r7000418.jsonl")
    aborts = {e.round: e for e in read_trace(path).events if e.type == "round_abort"}
    assert aborts[6].t == 1099 and aborts[6].reason.startswith("region 0 failed over")
    (v,) = conform([path], tla_mappings())
    assert v.verdict == ACCEPT, v.render()


def test_a_fallback_restart_during_an_undetected_crash_stops_the_region_at_once(tmp_path):
    """Campaign run 7005544 (reading region-restart): sink[1] crashes at 438, detection
    due at 538; round 3 completes at 470 with region 1 falling back (src[1] declined
    it). The fallback restart used to be merged into the undetected crash's failover, so
    region 1 ran on until 538 (src[1] sent record 12 at 472), while RegionalTrace, like
    the coordinator that cannot know of the crash, restarts the region at the completion.
    Now the fallback restart stops it at once and the crash's detection is moot."""
    cfg = SimConfig(
        protocol="regional-aligned", parallelism=4, seed=7005544, records=8, gap=40, interval=100,
        failures=(("sink[1]", 438), ("self", "acknowledged", 65)), max_concurrent=2, checkpoint_timeout=800,
        recovery="region-restart", latency=19, jitter=1, buffer=6, out_buffer=1, decline_prob=0.025,
    )  # fmt: skip
    path = _write(tmp_path, cfg, "r7005544.jsonl")
    events = read_trace(path).events
    done = next(e for e in events if e.type == "round_complete" and e.round == 3)
    region1 = {"src[1]", "op0[1]", "op1[1]", "sink[1]"}
    restore = next(e for e in events if e.type == "restore" and e.proc in region1)
    ran_on = [e for e in events if e.proc in region1 and done.line < e.line < restore.line and e.type != "fail"]
    assert not ran_on, ran_on[:3]
    (v,) = conform([path], tla_mappings())
    assert v.verdict == ACCEPT, v.render()


def test_a_region_restored_in_the_tick_a_round_was_triggered_is_not_restarted_for_it(tmp_path):
    """Campaign run 7042770 (reading region-restart): round 5 completed at 1900 with
    region 2 falling back, and the region restored at 2100, in the tick round 6 was
    triggered, after the trigger. Round 6 then completed with region 2 falling back (its
    new incarnation never got the trigger) and the reference restarted it again from the
    same checkpoints: it compared times (2100 <= 2100: "not restored since the trigger"),
    where RegionalTrace, like the coordinator, follows the order of the events. Now the
    recovery epochs order them, and the region runs on."""
    cfg = SimConfig(
        protocol="regional-aligned", parallelism=4, seed=7042770, records=8, gap=150, interval=300,
        failures=(("src[0]", 730),), recovery="region-restart", latency=27, jitter=30, decline_prob=0.0187,
    )  # fmt: skip
    path = _write(tmp_path, cfg, "r7042770.jsonl")
    events = read_trace(path).events
    region2 = {"src[2]", "op0[2]", "op1[2]", "sink[2]"}
    ckpts = [e.ckpt for e in events if e.type == "restore" and e.proc in region2]
    assert ckpts and all(a != b for a, b in zip(ckpts[::4], ckpts[4::4])), ckpts  # never the same checkpoints again
    (v,) = conform([path], tla_mappings())
    assert v.verdict == ACCEPT, v.render()


def _rescales(cfg) -> bool:
    return any(f[0] == RESCALE for f in cfg.failures)


def _fired(cfg) -> bool:
    """The run's requested rescale happened (one placed at a situation may never be reached)."""
    faults = simulate(cfg).header.metadata.get("faults") or []
    return any(f["fault"].startswith("rescale") and f.get("fired") for f in faults)


@pytest.mark.slow
def test_more_reference_traces_conform(tmp_path):
    """Eight random configurations (from seed 4 on) without a rescale, which is outside the
    specification (next test)."""
    cfgs = [c for c in map(_random, range(4, 40)) if not _rescales(c)][:8]
    assert len(cfgs) == 8 and any(c.failures for c in cfgs)
    paths = [_write(tmp_path, c, f"r{c.seed}.jsonl") for c in cfgs]
    for v in conform(paths, tla_mappings()):
        assert v.verdict == ACCEPT, v.render()


@pytest.mark.slow
def test_a_rescale_is_outside_the_specification(tmp_path):
    """A rescale restores the whole job at once, with state dealt out anew: an ERROR that says so
    (the regional specification restores one region from its own snapshots), whose reason
    for being outside names nothing of the trace, so that a campaign counts such traces
    together (the messages name the splits and recoveries of each)."""
    cfgs = [c for c in map(_random, range(4, 60)) if _rescales(c) and _fired(c)][:2]
    assert len(cfgs) == 2
    paths = [_write(tmp_path, c, f"rescale{c.seed}.jsonl") for c in cfgs]
    verdicts = conform(paths, tla_mappings())
    for v in verdicts:
        assert v.verdict == ERROR, v.render()
        assert "a whole-job restore (rescale) is outside the regional specification" in v.message, v.render()
    assert {v.outside for v in verdicts} == {WHOLE_JOB_RESTORE}


WHAT_REJECTS = {
    "regional-fallback-commit": "commits transaction",
    "regional-notify-before-correction": "round_complete",
    # a job whose regions a channel joins: the invariant is not the specification's to keep there,
    # so its violation is the trace's (a REJECT naming the channel), not an error of the specification
    "regional-dependent-regions": "violates ComposedConsistent after this event: channel",
}


@pytest.mark.parametrize("mutant", sorted(WHAT_REJECTS))
def test_traces_of_protocol_mutants_are_rejected(tmp_path, mutant):
    m = resolve(mutant, "mutant")
    path = _write(tmp_path, replace(SimConfig(protocol=m.mutant_of, mutant=mutant), **{**m.demo, "seed": 0}), "m.jsonl")
    [v] = conform([path], tla_mappings())
    assert v.verdict == REJECT, v.render()
    assert WHAT_REJECTS[mutant] in v.message, v.render()


@pytest.mark.slow
def test_a_rescale_that_never_fired_leaves_the_trace_inside_the_specification(tmp_path):
    """A run that asked for a rescale declares a channel from every split log to every reader
    (a rescale may move a split); while no split moves, each split belongs to the reader its
    log feeds, and the trace conforms."""
    cfgs = [c for c in map(_random, range(4, 60)) if _rescales(c) and not _fired(c)][:1]
    assert cfgs
    [v] = conform([_write(tmp_path, cfgs[0], "unfired.jsonl")], tla_mappings())
    assert v.verdict == ACCEPT, v.render()
