"""Communication-induced checkpointing: conformance by re-simulation and timestamps
along Z-paths (docs/theory.md, "Communication-induced checkpointing").

**Conformance (differential) oracle.** BCS and HMNR are deterministic functions of
the event order, so their variables can be re-simulated from the trace: every
participant starts from the initial values, every ``send`` to another participant
computes the piggyback, every ``recv`` evaluates the forced-checkpoint condition
with the piggyback the message carried (the logged ``send.piggyback`` if present,
else the re-simulated one; a replayed incarnation carries its original's) and
merges it, every checkpoint applies the checkpoint procedure, and a ``restore``
resets the variables to those re-simulated at the restored checkpoint. Events are
visited in a causal order (a receive after its send), whatever the file order.

* ``missing-forced-checkpoint`` (property ``cic-conformance``, a safety bug): a
  receive where the condition holds is not immediately preceded (among the
  process's protocol events: checkpoints, data sends and receives, restores) by a
  forced checkpoint. Delivering it in the same interval can create a Z-cycle
  (HMNR C2, BCS) or a Z-path along which timestamps decrease (HMNR C1).
* ``spurious-forced-checkpoint`` (property ``cic-efficiency``, an efficiency bug):
  a forced checkpoint that is not immediately followed by a receive, or before a
  receive where the condition does not hold (e.g. BlackSP's HMNR variant that
  updates ``min_to`` on every send; docs/theory.md, "The clock form of HMNR").
* ``piggyback-mismatch`` / ``vars-mismatch`` (``cic-conformance``): a logged
  piggyback (``send.piggyback``) or checkpoint variables (``checkpoint.vars``)
  differ from the re-simulated values (the keys present are compared).

The rules, per docs/theory.md, "BCS" and "HMNR" (vectors are indexed by the participants — processes
other than coordinators and external inputs — in header order):

* BCS (Briatico, Ciuffoletti and Simoncini, "A distributed domino-effect free recovery
  algorithm", 1984): ``sn``; basic checkpoint ``sn += 1``;
  piggyback ``sn``; force iff ``m.sn > sn``, then ``sn := m.sn`` (the forced
  checkpoint's timestamp).
* HMNR (Hélary, Mostéfaoui, Netzer and Raynal, "Communication-Based Prevention of
  Useless Checkpoints in Distributed Computations", 2000, as CheckMate implements it),
  ``greater[]`` form: ``C1 = (∃k: sent_to[k] ∧ m.greater[k]) ∧ m.lc > lc``,
  ``C2 = m.ckpt[i] = ckpt[i] ∧ m.taken[i]``; ``clock[]``/``min_to[]`` form:
  ``C1' = ∃k: sent_to[k] ∧ m.clock[j] > min_to[k] ∧ m.clock[j] > max(clock[k], m.clock[k])``.
  The form is ``params.form``, else the keys of the logged piggybacks/variables
  (``clock`` → clock form), else ``greater``. Timestamp: ``lc`` (``clock[i]``).

**Timestamps** (property ``timestamps``, kind ``timestamp-order``): under BCS and
HMNR checkpoint timestamps strictly increase along every Z-path (docs/theory.md,
"Timestamps along Z-paths"; HMNR's theorem), which implies Z-cycle freedom. With
``a(i, x+1) = ts(C_{i,x})`` and ``M[v] = max{a(u) : u ⇝ v}`` over the R-graph (a DP
over its SCC condensation in topological order; Z-path from ``C_{i,x}`` to
``C_{j,y}`` ⟺ ``(i,x+1) ⇝ (j,y)``, docs/theory.md, "R-paths are Z-paths"), the property holds iff
``M[(j,y)] < ts(C_{j,y})`` for every stable checkpoint and timestamps increase on
every process. Each violation's witness is a shortest R-path, re-checked as a
Z-path with ``is_zpath``. Timestamps are the re-simulated ones.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Protocol, Self

from snapcheck.checker.intervals import History
from snapcheck.checker.report import Violation
from snapcheck.checker.zcycles import is_zpath
from snapcheck.traces.model import MARKERS, Event, Trace

INF = float("inf")


# -- the protocols' variables (an implementation independent of reference/) ------------
class BCSVars:
    """The variables of BCS at process ``i`` of ``n`` (Briatico, Ciuffoletti and Simoncini,
    "A distributed domino-effect free recovery algorithm", 1984): a sequence number
    ``sn``, 0 at ``C_{i,0}``. A basic checkpoint increments it; every message piggybacks
    it; a receive of ``m.sn > sn`` forces a checkpoint first, timestamped ``m.sn``.

    >>> v = BCSVars(2, 0)
    >>> v.checkpoint(None)                      # a basic checkpoint
    >>> v.piggyback(1, line=5), v.condition(1, {"sn": 3}), v.condition(1, {"sn": 1})
    ({'sn': 1}, 'm.sn = 3 > sn = 1', None)
    >>> v.checkpoint({"sn": 3}); v.timestamp()  # the forced checkpoint before that receive
    3
    """

    form = "bcs"

    def __init__(self, n: int, i: int):
        self.i = i
        self.sn = 0

    def copy(self) -> BCSVars:
        """A copy (the variables saved with a checkpoint, restored by a ``restore``)."""
        c = BCSVars.__new__(BCSVars)
        c.i, c.sn = self.i, self.sn
        return c

    def piggyback(self, k: int, line: int) -> dict:
        """The piggyback of a send to participant ``k`` at trace line ``line``."""
        return {"sn": self.sn}

    def condition(self, j: int, pb: dict) -> str | None:
        """Why a receive from participant ``j`` carrying ``pb`` forces a checkpoint first (None:
        it does not)."""
        return f"m.sn = {pb['sn']} > sn = {self.sn}" if pb["sn"] > self.sn else None

    def checkpoint(self, pb: dict | None) -> None:
        """Apply the checkpoint procedure; ``pb``: the piggyback of the receive that forced it (None: a basic
        checkpoint)."""
        self.sn = pb["sn"] if pb is not None else self.sn + 1

    def deliver(self, j: int, pb: dict) -> None:
        """Merge the piggyback ``pb`` of a message from participant ``j`` when it is processed."""

    def vars(self) -> dict:
        """The variables as a trace's ``checkpoint.vars`` logs them."""
        return {"sn": self.sn}

    def timestamp(self) -> int:
        """The timestamp of the checkpoint just taken (``sn``)."""
        return self.sn


