"""Trace validation in segments: a long trace of a snapshot protocol is cut where
every round so far is finished, and each segment is validated on its own,
started from the state the cut determines, all segments in parallel.

Why: a trace module's state holds per-round histories (``sentAt``, ``rcvdAt``,
recorded channel states, the refinement mapping's ``taken``/``sealed``/``cs``),
so on a whole trace every state and every refinement step costs O(rounds), and
the run O(events x rounds): quadratic in the trace length. A segment holds only
its own rounds, renumbered from 1, so the cost per event does not grow with
the trace.

A *clean cut* after spec event ``i`` is a point where (all read from the mapped
events, ``R`` the newest round started):

* every round up to ``R`` completed or aborted;
* no marker is in flight, and either ``R`` was aborted or the last marker
  processed on every modelled channel (data and control) is of round ``R``;
  or, for the specifications that model obsolete markers (``OBSOLETE_IN_FLIGHT``:
  ABS, Unaligned), every marker in flight is harmless (below);
* no later event refers to a round ``<= R`` (no late record, decline or
  marker of an old round), apart from the arrival and processing of the
  markers in flight at the cut.

Obsolete markers in flight. On a slow channel (one-record buffers, a
straggler, a cycle) barriers and cancellation markers of finished rounds can
queue behind records for a long time, so a cut that waited for none would
leave segments of dozens of rounds, and the cost per event grows with the
rounds a segment holds. A marker in flight on ``c`` is harmless when its
destination ``d`` takes it without an event, whatever it did with the round
``r``, and nothing recorded for ``r`` is read again: ``d`` handled ``r``
without a checkpoint (declined or gave it up: ``r`` was aborted), or ``r`` is
an aborted round ``d`` checkpointed and the marker a cancellation (``d`` gives
the round up, at most) or, in the Unaligned specification (``LATE_BARRIERS``),
a barrier that only ends the recording of that round's channel state -- in
mode ``aligned_timeout`` only one that the trace processes at the head of its
queue, since the next segment may take an obsolete barrier nowhere else while
the whole run may take this one anywhere (as a priority event) -- or ``r``
is an aborted round ``d`` never handled and the mode is not ``unaligned``
(``d`` may align it and learn of the abort; under ``unaligned`` a barrier
forces a snapshot, an event); the checks at
``end`` skip aborted rounds. Otherwise it must be the only marker on ``c``,
the barrier of ``d``'s newest checkpoint, with no record ahead of it and
none recorded for it on ``c`` since that checkpoint (nothing is or will be
recorded for its round on ``c``). The next segment starts with these markers
as markers of round 0 (``_shifted``; their deliveries are renumbered alike):
older than every round to come, obsolete for every process, as the original
ones are for the events to come. A cut whose state TLC does not reach still
sends the trace to a whole run.

There, a state of the trace specification that matched the prefix and in
which no process owes or aligns anything behaves, for the events to come, as
the initial state with rounds shifted by ``R`` -- every process handled ``R``,
every channel is closed at ``R`` -- with the data records in flight and the
channel counters the events determine. After an aborted round not every
process handled ``R`` (a task whose upstream declined ``R`` without
cancellation markers never heard of it) and some channels are closed at older
rounds; since every later marker, checkpoint and decline is of a round
``> R``, a process that handled an older round, none of whose inputs is closed
beyond what it handled, takes every later step exactly as one that handled
``R`` (the specifications compare those rounds only with ``>``, ``<`` against
newer ones) -- except a process without inputs, whose next round is its own
plus one. A task still aligning an aborted round may give it up between two
events (``LearnAbort``), which only allows more. The next segment starts from
that shifted initial state (``TInit``); the segment before it ends with a
synthetic ``cut`` event whose step requires TLC's state to be one of that
class (``TCut``: nothing owed, nothing aligned, every round resolved, in
flight exactly the cut's records), so a cut no behaviour reaches is never a
silent verdict: that trace is validated whole instead (``conform.combine``).
Per-round state of finished rounds (histories, recorded channel states,
``recorded``) is dropped: no later event changes what the refinement mapping
shows of them, and the segment's ``end`` event has already checked that every
non-empty recorded channel state of its rounds was reported.

Open cuts (``OPEN_CUTS``: the Unaligned specification in both modes, and ABS). When a
checkpoint timeout aborts rounds faster than a straggler lets their barriers through,
tasks keep snapshotting, declining and recording aborted rounds long after the abort,
and rounds overlap: there may be no point at which no later event refers to an old
round, and one segment holds every round of the run (a campaign trace of 26,359
events: one segment of 20,323 spec events and 143 rounds that TLC did not finish in
900 s; each step costs O(rounds x channels)). With several rounds in flight at once
(``--max-concurrent``) there may be no point at which every started round is finished
either. So the trace is also cut where every round older than ``L`` is finished, the
rounds ``L..R`` that later events still refer to are each aborted (at the cut or
later) and never completed, no process owes anything, and every marker in flight of a
round older than ``L`` is ``obsolete`` for its destination; the state there is the one
``TaskState`` follows from the events (every process's and channel's variables and the
per-round state of ``L..R``). In mode ``unaligned`` a task that owes nothing aligns
nothing, so the events determine that state. In the aligned forms a task may be
aligning a round, and once the round is aborted it may give it up between two events
(``LearnAbort``), which no event shows; ``TaskState`` follows the behaviour in which
it does so only when its own next event needs it, and that state can do whatever one
in which it gave up earlier can (it may still give the round up at its next event, and
the two differ otherwise only in variables no later step reads there, or the task
counts as owing something: ``UnalignedTasks``), so the next segment accepts what the
whole run accepts from that point. The next segment starts from exactly that state
with its rounds after ``L - 1`` (``StartWith``: rounds ``L..R`` are its first ones,
aborted or in flight as at the cut; everything older is round 0, as at the other
cuts), and the segment before ends with a ``cut`` whose step requires TLC's state to
be that state, up to the rounds older than ``L`` (``TCutOpen``), so a wrong prediction
sends the trace to a whole run, never to a verdict; its ``end`` leaves ``L..R`` to the
segments after it (``Open``), where they are aborted. The rounds older than ``L`` are
dropped for the same reasons as at the other cuts (no later event refers to them;
their markers in flight are obsolete), and those of ``L..R`` are aborted in the end,
so ``end`` skips them either way.

Verdicts combine so that a segmented run finds exactly what a whole run finds
(``combine``): the first segment whose real events do not all match gives the
REJECT and its location; a failed ``cut`` sends the trace to a whole run; a failed ``end`` of any
segment is the whole trace's REJECT at ``end``, unless a real event of a later
segment is rejected first.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from bisect import bisect_right
from collections import defaultdict, deque
from dataclasses import dataclass, replace
from itertools import accumulate

from snapcheck.checker.tla.trace_events import Function, Prepared
from snapcheck.checker.tla.tracelog import start_state

ROUND_OPS = ("ckpt", "decline", "start", "complete", "abort", "record")
# Specifications whose segments may start with obsolete markers in flight (``clean_cuts``).
OBSOLETE_IN_FLIGHT = frozenset({"ABSTrace", "UnalignedTrace"})
# ... and among them, with a late barrier of an aborted round its destination checkpointed.
LATE_BARRIERS = frozenset({"UnalignedTrace"})
# Specifications (and modes) whose segments may also be cut with aborted rounds still open.
OPEN_CUTS = frozenset({("UnalignedTrace", "unaligned"), ("UnalignedTrace", "aligned_timeout"), ("ABSTrace", None)})


def _copy(v):
    return list(v) if isinstance(v, list) else v


def _round_of(e: dict) -> int | None:
    """The round an event refers to (markers, checkpoints, records, the coordinator's
    round events), or None."""
    if e["op"] in ROUND_OPS or (e["op"] in ("send", "recv", "arrive") and e["k"] != "d"):
        return e["n"]
    return None


def _delivers_marker(e: dict) -> bool:
    return e["op"] in ("recv", "arrive") and e["k"] != "d"


@dataclass
class Segment:
    prepared: Prepared  # the segment's events (renumbered), start and cut states, bounds
    offset: int  # index of its first event among the whole trace's spec events
    real: int  # its events that are trace events (not the synthetic cut and end)


class InFlight:
    """What the events leave in flight on each channel: ``wire`` (sent, not arrived;
    without modelled arrival everything not processed yet) and ``ibuf`` (arrived, not
    processed), data records as sequence numbers, markers as ``(kind, round)``.

    >>> q = InFlight(["c"], arrival=False)
    >>> [q.step({"op": op, "c": "c", "k": k, "n": n, "x": 0})
    ...  for op, k, n in [("send", "d", 1), ("send", "b", 1), ("recv", "b", 1), ("recv", "d", 1)]]
    [False, False, False, True]
    """

    def __init__(self, chans, arrival: bool):
        self.arrival = arrival
        self.wire: dict[str, deque] = {c: deque() for c in chans}
        self.ibuf: dict[str, deque] = {c: deque() for c in chans}

    def step(self, e: dict) -> bool:
        """Apply a ``send``, ``arrive`` or ``recv`` event (others change nothing); whether
        an arrival or a processing took the item at the head of its queue (a barrier
        processed behind other items is a priority event)."""
        op, c, k, n = e["op"], e["c"], e["k"], e["n"]
        item = n if k == "d" else (k, n)
        if op == "send":
            wire = self.wire[c]  # a barrier sent as a priority event overtakes the last x records (arrival modelled)
            wire.insert(len(wire) - (e["x"] if self.arrival and k == "b" else 0), item)
        elif op == "arrive" and self.arrival and self.wire[c] and self.wire[c][0] == item:
            self.ibuf[c].append(self.wire[c].popleft())
            return True
        elif op == "recv":
            q = self.ibuf[c] if self.arrival else self.wire[c]
            if q and q[0] == item:
                q.popleft()
                return True
            if k != "d" and item in q:
                q.remove(item)
        return False

    def queue(self, c: str) -> list:
        """What is in flight on ``c``, the next to be processed first."""
        return [*self.ibuf[c], *self.wire[c]]


class TaskState(ABC):
    """The state of a trace specification's processes and channels that the events
    determine, followed event by event: what a cut with rounds still open needs
    (``clean_cuts``, *open cuts*). Common to the specifications: every process's
    ``rec`` and ``took``, every channel's ``closed``, what is in flight, the channel
    counters and the per-round ``sentAt``/``rcvdAt``; each specification's own
    variables in ``UnalignedTasks`` and ``AbsTasks``. Rounds are absolute; after a
    cut at ``base`` (``collapse``) every round up to ``base`` is ``base`` (0 in the
    next segment's numbering), as the segment starts. A trace that is not a
    behaviour may make this state wrong; the ``cut`` event then fails and the trace
    is validated whole.

    A task aligning a round (``aligning``: a marker of it processed on an input, the
    round not handled yet) blocks that input until it snapshots, declines or gives
    the round up; it gives it up on a cancellation marker or a barrier of a newer
    round -- events -- or, once the round is aborted, between two events
    (``LearnAbort``), which no event shows. The state followed is the one in which it
    learns of the abort only when its own next event needs it: a record or marker
    taken from an input it blocks, a decline of a round it does not align. The trace
    specifications let a task learn right before any of its own events, so that
    behaviour matches whenever one does, and its state can do whatever one in which
    the task learnt earlier can (it can still learn at the task's next event); the
    subclasses say where else the two differ."""

    arrival = True  # the specification models arrival (wire and input buffer)

    def __init__(self, topology: tuple):
        family, procs, coords, data_chans, ctrl_chans, ends, back = topology
        self.data = frozenset(data_chans)
        self.chans = sorted(set(data_chans) | set(ctrl_chans))
        self.src = {c: s for c, s, _ in ends}
        self.dst = {c: d for c, _, d in ends}
        self.procs = [*procs, *coords]
        self.ins = {p: [c for c in self.chans if self.dst[c] == p] for p in self.procs}
        self.flight = InFlight(self.chans, arrival=self.arrival)
        self.nsent = dict.fromkeys(data_chans, 0)
        self.nrcvd = dict.fromkeys(data_chans, 0)
        self.rec = dict.fromkeys(self.procs, 0)
        self.took: dict[str, list[int]] = {p: [] for p in self.procs}  # ascending
        self.closed = dict.fromkeys(self.chans, 0)
        self.sent_at: dict[int, dict[str, int]] = defaultdict(dict)
        self.rcvd_at: dict[int, dict[str, int]] = defaultdict(dict)
        self.aborted: set[int] = set()
        self.base = 0

    def step(self, e: dict) -> None:
        op, p, c, k = e["op"], e["p"], e["c"], e["k"]
        n = max(e["n"], self.base) if _round_of(e) is not None else e["n"]
        if op in ("send", "arrive", "recv"):
            if op == "send" and k == "d":
                self.nsent[c] = n
            elif op == "recv" and k == "d":
                self.nrcvd[c] += 1
            if op == "recv" and self._blocked(c):  # its destination learns of the abort of the round it aligns now
                self.rec[self.dst[c]] = self.aligning(self.dst[c])
            self._message(op, c, k, n, e["x"])
            self.flight.step({"op": op, "c": c, "k": k, "n": n, "x": e["x"]})
        elif op == "ckpt":
            self._checkpoint(p, n)
            self.rec[p] = n
            if not self.took[p] or self.took[p][-1] < n:
                self.took[p].append(n)
            for x in self.data:
                if self.dst[x] == p:
                    self.rcvd_at[n][x] = self.nrcvd[x]
                if self.src[x] == p:
                    self.sent_at[n][x] = self.nsent[x]
        elif op == "decline":
            self._decline(p, n)
        elif op == "start":
            self.rec[p] = n
        elif op == "abort":
            self.aborted.add(n)

    def aligning(self, p: str) -> int:
        """The round p is aligning (0: none); every input closed beyond what p handled
        is closed at that round."""
        return max((r for c in self.ins[p] if (r := self.closed[c]) > self.rec[p]), default=0)

    def _blocked(self, c: str) -> bool:
        """c's destination may not take anything from it: it aligns the round of c's
        last marker."""
        return self.closed[c] > self.rec[self.dst[c]]

    @abstractmethod
    def _message(self, op: str, c: str, k: str, n: int, x: int) -> None:
        """What a ``send``, ``arrive`` or ``recv`` changes beyond the counters, before
        ``flight`` takes it."""

    @abstractmethod
    def _checkpoint(self, p: str, n: int) -> None:
        """What p's checkpoint of round n changes beyond ``rec``, ``took``, ``sentAt``
        and ``rcvdAt`` (set right after)."""

    @abstractmethod
    def _decline(self, p: str, n: int) -> None:
        """What p's decline of round n changes."""

    def busy(self, p: str) -> bool:
        """p holds something that no event of its own shows (a priority barrier it has
        not snapshotted yet), or the events do not fix its state."""
        return False

    def idle(self, nxt_marker_round) -> bool:
        """No process owes anything: none is ``busy``, and the next marker each process
        sends (``nxt_marker_round(p)``, None: none) is of a round newer than it
        handled (it owes no marker now)."""
        for p in self.procs:
            r = nxt_marker_round(p)
            if self.busy(p) or (r is not None and r <= self.rec[p]):
                return False
        return True

    def shifted(self) -> dict[str, dict]:
        """The variables per process or channel whose values are rounds (``rec``,
        ``closed``, ...), by their name in the specification."""
        return {"rec": self.rec, "closed": self.closed}

    def flags(self) -> dict[str, dict]:
        """The variables per process that are not rounds."""
        return {}

    def per_round(self) -> dict[str, tuple[dict, object]]:
        """The per-round variables: name -> (round -> data channel -> value, the
        value of a round or channel not set)."""
        return {"sentAt": (self.sent_at, 0), "rcvdAt": (self.rcvd_at, 0)}

    def snapshot(self, low: int, upto: int, aborted: set[int]) -> dict:
        """What a cut determines beyond what is in flight, rounds absolute: per process
        and channel (``shifted``, ``flags``, ``took``), and per round from ``low`` to
        ``upto`` (the rounds still open; ``aborted``: those of them aborted so far)."""
        live = range(low, upto + 1)

        def open_rounds(table: dict, zero) -> dict:  # copies: the lists grow on
            return {r: {c: _copy(table[r].get(c, zero)) for c in sorted(self.data)} for r in live}

        return {
            "shifted": {name: dict(v) for name, v in self.shifted().items()},
            "flags": {name: dict(v) for name, v in self.flags().items()},
            "took": {p: {r for r in self.took[p] if r >= low} for p in self.procs},
            "rounds": {name: open_rounds(table, zero) for name, (table, zero) in self.per_round().items()},
            "live": (low, upto),
            "aborted": {r for r in live if r in aborted},
        }

    def collapse(self, base: int, whole: bool) -> None:
        """A segment starts after this cut with its rounds after ``base``: every older
        round is ``base``; ``whole``: a cut where every round is finished (the segment
        starts from the shifted initial state)."""
        self.base = base
        for values in self.shifted().values():
            for key, v in values.items():
                values[key] = max(v, base)
        for p in self.procs:
            self.took[p] = [r for r in self.took[p] if r > base]
        for c in self.chans:
            for q in (self.flight.wire[c], self.flight.ibuf[c]):
                for j, m in enumerate(q):
                    if not isinstance(m, int) and m[1] < base:
                        q[j] = (m[0], base)
        for table, _ in self.per_round().values():
            for r in [r for r in table if r <= base]:
                del table[r]


class UnalignedTasks(TaskState):
    """``TaskState`` of the Unaligned specification: besides the common variables unal,
    mustSnap, arrivedB and the per-round ``inpart``/``outpart``; every variable but
    ``pending`` (the markers a task still owes) and ``emitting`` follows from the
    events. In mode ``unaligned`` a task that owes nothing aligns nothing. In mode
    ``aligned_timeout`` a barrier at the head of its queue is handled aligned
    (``HeadIsAligned``), one behind other messages as the priority trigger of an
    unaligned snapshot, and a task aligning a round learns of its abort as in
    ``AbsTasks``: only when its own next event needs it. One difference between that
    behaviour and one in which the task learnt earlier shows later: a cancellation
    marker of the round it snapshotted unaligned and still records, taken while it
    aligns a newer aborted round, makes it give that round up (unal becomes FALSE)
    only if it did not learn of the abort before; a task is ``unsure`` from then until
    its next checkpoint (as one with no data input that aligns a barrier it might
    have taken as a priority trigger), and no open cut is made meanwhile."""

    def __init__(self, topology: tuple):
        super().__init__(topology)
        self.aligned_mode = topology[0].mode == "aligned_timeout"
        self.unal = dict.fromkeys(self.procs, False)
        self.must = dict.fromkeys(self.procs, 0)
        self.arrived = dict.fromkeys(self.chans, 0)
        self.inpart: dict[int, dict[str, list[int]]] = defaultdict(dict)
        self.outpart: dict[int, dict[str, list[int]]] = defaultdict(dict)
        self.unsure: set[str] = set()

    def _checkpoint(self, p: str, n: int) -> None:
        aligned = not self.must[p] and all(self.closed[x] == n for x in self.ins[p])
        self.must[p], self.unal[p] = 0, not aligned
        self.unsure.discard(p)
        for x in self.ins[p]:
            if x in self.data and not aligned and self.closed[x] < n:
                self.inpart[n][x] = self._pre_barrier(x, n)

    def _decline(self, p: str, n: int) -> None:
        """It declines round n now (after a priority barrier, aligned, or timed out), or
        it gave n or a newer round up before (learnt of its abort)."""
        if self.must[p] or self.rec[p] < n:
            self.rec[p], self.must[p] = max(n, self.aligning(p)), 0
            for x in self.ins[p]:
                if x in self.data and self.rec[p] == n:
                    self.inpart[n][x] = []

    def _message(self, op: str, c: str, k: str, n: int, x: int) -> None:
        wire, ibuf = self.flight.wire[c], self.flight.ibuf[c]
        d = self.dst[c]
        cur = self.aligning(d)
        if op == "send" and k == "b" and c in self.data:
            self.outpart[n][c] = [m for m in list(wire)[len(wire) - x :] if isinstance(m, int)]
        elif op == "arrive" and wire:
            m = wire[0]
            if not isinstance(m, int):
                self.arrived[c] = m[1]
            else:
                took = self.took[d]
                for r in took[bisect_right(took, self.arrived[c]) :]:
                    self.inpart[r].setdefault(c, []).append(m)
        elif op == "recv" and k == "b":
            pos = list(ibuf).index(("b", n)) if ("b", n) in ibuf else len(ibuf)
            if n <= self.rec[d] or n < cur:
                self.closed[c] = max(self.closed[c], n) if n <= self.rec[d] else self.closed[c]
                return
            self.closed[c] = n
            if cur and cur < n:  # the newer round subsumes the one d aligned
                self.rec[d] = cur
            if not self.aligned_mode or pos:  # the priority barrier that triggers d's snapshot of round n
                self.must[d] = n
                if c in self.data:
                    self.inpart[n][c] = [m for m in list(ibuf)[:pos] if isinstance(m, int)]
            elif not any(x in self.data for x in self.ins[d]) and any(self.closed[y] < n for y in self.ins[d]):
                self.unsure.add(d)  # it may also have taken it as a priority trigger
        elif op == "recv" and k == "cancel":
            if n <= self.rec[d] or n < cur:
                took = self.took[d]
                recording = (
                    n == self.rec[d]
                    and bool(took)
                    and took[-1] == n
                    and self.unal[d]
                    and any(self.closed[y] < n for y in self.ins[d])
                )
                if n <= self.rec[d]:
                    self.closed[c] = n
                if recording:
                    self.unal[d] = False
                    if cur in self.aborted:
                        self.unsure.add(d)
            else:
                self.closed[c] = self.rec[d] = n

    def _pre_barrier(self, c: str, r: int) -> list[int]:
        """The data queued in ibuf[c] ahead of the first barrier of round r or later."""
        out = []
        for m in self.flight.ibuf[c]:
            if not isinstance(m, int):
                if m[0] == "b" and m[1] >= r:
                    break
                continue
            out.append(m)
        return out

    def busy(self, p: str) -> bool:
        return bool(self.must[p]) or p in self.unsure

    def shifted(self) -> dict[str, dict]:
        return {**super().shifted(), "arrivedB": self.arrived}

    def flags(self) -> dict[str, dict]:
        return {"unal": self.unal}

    def per_round(self) -> dict[str, tuple[dict, object]]:
        return {**super().per_round(), "inpart": (self.inpart, []), "outpart": (self.outpart, [])}

    def collapse(self, base: int, whole: bool) -> None:
        super().collapse(base, whole)
        for p in self.procs:
            self.must[p] = 0
            if whole:
                self.unal[p] = False
                self.unsure.discard(p)


class AbsTasks(TaskState):
    """``TaskState`` of the ABS specification: besides the common variables ``quit``
    and the back-edge logs ``crec``. A task that learns of an abort later than it
    might have differs from one that learnt earlier, beyond what it can still catch
    up with at its next event, only in ``closed`` of a regular input (a marker of a
    round between the two it handled: kept, or taken as obsolete) and in ``quit`` (a
    cancellation of the round it snapshotted last, which it gives up only if it did
    not learn before): ABS reads ``closed`` of a regular input only above what its
    destination handled, or below a round it snapshotted, which every regular input
    had delivered then, and ``quit`` only while that round is its newest one handled."""

    arrival = False

    def __init__(self, topology: tuple):
        super().__init__(topology)
        self.back = frozenset(topology[6])
        self.quit = dict.fromkeys(self.procs, 0)
        self.crec: dict[int, dict[str, list[int]]] = defaultdict(dict)

    def _blocked(self, c: str) -> bool:
        """A back-edge only while its last marker is of the round its destination aligns."""
        return super()._blocked(c) and (c not in self.back or self.closed[c] == self.aligning(self.dst[c]))

    def _checkpoint(self, p: str, n: int) -> None:
        """Nothing beyond the common variables: an ABS checkpoint is aligned, so it
        records no input part."""

    def _message(self, op: str, c: str, k: str, n: int, x: int) -> None:
        if op != "recv":
            return
        d = self.dst[c]
        if k == "d":
            if c in self.back:
                for r in self.took[d]:
                    if self.closed[c] < r:
                        self.crec[r].setdefault(c, []).append(n)
            return
        cur = self.aligning(d)
        if n <= self.rec[d] or n < cur:  # obsolete
            unfinished = (
                n == self.rec[d]
                and n in self.took[d]
                and self.quit[d] != n
                and any(self.closed[y] < n for y in self.ins[d])
            )
            if k == "cancel" and unfinished:
                self.quit[d] = n
            if c in self.back or n <= self.rec[d]:
                self.closed[c] = n
        else:
            self.closed[c] = n
            if k == "cancel":
                self.rec[d] = n
            elif cur and cur < n:  # the newer round subsumes the one d aligned
                self.rec[d] = cur

    def _decline(self, p: str, n: int) -> None:
        """Aligned on round n, p declines it; otherwise it gave n or a newer round up
        (learnt of its abort) before: then a cancellation marker implies the decline."""
        if self.rec[p] < n:
            self.rec[p] = max(n, self.aligning(p))

    def shifted(self) -> dict[str, dict]:
        return {**super().shifted(), "quit": self.quit}

    def per_round(self) -> dict[str, tuple[dict, object]]:
        return {**super().per_round(), "crec": (self.crec, [])}


def late_barriers_at_head(events: list[dict], chans, arrival: bool) -> set[tuple[str, int]]:
    """``(channel, round)`` of every barrier the events process at the head of its
    queue, nothing ahead of it (not as a priority event).

    >>> ev = [{"op": op, "c": "c", "k": k, "n": n, "x": 0}
    ...       for op, k, n in [("send", "d", 1), ("send", "b", 1), ("send", "b", 2), ("recv", "b", 2),
    ...                        ("recv", "d", 1), ("recv", "b", 1)]]
    >>> sorted(late_barriers_at_head(ev, ["c"], arrival=False))
    [('c', 1)]
    """
    q = InFlight(chans, arrival)
    return {(e["c"], e["n"]) for e in events if q.step(e) and e["op"] == "recv" and e["k"] == "b"}


def clean_cuts(p: Prepared):
    """The clean cuts of a mapped trace, in order: ``(i, R, state)`` -- after the first
    ``i`` spec events, with every round up to ``R`` finished (at an open cut, every
    round older than ``L``, and ``R`` the newest round started); ``state()``, called for
    the cuts chosen only and before the next cut is asked for, returns what is in
    flight and the counters there (``inflight``, ``counters``: the keyword arguments of
    ``tracelog.start_state``: data records as sequence numbers, markers as ``(kind,
    round)``, rounds absolute), the ``base`` after which the next segment's rounds
    start (``R``; at an open cut ``L - 1``) and, at an open cut, ``tasks``
    (``TaskState.snapshot``)."""
    family, procs, coords, data_chans, ctrl_chans, ends, back = p.topology
    chans = sorted(set(data_chans) | set(ctrl_chans))
    dst = {c: d for c, _, d in ends}
    events = p.events[:-1] if p.events and p.events[-1]["op"] == "end" else p.events
    arrival = family.models_arrival
    obsolete_ok = family.module in OBSOLETE_IN_FLIGHT
    flight = InFlight(chans, arrival)
    closed = dict.fromkeys(chans, 0)
    sent = dict.fromkeys(data_chans, 0)
    rcvd = dict.fromkeys(data_chans, 0)
    handled: dict[str, int] = defaultdict(int)  # the newest round a process checkpointed or declined
    took: dict[str, set[int]] = defaultdict(set)
    newest: dict[str, int] = {}  # the round of a process's newest checkpoint
    fresh = dict.fromkeys(chans, 0)  # records on c its destination may have recorded since its newest checkpoint
    started = resolved_upto = markers = 0
    at_started = len(chans)  # channels whose last processed marker is of round `started`
    resolved: set[int] = set()
    completed: set[int] = set()
    at_head = late_barriers_at_head(events, chans, arrival) if family.module in LATE_BARRIERS else set()
    follower = {"UnalignedTrace": UnalignedTasks, "ABSTrace": AbsTasks}.get(family.module)
    tasks = follower(p.topology) if follower and (family.module, family.mode) in OPEN_CUTS else None
    sends: dict[str, deque] = defaultdict(deque)  # per process, its marker sends to come: (index, round)
    if tasks is not None:
        for j, e in enumerate(events):
            if e["op"] == "send" and e["k"] != "d":
                sends[e["p"]].append((j, e["n"]))
    aborted: set[int] = set()
    ends_aborted = {e["n"] for e in events if e["op"] == "abort"} - {e["n"] for e in events if e["op"] == "complete"}
    top = max((r for e in events if (r := _round_of(e)) is not None), default=0)
    kept = list(
        accumulate((r not in ends_aborted for r in range(top + 1)), initial=0)
    )  # kept[r]: rounds < r not aborted in the end
    later = [0] * len(events) + [float("inf")]  # the smallest round referred to from event i on
    low = float("inf")
    for i in range(len(events) - 1, -1, -1):
        r = _round_of(events[i])
        if r is not None and r < low and not (obsolete_ok and _delivers_marker(events[i])):
            low = r
        later[i] = low

    def in_flight() -> dict:
        wire, ibuf = flight.wire, flight.ibuf
        inflight = {c: (tuple(wire[c]), tuple(ibuf[c])) if arrival else tuple(wire[c]) for c in chans}
        return {"inflight": inflight, "counters": {c: (sent[c], rcvd[c]) for c in data_chans}}

    def state() -> dict:
        if tasks is not None:
            tasks.collapse(started, whole=True)
        return {**in_flight(), "base": started}

    def open_state(low: int):
        def chosen() -> dict:
            assert tasks is not None
            out = {**in_flight(), "base": low - 1, "tasks": tasks.snapshot(low, started, aborted)}
            tasks.collapse(low - 1, whole=False)
            return out

        return chosen

    def next_marker(i: int):
        def of(proc: str) -> int | None:
            q = sends[proc]
            while q and q[0][0] < i:
                q.popleft()
            return q[0][1] if q else None

        return of

    def open_cut(i: int, low: int) -> bool:
        """After event ``i``, with every round older than ``low`` finished: a cut that
        leaves rounds ``low`` to ``started`` open (later events refer to them; each is
        aborted, now or later, and never completed), with every process idle and every
        marker in flight of an older round obsolete for its destination."""
        assert tasks is not None
        if resolved_upto < low - 1 or kept[started + 1] != kept[low]:
            return False
        for c in chans:
            marks = [m for m in flight.queue(c) if not isinstance(m, int)]
            if not all(obsolete(kind, r, c) for kind, r in marks if r < low):
                return False
        return tasks.idle(next_marker(i + 1))

    def harmless(c: str) -> bool:
        """The markers in flight on c (all of finished rounds) change nothing the events
        to come can observe: each is ``obsolete`` for its destination (all of aborted
        rounds, whose recorded channel states no check reads), or there is one, the
        barrier of the destination's newest checkpoint, with no record ahead of it and
        none recorded for it on c yet (nothing more is recorded for its round). With
        none in flight, c's last marker is of the newest round, unless that was aborted."""
        queue = flight.queue(c)
        marks = [m for m in queue if not isinstance(m, int)]
        d = dst[c]
        if not marks:
            return closed[c] == started or started not in completed
        if all(obsolete(k, r, c) for k, r in marks):
            return True
        return marks == [("b", newest.get(d))] == queue[:1] and not fresh[c]

    def obsolete(kind: str, r: int, c: str) -> bool:
        """A marker of round r on c that its destination d takes without an event and
        whatever it did with r: a round it handled without a checkpoint, a cancellation
        of an aborted round it checkpointed (it gives the round up, at most) or, under
        ``LATE_BARRIERS``, a barrier of such a round (``late_ok``), or a round it never
        handled that it can take ``silent``-ly."""
        d = dst[c]
        if r in took[d]:
            return r not in completed and (kind == "cancel" or late_ok(c, r))
        return r <= handled[d] or silent(r)

    def late_ok(c: str, r: int) -> bool:
        """A barrier of an aborted round its destination checkpointed (Unaligned) only
        ends the recording of an aborted round's channel state, which no check reads;
        the next segment takes it as obsolete, which it may be only at the head of its
        queue in mode aligned_timeout (in mode unaligned every barrier is taken there)."""
        return family.module in LATE_BARRIERS and (family.mode == "unaligned" or (c, r) in at_head)

    def silent(r: int) -> bool:
        """A task that never handled round r can take a marker of it without an event:
        r was aborted, and the task may align it and learn of the abort (``LearnAbort``)
        instead of snapshotting it -- not in mode unaligned, where a barrier forces the
        snapshot."""
        return r not in completed and family.mode != "unaligned"

    for i, e in enumerate(events):
        op, c, k, n = e["op"], e["c"], e["k"], e["n"]
        if tasks is not None:
            tasks.step(e)
        moved = flight.step(e)
        if op == "send":
            if k == "d":
                sent[c] = n
            else:
                markers += 1
        elif op == "arrive":
            fresh[c] += moved and k == "d"
        elif op == "recv":
            if k == "d":
                rcvd[c] += 1
                fresh[c] += not arrival
            else:
                markers -= 1
                at_started += (n == started) - (closed[c] == started)
                closed[c] = n
        elif op in ("ckpt", "decline"):
            handled[e["p"]] = max(handled[e["p"]], n)
            if op == "ckpt":
                took[e["p"]].add(n)
                newest[e["p"]] = n
                for x in chans:
                    if dst[x] == e["p"]:
                        fresh[x] = 0
        elif op == "start":
            if n > started:
                started = n
                at_started = sum(closed[x] == started for x in chans)
        elif op in ("complete", "abort"):
            resolved.add(n)
            (completed if op == "complete" else aborted).add(n)
            while resolved_upto + 1 in resolved:
                resolved_upto += 1
        finished = resolved_upto >= started and later[i + 1] > started
        if finished and not markers and (at_started == len(chans) or started not in completed):
            yield i + 1, started, state
        elif finished and obsolete_ok and all(harmless(x) for x in chans):
            yield i + 1, started, state
        elif tasks is not None:
            low = int(later[i + 1]) if later[i + 1] <= started else started + 1  # the oldest round left open
            if open_cut(i, low):
                yield i + 1, started, open_state(low)


def split(p: Prepared, min_events: int) -> list[Segment]:
    """Cut a mapped trace into segments of at least ``min_events`` spec events at
    clean cuts (one segment if there is none)."""
    events, lines, descr = p.events, p.lines, p.descr
    body = len(events) - 1 if events and events[-1]["op"] == "end" else len(events)
    chosen, last = [], 0
    for i, r, state in clean_cuts(p):
        if i - last >= min_events and body - i >= min_events // 2:
            chosen.append((i, r, state()))
            last = i
    if not chosen:
        return [Segment(p, 0, body)]
    out = []
    arrival = p.family.models_arrival
    bounds = [(0, 0, None), *chosen, (body, None, None)]
    for (a, _, start), (b, upto, cut) in zip(bounds, bounds[1:]):
        base = start["base"] if start is not None else 0
        seg_events = [_renumber(e, base) for e in events[a:b]]
        seg_lines, seg_descr = list(lines[a:b]), list(descr[a:b])
        if cut is not None:
            seg_events.append({"op": "cut", "p": "", "c": "", "k": "", "n": 0, "x": 0, "s": [], "part": ""})
            seg_lines.append(0)
            seg_descr.append("cut: every round so far finished, the state the next segment starts from")
        seg_events.append(
            events[body]
            if body < len(events)
            else {"op": "end", "p": "", "c": "", "k": "", "n": 0, "x": 0, "s": [], "part": ""}
        )
        seg_lines.append(0)
        seg_descr.append(descr[body] if body < len(descr) else "end of trace")
        rounds = max([1] + [r for e in seg_events if (r := _round_of(e)) is not None])
        if start is not None and "tasks" in start:  # the open rounds it starts with
            rounds = max(rounds, start["tasks"]["live"][1] - base)
        end = None
        if cut is not None:
            end = {**_state(p.topology, cut, base, arrival), "rounds": upto - base}
            if "tasks" in cut:
                end["low"] = cut["tasks"]["live"][0] - base
        seg = replace(
            p,
            events=seg_events,
            lines=seg_lines,
            descr=seg_descr,
            bounds={**p.bounds, "TRounds": rounds},
            start=None if start is None else _state(p.topology, start, base, arrival, start=True),
            cut=end,
        )
        out.append(Segment(seg, a, b - a))
    return out


def _state(topology: tuple, state: dict, base: int, arrival: bool, start: bool = False) -> dict:
    """A cut's state (``clean_cuts``) as ``TInit`` (``start``) or ``TCut`` of a segment
    whose rounds start after ``base``; at an open cut with what the events determine
    of every process and channel and of the open rounds (``TaskState.snapshot``)."""
    out = start_state(topology, **_shifted({k: state[k] for k in ("inflight", "counters")}, base, arrival))
    tasks = state.get("tasks")
    if tasks is None:
        return out
    low, upto = tasks["live"]

    for name, values in tasks["shifted"].items():
        out[name] = Function({k: max(0, v - base) for k, v in values.items()})
    for name, values in tasks["flags"].items():
        out[name] = Function(values)
    for name, table in tasks["rounds"].items():
        out[name] = Function({r - base: Function(table[r]) for r in range(low, upto + 1)})
    out["took"] = Function({q: {r - base for r in rs} for q, rs in tasks["took"].items()})
    out["aborted"] = {r - base for r in tasks["aborted"]}
    return out


def _renumber(e: dict, base: int) -> dict:
    """An event of the segment whose rounds start after ``base``; an obsolete marker
    of a round up to ``base`` (in flight at the cut) is of round 0."""
    if not base or _round_of(e) is None:
        return e
    return {**e, "n": max(0, e["n"] - base)}


def _shifted(state: dict, base: int, arrival: bool) -> dict:
    """A cut's state (``clean_cuts``) in the numbering of a segment whose rounds start
    after ``base``: its obsolete markers are of round 0 or later."""

    def shift(queue: tuple) -> tuple:
        return tuple(m if isinstance(m, int) else (m[0], max(0, m[1] - base)) for m in queue)

    inflight = {c: (shift(v[0]), shift(v[1])) if arrival else shift(v) for c, v in state["inflight"].items()}
    return {**state, "inflight": inflight}
