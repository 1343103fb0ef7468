"""Analysis of one global checkpoint ``G`` (docs/theory.md, "Orphans, in-transit messages and
consistency" and "Complete snapshots: channel state and logs").

For ``G = (g_0..g_{n-1})`` (positions, ``V_i = L_i+1`` allowed), with the definitions of
Siachamis et al., "CheckMate: Evaluating Checkpointing Protocols for Streaming
Dataflows" (2024):

* orphan(m, G)     ⟺ r ≠ ⊥ ∧ r ≤ g_dst ∧ s > g_src          (CheckMate Def. 4)
* in_transit(m, G) ⟺ s ≤ g_src ∧ (r = ⊥ ∨ r > g_dst)         (CheckMate Def. 5)
* consistent(G)    ⟺ no orphan

An orphan may also be a message whose send the effective history no longer has: a
restore rolled the send back (the recovery that restores ``G`` itself, or an earlier one),
while ``G`` still reflects its processing at the receiver and the sender's state in ``G``
does not reflect a send of it again (same channel and sequence number). Judged from the
history's ``ghost_recvs``: a recovery that restores a round must not turn the round's
orphan into a pass by undoing its send.

Completeness of a snapshot ``(G, CS)`` (docs/theory.md, "Violation kinds of a snapshot"):
``CS(c)`` is the input part recorded with ``C_{dst,g_dst}`` followed by the output part
recorded with ``C_{src,g_src}`` (unaligned checkpoints, recovery order: input part, then
output part). Reported separately:

* ``dropped``: in transit, not in ``CS(c)``, not in a durable log;
* ``phantom``: recorded, but not in transit (would be processed twice, or is
  post-snapshot data), or not a data message of the history at all;
* ``order``: ``CS(c)`` of a FIFO channel not in send order;
* ``duplicate-recorded``: the same message recorded twice for this snapshot
  (including in both the input and the output part);
* ``wrong-channel``: recorded under a channel it was not sent on;
* unobservable channel state: a trace whose protocol params say
  ``channel_state: observed-at-restore`` (an engine whose in-flight state is
  internal, e.g. Flink's unaligned checkpoints traced from outside) shows a
  snapshot's channel state only through the ``record`` events of a restore of
  it. An in-transit message on a channel with no ``record`` for this snapshot is
  then not judged ``dropped``: it is listed in ``CutAnalysis.unobservable``
  (reported as a note). Channels that do have a record are judged in full.
* ``aligned-in-flight``: for aligned protocols (ABS Algorithm 1: Carbone et al.,
  "Lightweight Asynchronous Snapshots for Distributed Dataflows", 2015) the
  snapshot has no channel state, so any in-transit message or recorded state on a
  non-back-edge channel is a violation. Messages from ``external`` input logs are
  replayed by offset and are never in-flight state.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections import Counter
from itertools import islice
from math import inf
from operator import attrgetter, le

from snapcheck.checker.intervals import EXTERNAL
from snapcheck.checker.notation import fmt_cut
from snapcheck.checker.report import Violation

_NEVER = 2**62  # the receive interval of a message never processed (r = ⊥), as a number


def orphans(h, g: list[int]) -> list:
    """The orphan messages of the global checkpoint ``g`` (positions, ``V_i = L_i+1``
    allowed) in the effective history ``h``: ``r ≠ ⊥ ∧ r ≤ g_dst ∧ s > g_src``, the
    receive is reflected and the send is not ("CheckMate: Evaluating Checkpointing
    Protocols for Streaming Dataflows", 2024, Definition 4). Messages from an external
    input are never orphans: their send is always reflected.

    CheckMate's Figure 2(b): ``O2`` sends to ``O3`` after its checkpoint 1, and ``O3``
    processes the message before its checkpoint 1.

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> orphans(History(golden("checkmate_fig2b_orphan")), [1, 1, 1])
    [Msg(O2>O3:1: 1,2 -> 2,1)]
    """
    out = []
    for m in h.msgs:
        r = m.r
        if r is not None and m.src != EXTERNAL and r <= g[m.dst] and m.s > g[m.src]:
            out.append(m)
    return out


def in_transit(h, g: list[int]) -> list:
    """The messages in transit with respect to ``g``: ``s ≤ g_src ∧ (r = ⊥ ∨ r > g_dst)``,
    the send is reflected and the receive is not (CheckMate, Definition 5, "no
    dropping"). They must be in the recorded channel state or in a durable log. A
    message from an external input counts as sent.

    CheckMate's Figure 2(c): ``O2`` sends before its checkpoint 1 and ``O3`` processes
    after its checkpoint 1.

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> in_transit(History(golden("checkmate_fig2c_dropped")), [1, 1, 1])
    [Msg(O2>O3:1: 1,1 -> 2,2)]
    """
    out = []
    for m in h.msgs:
        if (m.src == EXTERNAL or m.s <= g[m.src]) and (m.r is None or m.r > g[m.dst]):
            out.append(m)
    return out


def is_consistent(h, g: list[int]) -> bool:
    """Is the global checkpoint ``g`` consistent, i.e. without orphan (``orphans``)?
    Equivalently, the cut is closed to the left under happened-before (Chandy and
    Lamport, "Distributed Snapshots: Determining Global States of Distributed Systems",
    1985; docs/theory.md, "Orphans, in-transit messages and consistency").

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> [is_consistent(History(golden(name)), [1, 1, 1])
    ...  for name in ("checkmate_fig2a_consistent", "checkmate_fig2b_orphan")]
    [True, False]
    """
    for m in h.msgs:
        r = m.r
        if r is not None and m.src != EXTERNAL and r <= g[m.dst] and m.s > g[m.src]:
            return False
    return True


def _tree(leaves: list[int], low: bool, pad: int) -> array:
    """The segment tree of ``leaves`` (a power of two of them) under min (``low``) or max:
    node 1 is the root, node ``k``'s children are ``2k`` and ``2k + 1``, the leaves are the
    last half (node 0, unused, is ``pad``). A level is made from the one below by comparing
    its consecutive pairs in a comprehension (faster than calling ``min`` per pair).

    >>> list(_tree([3, 1, 4, 1], True, 9)), list(_tree([3, 1, 4, 1], False, -1))
    ([9, 1, 1, 1, 3, 1, 4, 1], [-1, 4, 3, 4, 3, 1, 4, 1])
    """
    levels = [leaves]
    while len(levels[-1]) > 1:
        pairs = iter(levels[-1])  # zip(pairs, pairs): consecutive pairs
        if low:
            levels.append([a if a <= b else b for a, b in zip(pairs, pairs)])
        else:
            levels.append([a if a >= b else b for a, b in zip(pairs, pairs)])
    tree = array("q", [pad])
    for level in reversed(levels):
        tree.extend(level)
    return tree


class _Pair:
    """The messages from one process to another, sorted by send interval ``s``, with
    segment trees of the minimum and the maximum receive interval ``r`` over them."""

    __slots__ = ("src", "dst", "msgs", "s", "size", "min_r", "max_r")

    def __init__(self, src: int, dst: int, msgs: list):
        self.src, self.dst = src, dst
        s = [m.s for m in msgs]
        if not all(map(le, s, islice(s, 1, None))):  # a sender's messages come in its order, sorted already
            msgs = sorted(msgs, key=attrgetter("s"))
            s = [m.s for m in msgs]
        self.msgs = msgs
        self.s = s
        size = 1
        while size < len(self.msgs):
            size *= 2
        self.size = size
        rs = [_NEVER if m.r is None else m.r for m in self.msgs]
        self.min_r = _tree(rs + [_NEVER] * (size - len(rs)), True, _NEVER)
        self.max_r = _tree(rs + [-1] * (size - len(rs)), False, -1)

    def select(self, lo: int, hi: int, bound: int, above: bool, out: list) -> None:
        """Append the messages at positions [lo, hi) whose r > bound (``above``; r = ⊥
        included) or r <= bound, in position order: the range is split bottom-up into the
        O(log n) subtrees that cover it, and each is searched only where it can hold one."""
        tree, size, msgs = (self.max_r if above else self.min_r), self.size, self.msgs
        lo += size
        hi += size
        tops, right = [], []
        while lo < hi:
            if lo & 1:
                tops.append(lo)
                lo += 1
            if hi & 1:
                hi -= 1
                right.append(hi)
            lo >>= 1
            hi >>= 1
        tops += reversed(right)
        for top in tops:
            if tree[top] <= bound if above else tree[top] > bound:
                continue
            stack = [top]
            while stack:
                node = stack.pop()
                if tree[node] <= bound if above else tree[node] > bound:
                    continue
                if node >= size:
                    out.append(msgs[node - size])
                    continue
                stack.append(2 * node + 1)
                stack.append(2 * node)


class CutIndex:
    """``orphans`` and ``in_transit`` for many cuts of one history, each cut in time
    proportional to the number of process pairs times log(messages), plus its answer
    (a trace with thousands of rounds is analysed in linear, not quadratic, time).

    Per pair of processes the messages are sorted by ``s``: those with ``s > g_src`` are
    a suffix, the others a prefix. An orphan is in the suffix with ``r <= g_dst`` (a
    search in the minimum tree), an in-transit message in the prefix with ``r > g_dst``
    (the maximum tree). Messages from ``external`` inputs are sent before every cut and
    are never orphans: their number in transit is counted from their sorted ``r``
    (``external_in_transit``), and they are listed only on demand
    (``external_in_transit_msgs``, a linear scan). The results are the definitions'
    (``orphans``, and ``in_transit`` without the external messages), in ``h.msgs`` order.

    CheckMate's Figures 2(b) and 2(c) ("CheckMate: Evaluating Checkpointing Protocols
    for Streaming Dataflows", 2024), the cut of every process's checkpoint 1:

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> CutIndex.of(History(golden("checkmate_fig2b_orphan"))).orphans([1, 1, 1])
    [Msg(O2>O3:1: 1,2 -> 2,1)]
    >>> CutIndex.of(History(golden("checkmate_fig2c_dropped"))).in_transit([1, 1, 1])
    [Msg(O2>O3:1: 1,1 -> 2,2)]

    An input log sends two records; ``P`` processes the first and checkpoints. With
    respect to that checkpoint the second is in transit, and before it both are:

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder([{"id": "In", "role": "external"}, "P"], [("in", "In", "P")])
    >>> a, b = rec.send("In", "in", value=1), rec.send("In", "in", value=2)
    >>> rec.recv("P", a); _ = rec.checkpoint("P")
    >>> index = CutIndex.of(History(rec.trace()))
    >>> index.in_transit([1]), index.external_in_transit([1]), index.external_in_transit([0])
    ([], 1, 2)
    >>> [m.mid for m in index.external_in_transit_msgs([1])]
    ['in:2']
    """

    def __init__(self, h):
        groups: dict[tuple[int, int], list] = {}
        for m in h.msgs:
            groups.setdefault((m.src, m.dst), []).append(m)
        self.pairs = [_Pair(src, dst, ms) for (src, dst), ms in groups.items() if src != EXTERNAL]
        self.external_msgs = [ms for (src, _), ms in groups.items() if src == EXTERNAL]
        self.external = {
            dst: sorted(_NEVER if m.r is None else m.r for m in ms)
            for (src, dst), ms in groups.items()
            if src == EXTERNAL
        }
        self._first_send: dict[tuple[str, int], int] | None = None

    def first_send(self, ch: str, seq: int | None) -> int | None:
        """The earliest position (``s``) at which the history sends a message with channel
        ``ch`` and sequence number ``seq``, or None (also for ``seq`` None)."""
        if seq is None:
            return None
        if self._first_send is None:
            first: dict[tuple[str, int], int] = {}
            for pair in self.pairs:
                for m in pair.msgs:
                    key = (m.ch, m.seq)
                    if m.seq is not None and (key not in first or m.s < first[key]):
                        first[key] = m.s
            self._first_send = first
        return self._first_send.get((ch, seq))

    @staticmethod
    def of(h) -> CutIndex:
        """The index of history ``h``, built on first use."""
        index = getattr(h, "_cut_index", None)
        if index is None:
            index = h._cut_index = CutIndex(h)
        return index

    def orphans(self, g: list[int]) -> list:
        """The orphans of ``g`` (``orphans``), in ``h.msgs`` order."""
        out: list = []
        for pair in self.pairs:
            k = bisect_right(pair.s, g[pair.src])
            if k < len(pair.msgs):
                pair.select(k, len(pair.msgs), g[pair.dst], False, out)
        out.sort(key=lambda m: m.k)
        return out

    def in_transit(self, g: list[int]) -> list:
        """The in-transit messages of ``g`` (``in_transit``) that do not come from an
        external input, in ``h.msgs`` order."""
        out: list = []
        for pair in self.pairs:
            k = bisect_right(pair.s, g[pair.src])
            if k:
                pair.select(0, k, g[pair.dst], True, out)
        out.sort(key=lambda m: m.k)
        return out

    def external_in_transit(self, g: list[int], gone: frozenset = frozenset()) -> int:
        """How many messages from external inputs are in transit with respect to ``g``
        (not processed at ``g_dst``), leaving out those to the processes in ``gone``."""
        return sum(len(rs) - bisect_right(rs, g[dst]) for dst, rs in self.external.items() if dst not in gone)

    def external_in_transit_msgs(self, g: list[int], gone: frozenset = frozenset()) -> list:
        """The messages ``external_in_transit`` counts, grouped by destination."""
        return [m for ms in self.external_msgs for m in ms if (m.r is None or m.r > g[m.dst]) and m.dst not in gone]


class CutAnalysis:
    """The verdict on one global checkpoint ``g`` of the effective history ``h``: its
    consistency and the completeness of its snapshot ``(g, CS)`` (module docstring).

    ``dur`` (a ``Durability``) gives the recorded channel state and the durable logs;
    ``subject`` names the cut in the violations (``"round 3"``, ``"cut {P0: 1, P1: 1}"``).
    ``aligned``: the protocol's snapshots have no channel state except on back-edges
    (ABS, Carbone et al., "Lightweight Asynchronous Snapshots for Distributed Dataflows",
    2015, Algorithm 1), so anything in flight is ``aligned-in-flight``. ``at_line``:
    durability is judged at that line (a round later rolled back is judged before its
    rollback). Results: ``orphans``, ``internal_in_transit`` (the in-transit messages that
    do not come from an external input: those are replayed by offset, never channel
    state), ``external_in_transit`` (how many from external inputs are in transit),
    ``in_transit`` (all of them, listed on demand: on a long trace every later input
    record is in transit), ``consistency`` and ``channel_state`` (violations),
    ``unobservable``.

    Worked example D of docs/theory.md: with ``G = (1, 1)`` message ``m1`` is in transit;
    ``P1`` records nothing, ``[m1]`` or ``[m1, m2]`` as the channel state of ``P0→P1``.

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> from snapcheck.checker.durability import Durability
    >>> for name in ("theory_d_dropped", "theory_d_recorded", "theory_d_phantom"):
    ...     h = History(golden(name))
    ...     cut = CutAnalysis(h, Durability(h), [1, 1], "cut")
    ...     print(name, [m.mid for m in cut.in_transit], [v.kind for v in cut.channel_state])
    theory_d_dropped ['P0>P1:1'] ['dropped']
    theory_d_recorded ['P0>P1:1'] []
    theory_d_phantom ['P0>P1:1'] ['phantom']
    """

    def __init__(
        self,
        h,
        dur,
        g: list[int],
        subject: str,
        *,
        aligned: bool = False,
        channel_state: bool = True,
        at_line: float = inf,
        gone: frozenset = frozenset(),
        cap: int | None = None,
    ):
        """``gone``: processes that left the job before ``G``, handing their state to others
        (a rescale); messages to them are outside ``G`` (``checker.rescale`` judges them).
        ``cap``: orphans, dropped and aligned-in-flight messages beyond the first ``cap``
        violations of their property are counted by kind in ``uncounted`` (property ->
        ``Counter``), not given a witness: a report lists ``cap`` per result, and building
        every one made a trace with many messages in transit at many rounds quadratic."""
        self.h = h
        self.g = g
        self.subject = subject
        self.cut = h.line_to_dict(g)
        index = CutIndex.of(h)
        self.orphans = index.orphans(g)
        self._index = index
        self._gone = gone
        internal = index.in_transit(g)
        self.internal_in_transit = [m for m in internal if m.dst not in gone] if gone else internal
        self.external_in_transit = index.external_in_transit(g, gone)
        self.uncounted: dict[str, Counter] = {"consistency": Counter(), "channel-state": Counter()}
        self._cap = cap
        shown = self.orphans if cap is None else self.orphans[:cap]
        self.consistency: list[Violation] = [self._orphan(m) for m in shown]
        if len(shown) < len(self.orphans):
            self.uncounted["consistency"]["orphan"] = len(self.orphans) - len(shown)
        if h.ghost_recvs:
            self.consistency += self._undone_sends(index)
        self.channel_state: list[Violation] = []
        self.unobservable: list = []  # in transit on a channel whose recorded state is not shown
        if channel_state:
            self._channel_state(dur, aligned, at_line)

    @property
    def in_transit(self) -> list:
        both = self.internal_in_transit + self._index.external_in_transit_msgs(self.g, self._gone)
        return sorted(both, key=lambda m: m.k)

    # -- consistency --------------------------------------------------------------
    def _where(self, i: int) -> str:
        h, x = self.h, self.g[i]
        if x > h.L[i]:
            return f"{h.procs[i]}'s current state V"
        line = h.ckpt_line(i, x)
        at = f" (line {line})" if line else " (initial)"
        return f"checkpoint {h.ckpt_name(i, x)}{at}"

    def _orphan(self, m) -> Violation:
        h = self.h
        dst = h.procs[m.dst]
        text = (
            f"Let G = {fmt_cut(self.cut)} ({self.subject}). Then message {m.mid} on {m.ch} is processed by "
            f"{dst} at line {m.recv_line}, before {self._where(m.dst)}, but {h.sent_by(m)} at line "
            f"{m.send_line}, after {self._where(m.src)}: G reflects the receive and not the send — "
            f"an orphan, a contradiction with consistency."
        )
        return Violation(
            "orphan",
            "consistency",
            self.subject,
            text,
            [m.send_line, m.recv_line],
            {"messages": [m.mid], "cut": self.cut},
        )

    def _undone_sends(self, index: CutIndex) -> list[Violation]:
        """The orphans of ``G`` whose send a restore rolled back (module docstring)."""
        h, g, gone = self.h, self.g, self._gone
        out = []
        for e in h.ghost_recvs:
            i = h.index.get(e.proc)
            if i is None or i in gone:
                continue
            ck = h.ckpt_ev[i][g[i]] if g[i] <= h.L[i] else None
            if g[i] <= h.L[i] and (ck is None or e.line > ck.line):
                continue  # processed after the receiver's state in G (or G holds its initial state)
            assert e.mid is not None  # a receive names its message
            sent = h.sent_ever(h.resolve(e.mid))
            src = h.index.get(sent.proc) if sent is not None else None
            if sent is None or src is None or src in gone:
                continue  # an external input's, or a send the trace never had (bad input, refused earlier)
            again = index.first_send(sent.ch, sent.seq)
            if again is not None and again <= g[src]:
                continue  # sent again before the sender's state in G
            undone = h.first_rollback(sent)
            if undone is None:
                continue  # a send no restore undid (the receive is another incarnation's): not this rule's case
            text = (
                f"Let G = {fmt_cut(self.cut)} ({self.subject}). Then message {e.mid} on {e.ch} is processed by "
                f"{e.proc} at line {e.line}, before {self._where(i)}, but its send by {sent.proc} at line "
                f"{sent.line} was undone by the restore at line {undone}, and {sent.proc} has not sent it again "
                f"before {self._where(src)}: G reflects the receive and not the send — an orphan, a contradiction "
                f"with consistency."
            )
            lines = sorted({sent.line, e.line, undone})
            witness = {"messages": [e.mid], "cut": self.cut, "undone": undone}
            out.append(Violation("orphan", "consistency", self.subject, text, lines, witness))
        return out

    # -- channel state ------------------------------------------------------------
    def _channel_state(self, dur, aligned: bool, at_line: float) -> None:
        h, g = self.h, self.g
        out = self.channel_state
        transit = {m.mid for m in self.internal_in_transit}
        # Recorded state of this snapshot (the records of every stable component), examined
        # channel by channel in the order of their first record, input part before output
        # part (the recovery order), each in file order: a repeat is the later occurrence.
        recs = []
        for i, p in enumerate(h.procs):
            if g[i] <= h.L[i]:
                recs.extend(dur.records.get((p, h.ckpt_num[i][g[i]]), ()))
        recs.sort(key=lambda r: r.line)
        recorded: dict[str, list[tuple]] = {}
        for rec in recs:
            part = rec.part or "input"
            for mid in rec.mids:
                recorded.setdefault(rec.ch, []).append((mid, part, rec))
        seen: dict[str, tuple] = {}
        accepted: set[str] = set()
        shown = {rec.ch for rec in recs} if h.facts.observed_at_restore else None
        for ch, entries in recorded.items():
            chan = h.channels.get(ch)
            aligned_ch = aligned and chan is not None and not chan.back_edge
            inputs = [e for e in entries if e[1] == "input"]
            outputs = [e for e in entries if e[1] == "output"]
            seqs = []
            for mid, part, rec in inputs + outputs:
                o = h.resolve(mid)
                m = h.by_mid.get(o)
                mv = h.moved_of(mid) if h.moved else None
                if mv is not None:  # recovered on a new channel after a rescale
                    o, m = mv.mid, mv
                if m is not None and m.ch != ch and not aligned_ch:
                    # never the message's claim on its channel state: a record on its own channel is that, in
                    # whichever order the processes' records are merged
                    out.append(
                        Violation(
                            "wrong-channel",
                            "channel-state",
                            self.subject,
                            f"In {self.subject}, message {o} is recorded at line {rec.line} as channel state of {ch}, "
                            f"but it was sent on {m.ch} (line {m.send_line}); recovery would deliver it on the wrong "
                            f"channel.",
                            [rec.line, m.send_line],
                            {"messages": [o], "cut": self.cut},
                        )
                    )
                    continue
                if o in seen:
                    first = seen[o]
                    out.append(
                        Violation(
                            "duplicate-recorded",
                            "channel-state",
                            self.subject,
                            f"In {self.subject}, message {o} is recorded twice: in the {first[1]} part of {first[2].ch} "
                            f"at line {first[2].line} and in the {part} part of {ch} at line {rec.line}; "
                            f"recovery would process it twice.",
                            sorted({first[2].line, rec.line}),
                            {"messages": [o], "cut": self.cut},
                        )
                    )
                    continue
                seen[o] = (mid, part, rec)
                if aligned_ch:
                    out.append(
                        Violation(
                            "aligned-in-flight",
                            "channel-state",
                            self.subject,
                            f"The protocol {h.protocol.get('name')!r} is aligned (its snapshots have no channel state), "
                            f"yet {self.subject} records message {o} on {ch} at line {rec.line}.",
                            [rec.line],
                            {"messages": [o], "cut": self.cut},
                        )
                    )
                    accepted.add(o)  # reported once: not again as in transit
                    continue
                if m is None:
                    out.append(self._phantom_unknown(o, ch, rec))
                    continue
                if o not in transit and not (m.src == EXTERNAL and (m.r is None or m.r > g[m.dst])):
                    out.append(self._phantom(m, ch, rec))
                    continue
                accepted.add(o)
                seqs.append((m.seq, o, rec.line))
            if chan is not None and chan.fifo:
                for (s1, m1, l1), (s2, m2, l2) in zip(seqs, seqs[1:]):
                    if s2 is not None and s1 is not None and s2 < s1:
                        out.append(
                            Violation(
                                "order",
                                "channel-state",
                                self.subject,
                                f"Channel {ch} is FIFO, but the channel state of {self.subject} lists {m1} (seq {s1}, "
                                f"recorded at line {l1}) before {m2} (seq {s2}, line {l2}): recovery would deliver "
                                f"them out of send order.",
                                sorted({l1, l2}),
                                {"messages": [m1, m2], "cut": self.cut},
                            )
                        )
                        break
        for m in self.internal_in_transit:
            if m.mid in accepted:
                continue
            chan = h.channels.get(m.ch)
            if aligned and chan is not None and not chan.back_edge:
                if self._full(out):
                    self.uncounted["channel-state"]["aligned-in-flight"] += 1
                    continue
                out.append(
                    Violation(
                        "aligned-in-flight",
                        "channel-state",
                        self.subject,
                        f"The protocol {h.protocol.get('name')!r} is aligned (its snapshots have no channel state), "
                        f"yet message {m.mid} on {m.ch} is in transit w.r.t. {self.subject}: {h.sent_by(m)} "
                        f"at line {m.send_line}, before {self._where(m.src)}, and "
                        + (
                            f"processed by {h.procs[m.dst]} at line {m.recv_line}, after {self._where(m.dst)}."
                            if m.r is not None
                            else f"not processed by {h.procs[m.dst]} in the trace."
                        ),
                        [ln for ln in (m.send_line, m.recv_line) if ln],
                        {"messages": [m.mid], "cut": self.cut, "processed": m.r is not None},
                    )
                )
                continue
            if dur.durable(m.mid, at_line):
                continue
            if shown is not None and m.ch not in shown:
                self.unobservable.append(m)
                continue
            if self._full(out):
                self.uncounted["channel-state"]["dropped"] += 1
                continue
            out.append(self._dropped(m, dur))

    def _full(self, out: list) -> bool:
        """Whether ``out`` holds as many violations as a result lists (``cap``)."""
        return self._cap is not None and len(out) >= self._cap

    def _dropped(self, m, dur) -> Violation:
        h = self.h
        undone = (
            None
            if m.r is not None
            else next(
                (
                    e
                    for e in h.raw.get(h.procs[m.dst], ())
                    if e.type == "recv" and e.mid is not None and h.resolve(e.mid) == m.mid and id(e) in h.rolled_back
                ),
                None,
            )
        )
        recv = (
            f"processed by {h.procs[m.dst]} at line {m.recv_line}, after {self._where(m.dst)}"
            if m.r is not None
            else f"processed by {h.procs[m.dst]} at line {undone.line}, which the restore at line "
            f"{h.rolled_back[id(undone)]} undid, so never in the effective history"
            if undone is not None
            else f"never processed by {h.procs[m.dst]} in the trace"
        )
        trunc = dur.truncated_line(m.mid)
        log = f" (its log entry was truncated at line {trunc})" if trunc else ""
        text = (
            f"Let G = {fmt_cut(self.cut)} ({self.subject}). Message {m.mid} on {m.ch} is {h.sent_by(m)} "
            f"at line {m.send_line}, before {self._where(m.src)}, and {recv}: it is in transit. "
            f"It is neither in the recorded channel state of {m.ch} nor in a durable log{log}: "
            f"recovery from G loses it."
        )
        lines = [ln for ln in (m.send_line, m.recv_line, trunc) if ln]
        return Violation(
            "dropped",
            "channel-state",
            self.subject,
            text,
            sorted(set(lines)),
            {"messages": [m.mid], "cut": self.cut, "processed": m.r is not None},
        )

    def _phantom(self, m, ch, rec) -> Violation:
        h = self.h
        if m.s > self.g[m.src]:
            why = (
                f"it is {h.sent_by(m)} at line {m.send_line}, after {self._where(m.src)}, "
                f"so it is post-snapshot data that re-execution regenerates"
            )
        else:
            why = (
                f"it is processed by {h.procs[m.dst]} at line {m.recv_line}, before {self._where(m.dst)}, "
                f"so its effect is already in the snapshot"
            )
        text = (
            f"In {self.subject}, message {m.mid} is recorded as channel state of {ch} at line {rec.line}, "
            f"but it is not in transit: {why}. Recovery would process it twice."
        )
        lines = sorted({ln for ln in (rec.line, m.send_line, m.recv_line) if ln})
        return Violation("phantom", "channel-state", self.subject, text, lines, {"messages": [m.mid], "cut": self.cut})

    def _phantom_unknown(self, mid, ch, rec) -> Violation:
        h = self.h
        ev = h.sent_ever(mid)
        if mid in h.barrier_mids:
            why = "it is a barrier, not a data message"
        elif ev is not None and id(ev) in h.rolled_back:
            why = f"its send (line {ev.line}) was rolled back by the restore at line {h.rolled_back[id(ev)]}"
        else:
            why = "its send is not part of the analysed history"
        text = f"In {self.subject}, message {mid} is recorded as channel state of {ch} at line {rec.line}, but {why}."
        return Violation(
            "phantom", "channel-state", self.subject, text, [rec.line], {"messages": [mid], "cut": self.cut}
        )
