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
stay collectable: the next full collection sees them like any old object.

>>> import gc
>>> with paused_gc():
...     gc.isenabled()
False
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()