class HMNRGreaterVars:
    """The variables of HMNR at process ``i`` of ``n`` in the form CheckMate implements
    (Hélary, Mostéfaoui, Netzer and Raynal, "Communication-Based Prevention of Useless
    Checkpoints in Distributed Computations", 2000; docs/theory.md, "HMNR"): ``lc``,
    ``ckpt[]``, ``taken[]``, ``greater[]`` (piggybacked) and ``sent_to[]`` (kept as the
    line of the first send to each process in the interval). A receive forces a
    checkpoint when ``C1 = (∃k: sent_to[k] ∧ m.greater[k]) ∧ m.lc > lc`` or
    ``C2 = m.ckpt[i] = ckpt[i] ∧ m.taken[i]``. The methods are those of ``BCSVars``.

    C2: ``P0`` sends to ``P1``, ``P1`` checkpoints and answers; processing the answer in
    the same interval would put ``C_{1,1}`` on a Z-cycle.

    >>> p0, p1 = HMNRGreaterVars(2, 0), HMNRGreaterVars(2, 1)
    >>> p1.deliver(0, p0.piggyback(1, line=2)); p1.checkpoint(None)
    >>> p0.condition(1, p1.piggyback(0, line=4))
    "C2: m.ckpt[0] = ckpt[0] = 0 and m.taken[0]: m's causal past starts in the receiver's current interval ..."

    C1: ``P0`` sent to ``P2``, then receives from ``P1`` a larger clock that ``P2`` may not know:

    >>> p0, p1 = HMNRGreaterVars(3, 0), HMNRGreaterVars(3, 1)
    >>> _ = p0.piggyback(2, line=2); p1.checkpoint(None)
    >>> p0.condition(1, p1.piggyback(0, line=4))
    'C1: m.lc = 1 > lc = 0, and the receiver sent to participant #2 in this interval (line 2) ...'
    """

    form = "greater"

    def __init__(self, n: int, i: int):
        self.n, self.i = n, i
        self.lc = 0
        self.ckpt = [0] * n
        self.taken = [False] * n
        self.greater = [False] * n
        self.sent_line = [0] * n  # line of the first send to k in the interval (0: none)

    def copy(self) -> Self:
        c = self.__class__.__new__(self.__class__)
        c.__dict__ = {k: (list(v) if isinstance(v, list) else v) for k, v in self.__dict__.items()}
        return c

    def piggyback(self, k: int, line: int) -> dict:
        if not self.sent_line[k]:
            self.sent_line[k] = line
        return {"lc": self.lc, "ckpt": list(self.ckpt), "taken": list(self.taken), "greater": list(self.greater)}

    def c1(self, j: int, pb: dict) -> str | None:
        """Condition C1 for a message from participant ``j`` (None: it does not hold)."""
        if pb["lc"] <= self.lc:
            return None
        for k, (s, g) in enumerate(zip(self.sent_line, pb["greater"])):
            if s and g:
                return (
                    f"C1: m.lc = {pb['lc']} > lc = {self.lc}, and the receiver sent to participant #{k} in this "
                    f"interval (line {s}) while m.greater[{k}] is true"
                )
        return None

    def c2(self, pb: dict) -> str | None:
        """Condition C2: ``m.ckpt[i] = ckpt[i] ∧ m.taken[i]`` (None: it does not hold)."""
        i = self.i
        if pb["ckpt"][i] == self.ckpt[i] and pb["taken"][i]:
            return (
                f"C2: m.ckpt[{i}] = ckpt[{i}] = {self.ckpt[i]} and m.taken[{i}]: m's causal past starts in the "
                "receiver's current interval and crossed a checkpoint"
            )
        return None

    def condition(self, j: int, pb: dict) -> str | None:
        return self.c1(j, pb) or self.c2(pb)

    def checkpoint(self, pb: dict | None) -> None:
        n, i = self.n, self.i
        self.sent_line = [0] * n
        self.taken = [k != i for k in range(n)]
        self.advance()
        self.ckpt[i] += 1

    def advance(self) -> None:
        """The clock part of the checkpoint procedure: ``lc += 1``, ``greater[k] := true`` for ``k ≠ i``."""
        self.greater = [k != self.i for k in range(self.n)]
        self.lc += 1

    def deliver(self, j: int, pb: dict) -> None:
        i = self.i
        if pb["lc"] > self.lc:
            self.lc = pb["lc"]
            self.greater = [False if k == i else g for k, g in enumerate(pb["greater"])]
        elif pb["lc"] == self.lc:
            self.greater = [a and b for a, b in zip(self.greater, pb["greater"])]
        self.merge_ckpt(pb)

    def merge_ckpt(self, pb: dict) -> None:
        """Merge ``ckpt[]`` and ``taken[]`` of a piggyback: the larger ``ckpt[k]`` with its ``taken[k]``, on a
        tie ``taken[k] ∨ m.taken[k]``."""
        i = self.i
        for k in range(self.n):
            if k == i:
                continue
            if pb["ckpt"][k] > self.ckpt[k]:
                self.ckpt[k] = pb["ckpt"][k]
                self.taken[k] = bool(pb["taken"][k])
            elif pb["ckpt"][k] == self.ckpt[k]:
                self.taken[k] = self.taken[k] or bool(pb["taken"][k])

    def vars(self) -> dict:
        return {"lc": self.lc, "ckpt": list(self.ckpt), "taken": list(self.taken), "greater": list(self.greater)}

    def timestamp(self) -> int:
        """The timestamp of the checkpoint just taken (``lc``)."""
        return self.lc


