"""The restore at another parallelism of a traced Flink run, in trace-format terms.

A rescaled run (``snapcheck flink run --rescale``) has two job generations in one JVM:
generation 0 at the first parallelism, stopped with a savepoint or failed for good, and
generation 1, the same job at another parallelism restored from that savepoint or the latest
retained checkpoint ``K``. Each subtask of generation 1 is a process that ``appears`` with a
``restore`` whose ``sources`` and ``channels`` say what it took (docs/trace-format.md,
"Rescaling and finished tasks"):

* **key groups** — a keyed subtask owns the key-group range Flink's ``KeyGroupRangeAssignment``
  gives it (logged in its trace header); it takes each of its key groups from the old subtask
  whose range held it (``StateAssignmentOperation`` redistributes keyed state by key-group range);
* **operator list state** — each traced wrapper keeps one list entry per *state partition*
  (``<creator process>.state``); Flink redistributes the entries round robin and the wrapper
  logs the ones it got back: those are the partitions it took, observed, not modelled;
* **source splits** — the reader logs the splits (and offsets) it was given; split ``k`` is the
  input log ``op.input[k]``, taken from the old subtask that held it;
* **channels** — the recovered in-flight records of old channel ``up[u]>down[i]`` go to new
  subtask ``j`` on its channel from new ``u'`` for every virtual channel ``[u, i, u', j]`` that
  the adapter computed with Flink's own ``SubtaskStateMapper`` of the exchange's partitioner
  (``run.json``'s ``rescale``); on keyed exchanges the new channel keeps the records of the
  receiver's key groups.

Rounds: Flink's checkpoint ids restart from ``K + 1`` in generation 1, so a round is the id plus
an offset per generation that keeps rounds increasing (``round_offsets``).
"""

from __future__ import annotations


def intersect(a: list[int], b: list[int]) -> list[int] | None:
    """The intersection of two inclusive ranges, or None.

    >>> intersect([0, 63], [43, 85]), intersect([0, 42], [43, 85])
    ([43, 63], None)
    """
    lo, hi = max(a[0], b[0]), min(a[1], b[1])
    return [lo, hi] if lo <= hi else None


def round_offsets(max_id: dict[int, int], base: dict[int, int]) -> dict[int, int]:
    """Per generation, the offset added to Flink's checkpoint ids to get rounds: generation ``g``
    (restored from checkpoint ``base[g]`` of generation ``g - 1``) starts right after the last
    round of generation ``g - 1``.

    >>> round_offsets({0: 12, 1: 9}, {1: 7})
    {0: 0, 1: 5}
    """
    out = {0: 0}
    for g in sorted(k for k in max_id if k > 0):
        prev = max_id.get(g - 1, 0) + out[g - 1]
        out[g] = prev - base.get(g, 0)
    return out


class VirtualChannels:
    """``run.json``'s ``rescale.exchanges``: the old channels each new subtask receives."""

    def __init__(self, rescale: dict | None):
        self.by_new: dict[tuple[str, int], list[tuple[str, int, int, int, str]]] = {}
        self.modes: dict[tuple[str, str], str] = {}
        for x in (rescale or {}).get("exchanges") or ():
            self.modes[(x["from"], x["to"])] = x["mode"]
            for u, i, u2, j in x["virtual"]:
                self.by_new.setdefault((x["to"], j), []).append((x["from"], u, i, u2, x["mode"]))

    def into(self, op: str, j: int) -> list[tuple[str, int, int, int, str]]:
        """(upstream op, old u, old i, new u', exchange mode) of the virtual channels into ``op[j]``."""
        return self.by_new.get((op, j), [])

    def new_upstream(self, up: str, u: int, down: str, i: int, j: int) -> int | None:
        """The new upstream subtask whose channel into ``down[j]`` carries old ``up[u]>down[i]``."""
        for frm, ou, oi, u2, _ in self.into(down, j):
            if (frm, ou, oi) == (up, u, i):
                return u2
        return None
