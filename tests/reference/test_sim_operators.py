"""Operators are multiset-functional (what makes the end-to-end oracle sound) and
snapshot/restore their state exactly."""

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from snapcheck.reference.operators import (
    Filter,
    IncrementalJoin,
    KeyedAggregate,
    Map,
    Sink,
    Source,
    WindowedCount,
    WindowedJoin,
)

records = st.lists(
    st.tuples(st.integers(0, 1), st.integers(0, 3), st.integers(0, 50), st.integers(0, 5000)), max_size=25
)  # (port, key, value, ts)


def _ops():
    return [
        lambda: Map(lambda r: (r[0], r[1] * 2, r[2])),
        lambda: Filter(lambda r: r[1] % 2 == 0),
        lambda: KeyedAggregate(lambda r: r[0], lambda r: r[1]),
        lambda: WindowedCount(lambda r: r[0], lambda r: r[2], 1000),
        lambda: IncrementalJoin(lambda r: r[0], lambda r: r[0]),
        lambda: WindowedJoin(lambda r: r[0], lambda r: r[0], lambda r: r[2], 1000),
        lambda: Source(),
    ]


def _run(make, recs):
    op = make()
    out = Counter()
    for port, k, v, ts in recs:
        for o in op.process(port, (k, v, ts)):
            out[o] += 1
    return out, op.canonical()


@settings(max_examples=60, deadline=None)
@given(records, st.randoms(use_true_random=False), st.integers(0, 6))
def test_output_multiset_and_state_do_not_depend_on_arrival_order(recs, rng, which):
    make = _ops()[which]
    shuffled = list(recs)
    rng.shuffle(shuffled)
    assert _run(make, recs) == _run(make, shuffled)


@settings(max_examples=40, deadline=None)
@given(records, records, st.integers(0, 6))
def test_restore_returns_exactly_the_snapshot_state(before, after, which):
    op = _ops()[which]()
    for port, k, v, ts in before:
        op.process(port, (k, v, ts))
    snap, canon = op.snapshot(), op.canonical()
    for port, k, v, ts in after:
        op.process(port, (k, v, ts))
    op.restore(snap)
    assert op.canonical() == canon


def test_join_emits_each_matching_pair_once():
    j = IncrementalJoin(lambda r: r[0], lambda r: r[0])
    assert j.process(0, (1, "p")) == []
    assert j.process(1, (1, "a")) == [((1, "p"), (1, "a"))]
    assert j.process(1, (1, "b")) == [((1, "p"), (1, "b"))]
    assert sorted(j.process(0, (1, "q"))) == [((1, "q"), (1, "a")), ((1, "q"), (1, "b"))]
    assert j.process(1, (2, "c")) == []


def test_windowed_join_only_joins_within_a_window():
    j = WindowedJoin(lambda r: r[0], lambda r: r[0], lambda r: r[1], 100)
    j.process(0, (1, 50))
    assert j.process(1, (1, 150)) == []
    assert j.process(1, (1, 99)) == [((1, 50), (1, 99))]


def test_sink_publishes_sealed_output_once_per_transaction():
    s = Sink()
    committed: set = set()
    s.process(0, "a")
    s.prepare(1)
    s.process(0, "b")
    snap = s.snapshot()  # a checkpoint of round 2 would seal "b" first
    s.prepare(2)
    assert s.commit(1, committed) == [(1, ("a",))]
    assert s.commit(1, committed) == []  # transaction 1 already committed
    s.restore(snap)  # restored state still holds transaction 1 and pending "b"
    assert s.commit(1, committed) == []  # recoverAndCommit: already done, not published again
    s.prepare(3)
    assert s.commit(3, committed) == [(3, ("b",))]
    assert s.canonical() == {"pending": [], "staged": []}