class HMNRClockVars(HMNRGreaterVars):
    """HMNR in its clock form (docs/theory.md, "The clock form of HMNR"): ``clock[]``
    (``clock[i] = lc``) and ``min_to[]`` (``clock[i]`` at the first send to each process
    in the interval) replace ``lc`` and ``greater[]``, and C1 becomes
    ``C1' = ∃k: sent_to[k] ∧ m.clock[j] > min_to[k] ∧ m.clock[j] > max(clock[k], m.clock[k])``.
    It forces checkpoints on exactly the receives ``HMNRGreaterVars`` does.

    The C1 situation of ``HMNRGreaterVars``:

    >>> p0, p1 = HMNRClockVars(3, 0), HMNRClockVars(3, 1)
    >>> _ = p0.piggyback(2, line=2); p1.checkpoint(None)
    >>> p0.condition(1, p1.piggyback(0, line=4))
    "C1': m.clock[1] = 1 exceeds min_to[2] = 0 (first send to participant #2 in this interval, line 2) and ..."
    """

    form = "clock"

    def __init__(self, n: int, i: int):
        super().__init__(n, i)
        del self.lc, self.greater
        self.clock = [0] * n
        self.min_to = [INF] * n

    def piggyback(self, k: int, line: int) -> dict:
        if not self.sent_line[k]:
            self.sent_line[k] = line
            self.min_to[k] = self.clock[self.i]
        return {"clock": list(self.clock), "ckpt": list(self.ckpt), "taken": list(self.taken)}

    def c1(self, j: int, pb: dict) -> str | None:
        """Condition C1' for a message from participant ``j`` (None: it does not hold)."""
        mj = pb["clock"][j]
        for k, s in enumerate(self.sent_line):
            if s and mj > self.min_to[k] and mj > max(self.clock[k], pb["clock"][k]):
                return (
                    f"C1': m.clock[{j}] = {mj} exceeds min_to[{k}] = {self.min_to[k]} (first send to participant "
                    f"#{k} in this interval, line {s}) and max(clock[{k}], m.clock[{k}]) = "
                    f"{max(self.clock[k], pb['clock'][k])}"
                )
        return None

    def advance(self) -> None:
        """The clock part of the checkpoint procedure: ``clock[i] += 1``, ``min_to := ∞``."""
        self.min_to = [INF] * self.n
        self.clock[self.i] += 1

    def deliver(self, j: int, pb: dict) -> None:
        i = self.i
        mc = pb["clock"]
        self.clock[i] = max(self.clock[i], mc[j])
        for k in range(self.n):
            if k != i:
                self.clock[k] = max(self.clock[k], mc[k])
        self.merge_ckpt(pb)

    def vars(self) -> dict:
        return {"clock": list(self.clock), "ckpt": list(self.ckpt), "taken": list(self.taken)}

    def timestamp(self) -> int:
        """The timestamp of the checkpoint just taken (``clock[i]``)."""
        return self.clock[self.i]


