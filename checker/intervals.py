"""Interval indices and message tuples of the *effective history* (docs/theory.md,
"Conventions"; docs/trace-format.md).

Conventions (docs/theory.md, "Conventions"; binding for the whole checker):

* ``C_{i,0}`` is the initial checkpoint of every process; it is inserted when the
  trace does not record it.
* Checkpoint *positions* ``x = 0..L_i`` count the checkpoints of ``P_i`` that are
  still in its effective history; ``V_i = L_i + 1`` is its current (volatile) state.
  Trace checkpoint *numbers* (``ckpt``) are mapped to positions: after a restore the
  rolled-back checkpoints disappear, so numbers and positions may differ.
* ``ι(e)`` of an event = number of checkpoints (counting ``C_{i,0}``) before it.
* A message is the tuple ``(src, s, dst, r)`` with ``s = ι(send)``, ``r = ι(recv)``
  (``None`` = not processed in the effective history). "recv" means processing.

Effective history: a ``restore`` of checkpoint ``k`` removes the process's events
after ``C_k`` (the rolled-back segment), and so does a ``retire`` naming checkpoint
``k`` (the process leaves the job and its state at ``C_k`` lives on in the processes
restored from it at another parallelism); a ``fail`` is not an event of the history.
A replayed incarnation (``replay``, ``replay_of``) stands for its original message:
its send position is the original send, its receive counts as the original's —
except a record recovered after a restore at another parallelism, replayed on the
new channel a restore mapped its old channel onto (``moved``): that incarnation is a
message of its own on the new channel, sent at the replay, and its receive is not
the original's (both are listed in ``recvs``; ``checker.rescale`` judges the remap).
A replay in a later recovery of what was sent (or recovered) on that new channel
itself is an ordinary incarnation of that message; but a new process restored to its
initial state (the rescale's) rolls back the moved incarnations, and the replays that
follow move the records anew.

Scope: coordinator processes are outside every global checkpoint, so messages to
or from them are not analysed; barriers and cancellation markers are protocol messages, not data, and are
excluded too. An ``external`` process (a replayable input log) never fails and
never rolls back: it has no checkpoints here, its messages have ``src = EXTERNAL``
(always reflected as sent) and are always durable; messages *to* an external
process are outside the consistency definition (like sink outputs).
"""

from __future__ import annotations

from collections import deque
from itertools import repeat

from snapcheck.checker.trace_index import TraceIndex
from snapcheck.traces.errors import TraceError, TraceErrors
from snapcheck.traces.model import MARKERS, Event, Trace
from snapcheck.traces.protocol_facts import DeclaredFacts

EXTERNAL = -1
_BLOCK = 256  # at most this many messages allocated at a time for one sender (``History._build``)
_NOT_ANALYSED = ("coordinator", "external")


_REINJECTED = {  # a replay's ``from``, as a report names the send of what it re-injects
    "channel_state": "re-injected from recovered channel state",
    "log": "replayed from its log",
    "source": "re-read from its source",
}


class Msg:
    """One logical data message of the effective history: the tuple ``(src, s, dst, r)``
    of docs/theory.md, "Messages", with ``s = ι(send)``, ``r = ι(recv)`` (``None``: not
    processed in the effective history) and ``src = EXTERNAL`` for an external input.
    Also its ``mid``, channel ``ch``, ``seq``, the lines of its send and (first effective)
    receive, ``nrecv`` (effective receives of any incarnation) and ``k``, its index in
    ``History.msgs``.

    Worked example A: ``m2 = (P1, 1, P0, 1)`` (``P1`` is process 1, ``P0`` process 0).

    >>> from snapcheck.traces.golden import golden
    >>> m2 = History(golden("theory_a_zcycle")).by_mid["P1>P0:1"]
    >>> m2, (m2.src, m2.s, m2.dst, m2.r), (m2.send_line, m2.recv_line)
    (Msg(P1>P0:1: 1,1 -> 0,1), (1, 1, 0, 1), (2, 3))
    """

    __slots__ = ("mid", "ch", "seq", "src", "s", "dst", "r", "send_line", "recv_line", "nrecv", "k")

    def __init__(self, mid: str, ch: str, seq: int | None, src: int, s: int, dst: int, send_line: int, k: int) -> None:
        self.k = k  # index in ``History.msgs``
        self.mid = mid
        self.ch = ch
        self.seq = seq
        self.src = src
        self.s = s
        self.dst = dst
        self.r: int | None = None
        self.send_line = send_line
        self.recv_line: int | None = None
        self.nrecv = 0

    def __repr__(self) -> str:
        return f"Msg({self.mid}: {self.src},{self.s} -> {self.dst},{self.r})"


