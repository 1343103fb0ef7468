"""Cyclic ABS when a back-edge delivers a round's barrier before the task's own snapshot.

Algorithm 2 of "Lightweight Asynchronous Snapshots for Distributed Dataflows" never blocks
a back-edge: it takes for granted that the barrier comes back round the loop only after
the task's snapshot. With parallel subtasks and a shuffle on the loop the barrier can come
back through other subtasks that aligned sooner (campaign seeds 603 and 1548: ``join[1]``
got ``project[2]``'s barrier while it still waited on its regular inputs, processed a
record sent after ``project[2]``'s snapshot, then snapshotted: an orphan). ``abs-cyclic``
holds such a back-edge until its snapshot; the ``abs-cyclic-early-back-edge`` mutant does
not, and ``abs-cyclic-as-printed`` keeps the printed algorithm."""

from __future__ import annotations

from dataclasses import replace

import pytest
from protocol_harness import Channel, Context, marker

from snapcheck.checker import check_trace
from snapcheck.reference import SimConfig, simulate
from snapcheck.reference.catalogue import MUTANTS, resolve


def _task(spec: str):
    regular, loop = Channel("src->task"), Channel("tail->task", back_edge=True)
    ctx = Context([regular, loop])
    return ctx, resolve(spec)().make(ctx), regular, loop


def test_a_back_edge_barrier_before_the_snapshot_holds_the_back_edge_until_it():
    ctx, task, regular, loop = _task("abs-cyclic")
    task.on_barrier(loop, marker(1), False)  # round 1 came round the loop first
    assert ctx.blocked() == ["tail->task"] and ctx.done("checkpoint") == []
    task.on_barrier(regular, marker(1), False)  # aligned on the regular input: snapshot
    assert ctx.done("checkpoint") == [1] and ctx.done("complete") == [1]
    assert ctx.blocked() == [] and ctx.done("record") == []  # nothing of the back-edge is in transit


def test_a_back_edge_barrier_after_the_snapshot_ends_its_log_without_blocking():
    ctx, task, regular, loop = _task("abs-cyclic")
    task.on_barrier(regular, marker(1), False)
    assert ctx.done("checkpoint") == [1] and ctx.blocked() == []
    task.on_barrier(loop, marker(1), False)
    assert ctx.blocked() == [] and ctx.done("complete") == [1]


def test_a_declined_round_releases_a_held_back_edge():
    ctx, task, regular, loop = _task("abs-cyclic")
    task.on_barrier(loop, marker(1), False)
    task.on_abort(1)
    assert ctx.blocked() == [] and ctx.done("checkpoint") == []


@pytest.mark.parametrize("mutant", ["abs-cyclic-early-back-edge", "abs-cyclic-as-printed"])
def test_the_mutants_keep_processing_a_back_edge_whose_barrier_came_early(mutant):
    ctx, task, regular, loop = _task(mutant)
    task.on_barrier(loop, marker(1), False)
    assert ctx.blocked() == []


def _early_back_edge_barriers(trace) -> list[str]:
    """Barriers received on a back-edge before the receiver's checkpoint of their round."""
    back = {c.id for c in trace.header.channels if c.back_edge}
    ckpt = {}
    for e in trace.events:
        if e.type == "checkpoint":
            ckpt.setdefault((e.proc, e.round), e.line)
    return [
        e.mid
        for e in trace.events
        if e.type == "recv"
        and e.ch in back
        and ":b" in e.mid
        and ckpt.get((e.proc, int(e.mid.rsplit(":b", 1)[1].split("@")[0])), e.line + 1) > e.line
    ]


# The campaign configurations that found it (``snapcheck validate --traces 2000``).
EARLY_BACK_EDGE = {
    603: dict(
        workload="reachability",
        parallelism=3,
        records=10,
        gap=20,
        interval=250,
        aligned_timeout=200,
        latency=1,
        jitter=20,
        buffer=1,
        out_buffer=1,
    ),
    1548: dict(
        workload="reachability",
        parallelism=3,
        records=9,
        gap=20,
        interval=100,
        aligned_timeout=200,
        latency=4,
        jitter=5,
        buffer=1,
        out_buffer=1,
    ),
}


