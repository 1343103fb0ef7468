"""Regional checkpoints (FLIP-600): the reference simulator — clean, exactly-once and valid
traces on the campaign's random configurations, both readings, both barrier protocols;
the mechanisms each reading and rule promises, seen in the traces."""

import random
from dataclasses import replace

import pytest

from snapcheck.checker import check_trace
from snapcheck.reference import MUTANTS, PROTOCOLS, SimConfig, simulate
from snapcheck.reference.catalogue import entry, mutants_of
from snapcheck.reference.oracle import exactly_once
from snapcheck.reference.regional.job import JobShape
from snapcheck.reference.regional.protocol import RegionalAligned, RegionalUnaligned
from snapcheck.reference.regional.splits import SplitEnumerator
from snapcheck.traces.jsonl import parse_trace


def random_cfg(spec: str, seed: int, **changes):
    fields = PROTOCOLS[spec].random_config(random.Random(seed), True, seed=seed)
    return SimConfig(**{"protocol": spec, "seed": seed, **fields, **changes})


def test_declared_in_the_catalogue():
    assert PROTOCOLS["regional-aligned"] is RegionalAligned and PROTOCOLS["regional-unaligned"] is RegionalUnaligned
    row = entry(RegionalAligned)
    assert row["family"] == "regional" and row["topologies"] == "own"
    assert row["recovery_modes"] == ["region-restart", "region-continue"]
    assert row["tla"] == "RegionalTrace" and entry(RegionalUnaligned)["tla"] is None
    assert len(mutants_of("regional-aligned")) == 9
    assert all(MUTANTS[m.name].family == "regional" for m in mutants_of("regional-aligned"))


@pytest.mark.parametrize("spec", ["regional-aligned", "regional-unaligned"])
def test_correct_protocols_are_clean_and_exactly_once_on_random_configurations(spec):
    regional = restarts = 0
    for seed in range(30):
        cfg = random_cfg(spec, seed)
        res = simulate(cfg)
        trace = parse_trace(res.dumps().decode())  # the trace validates (schema, causality)
        report = check_trace(trace)
        assert report.ok, (seed, [v.message for v in report.violations][:3])
        m = res.metrics
        if not (m["stuck"] and not m["truncated"]):  # (every final round aborted: inconclusive)
            assert exactly_once(cfg, res) == [], seed
        assert not m["truncated"], seed
        regional += m["regional_completions"] > 0
        restarts += m["fallback_restarts"] > 0
    assert regional >= 12 and restarts >= 3  # not vacuous: fallbacks happen, in both readings


def test_random_configurations_are_deterministic_and_name_existing_tasks():
    a = random_cfg("regional-aligned", 5)
    assert a == random_cfg("regional-aligned", 5)
    assert simulate(a).dumps() == simulate(a).dumps()
    names = set(JobShape.draw(5).operator_names())
    for seed in range(40):
        for task, *_ in random_cfg("regional-aligned", seed).failures:
            assert task == "rescale" or task.split("[")[0] in set(JobShape.draw(seed).operator_names()) | names


def test_task_names_are_the_simulated_tasks():
    for seed in range(10):
        cfg = random_cfg("regional-aligned", seed)
        procs = simulate(cfg).trace().header.processes
        tasks = {p.id for p in procs if p.role not in ("coordinator", "external")}
        assert set(RegionalAligned.task_names(cfg)) == tasks, seed


def test_a_failure_a_rescale_took_over_is_not_restored_again_when_the_region_fails_anew():
    """Found by a campaign: op1[0] fails, a rescale stops the job before the failover is
    detected, and op0[0] of the same region fails after the rescale's restore. The first
    failover's late detection and restore must not act on the second (the restore came
    before the second failure was detected, whose detection then found no failover)."""
    cfg = SimConfig(
        protocol="regional-aligned",
        workload="q1",
        parallelism=3,
        seed=429,
        records=3,
        gap=40,
        failures=(("op0[0]", 353), ("op1[0]", 57), ("rescale", 144)),
        interval=100,
        max_concurrent=2,
        recovery="region-continue",
        latency=52,
        jitter=30,
        buffer=1,
        out_buffer=4,
        decline_prob=0.0083,
    )
    res = simulate(cfg)
    assert check_trace(res.trace()).ok
    assert exactly_once(cfg, res) == []
    restores = [e for e in res.events if e.type == "restore" and e.proc == "op0[0]"]
    assert len(restores) == 2  # the rescale's, then the second failover's (once)


