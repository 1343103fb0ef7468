"""``paused_gc`` keeps a long-lived process's garbage collectable (traces.gc_pause)."""

import gc
import weakref

from snapcheck.traces.gc_pause import FULL_COLLECTION_FLOOR, paused_gc


class _Node:
    __slots__ = ("other", "__weakref__")


def test_garbage_cycles_made_in_many_pauses_are_collected_without_being_asked():
    """Each pause makes and drops 1,000 two-node cycles (the shape of a simulator's object
    graph after its run). The pauses move them to the oldest generation uncounted by
    CPython, so they are collected only because the pauses count them: of 300,000 nodes,
    at most about a floor's worth are alive at the end (all of them were, before)."""
    gc.collect()
    alive = weakref.WeakSet()
    for _ in range(150):
        with paused_gc():
            for _ in range(1000):
                a, b = _Node(), _Node()
                a.other, b.other = b, a
                alive.add(a)
                alive.add(b)
    assert gc.isenabled()
    assert len(alive) <= FULL_COLLECTION_FLOOR + 2000, len(alive)