class ProtocolVars(Protocol):
    """What the re-simulation asks of a protocol's variables at one process (``BCSVars``,
    ``HMNRGreaterVars``, ``HMNRClockVars``; the methods are documented on ``BCSVars``).

    >>> v = FORMS["clock"](2, 0)
    >>> v.checkpoint(None); v.timestamp(), v.copy().vars()
    (1, {'clock': [1, 0], 'ckpt': [1, 0], 'taken': [False, True]})
    """

    i: int

    def copy(self) -> ProtocolVars: ...
    def piggyback(self, k: int, line: int) -> dict: ...
    def condition(self, j: int, pb: dict) -> str | None: ...
    def checkpoint(self, pb: dict | None) -> None: ...
    def deliver(self, j: int, pb: dict) -> None: ...
    def vars(self) -> dict: ...
    def timestamp(self) -> int: ...


FORMS: dict[str, Callable[[int, int], ProtocolVars]] = {
    "bcs": BCSVars,
    "greater": HMNRGreaterVars,
    "clock": HMNRClockVars,
}


def detect_form(trace: Trace, kind: str) -> str:
    """The form of the CIC rules of ``trace`` (``kind``: the header's ``params.cic``):
    ``bcs``; for HMNR ``params.form``, else ``clock`` when the logged piggybacks or
    checkpoint variables have a ``clock`` key, else ``greater``.

    >>> from snapcheck.traces.golden import golden
    >>> detect_form(golden("theory_a_zcycle"), "hmnr"), detect_form(golden("theory_a_zcycle"), "bcs")
    ('greater', 'bcs')
    """
    if kind == "bcs":
        return "bcs"
    form = (trace.header.protocol.get("params") or {}).get("form")
    if form in ("greater", "clock"):
        return form
    for e in trace.events:
        d = e.piggyback if e.type == "send" else e.vars if e.type == "checkpoint" else None
        if d:
            return "clock" if "clock" in d else "greater"
    return "greater"


def same_json(a, b) -> bool:
    """Whether two JSON values are the same value: as ``==``, except that a boolean is
    never a number (Python's ``True == 1``), at any depth. A trace that piggybacks
    ``sn: true`` does not carry the number 1.

    >>> same_json({"sn": 1}, {"sn": 1}), same_json({"sn": True}, {"sn": 1}), same_json([0, False], [0, 0])
    (True, False, False)
    """
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(same_json, a, b))
    return bool(a == b)


# -- re-simulation ------------------------------------------------------------------------
class Decision:
    """The protocol's decision at one receive ``recv`` of process ``proc``: ``reason``, the
    forcing condition that holds (None: no checkpoint needed), and ``forced``, whether the
    trace has a forced checkpoint right before it.

    >>> from snapcheck.traces import TraceRecorder
    >>> from snapcheck.checker.intervals import History
    >>> rec = TraceRecorder(["P0", "P1"], [("a", "P0", "P1")], params={"cic": "bcs"})
    >>> _ = rec.checkpoint("P0"); m = rec.send("P0", "a", piggyback={"sn": 1})
    >>> _ = rec.checkpoint("P1", "forced"); rec.recv("P1", m)
    >>> t = rec.trace()
    >>> [(d.proc, d.recv.mid, d.reason, d.forced) for d in Resimulation(t, History(t), "bcs").decisions]
    [('P1', 'a:1', 'm.sn = 1 > sn = 0', True)]
    """

    __slots__ = ("proc", "recv", "reason", "forced")

    def __init__(self, proc, recv, reason, forced):
        self.proc, self.recv, self.reason, self.forced = proc, recv, reason, forced