class History:
    """The effective history of a trace (optionally of the prefix of lines < ``limit``, or
    of each process's lines before ``per_proc_limit[proc]``), in the conventions of the
    module docstring: interval indices, checkpoint positions and message tuples.

    A ``restore`` of checkpoint ``k`` removes the process's events after ``C_k``; a
    replayed incarnation stands for its original message.

    >>> from snapcheck.traces.golden import golden
    >>> h = History(golden("theory_a_zcycle"))
    >>> h.procs, h.L, h.msgs
    (['P0', 'P1'], [2, 1], [Msg(P0>P1:1: 0,2 -> 1,1), Msg(P1>P0:1: 1,1 -> 0,1)])
    >>> h.line_to_dict([1, h.V(1)]), h.position(0, 2)
    ({'P0': 1, 'P1': 'V'}, 2)

    A receive that a restore rolls back leaves the message undelivered (``r = None``):

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["A", "B"], [("a2b", "A", "B")])
    >>> m = rec.send("A", "a2b")
    >>> _ = rec.checkpoint("B"); rec.recv("B", m); rec.fail("B"); rec.restore("B", 1)
    >>> History(rec.trace()).msgs
    [Msg(a2b:1: 0,1 -> 1,None)]

    Attributes (process index ``i`` follows header order over participants):
      procs            participant ids (roles other than coordinator/external)
      L[i]             number of stable checkpoints after C_{i,0} in the effective history
      ckpt_num[i][x]   trace checkpoint number at position x (x = 0..L_i)
      ckpt_ev[i][x]    the checkpoint Event (None for an implied C_{i,0})
      ckpt_at[i][x]    index in eff[i] of checkpoint x (-1 for an implied C_{i,0})
      eff[i]           effective events of P_i
      msgs             list[Msg] (data messages with their send in the effective history)
      by_mid           original mid -> Msg
      orig             replayed incarnation mid -> original mid (transitively resolved)
      recvs            effective recv events per original mid, in per-process order
      ghost_recvs      effective recv events whose message's send is not in the effective history
      rolled_back      Event -> line of the restore that rolled it back (not effective in the end)
      resurrected      Event -> line of its first rollback, for events a restore of a rolled-back
                       checkpoint made effective again (``first_rollback``)
      resurrection_base  restore Event -> the checkpoint number, of those effective when it
                       came, up to which the rolled-back checkpoint it restores holds the
                       same history (what it keeps of the current incarnation)
      trace_index      the trace's ``TraceIndex`` (shared by the histories of one check)
      facts            what the header's protocol declares (``DeclaredFacts``, without supplement)
    """

    _barrier_mids: set[str]  # built on first use (``barrier_mids``)
    _sent_ever: dict[str, Event]  # built on first use (``sent_ever``)

    def __init__(
        self,
        trace: Trace,
        limit: int | None = None,
        per_proc_limit: dict | None = None,
        index: TraceIndex | None = None,
    ):
        """``index``: the trace's ``TraceIndex`` when the caller has one (built otherwise)."""
        self.trace = trace
        ix = index if index is not None else TraceIndex(trace)
        self.trace_index = ix
        header = trace.header
        self.protocol = header.protocol or {}
        self.facts = DeclaredFacts.of(self.protocol)
        roles = {p.id: p.role for p in header.processes}
        self.roles = roles
        self.procs = [p.id for p in header.processes if p.role not in _NOT_ANALYSED]
        self.index = {p: i for i, p in enumerate(self.procs)}
        self.n = len(self.procs)
        self.channels = ix.channels
        self.external = {p for p, r in roles.items() if r == "external"}
        # channel -> (src index or EXTERNAL, dst index) for analysed channels
        self.ch_ends: dict[str, tuple[int, int]] = {}
        for c in header.channels:
            if c.dst in self.index and (c.src in self.index or c.src in self.external):
                self.ch_ends[c.id] = (self.index.get(c.src, EXTERNAL), self.index[c.dst])
        replays = ix.of_type("replay")
        rollers = ix.of_type("restore") + ix.of_type("fail") + ix.of_type("retire")
        if limit is None and per_proc_limit is None:
            events = trace.events
            raw = ix.by_proc
        else:
            inf = float("inf")
            top = inf if limit is None else limit
            ppl = per_proc_limit or {}
            bound = {p: min(top, ppl.get(p, inf)) for p in ix.by_proc}  # events on lines < bound
            events = [e for e in trace.events if e.line < bound[e.proc]]
            raw = {p: ix.proc_prefix(p, b) for p, b in bound.items()}
            replays = [e for e in replays if e.line < bound[e.proc]]
            rollers = [e for e in rollers if e.line < bound[e.proc]]
        orig: dict[str, str] = {e.mid: e.replay_of for e in replays}
        self.parent = dict(orig)  # replayed incarnation -> the incarnation it replays
        self.remapped = {
            m["new"] for e in ix.of_type("restore") if e.channels for m in e.channels if m["new"] != m["old"]
        }
        self._rolls = {e.proc for e in rollers}
        for m in list(orig):  # resolve chains of replays
            o = orig[m]
            while o in orig and o != m:
                o = orig[o]
            orig[m] = o
        self.events = events  # the analysed events, in file order
        self.raw = raw  # every process's events (shared lists: read only)
        self.orig = orig
        self.rolled_back: dict[int, int] = {}  # id(Event) -> restore line
        self.resurrected: dict[int, int] = {}  # id(Event) -> first restore line, for events effective again
        self.resurrection_base: dict[int, int] = {}  # id(restore) -> checkpoint number (module docstring)
        self.restores: list[Event] = []
        self._build()

    # -- construction -------------------------------------------------------------
    def _effective(self, p: str) -> list[Event]:
        """P's events with rolled-back segments (and fail events) removed.

        A restore of a checkpoint that an earlier restore rolled back (a protocol that
        kept the checkpoint of an incarnation that has restarted since) brings back the
        history that checkpoint held: the events it reflects are effective again, the
        current ones after it are rolled back."""
        evs = self.raw[p]
        if p not in self._rolls:
            return evs
        rolled = self.rolled_back
        eff: list[Event] = []
        pos = {0: -1}
        gone: dict[int, tuple[int, list]] = {}  # rolled-back ckpt -> (ckpt before it, events up to it)

        def roll_back(base: int, line: int) -> None:
            """Roll back eff after checkpoint ``base`` (its position in ``pos``)."""
            seg = eff[pos[base] + 1 :]
            for j, ev in enumerate(seg):
                rolled[id(ev)] = line
                if ev.type == "checkpoint":
                    assert ev.ckpt is not None  # required of a checkpoint
                    del pos[ev.ckpt]
                    gone[ev.ckpt] = (base, seg[: j + 1])
            del eff[pos[base] + 1 :]

        def held(c: int) -> list[Event]:
            if c in pos:
                return eff[: pos[c] + 1]
            base, seg = gone[c]
            return held(base) + seg

        for e in evs:
            t = e.type
            if t == "restore" or (t == "retire" and e.ckpt is not None):
                if e.ckpt in pos:
                    roll_back(e.ckpt, e.line)
                elif e.ckpt in gone:
                    back = held(e.ckpt)
                    common = 0
                    while common < min(len(eff), len(back)) and eff[common] is back[common]:
                        common += 1
                    base = max((c for c, i in pos.items() if i < common), key=pos.__getitem__)
                    self.resurrection_base[id(e)] = base
                    roll_back(base, e.line)
                    for ev in back[len(eff) :]:
                        self.resurrected.setdefault(id(ev), rolled.pop(id(ev)))
                        eff.append(ev)
                        if ev.type == "checkpoint":
                            assert ev.ckpt is not None
                            pos[ev.ckpt] = len(eff) - 1
                            gone.pop(ev.ckpt, None)
                else:
                    raise TraceErrors(
                        [
                            TraceError(
                                self.trace.path, e.line, f"{p} restores checkpoint {e.ckpt}, which it has not taken"
                            )
                        ]
                    )
                if t == "restore":
                    self.restores.append(e)
            elif t != "fail" and t != "retire":
                if t == "checkpoint":
                    assert e.ckpt is not None
                    pos[e.ckpt] = len(eff)
                eff.append(e)
        return eff

    def _build(self) -> None:
        """Effective histories, checkpoint positions, interval indices and message tuples.

        One pass over the analysed events in file order, which holds every process's
        effective events in that process's order (an effective history is a subsequence
        of the process's events, also after a restore brought back rolled-back ones): a
        per-process counter gives each event's interval index, and a receive comes soon
        after its send, while the message is at hand. A receive met before its message's
        send (a trace's file order need not be causal), or of a moved or unknown message,
        is resolved after the pass; it comes before every receive of that message met
        after the send, so it is the first one in its process's order."""
        dst_of = {ch: dst for ch, (_, dst) in self.ch_ends.items()}
        effs = [self._effective(p) for p in self.procs]  # every rollback is known before ``_moves``
        rolled = {p for p, eff in zip(self.procs, effs) if eff is not self.raw[p]}
        events = self.events
        if rolled:  # only the effective events of the processes that rolled back
            kept = {id(e) for p, eff in zip(self.procs, effs) if p in rolled for e in eff}
            events = [e for e in events if e.proc not in rolled or id(e) in kept]
        n = self.n
        count = [1] * n  # per participant: the interval index of its next event (checkpoints so far, C_{i,0} too)
        nums: list[list[int]] = [[0] for _ in range(n)]
        cevs: list[list[Event | None]] = [[None] for _ in range(n)]
        # per sender (the participants, then the external inputs): its messages in its order, and
        # the blank ones allocated for it, as many at a time as it has (up to ``_BLOCK``): each
        # sender's messages are neighbours in memory for the analyses' passes over ``msgs``, as if
        # made one sender at a time, and a sender of a few messages has few blank ones
        externals = [p.id for p in self.trace.header.processes if p.role == "external"]
        ext_of = {p: n + k for k, p in enumerate(externals)}
        sent: list[list[Msg]] = [[] for _ in range(n + len(externals))]
        blank: list[list[Msg]] = [[] for _ in sent]
        by_mid: dict[str, Msg] = {}
        moved: dict[str, Msg] = {}
        self.moved = moved
        # receives resolved after the pass: (event, its process, its interval index)
        recv_at: list[tuple[Event, int, int]] = []
        barriers: set[str] = set()
        orig, remapped, external = self.orig, self.remapped, self.external
        add_recv, get_dst, get_i = recv_at.append, dst_of.get, self.index.get
        m: Msg | None
        into: dict[str, Msg]
        for e in events:
            t = e.type
            if t == "send":
                mid, ch = e.mid, e.ch
                assert mid is not None and ch is not None  # required of every message event
                if e.kind in MARKERS:
                    barriers.add(mid)
                    continue
                into, seq = by_mid, e.seq
            elif t == "recv":
                if e.ch in dst_of:
                    i = get_i(e.proc)
                    if i is None:
                        continue
                    mid = e.mid
                    assert mid is not None  # required of a recv
                    m = by_mid.get(orig.get(mid, mid) if orig else mid)
                    if m is not None and m.dst == i:  # its send is known: count it now
                        m.nrecv += 1
                        if m.r is None:
                            m.r = count[i]
                            m.recv_line = e.line
                    else:  # sent later in the file, moved, or a ghost: after every send
                        add_recv((e, i, count[i]))
                continue
            elif t == "checkpoint":
                i = get_i(e.proc)
                if i is not None:
                    if e.ckpt:  # required: not None
                        count[i] += 1
                        nums[i].append(e.ckpt)
                        cevs[i].append(e)
                    else:
                        cevs[i][0] = e
                continue
            elif t == "replay" and remapped:
                mid, ch = e.mid, e.ch
                assert mid is not None and ch is not None
                if get_dst(ch) is None or not self._moves(e):
                    continue
                # a record moved onto a new channel; an external input's replay keeps its seq
                into, seq = moved, e.seq if e.proc in external else None
            else:
                continue
            # a new message of the sender of ``e``, at the end of its list
            d = get_dst(ch)
            if d is None:
                continue
            i = get_i(e.proc)
            if i is None:
                x = ext_of.get(e.proc)
                if x is None:
                    continue
                src, s = EXTERNAL, 0
            else:
                x, src, s = i, i, count[i]
            spare = blank[x]
            if not spare:
                spare.extend(map(Msg.__new__, repeat(Msg, min(_BLOCK, len(sent[x]) + 1))))
                spare.reverse()
            m = into[mid] = spare.pop()
            m.__init__(mid, ch, seq, src, s, d, e.line, 0)  # type: ignore[misc]  # a blank one, made here
            sent[x].append(m)
        ghosts: list[tuple[int, Event]] = []
        first: set[int] = set()  # ids of the messages a receive resolved here has counted
        for e, i, c in recv_at:
            assert e.mid is not None
            o = orig.get(e.mid, e.mid)
            m = by_mid.get(o)
            if m is None:
                if o not in barriers:
                    ghosts.append((i, e))
                continue
            if m.dst != i:
                m = self.moved_of(e.mid) if moved else None
            if m is not None and m.dst == i:
                m.nrecv += 1
                if id(m) not in first:
                    first.add(id(m))
                    m.r = c
                    m.recv_line = e.line
        msgs = [m for ms in sent[n:] + sent[:n] for m in ms]  # the external inputs' first, as they are in ``Msg.k``
        deque(map(setattr, msgs, repeat("k"), range(len(msgs))), maxlen=0)  # m.k = k, without a Python loop
        self.eff = effs
        self.ckpt_num = nums
        self.ckpt_ev = cevs
        self.ckpt_at = [_positions(eff, evs) for eff, evs in zip(effs, cevs)]
        self.L = [len(ns) - 1 for ns in nums]
        self.pos_of = [{c: x for x, c in enumerate(ns)} for ns in nums]
        self.msgs = msgs
        self.by_mid = by_mid
        self._recvs: dict[str, list[Event]] | None = None
        ghosts.sort(key=lambda g: g[0])  # by process (each in its order), as the analyses list them
        self.ghost_recvs = [e for _, e in ghosts if e.mid not in self.barrier_mids]

    @property
    def recvs(self) -> dict[str, list[Event]]:
        """Original mid -> the effective recv events of its incarnations, in per-process order
        (processes in ``procs`` order); made when first asked for (the analyses of recoveries
        and rescales ask)."""
        if self._recvs is None:
            analysed, orig, by_mid = self.ch_ends, self.orig, self.by_mid
            recvs: dict[str, list[Event]] = {}
            for eff in self.eff:
                for e in eff:
                    if e.type == "recv" and e.ch in analysed:
                        assert e.mid is not None  # a recv names its message (validated)
                        o = orig.get(e.mid, e.mid)
                        if o in by_mid:
                            recvs.setdefault(o, []).append(e)
            self._recvs = recvs
        return self._recvs

    @property
    def barrier_mids(self) -> set[str]:
        """The mids of every barrier and cancellation marker the trace sends (rolled back or not)."""
        try:
            return self._barrier_mids
        except AttributeError:
            self._barrier_mids = {
                e.mid for evs in self.raw.values() for e in evs if e.type == "send" and e.kind in MARKERS
            }
            return self._barrier_mids

    def _moves(self, e: Event) -> bool:
        """Is replay ``e`` a record recovered onto a new channel (``moved``): its channel is
        one a restore mapped an old channel onto, and the incarnation it replays was sent
        on another channel? A later recovery that replays, on the same channel, what was
        sent (or recovered) there after the restore replays an incarnation of that
        channel's own message — unless the incarnation it replays is a moved one that a
        restore rolled back before it (a new process restored to its initial state, the
        rescale's): then the replay moves the record anew."""
        if e.ch not in self.remapped:
            return False
        assert e.replay_of is not None  # required of a replay
        parent = self.sent_ever(e.replay_of)
        if parent is None or parent.ch != e.ch:
            return True
        undone = self.first_rollback(parent) if parent.type == "replay" else None
        return undone is not None and undone < e.line and self._moves(parent)

    # -- helpers ------------------------------------------------------------------
    def first_rollback(self, ev) -> int | None:
        """The line of the first restore that rolled ``ev`` back (also if a later restore of a
        rolled-back checkpoint brought it back), or None."""
        k = id(ev)
        return self.resurrected.get(k, self.rolled_back.get(k))

    def moved_of(self, mid: str) -> Msg | None:
        """The remapped incarnation ``mid`` is (or replays), if any: a record recovered
        on the new channel a restore at another parallelism mapped its channel onto."""
        moved, parent = self.moved, self.parent
        cur: str | None = mid
        while cur is not None:
            m = moved.get(cur)
            if m is not None:
                return m
            cur = parent.get(cur)
        return None

    def sent_by(self, m: Msg) -> str:
        """How the report names ``m``'s send: ``sent by P``, except for a record recovered
        onto a new channel after a rescale (``moved``), whose send is the ``replay`` that
        re-injects it: ``re-injected from recovered channel state by P`` (the receiver
        itself), ``replayed from its log by P`` or ``re-read from its source by P``.

        >>> from snapcheck.traces import TraceRecorder
        >>> rec = TraceRecorder(["A", "B", {"id": "N", "appears": True}], [("ab", "A", "B"), ("an", "A", "N")])
        >>> m = rec.send("A", "ab"); _ = rec.checkpoint("B", round=1); rec.record("B", 1, "ab", [m]); rec.retire("B", 1)
        >>> rec.restore("N", 0, sources=[{"proc": "B", "ckpt": 1}], channels=[{"old": "ab", "new": "an"}])
        >>> r = rec.replay("N", m, "channel_state", ch="an"); h = History(rec.trace())
        >>> h.sent_by(h.by_mid[m]), h.sent_by(h.moved[r])
        ('sent by A', 're-injected from recovered channel state by N')
        """
        who = "an external input" if m.src == EXTERNAL else self.procs[m.src]
        if self.moved.get(m.mid) is m:
            e = self.sent_ever(m.mid)
            if e is not None and e.type == "replay":
                return f"{_REINJECTED.get(e.source or '', 'replayed')} by {who}"
        return f"sent by {who}"

    def resolve(self, mid: str) -> str:
        """The original mid of a (possibly replayed) incarnation."""
        return self.orig.get(mid, mid)

    def identities(self, mid: str) -> tuple:
        """The messages an incarnation ``mid`` counts for: its original (``resolve``) and,
        when it is (or replays) a record recovered onto a new channel after a rescale,
        that record's message on the new channel, ``(original, new channel)``: one message
        however many times recoveries move it there (``moved_of``)."""
        o = self.orig.get(mid, mid)
        mv = self.moved_of(mid) if self.moved else None
        return (o,) if mv is None else (o, (o, mv.ch))

    def sent_ever(self, mid: str) -> Event | None:
        """The raw send event of ``mid`` (also if it was rolled back), if any."""
        try:
            idx = self._sent_ever
        except AttributeError:
            idx = self._sent_ever = {e.mid: e for evs in self.raw.values() for e in evs if e.type in ("send", "replay")}
        return idx.get(mid)

    def V(self, i: int) -> int:
        """The position of ``V_i``, ``P_i``'s current (volatile) state: ``L_i + 1``."""
        return self.L[i] + 1

    def ckpt_name(self, i: int, x: int) -> str:
        """``P:ckpt`` (trace checkpoint number) or ``P:V``."""
        return f"{self.procs[i]}:{self.label(i, x)}"

    def label(self, i: int, x: int):
        """Trace checkpoint number of position x, or "V" for the current state."""
        return "V" if x > self.L[i] else self.ckpt_num[i][x]

    def ckpt_line(self, i: int, x: int) -> int | None:
        """The trace line of checkpoint position ``x`` of ``P_i`` (None for ``V_i`` or an implied ``C_{i,0}``)."""
        if x > self.L[i]:
            return None
        ev = self.ckpt_ev[i][x]
        return ev.line if ev is not None else None

    def position(self, i: int, value) -> int:
        """Position of a trace checkpoint number (or "V") of process i; KeyError if absent."""
        if value == "V" or value is None:
            return self.L[i] + 1
        return self.pos_of[i][int(value)]

    def line_to_dict(self, g: list[int]) -> dict:
        """The global checkpoint of positions ``g`` as ``{process: checkpoint number or "V"}``."""
        return {p: self.label(i, g[i]) for i, p in enumerate(self.procs)}

    def events_after(self, i: int, x: int) -> int:
        """Number of effective events of P_i after checkpoint position x (0 for V)."""
        if x > self.L[i]:
            return 0
        return len(self.eff[i]) - 1 - self.ckpt_at[i][x]


def _positions(eff: list[Event], ckpts: list[Event | None]) -> list[int]:
    """The index in ``eff`` of each checkpoint event of ``ckpts`` (``C_{i,0}``, -1 when it
    is implied, then the later ones in ``eff``'s order): its ``idx`` when that is where it
    is (a process's events numbered from 0, none rolled back), else found by identity.

    >>> a, b, c = Event("send", "P", 0), Event("checkpoint", "P", 1, ckpt=1), Event("recv", "P", 2)
    >>> _positions([a, b, c], [None, b]), _positions([b, c], [None, b])
    ([-1, 1], [-1, 0])
    """

    def find(ev: Event, j: int) -> int:
        if ev.idx < len(eff) and eff[ev.idx] is ev:
            return ev.idx
        while eff[j] is not ev:
            j += 1
        return j

    out = [-1 if ckpts[0] is None else find(ckpts[0], 0)]
    for ev in ckpts[1:]:
        assert ev is not None  # only C_{i,0} may be implied
        out.append(find(ev, out[-1] + 1 if len(out) > 1 else 0))
    return out
