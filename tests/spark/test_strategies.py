"""Exploration: every strategy draws a run from its seed alone and its reproduction command
carries every choice; mutants are drawn blind; faults at situations and pauses do what
they say; the summary accounts for mutants and coverage."""

from __future__ import annotations

import random
import shlex
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from snapcheck.cli import cli
from snapcheck.reference import SimConfig, simulate
from snapcheck.reference.catalogue import MUTANTS, base_of, resolve
from snapcheck.reference.workloads import ACYCLIC, make_workload
from snapcheck.spark_validation.configs import Selection, command, draw_config
from snapcheck.spark_validation.strategies import STRATEGIES


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_each_strategy_is_a_pure_function_of_the_seed_and_reproduces_byte_for_byte(strategy, tmp_path):
    sel = Selection.of(explore=strategy)
    cfgs = [draw_config(i, 100 + i, sel) for i in range(40)]
    assert cfgs == [draw_config(i, 100 + i, sel) for i in range(40)]
    fancy = [c for c in cfgs if c.pauses or any(len(f) == 3 for f in c.failures)] or cfgs
    for cfg in fancy[:2]:
        out = tmp_path / "t.jsonl"
        args = shlex.split(command(cfg, str(out)))
        result = CliRunner().invoke(cli, args[1:])
        assert result.exit_code == 0, result.output
        assert out.read_bytes() == simulate(cfg).dumps()


def test_the_strategies_draw_what_they_promise():
    def draws(strategy, n=300):
        return [draw_config(i, i, Selection.of(mutants=(), explore=strategy)) for i in range(n)]

    moments = draws("moments")
    assert sum(any(len(f) == 3 for f in c.failures) for c in moments) > 60  # crashes at situations
    uniform = draws("uniform")
    # only timed crashes (a protocol with its own dataflow draws its own faults: regional rescales)
    assert all(len(f) == 2 for c in uniform if resolve(c.protocol).topologies != "own" for f in c.failures)
    assert all(len(f) == 2 or f[0] == "rescale" for c in uniform for f in c.failures)
    # ... to which moments adds crashes at its situations, e.g. right after a region acknowledged
    own = [c for c in moments if resolve(c.protocol).topologies == "own" and resolve(c.protocol).situations]
    assert sum(any(len(f) == 3 and f[0] != "rescale" for f in c.failures) for c in own) > len(own) // 5
    assert any(c.pauses for c in draws("pct")) and not any(c.pauses for c in draws("uniform"))
    # protocols with their own dataflow draw their own configurations
    bp = [c for c in draws("backpressure") if c.workload != "-" and resolve(c.protocol).topologies != "own"]
    assert all(c.buffer == 1 and c.out_buffer == 1 and c.max_concurrent == 1 for c in bp)
    # half of them on a dataflow whose branches meet again: of the acyclic workloads, the diamond always,
    # random graphs sometimes (a quarter of uniformly drawn acyclic ones)
    acyclic = [c for c in bp if c.workload in ACYCLIC]
    meeting = sum(make_workload(c.workload, c.parallelism, c.seed).reconvergent for c in acyclic)
    assert 0.5 * len(acyclic) < meeting < 0.8 * len(acyclic)
    assert sum(not c.failures for c in bp) > len(bp) // 3  # failure-free runs, where a masked hang shows
    swarm = draws("swarm")
    assert any(c.decline_prob == 0 for c in swarm) and any(c.decline_prob > 0 for c in swarm)


@pytest.mark.parametrize("name", [m for m, c in MUTANTS.items() if c.topologies != "own"][:12])
def test_a_mutant_is_drawn_blind_exactly_as_its_base_protocol(name):
    """Exactly, under a strategy that does not land its crashes; under ``targeted`` the
    same draws, each crash then landed on the mutant's own run (what a hunt of a user's
    buggy protocol does: it runs that protocol): only where its crashes fall may differ."""
    m = MUTANTS[name]
    for i in range(20):
        for strategy in ("stress", "targeted"):
            mine = draw_config(i, 500 + i, Selection(protocols=(), mutants=(name,), explore=strategy))
            base = draw_config(i, 500 + i, Selection(protocols=(base_of(m),), mutants=(), explore=strategy))
            expected = m.adjust(replace(base, mutant=name))
            if mine.workload != base.workload:
                continue
            if strategy == "targeted":  # landed on the mutant's own run: crashes and the checkpoint timeout
                assert [f[0] for f in mine.failures] == [f[0] for f in expected.failures]
                assert (mine.checkpoint_timeout is None) == (expected.checkpoint_timeout is None)
                mine, expected = (replace(c, failures=(), checkpoint_timeout=None) for c in (mine, expected))
            assert mine == expected