class Resimulation:
    """Re-simulate a BCS/HMNR trace (module docstring). Results: ``decisions`` (one per
    receive from another participant, in visiting order), ``timestamps``
    ({(proc, ckpt): ts}), ``conformance`` / ``efficiency`` violations, ``stuck``
    (processes the causal order could not finish: a trace that is not causal).

    ``h``: the trace's effective history; ``form``: ``bcs``, ``greater`` or ``clock``
    (``detect_form``). ``P1`` processes a message with a larger ``sn`` without the forced
    checkpoint BCS requires:

    >>> from snapcheck.traces import TraceRecorder
    >>> from snapcheck.checker.intervals import History
    >>> rec = TraceRecorder(["P0", "P1"], [("a", "P0", "P1")], params={"cic": "bcs"})
    >>> _ = rec.checkpoint("P0"); m = rec.send("P0", "a", piggyback={"sn": 1})
    >>> rec.recv("P1", m)
    >>> t = rec.trace()
    >>> sim = Resimulation(t, History(t), "bcs")
    >>> [v.kind for v in sim.conformance], sim.efficiency, sim.timestamps[("P0", 1)]
    (['missing-forced-checkpoint'], [], 1)
    """

    def __init__(self, trace: Trace, h: History, form: str):
        self.trace = trace
        self.h = h
        self.form = form
        make = FORMS[form]
        procs, index = h.procs, h.index
        n = len(procs)
        self.data_ch = {
            c.id: (index[c.src], index[c.dst])
            for c in trace.header.channels
            if c.kind == "data" and c.src in index and c.dst in index
        }
        by_proc = h.trace_index.by_proc
        data = self.data_ch
        # the protocol events: stable checkpoints, data sends and receives between participants, restores
        self.rel = [
            [
                e
                for e in by_proc[p]
                if (e.type == "send" and e.kind not in MARKERS and e.ch in data)
                or (e.type == "recv" and e.ch in data)
                or (e.type == "checkpoint" and e.ckpt)
                or e.type == "restore"
            ]
            for p in procs
        ]
        self.state = [make(n, i) for i in range(n)]
        self.initial = [make(n, i) for i in range(n)]
        self.saved: dict[tuple, ProtocolVars] = {}
        self.timestamps: dict[tuple, int] = {(p, 0): 0 for p in procs}
        self.eff_pb: dict[str, dict] = {}
        self.send_of: dict[str, Event] = {}
        self.decisions: list[Decision] = []
        self.conformance: list[Violation] = []
        self.efficiency: list[Violation] = []
        self.forced_for: set[int] = set()
        self.stuck: list[str] = []
        self._run()

    def _run(self) -> None:
        rel, orig = self.rel, self.h.orig
        n = len(rel)
        pos = [0] * n
        waiting: dict[str, list[int]] = {}
        work = list(range(n - 1, -1, -1))
        done = self.eff_pb
        apply = self._apply
        while work:
            i = work.pop()
            evs = rel[i]
            k, end = pos[i], len(evs)
            while k < end:
                e = evs[k]
                t = e.type
                nxt = evs[k + 1] if k + 1 < end else None
                need = None
                if t == "recv":
                    need = orig.get(e.mid, e.mid)
                elif t == "checkpoint" and e.kind == "forced" and nxt is not None and nxt.type == "recv":
                    need = orig.get(nxt.mid, nxt.mid)
                if need is not None and need not in done:
                    waiting.setdefault(need, []).append(i)
                    break
                apply(i, e, nxt)
                k += 1
                if t == "send" and e.mid in waiting:
                    work.extend(waiting.pop(e.mid))
            pos[i] = k
        self.stuck = [self.h.procs[i] for i in range(n) if pos[i] < len(rel[i])]

    def _apply(self, i: int, e, nxt) -> None:
        h = self.h
        p = h.procs[i]
        st = self.state[i]
        t = e.type
        if t == "send":
            k = self.data_ch[e.ch][1]
            pb = st.piggyback(k, e.line)
            self.send_of[e.mid] = e
            if e.piggyback is not None:
                if not same_json(e.piggyback, pb):
                    self._compare(
                        "piggyback-mismatch", e, e.piggyback, pb, f"{p} sends {e.mid} on {e.ch} at line {e.line}"
                    )
                self.eff_pb[e.mid] = e.piggyback
            else:
                self.eff_pb[e.mid] = pb
        elif t == "recv":
            o = h.orig.get(e.mid, e.mid)
            pb = self.eff_pb[o]
            j = self.data_ch[e.ch][0]
            forced = id(e) in self.forced_for
            reason = None if forced else st.condition(j, pb)
            if not forced:
                self.decisions.append(Decision(p, e, reason, False))
            if reason is not None:
                self._missing(i, e, o, reason)
            st.deliver(j, pb)
        elif t == "checkpoint":
            pb = None
            if e.kind == "forced":
                pb = self._judge_forced(i, e, nxt)
            st.checkpoint(pb)
            self.saved[(p, e.ckpt)] = st.copy()
            self.timestamps[(p, e.ckpt)] = st.timestamp()
            if e.vars is not None:
                sim = st.vars()
                if not same_json(e.vars, sim):
                    self._compare(
                        "vars-mismatch",
                        e,
                        e.vars,
                        sim,
                        f"{p}'s checkpoint {e.ckpt} ({e.kind}) at line {e.line} records",
                    )
        elif t == "restore":
            saved = self.saved.get((p, e.ckpt))
            self.state[i] = (saved if saved is not None else self.initial[i]).copy()

    def _judge_forced(self, i: int, e, nxt) -> dict | None:
        h = self.h
        p = h.procs[i]
        if nxt is None or nxt.type != "recv":
            if nxt is None and any(x.line > e.line for x in h.trace_index.of_type("protocol_error")):
                return None  # the run broke before the receive could come: nothing to judge
            what = "the trace ends" if nxt is None else f"its next protocol event is a {nxt.type} (line {nxt.line})"
            self.efficiency.append(
                Violation(
                    "spurious-forced-checkpoint",
                    "cic-efficiency",
                    f"checkpoint {p}:{e.ckpt}",
                    f"{p} takes forced checkpoint {e.ckpt} at line {e.line}, but {what}: a forced checkpoint exists "
                    f"only to precede the receive that forces it, so nothing justifies this one.",
                    [e.line] + ([nxt.line] if nxt is not None else []),
                    {"checkpoints": [[p, e.ckpt]]},
                )
            )
            return None
        o = h.orig.get(nxt.mid, nxt.mid)
        pb = self.eff_pb[o]
        j = self.data_ch[nxt.ch][0]
        reason = self.state[i].condition(j, pb)
        self.forced_for.add(id(nxt))
        self.decisions.append(Decision(p, nxt, reason, True))
        if reason is None:
            send = self.send_of.get(o)
            self.efficiency.append(
                Violation(
                    "spurious-forced-checkpoint",
                    "cic-efficiency",
                    f"checkpoint {p}:{e.ckpt}",
                    f"{p} takes forced checkpoint {e.ckpt} at line {e.line} before processing {nxt.mid} at line "
                    f"{nxt.line}{f' (sent at line {send.line})' if send is not None else ''}, but re-simulating "
                    f"{self._name()} from the trace, the forcing condition does not hold there ({self._values(i, pb)}): "
                    f"the checkpoint is not needed — an efficiency bug (more checkpoints, no more safety).",
                    [e.line, nxt.line] + ([send.line] if send is not None else []),
                    {"messages": [nxt.mid], "checkpoints": [[p, e.ckpt]]},
                )
            )
            return None  # unjustified: re-simulated as a basic checkpoint
        return pb

    def _missing(self, i: int, e, o: str, reason: str) -> None:
        p = self.h.procs[i]
        send = self.send_of.get(o)
        prev = self._previous(i, e)
        before = (
            f"its previous protocol event is a {prev.type} at line {prev.line}"
            if prev is not None
            else "it is the process's first protocol event"
        )
        self.conformance.append(
            Violation(
                "missing-forced-checkpoint",
                "cic-conformance",
                f"receive {e.mid}",
                f"{p} processes {e.mid} at line {e.line}{f', sent at line {send.line}' if send is not None else ''}. "
                f"Re-simulating {self._name()} from the trace, the forcing condition holds there — {reason} — so the "
                f"protocol must take a forced checkpoint immediately before this receive, but {before}. Delivering "
                f"the message in the current interval can create a Z-cycle or a Z-path along which timestamps "
                f"decrease: a safety bug.",
                [e.line] + ([send.line] if send is not None else []) + ([prev.line] if prev is not None else []),
                {"messages": [e.mid]},
            )
        )

    def _previous(self, i: int, e):
        evs = self.rel[i]
        for k, x in enumerate(evs):
            if x is e:
                return evs[k - 1] if k else None
        return None

    def _name(self) -> str:
        return "BCS" if self.form == "bcs" else f"HMNR ({self.form}[] form)"

    def _values(self, i: int, pb: dict) -> str:
        st = self.state[i]
        if isinstance(st, BCSVars):
            return f"m.sn = {pb['sn']}, sn = {st.sn}"
        assert isinstance(st, HMNRGreaterVars)  # FORMS: the other two forms are HMNR's
        me = st.i
        if not isinstance(st, HMNRClockVars):  # the greater[] form
            return (
                f"m.lc = {pb['lc']}, lc = {st.lc}, m.ckpt[{me}] = {pb['ckpt'][me]}, ckpt[{me}] = {st.ckpt[me]}, "
                f"m.taken[{me}] = {bool(pb['taken'][me])}"
            )
        return (
            f"m.ckpt[{me}] = {pb['ckpt'][me]}, ckpt[{me}] = {st.ckpt[me]}, "
            f"m.taken[{me}] = {bool(pb['taken'][me])}, min_to = {['inf' if x == INF else x for x in st.min_to]}"
        )

    def _compare(self, kind: str, e, logged: dict, sim: dict, what: str) -> None:
        """A violation when a logged key is unknown or its value differs (callers skip equal dicts)."""
        diff = [k for k in logged if k in sim and not same_json(logged[k], sim[k])]
        unknown = [k for k in logged if k not in sim]
        if not diff and not unknown:
            return
        parts = [f"{k} = {logged[k]!r} where re-simulation gives {sim[k]!r}" for k in diff]
        parts += [f"unknown variable {k!r}" for k in unknown]
        self.conformance.append(
            Violation(
                kind,
                "cic-conformance",
                f"{e.type} at line {e.line}",
                f"{what} {'; '.join(parts)} ({self._name()} re-simulated from the trace): the logged protocol "
                f"data do not match the protocol.",
                [e.line],
                ({"messages": [e.mid]} if e.type == "send" else {"checkpoints": [[e.proc, e.ckpt]]})
                | {"differs": {k: [logged[k], sim[k]] for k in diff}, "unknown": unknown},
            )
        )


