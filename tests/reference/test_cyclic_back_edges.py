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
