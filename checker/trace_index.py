"""``TraceIndex``: one pass over a trace's events, shared by the analyses of one check.

``check_trace`` builds one index per trace and hands it to every ``History`` it
builds (the full effective history and those of trace prefixes) and to the
property modules. They ask the index for a process's events, the events of one
type, or the events that carry an attribute, instead of scanning every event of
the trace again — in particular to decide whether a property applies at all
(does the trace have outputs with a ``phase``, a ``log_truncate``, a
``round_start``?).

Everything is in file order. The lists are shared: callers must not modify them.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict

from snapcheck.traces.model import Trace


class TraceIndex:
    """Events of one ``traces.Trace`` grouped by process, by type, and by attribute (the
    events with ``attrs`` are noted by type in the one pass).

    Attributes:
      trace        the trace
      channels     channel id -> ``Channel``
      by_proc      process id -> its events (every header process, header order)

    >>> from snapcheck.traces.golden import golden
    >>> ix = TraceIndex(golden("theory_a_zcycle"))
    >>> [e.type for e in ix.by_proc["P0"]], len(ix.of_type("send")), ix.has("restore")
    (['recv', 'checkpoint', 'send', 'checkpoint'], 2, False)
    >>> [e.line for e in ix.proc_prefix("P0", 5)]
    [3, 4]
    """

    __slots__ = ("trace", "channels", "by_proc", "_by_type", "_attr_cache", "_attributed", "_lines")

    def __init__(self, trace: Trace):
        self.trace = trace
        self.channels = trace.channel_map()
        by_proc: dict[str, list] = {p.id: [] for p in trace.header.processes}
        by_type: defaultdict[str, list] = defaultdict(list)
        attributed: defaultdict[str, list] = defaultdict(list)
        for e in trace.events:
            by_proc[e.proc].append(e)
            by_type[e.type].append(e)
            if e.attrs:  # few events: noted while the event is at hand, not in a scan of its type later
                attributed[e.type].append(e)
        self.by_proc = by_proc
        self._by_type = dict(by_type)
        self._attr_cache: dict[tuple[str, str], list] = {}
        self._attributed = dict(attributed)
        self._lines: dict[str, list[int] | None] = {}

    # -- by type and attribute ---------------------------------------------------------
    def has(self, etype: str) -> bool:
        """Does the trace have an event of this type?"""
        return etype in self._by_type

    def of_type(self, etype: str) -> list:
        """The events of one type."""
        return self._by_type.get(etype, [])

    def with_attr(self, etype: str, key: str) -> list:
        """The events of type ``etype`` whose ``attrs`` has the key ``key`` (any value)."""
        got = self._attr_cache.get((etype, key))
        if got is None:
            got = self._attr_cache[(etype, key)] = [e for e in self._attributed.get(etype, ()) if key in e.attrs]
        return got

    # -- prefixes -------------------------------------------------------------------------
    def proc_prefix(self, proc: str, limit: float) -> list:
        """The events of ``proc`` on lines before ``limit`` (a slice when the process's line
        numbers increase, as in every trace read from a file or recorded)."""
        evs = self.by_proc[proc]
        if proc not in self._lines:
            found = [e.line for e in evs]
            # None: a hand-built trace without line numbers (filter)
            self._lines[proc] = found if found == sorted(found) else None
        lines = self._lines[proc]
        if lines is None:
            return [e for e in evs if e.line < limit]
        return evs[: bisect_left(lines, limit)]