# -- timestamps along Z-paths ---------------------------------------------------------------
def timestamp_violations(
    h: History, graph, comp: list[int], ts: dict, max_witnesses: int
) -> tuple[list[Violation], int]:
    """``timestamp-order`` violations (property ``timestamps``, module docstring):
    checkpoint timestamps ``ts`` (``{(proc, ckpt): ts}``) must strictly increase on every
    process and along every Z-path, the certificate of Z-cycle freedom of BCS and HMNR.
    ``graph``: the R-graph; ``comp``: its SCC labels (``scc_labels``). Returns the first
    ``max_witnesses`` violations, each with a Z-path witness, and the number of further
    ones.

    The Z-cycle of worked example A breaks any timestamps, e.g. the checkpoint numbers:

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> from snapcheck.checker.rgraph import Graph, scc_labels
    >>> h = History(golden("theory_a_zcycle")); g = Graph(h)
    >>> ts = {("P0", 0): 0, ("P0", 1): 1, ("P0", 2): 2, ("P1", 0): 0, ("P1", 1): 1}
    >>> vs, omitted = timestamp_violations(h, g, scc_labels(g), ts, max_witnesses=20)
    >>> [(v.subject, v.witness["checkpoints"]) for v in vs]
    [('checkpoint P0:1', [['P0', 1], ['P0', 1]]), ('checkpoint P1:1', [['P0', 1], ['P1', 1]])]
    """

    def ts_at(i, x):
        return ts.get((h.procs[i], h.ckpt_num[i][x]))

    out: list[Violation] = []
    omitted = 0
    for i in range(h.n):
        for x in range(1, h.L[i] + 1):
            a, b = ts_at(i, x - 1), ts_at(i, x)
            if a is not None and b is not None and b <= a:
                p = h.procs[i]
                out.append(
                    Violation(
                        "timestamp-order",
                        "timestamps",
                        f"checkpoint {h.ckpt_name(i, x)}",
                        f"{p}'s checkpoint {h.label(i, x)} (line {h.ckpt_line(i, x)}) has timestamp {b}, not greater "
                        f"than the timestamp {a} of its previous checkpoint {h.label(i, x - 1)}: timestamps must "
                        f"strictly increase on every process.",
                        [ln for ln in (h.ckpt_line(i, x), h.ckpt_line(i, x - 1)) if ln],  # (C_i,0 may be implied)
                        {"checkpoints": [[p, h.label(i, x - 1)], [p, h.label(i, x)]]},
                    )
                )
    ncomp = max(comp) + 1 if comp else 0
    best = [-INF] * ncomp
    for i in range(h.n):
        for x in range(h.L[i] + 1):
            a = ts_at(i, x)
            if a is not None:
                c = comp[graph.node(i, x + 1)]
                if a > best[c]:
                    best[c] = a
    members: list[list[int]] = [[] for _ in range(ncomp)]
    for v, c in enumerate(comp):
        members[c].append(v)
    adj = graph.adj
    for c in range(ncomp - 1, -1, -1):  # Tarjan numbers sink components first
        bc = best[c]
        if bc == -INF:
            continue
        for u in members[c]:
            for v in adj[u]:
                cv = comp[v]
                if cv != c and best[cv] < bc:
                    best[cv] = bc
    bad = []
    for j in range(h.n):
        for y in range(1, h.L[j] + 1):
            b = ts_at(j, y)
            if b is not None and best[comp[graph.node(j, y)]] >= b:
                bad.append((j, y))
    radj: list[list[int]] | None = None
    for j, y in bad:
        if len(out) >= max_witnesses:
            omitted += 1
            continue
        if radj is None:
            radj = [[] for _ in range(graph.nodes)]
            for u, vs in enumerate(adj):
                for v in vs:
                    radj[v].append(u)
        w = _zpath_witness(h, graph, radj, ts_at, j, y)
        if w is None:
            continue  # only the per-process order is broken (reported above)
        (i, x), msgs = w
        a, b = ts_at(i, x), ts_at(j, y)
        chain = "; ".join(
            f"{m.mid} ({h.procs[m.src]} line {m.send_line} -> {h.procs[m.dst]} line {m.recv_line})" for m in msgs
        )
        out.append(
            Violation(
                "timestamp-order",
                "timestamps",
                f"checkpoint {h.ckpt_name(j, y)}",
                f"Checkpoint {h.ckpt_name(i, x)} (timestamp {a}) Z-precedes {h.ckpt_name(j, y)} (line "
                f"{h.ckpt_line(j, y)}, timestamp {b}) along {chain}. Timestamps must strictly increase along every "
                f"Z-path (the certificate of Z-cycle freedom), but {a} >= {b}.",
                [ln for m in msgs for ln in (m.send_line, m.recv_line)] + [h.ckpt_line(j, y), h.ckpt_line(i, x)],
                {
                    "messages": [m.mid for m in msgs],
                    "checkpoints": [[h.procs[i], h.label(i, x)], [h.procs[j], h.label(j, y)]],
                },
            )
        )
    return out, omitted