@pytest.mark.parametrize("seed", sorted(EARLY_BACK_EDGE))
def test_campaign_runs_with_an_early_back_edge_barrier_are_clean_and_the_mutant_is_caught(seed):
    cfg = SimConfig(protocol="abs-cyclic", seed=seed, **EARLY_BACK_EDGE[seed])
    trace = simulate(cfg).trace()
    assert check_trace(trace).ok
    assert _early_back_edge_barriers(trace)  # the situation happens in this run
    bad = check_trace(simulate(replace(cfg, mutant="abs-cyclic-early-back-edge")).trace())
    assert "orphan" in bad.kinds


def test_the_mutant_is_a_cyclic_abs_mutant_adjusted_onto_cyclic_workloads():
    """Drawn blind as abs-cyclic (same topologies), its forced adjustment moves an acyclic draw onto a loop."""
    m = MUTANTS["abs-cyclic-early-back-edge"]
    assert m.mutant_of == "abs-cyclic" and m.topologies == MUTANTS["abs-cyclic-as-printed"].topologies
    assert m.adjust(SimConfig(protocol="abs-cyclic", workload="q3")).workload == "reachability"


def test_a_cancellation_of_the_logged_round_is_forwarded_while_it_is_the_newest():
    """A task that snapshotted round n and still logs a back-edge gives n up on a
    cancellation marker of n and forwards it once (ABS.tla's GiveUpTaken)."""
    ctx, task, regular, loop = _task("abs-cyclic")
    task.on_barrier(regular, marker(34), False)
    assert ctx.done("checkpoint") == [34] and ctx.done("complete") == []  # logging the back-edge
    task.on_cancel(loop, marker(34))
    assert ctx.done("cancel") == [34] and ctx.done("complete") == [] and ctx.done("record") == []


def test_a_cancellation_of_a_logged_round_after_a_newer_round_is_not_forwarded():
    """Campaign run 7004900 (abs-cyclic, reachability, --max-concurrent 2): join[2]
    snapshotted round 34 and still logged its back-edge from project[2] when round 35's
    barriers came and then a cancellation marker of 35, which it forwarded; then
    project[2]'s cancellation marker of 34 came round the loop, and join[2] forwarded
    that too, behind its marker of 35 (ABSTrace rejected the send: a task owes only
    markers of the newest round it handled). As Flink's barrier handler ignores a
    cancellation older than its current checkpoint, the round is given up silently."""
    a, b = Channel("links->join"), Channel("sources->join")
    loop = Channel("project->join", back_edge=True)
    ctx = Context([a, b, loop])
    task = resolve("abs-cyclic")().make(ctx)
    task.on_barrier(a, marker(34), False)
    task.on_barrier(b, marker(34), False)
    assert ctx.done("checkpoint") == [34] and ctx.done("barrier") == [34]  # logging the back-edge
    task.on_barrier(a, marker(35), False)  # round 35 aligning: a blocked
    task.on_cancel(b, marker(35))  # declined upstream: given up and forwarded
    assert ctx.done("cancel") == [35] and ctx.blocked() == []
    task.on_cancel(loop, marker(34))  # round 34's cancellation comes round the loop
    assert ctx.done("cancel") == [35]  # not forwarded behind the marker of 35
    assert ctx.done("complete") == [] and ctx.done("record") == []  # and round 34 given up
    task.on_barrier(loop, marker(35), False)  # (obsolete) nothing more of either round
    assert ctx.done("cancel") == [35] and ctx.blocked() == []


# The campaign configuration that found it (a conform campaign of 2,500 runs).
STALE_CANCEL = dict(
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


def marker_rounds_by_channel(trace) -> dict[str, list[int]]:
    """The rounds of the barriers and cancellation markers sent on each channel, in order."""
    out: dict[str, list[int]] = {}
    for e in trace.events:
        if e.type == "send" and e.kind in ("barrier", "cancel"):
            out.setdefault(e.ch, []).append(e.round)
    return out


def test_the_campaign_run_sends_markers_in_round_order_on_every_channel():
    res = simulate(SimConfig(**STALE_CANCEL))
    trace = res.trace()
    assert check_trace(trace).ok
    out_of_order = {c: rs for c, rs in marker_rounds_by_channel(trace).items() if rs != sorted(rs)}
    assert out_of_order == {}