def test_regional_situations_and_a_rescale_placed_at_a_regional_completion():
    from snapcheck.checker.coverage import requested_faults

    for seed in range(60):
        cfg = random_cfg("regional-aligned", seed, failures=(("rescale", "regional-completion", 1),))
        res = simulate(cfg)
        sits = res.metrics["situations"]
        faults = {f.fault: f.exercised for f in requested_faults(res.trace())}
        assert faults == {"rescale at regional-completion#1": "regional-completion" in sits}, seed
        assert sits.get("region-acknowledged", 0) >= 1, seed  # a region acknowledges before its round completes
        if "regional-completion" not in sits:
            continue
        rescaled = [e for e in res.events if e.type == "restore" and e.attrs and "elements" in e.attrs]
        first = next(e for e in res.events if e.type == "round_complete" and e.attrs and e.attrs.get("fallback"))
        assert rescaled and min(e.t for e in rescaled) >= first.t, seed  # right after it, not before
        assert check_trace(res.trace()).ok, seed
        bad = check_trace(simulate(replace(cfg, mutant="regional-rescale-by-id")).trace())
        if "restore-unnamed" in bad.kinds:
            return  # the moment the rescale-by-id bug needs
    raise AssertionError("no rescale after a regional completion showed regional-rescale-by-id")


def _regional_run(spec="regional-aligned", reading="region-restart", want=1):
    for seed in range(60):
        res = simulate(random_cfg(spec, seed, failures=(), recovery=reading))
        done = [e for e in res.events if e.type == "round_complete" and e.attrs and e.attrs.get("fallback")]
        if len(done) >= want:
            return res, done
    raise AssertionError("no run with a regional completion")


def test_a_regional_completion_names_a_checkpoint_of_every_fallback_task_and_the_region_restarts():
    res, done = _regional_run()
    ckpt_round = {(e.proc, e.ckpt): e.round for e in res.events if e.type == "checkpoint"}
    regions = {p.id: p.attrs["region"] for p in res.header.processes if p.attrs and "region" in p.attrs}
    e = done[0]
    fallback = e.attrs["fallback"]
    failed = {regions[p] for p in fallback}
    assert set(fallback) == {p for p, r in regions.items() if r in failed}  # whole regions
    taken = {(p, r) for (p, _), r in ckpt_round.items()}
    assert all(k < e.round and (p, k) in taken for p, k in fallback.items())
    restores = [x for x in res.events if x.type == "restore" and x.line > e.line]
    assert restores and {regions[x.proc] for x in restores[: len(fallback)]} <= failed
    assert all(
        x.round == e.round and ckpt_round.get((x.proc, x.ckpt)) == fallback[x.proc] for x in restores[: len(fallback)]
    )


def test_the_prs_reading_keeps_failed_regions_running_and_tells_their_sinks():
    res, done = _regional_run(reading="region-continue")
    assert res.metrics["fallback_restarts"] == 0
    fallback = done[0].attrs["fallback"]
    sinks = [p for p in fallback if p.startswith("sink")]
    sends = [e for e in res.events if e.type == "send" and e.attrs and "fallback_notify" in e.attrs]
    assert {e.ch.split("->")[1] for e in sends if e.attrs["fallback_notify"] == done[0].round} == set(sinks)
    assert not any(
        e.type == "send" and e.attrs and e.attrs.get("notify") == done[0].round and e.ch.split("->")[1] in sinks
        for e in res.events
    )


def test_fallback_naming_is_resolved_in_the_flips_reading_and_immediate_in_the_prs():
    for reading, refs in (("region-restart", "resolved"), ("region-continue", "immediate")):
        res, done = _regional_run(reading=reading)
        assert res.header.protocol["params"]["refs"] == refs
        completed = [e.round for e in res.events if e.type == "round_complete"]
        for e in done:
            before = max(r for r in completed if r < e.round)
            if refs == "immediate":
                assert set(e.attrs["fallback"].values()) == {before}