def _first_crash_after_a_completed_round(cfg) -> bool | None:
    """Whether the run's first crash came after its first completed round (None: no crash)."""
    events = simulate(cfg).trace().events
    done = next((e.line for e in events if e.type == "round_complete"), None)
    fail = next((e.line for e in events if e.type == "fail"), None)
    return None if fail is None else done is not None and done < fail


@pytest.mark.parametrize("protocol", ["abs-aligned", "unaligned", "abs-aligned-2pc"])
def test_targeted_lands_its_crashes_on_moments_the_run_reaches_mostly_after_a_completed_round(protocol, monkeypatch):
    """``targeted`` moves each crash it places to an occurrence the run reaches, mostly
    after the first completed round: fewer runs that asked for crashes end without any
    (crashes at situations that follow a crash, never landed, may still not fire), and
    more of the first crashes come after a round completed (where a recovery has a
    checkpoint to restore, and recovery bugs show), than the same draws without landing."""
    from snapcheck.spark_validation import strategies

    sel = Selection(protocols=(protocol,), explore="targeted")

    def measure():
        cfgs = [c for c in (draw_config(i, 900 + i, sel) for i in range(80)) if c.failures]
        after = [_first_crash_after_a_completed_round(c) for c in cfgs]
        crashed = [x for x in after if x is not None]
        return 1 - len(crashed) / len(cfgs), sum(crashed) / len(crashed)

    landed_none, landed_after = measure()
    monkeypatch.setattr(strategies, "LANDED", ())
    drawn_none, drawn_after = measure()
    assert landed_none < 0.05 < drawn_none
    assert landed_after > 0.5 and landed_after > drawn_after + 0.15


@pytest.mark.parametrize("protocol", ["abs-cyclic", "unaligned"])
def test_targeted_lands_its_checkpoint_timeouts_on_the_runs_own_rounds(protocol, monkeypatch):
    """A checkpoint timeout drawn blind often aborts every round of a run (nothing
    completes: the run is inconclusive); landed on the run's own round durations, far
    fewer runs complete no round, and the timeout still fires in a good share of them
    (the slow rounds abort), where a timeout that never fires would test nothing."""
    from snapcheck.spark_validation import strategies

    sel = Selection(protocols=(protocol,), explore="targeted", failures=False)

    def measure():
        cfgs = [c for c in (draw_config(i, 4200 + i, sel) for i in range(150)) if c.checkpoint_timeout is not None]
        runs = [simulate(c, record=False).metrics for c in cfgs]
        return len(cfgs), sum(not m["rounds_completed"] for m in runs), sum(m["rounds_aborted"] > 0 for m in runs)

    timed, landed_none, landed_fired = measure()
    monkeypatch.setattr(strategies, "LANDED", ())
    _, drawn_none, _ = measure()
    assert timed > 30 and landed_none <= drawn_none / 3 and landed_none < 0.05 * timed
    assert landed_fired > timed / 4


@given(
    seed=st.integers(0, 10**6), protocol=st.sampled_from(["abs-aligned", "unaligned", "chandy-lamport", "abs-cyclic"])
)
@settings(max_examples=25, deadline=None)
def test_a_landed_crash_fires_the_dry_run_is_the_run_up_to_it(seed, protocol):
    """The dry run ``land`` counts occurrences on is the run itself up to the crash (same
    seed, a crash at a situation changes nothing before it fires), so a single landed
    crash always fires — at the situation and occurrence it names."""
    from snapcheck.spark_validation.strategies import dry_run, land

    cls = resolve(protocol)
    draw = draw_config(0, seed, Selection(protocols=(protocol,), explore="stress", failures=False))
    counts = dry_run(draw, []).counts
    reached = [s for s in cls.situations if counts.get(s) and s in ("aligning", "snapshot", "acknowledged", "overtake")]
    assume(reached)
    cfg = replace(draw, failures=(("self", reached[seed % len(reached)], 10**6),))
    landed = land(random.Random(seed), cls, cfg, cfg.failures)
    ((target, name, k),) = landed.failures
    assert name == cfg.failures[0][1] and 1 <= k <= counts[name]
    res = simulate(landed)
    assert res.metrics["faults_not_fired"] == 0 and res.metrics["failures"] >= 1
    assert f"{name}#{k}" in next(e.reason for e in res.trace().events if e.type == "fail")


def test_a_crash_at_a_situation_hits_the_task_where_it_happened():
    cfg = SimConfig(protocol="abs-aligned", workload="q3", seed=3, failures=(("self", "snapshot", 5),))
    res = simulate(cfg)
    ev = res.trace().events
    fifth = [e for e in ev if e.type == "checkpoint" and e.kind == "coordinated"][4]
    (fail,) = [e for e in ev if e.type == "fail"]
    assert fail.proc == fifth.proc and fail.line > fifth.line and "snapshot#5" in fail.reason
    assert res.metrics["faults_not_fired"] == 0 and res.metrics["situations"]["snapshot"] >= 5