def _zpath_witness(h: History, graph, radj, ts_at, j: int, y: int):
    """A source checkpoint C_{i,x} with ts ≥ ts(C_{j,y}) that Z-precedes it, and the messages."""
    target = graph.node(j, y)
    b = ts_at(j, y)
    seen = bytearray(graph.nodes)
    seen[target] = 1
    dq = deque([target])
    while dq:
        u = dq.popleft()
        i, xp = graph.split(u)
        if xp >= 1 and (i != j or xp - 1 >= y):
            a = ts_at(i, xp - 1)
            if a is not None and a >= b:
                path = graph.fewest_messages_path(u, target)
                msgs = [h.msgs[k] for k in path]
                if msgs and is_zpath(msgs, (i, xp - 1), (j, y)):
                    return (i, xp - 1), msgs
        for v in radj[u]:
            if not seen[v]:
                seen[v] = 1
                dq.append(v)
    return None


def zcf_applies(ix) -> bool:
    """Conformance and timestamps apply by default to BCS/HMNR traces that carry the
    protocol's data: a forced checkpoint, logged piggybacks or checkpoint variables
    (``ix``: the trace's ``TraceIndex``).

    >>> from snapcheck.traces import TraceRecorder
    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.trace_index import TraceIndex
    >>> zcf_applies(TraceIndex(golden("theory_a_zcycle")))
    False
    >>> rec = TraceRecorder(["P0", "P1"], [("a", "P0", "P1")], params={"cic": "bcs"})
    >>> _ = rec.send("P0", "a", piggyback={"sn": 0})
    >>> zcf_applies(TraceIndex(rec.trace()))
    True
    """
    for e in ix.of_type("checkpoint"):
        if e.kind == "forced" or e.vars is not None:
            return True
    for e in ix.of_type("send"):
        if e.piggyback is not None:
            return True
    return False