def test_asynchronous_declines_leave_a_checkpoint_and_decline_the_round():
    res = simulate(random_cfg("regional-aligned", 3, decline_prob=0.2, failures=()))
    ckpts = {(e.proc, e.round) for e in res.events if e.type == "checkpoint"}
    declines = [
        (e.proc, e.value[1])
        for e in res.events
        if e.type == "send" and isinstance(e.value, list) and e.value[:1] == ["decline"]
    ]
    assert any(d in ckpts for d in declines) and any(d not in ckpts for d in declines)


def test_a_job_with_an_edge_between_slices_is_one_region_and_completes_only_globally():
    class CrossEdge(RegionalAligned):
        name = "regional-aligned-cross-edge"
        cross_edge = True

    for seed in range(6):
        cfg = replace(
            random_cfg("regional-aligned", seed),
            protocol=CrossEdge(**RegionalAligned.from_config(random_cfg("regional-aligned", seed)).params),
            recovery="restart-all",
        )
        res = simulate(cfg)
        assert {p.attrs["region"] for p in res.header.processes if p.attrs and "region" in p.attrs} == {0}
        assert res.metrics["regional_completions"] == 0
        assert check_trace(res.trace()).ok


def test_the_livelock_guard_gives_up_a_run_that_hands_out_a_split_forever():
    res = simulate(random_cfg("regional-aligned", 81, mutant="regional-live-correction"))
    assert res.metrics["truncated"] and res.metrics["sim_time"] < 100_000


def test_the_enumerator_gives_back_exactly_what_the_restored_checkpoint_does_not_hold():
    e = SplitEnumerator({0: 1, 1: 2, 2: 1, 3: 1})
    assert [e.next_for(1), e.next_for(2)] == [0, 1]
    e.snapshot(1)
    assert e.complete(1, {}) == {0: 1, 1: 2}
    assert e.next_for(1) == 2
    e.snapshot(2)
    assert e.complete(2, {1: 1}) == {0: 1, 1: 2}  # reader 1 fell back: split 2 not held
    assert e.complete(2, {1: 1}, correct=False) == {0: 1, 1: 2, 2: 1}
    e.checkpointed[2] = {0: 1, 1: 2}
    assert e.handed_out_since(2, {1: 1}) == [2]
    assert e.reset(1, 2) == [2] and e.next_for(1) == 2 and e.next_for(1) == 3
    assert e.next_for(1) is None and not e.exhausted([1, 2])
    assert e.next_for(2) is None and e.exhausted([1, 2])


def test_an_unknown_reading_is_refused():
    with pytest.raises(ValueError, match="not a reading"):
        simulate(SimConfig(protocol="regional-aligned", recovery="partial"))


def test_a_rescale_is_a_requested_fault_the_run_reports_not_a_crash_of_a_task_named_rescale():
    from snapcheck.checker.coverage import requested_faults

    cfg = SimConfig(
        protocol="regional-aligned",
        seed=3,
        failures=(("self", "snapshot", 4), ("rescale", 1500), ("src[0]", 900), ("rescale", 10**6)),
    )
    faults = {f.fault: f.exercised for f in requested_faults(simulate(cfg).trace())}
    assert faults == {
        "crash of self at snapshot#4": True,
        "rescale at tick 1500": True,
        "crash of src[0] at tick 900": True,
        "rescale at tick 1000000": False,
    }


def test_acknowledged_fallback_is_the_moment_a_rescale_by_id_reads_a_state_the_metadata_does_not_name():
    """A rescale right after a round completed with a region falling back whose tasks had
    partly acknowledged it: the correct protocol restores the named states (clean), the
    mutant reads the acknowledged task's own newer state (caught) — every time; a round
    that completed regionally without such a task never reaches the situation."""
    fired = 0
    for seed in range(40):
        cfg = random_cfg("regional-aligned", seed, failures=(("rescale", "acknowledged-fallback", 1),))
        res = simulate(cfg)
        sits = res.metrics["situations"]
        assert sits.get("acknowledged-fallback", 0) <= sits.get("regional-completion", 0), seed
        assert check_trace(res.trace()).ok, seed
        bad = check_trace(simulate(replace(cfg, mutant="regional-rescale-by-id")).trace())
        assert ("restore-unnamed" in bad.kinds) == ("acknowledged-fallback" in sits), seed
        fired += "acknowledged-fallback" in sits
    assert fired >= 5