def test_a_fault_whose_moment_never_comes_is_reported_as_not_fired():
    res = simulate(SimConfig(protocol="abs-aligned", workload="q1", seed=1, failures=(("map[0]", "replay", 1),)))
    assert res.metrics["failures"] == 0 and res.metrics["faults_not_fired"] == 1
    assert "replay" not in res.metrics["situations"]


def test_pauses_perturb_the_schedule_and_correct_protocols_stay_clean():
    from snapcheck.checker import check_trace

    base = SimConfig(protocol="unaligned", workload="q8", seed=2, records=12)
    plain = simulate(base).dumps()
    for pauses in (((5, 300),), ((3, 1000), (40, 200), (90, 500))):
        res = simulate(replace(base, pauses=pauses))
        assert res.dumps() != plain and check_trace(res.trace()).ok


def test_the_summary_accounts_for_mutants_blind_and_lists_what_was_not_explored(tmp_path):
    from snapcheck.spark_validation.campaign import run_campaign
    from snapcheck.spark_validation.summary import summarize

    sel = Selection.of(protocols=["abs-aligned"], mutants=["abs-aligned-no-block"], explore="targeted")
    res = run_campaign(40, sel, str(tmp_path), engine="python", progress=False)
    s = summarize(res.results, {})
    (m,) = s["mutants"]
    assert m["runs"] == 8 and 0 < m["caught"] <= 8 and m["catch_rate"] == round(m["caught"] / 8, 4)
    assert 1 <= m["runs_to_first_catch"] <= 8
    cov = s["coverage"]["abs-aligned"]
    assert cov["runs"] == 32 and cov["reached"]["snapshot"] == 32
    assert set(cov["unreached"]) <= set(MUTANTS["abs-aligned-no-block"].situations)
    assert "overtake" not in cov["reached"]  # aligned barriers never overtake records


@pytest.mark.parametrize("strategy", ["moments", "stress", "backpressure"])
def test_faults_of_the_whole_job_are_placed_at_situations_of_the_whole_job(strategy):
    """Under targeted's members a protocol declaring a fault of the whole job (the regional
    family's rescale, aligned only) gets it at a situation of the whole job it lists, in
    about ``JOB_FAULT_PROB`` of the runs that drew none of their own; a protocol declaring
    none never gets one."""
    from snapcheck.reference.sim.exploration import OF_THE_JOB
    from snapcheck.spark_validation.strategies import JOB_FAULT_PROB

    def runs(spec):
        return [draw_config(i, 900 + i, Selection(protocols=(spec,), mutants=(), explore=strategy)) for i in range(300)]

    aligned = runs("regional-aligned")
    placed = [f for c in aligned for f in c.failures if f[0] == "rescale" and len(f) == 3]
    assert all(f[1] in OF_THE_JOB and f[1] in resolve("regional-aligned").situations for f in placed)
    assert {f[1] for f in placed} >= {"regional-completion", "acknowledged-fallback", "completed-unnotified"}
    assert all(sum(f[0] == "rescale" for f in c.failures) <= 1 for c in aligned)  # one at most: a draw of its own
    share = sum(any(f[0] == "rescale" for f in c.failures) for c in aligned) / len(aligned)
    assert JOB_FAULT_PROB * 0.75 < share < JOB_FAULT_PROB + 0.25 + 0.1  # its own quarter plus the placed ones
    assert not any(f[0] == "rescale" for c in runs("regional-unaligned") for f in c.failures)


def test_a_crash_at_a_time_is_landed_while_its_task_is_in_the_job():
    """A rescale replaces every task: a crash of an old task landed after the rescale
    would never fire. It lands before the task left, which the dry run reports."""
    from snapcheck.reference import SimConfig, simulate
    from snapcheck.spark_validation.strategies import land

    cfg = SimConfig(
        protocol="unaligned", workload="q1", records=30, rescale=(("savepoint", 900, 3),), failures=(("map[0]", 5000),)
    )
    gone = simulate(replace(cfg, failures=())).metrics["retired_at"]["map[0]"]
    for seed in range(20):
        (landed,) = land(random.Random(seed), resolve("unaligned"), cfg, cfg.failures).failures
        assert landed[0] == "map[0]" and landed[1] <= gone
        assert any(e.type == "fail" for e in simulate(replace(cfg, failures=(landed,))).trace().events)


