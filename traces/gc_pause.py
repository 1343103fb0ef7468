"""``paused_gc()``: run a block with Python's cyclic garbage collector paused.

Building the objects of a large trace (millions of events, messages, histories)
creates no reference cycles, so everything is freed by reference counting; a
collection triggered by those allocations only walks every live object again, at
a cost that grows with the trace (a fifth to a quarter of the time on millions of
events). Code that builds such structures runs inside ``paused_gc()``; the
collector's previous state is restored on exit.

On exit the objects made during the pause are moved to the oldest generation
without a collection (``gc.freeze()`` then ``gc.unfreeze()``, when nothing else
has frozen objects): left in the youngest generation they would be walked by the
next young collection, again by the middle one and then by a full one, seconds
on a trace of millions of events, although they are alive and acyclic. They
stay collectable by a full collection — but CPython starts one only when the
objects that *entered* the oldest generation through its own collections since the
last full one exceed a quarter of those that survived it, and objects moved there
by ``unfreeze`` are not counted. A process that runs many pauses (a campaign
worker simulating and checking run after run, ``snapcheck check`` over thousands
of files) would then never collect the garbage cycles among them (a simulator's
object graph after its run): measured, 3,600 objects a run and a worker's memory
growing by about a megabyte a run, to 9.6 GB over 9,000 runs. So the pauses keep
that count themselves: the objects a pause moved (the young generation's count,
``gc.get_count()[0]``) are added up, and when the sum exceeds a quarter of the
objects that survived the last full collection the pauses ran (and at least
``FULL_COLLECTION_FLOOR``), the pause that crossed it ends with one — CPython's
own rule, with the moved objects counted.

>>> import gc
>>> with paused_gc():
...     gc.isenabled()
False
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

FULL_COLLECTION_FLOOR = 100_000  # objects moved before a full collection, at least


class _Moved:
    """What the pauses moved to the oldest generation since their last full collection,
    and how many objects survived that collection."""

    moved = 0
    survivors = 0


@contextmanager
def paused_gc() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if gc.get_freeze_count() == 0:
                _Moved.moved += gc.get_count()[0]  # the young generation: what the pause made
                gc.freeze()
                gc.unfreeze()
                if _Moved.moved > max(FULL_COLLECTION_FLOOR, _Moved.survivors // 4):
                    gc.collect()
                    _Moved.moved, _Moved.survivors = 0, len(gc.get_objects())
            gc.enable()
