"""``paused_gc`` keeps a long-lived process's garbage collectable (traces.gc_pause)."""

import subprocess
import sys

# In a fresh interpreter (its heap, and so the collector's thresholds, known): each pause
# makes and drops 1,000 two-node cycles, the shape of a simulator's object graph after its
# run; prints how many of the 300,000 nodes are still alive at the end.
PAUSES = """
import gc, weakref
from snapcheck.traces.gc_pause import paused_gc

class Node:
    __slots__ = ("other", "__weakref__")

gc.collect()
alive = weakref.WeakSet()
for _ in range(150):
    with paused_gc():
        for _ in range(1000):
            a, b = Node(), Node()
            a.other, b.other = b, a
            alive.add(a)
            alive.add(b)
assert gc.isenabled()
print(len(alive))
"""


def test_garbage_cycles_made_in_many_pauses_are_collected_without_being_asked():
    """The pauses move what they made to the oldest generation uncounted by CPython, so
    those cycles are collected only because the pauses count them: at most about a floor's
    worth of the 300,000 nodes are alive at the end (all of them were, before)."""
    from snapcheck.traces.gc_pause import FULL_COLLECTION_FLOOR

    out = subprocess.run([sys.executable, "-c", PAUSES], capture_output=True, text=True, check=True, timeout=300)
    assert int(out.stdout.split()[-1]) <= FULL_COLLECTION_FLOOR + 2000, out.stdout