def test_a_crash_at_a_situation_naming_a_task_a_rescale_replaces_lands_where_it_fires():
    """A situation's k-th occurrence after a rescale would crash no task of the old job:
    the crash lands before its task left, or on the task that took over from it (a name
    of the new generation, ``g1.map[0]``), counted from when that task joined."""
    from snapcheck.reference import SimConfig, simulate
    from snapcheck.spark_validation.strategies import land

    cfg = SimConfig(
        protocol="unaligned",
        workload="q1",
        records=30,
        rescale=(("savepoint", 900, 3),),
        failures=(("map[0]", "snapshot", 10**6),),
    )
    targets = set()
    for seed in range(20):
        (landed,) = land(random.Random(seed), resolve("unaligned"), cfg, cfg.failures).failures
        targets.add(landed[0])
        run = simulate(replace(cfg, failures=(landed,)))
        assert run.metrics["faults_not_fired"] == 0, landed
        assert [e.proc for e in run.trace().events if e.type == "fail"] == [landed[0]]
    assert targets == {"map[0]", "g1.map[0]"}


def test_a_fault_may_name_a_task_a_rescale_starts_and_only_such_a_task():
    """``g1.map[0]@T`` crashes the task the first rescale starts, once it is there; a
    name no rescale of the run can start is a usage error that lists the names."""
    from snapcheck.reference import SimConfig, simulate
    from snapcheck.reference.sim.exploration import FaultError

    cfg = SimConfig(protocol="unaligned", workload="q1", records=30, rescale=(("savepoint", 900, 3),))
    run = simulate(replace(cfg, failures=(("g1.map[2]", 2500),)))
    assert [e.proc for e in run.trace().events if e.type == "fail"] == ["g1.map[2]"]
    with pytest.raises(FaultError, match=r"'g2.map\[0\]'.*after a rescale: .*g1.map\[0\]"):
        simulate(replace(cfg, failures=(("g2.map[0]", 2500),)))
    with pytest.raises(FaultError, match=r"'g1.map\[0\]'"):
        simulate(replace(cfg, rescale=(), failures=(("g1.map[0]", 2500),)))


COUNTING = f"{Path(__file__).parents[1] / 'reference' / 'test_marker_free_recording.py'}"  # Lai-Yang, non-FIFO


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_protocol_with_non_fifo_channels_gets_room_to_reorder_records_under_every_strategy(strategy):
    """With one credit per channel no record overtakes another: a protocol declaring
    non-FIFO channels gets two or more and a jitter above the gaps between sends in about
    ``REORDER_PROB`` of its runs; its draws are otherwise those of the same protocol with
    FIFO channels, whose buffer and jitter stay as drawn."""
    from snapcheck.reference.catalogue import load
    from snapcheck.spark_validation.strategies import LANDED, REORDER_PROB

    non_fifo = load(f"{COUNTING}:Counting")
    fifo = type("CountingFifo", (non_fifo,), {"fifo": True, "__module__": "mine"})

    def runs(cls):
        return [draw_config(i, 700 + i, Selection(protocols=(cls,), mutants=(), explore=strategy)) for i in range(120)]

    reorder = runs(non_fifo)
    share = sum(c.buffer >= 2 and c.jitter >= 60 for c in reorder) / len(reorder)
    assert share >= REORDER_PROB * 0.8, share
    if strategy not in LANDED:  # (landing draws after them, from dry runs that differ)
        for mine, plain in zip(reorder, runs(fifo)):
            assert mine.buffer >= plain.buffer and mine.jitter >= plain.jitter
            assert replace(mine, protocol=None, buffer=0, jitter=0) == replace(plain, protocol=None, buffer=0, jitter=0)


@pytest.mark.parametrize("strategy, runs, catches", [("backpressure", 30, 3), ("targeted", 40, 5)])
def test_a_bug_that_needs_records_to_overtake_each_other_is_caught_blind(strategy, runs, catches):
    """A non-FIFO protocol whose mutant ends a channel's recording with its last white
    record (right only when records cannot overtake each other) is caught blind, on cyclic
    workloads (no rescale), under one credit per channel too (before: never)."""
    from snapcheck.checker import check_trace

    sel = Selection(
        protocols=(), mutants=(f"{COUNTING}:NextInLine",), explore=strategy, workloads=("reachability", "random-cyclic")
    )
    kinds = [
        {v.kind for v in check_trace(simulate(draw_config(i, 100 + i, sel)).trace()).violations} for i in range(runs)
    ]
    assert sum("dropped" in k for k in kinds) >= catches, kinds


def test_a_timeout_stays_as_drawn_when_the_dry_run_does_not_measure_its_rounds(monkeypatch):
    """A protocol's simulator of its own may complete rounds without measuring their
    durations (``checkpoint_duration_max`` absent or None): the timeout stays as drawn,
    and drawing the run never fails."""
    from snapcheck.spark_validation import strategies

    cfg = SimConfig(protocol="abs-aligned", workload="q1", checkpoint_timeout=700)
    for metrics in ({"rounds_completed": 3}, {"rounds_completed": 3, "checkpoint_duration_max": None}, {}):
        monkeypatch.setattr(strategies, "_dry_metrics", lambda c, m=metrics: m)
        assert strategies.land_timeout(random.Random(0), cfg, ()) == cfg
