"""Declined and aborted rounds are cancelled, as Flink does: a declining task sends a
cancellation marker downstream, a task receiving one (or the coordinator's abort, or
a newer barrier) abandons its pending alignment. On the diamond (a task reading a
source directly and through a sibling, tiny buffers) aligned protocols deadlocked
without it; the ``aligned-no-cancel`` mutant keeps that behaviour and must be caught."""

from __future__ import annotations

import random

import pytest

from snapcheck.checker import check_trace
from snapcheck.reference import SimConfig, simulate
from snapcheck.reference.catalogue import MUTANTS
from snapcheck.reference.topology import expand
from snapcheck.reference.workloads import random_graph

ALIGNING = ("abs-aligned", "abs-cyclic", "aligned-timeout", "abs-aligned-2pc")
# The configuration of the original report: backpressure (one credit, one output slot),
# barely any network delay, frequent rounds.
DIAMOND = dict(workload="diamond", parallelism=2, records=6, gap=150, interval=150, max_concurrent=1,
               aligned_timeout=50, latency=1, jitter=1, buffer=1, out_buffer=1)


def runs(protocol: str, seeds, mutant: str | None = None, decline: float = 0.03):
    for seed in seeds:
        res = simulate(SimConfig(protocol=protocol, mutant=mutant, seed=seed, decline_prob=decline, **DIAMOND))
        yield seed, res, check_trace(res.trace())


@pytest.mark.parametrize("protocol", ALIGNING)
@pytest.mark.parametrize("decline", [0.0, 0.03])
def test_aligning_protocols_never_deadlock_on_the_diamond(protocol, decline):
    failing = [(seed, sorted(rep.kinds)) for seed, res, rep in runs(protocol, range(120), decline=decline)
               if not rep.ok or res.metrics["stuck"]]
    assert failing == []


def test_the_mutant_without_cancellation_deadlocks_and_is_caught():
    caught = [seed for seed, res, rep in runs("abs-aligned", range(120), "aligned-no-cancel")
              if "incomplete-round" in rep.kinds]
    assert len(caught) >= 5                # about 8 % of these runs
    # the correct protocol on exactly those schedules: clean, and rounds complete after the decline
    for seed, res, rep in runs("abs-aligned", caught):
        assert rep.ok and not res.metrics["stuck"]


def test_a_decline_sends_cancellation_markers_that_downstream_tasks_handle():
    for seed, res, rep in runs("abs-aligned", range(60), decline=0.1):
        events = res.trace().events
        declined = {e.line: e for e in events if e.type == "round_abort" and "declined" in (e.reason or "")}
        cancels = {e.mid: e for e in events if e.type == "send" and e.kind == "cancel"}
        handled = {e.mid for e in events if e.type == "recv" and e.mid in cancels}
        if declined:
            assert cancels, seed                           # the declining task told its downstream
            assert set(cancels) == handled, seed           # and every marker reached its task
            assert rep.ok and not res.metrics["stuck"], (seed, rep.kinds)
            return
    pytest.fail("no run declined a round")


def test_the_coordinator_tells_every_task_of_an_aborted_round():
    for seed, res, _ in runs("abs-aligned", range(60), decline=0.1):
        events = res.trace().events
        aborts = [e.round for e in events if e.type == "round_abort" and "declined" in (e.reason or "")]
        if aborts:
            tasks = {p.id for p in res.trace().header.processes if p.role not in ("external", "coordinator")}
            notified = {e.ch.split("->")[1].split("/")[0] for e in events
                        if e.type == "send" and e.proc == "coordinator" and e.ch.endswith("/notices")}
            assert notified == tasks
            return
    pytest.fail("no run declined a round")


def test_random_graphs_draw_the_diamond_shape():
    """A task reading a source both directly and through a sibling consumer of it: what
    100,000 campaign runs never drew before the generator added sibling edges."""
    def has_diamond(wl) -> bool:
        sources = {o.name for o in wl.operators if o.source}
        ins: dict[str, set] = {}
        for e in wl.edges:
            ins.setdefault(e.dst, set()).add(e.src)
        return any(s in ins.get(b, ()) and a in ins.get(b, ()) and s in ins.get(a, ())
                   for b in ins for a in ins for s in sources if a != b)
    for cyclic in (False, True):
        graphs = [random_graph(random.Random(seed), cyclic=cyclic) for seed in range(200)]
        assert sum(map(has_diamond, graphs)) >= 40, cyclic


def test_a_cyclic_generator_edge_is_a_back_edge_only_when_it_closes_a_cycle():
    back = cross = 0
    for seed in range(200):
        wl = random_graph(random.Random(seed), cyclic=True)
        g = expand(wl)
        flagged = {(c.src.split("[")[0], c.dst.split("[")[0]) for c in g.channels if c.back_edge}
        order = [o.name for o in wl.operators]
        for e in wl.edges:
            later_to_earlier = order.index(e.src) > order.index(e.dst)
            if later_to_earlier:
                if (e.src, e.dst) in flagged:
                    back += 1
                else:
                    cross += 1
    assert back > 0 and cross > 0


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ALIGNING)
@pytest.mark.parametrize("decline", [0.0, 0.03])
def test_two_thousand_seeds_of_the_diamond_are_clean(protocol, decline):
    failing = [seed for seed, res, rep in runs(protocol, range(2000), decline=decline)
               if not rep.ok or res.metrics["stuck"]]
    assert failing == []