def check_cic(run) -> None:
    """Add the ``cic-conformance``, ``cic-efficiency`` and ``timestamps`` results to a
    ``check_trace`` run (see ``checker.api``) for a trace whose header declares CIC rules
    (``params.cic``), by re-simulating them (``Resimulation``); selecting one of these
    properties for a trace without CIC rules is a ``CheckerUsageError``.

    >>> from snapcheck.checker import check_trace
    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["P0", "P1"], [("a", "P0", "P1")], params={"cic": "bcs"})
    >>> _ = rec.checkpoint("P0"); m = rec.send("P0", "a", piggyback={"sn": 1})
    >>> _ = rec.checkpoint("P1", "forced"); rec.recv("P1", m)
    >>> report = check_trace(rec.trace())
    >>> report.ok, report.stats["cic"]
    (True, {'protocol': 'bcs', 'form': 'bcs', 'receives': 1, 'forced': 1, 'required': 1})
    """
    props = ("cic-conformance", "cic-efficiency", "timestamps")
    kind = run.facts.cic
    if kind is None:  # named or not, not judged: there are no rules to judge by (checker.coverage says so)
        return
    applies = run.opts.properties is None and zcf_applies(run.ix)
    wanted = [p for p in props if run.explicit(p) or applies]
    if not wanted:
        return
    sim = Resimulation(run.trace, run.h, detect_form(run.trace, kind))
    if sim.stuck:
        run.report.notes.append(
            f"CIC re-simulation could not visit every event in a causal order "
            f"(stuck: {', '.join(sim.stuck)}); results cover the visited prefix."
        )
    cap = run.opts.max_per_result
    if "cic-conformance" in wanted:
        run.add("cic-conformance", "trace", sim.conformance)
    if "cic-efficiency" in wanted:
        run.add("cic-efficiency", "trace", sim.efficiency)
    if "timestamps" in wanted:
        vs, omitted = timestamp_violations(run.h, run.graph, run.scc, sim.timestamps, max(cap, run.opts.max_witnesses))
        run.add("timestamps", "trace", vs, omitted)
    forced = sum(1 for d in sim.decisions if d.forced)
    run.report.stats["cic"] = {
        "protocol": kind,
        "form": sim.form,
        "receives": len(sim.decisions),
        "forced": forced,
        "required": sum(1 for d in sim.decisions if d.reason),
    }
