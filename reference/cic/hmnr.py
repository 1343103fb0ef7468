"""HMNR communication-induced checkpointing (Hélary, Mostéfaoui, Netzer, Raynal,
"Communication-based prevention of useless checkpoints in distributed
computations", Distributed Computing 13(1), 2000), as CheckMate implements it
("CheckMate: Evaluating Checkpointing Protocols for Streaming Dataflows", §III-C),
exactly as docs/theory.md, "HMNR", states it, on top of UNC (``reference.uncoordinated.protocol``).

Vectors are indexed by task (``n`` = number of tasks, in trace-header order).

**``greater[]`` form** (CheckMate's): variables ``lc``, ``ckpt[n]``, ``taken[n]``,
``greater[n]``, ``sent_to[n]``; piggyback ``lc, ckpt, taken, greater``.

* checkpoint: ``sent_to := false``; ``taken[k] := greater[k] := true`` for ``k ≠ i``;
  ``lc += 1``; ``ckpt[i] += 1``;
* send to ``P_k``: ``sent_to[k] := true``;
* receive ``m`` from ``P_j``: force a checkpoint first iff
  ``C1 = (∃k: sent_to[k] ∧ m.greater[k]) ∧ m.lc > lc`` or
  ``C2 = m.ckpt[i] = ckpt[i] ∧ m.taken[i]``; then merge ``lc``/``greater``
  (raise to ``m.lc``, or conjunction when equal) and ``ckpt``/``taken``.

**``clock[]``/``min_to[]`` form** (BlackSP's ``HMNRProtocol.cs``): ``clock[n]``
(``clock[i] = lc``), ``min_to[k]`` = ``clock[i]`` at the first send to ``P_k`` in
the interval (∞ if none); piggyback ``clock, ckpt, taken``;
``C1' = ∃k: sent_to[k] ∧ m.clock[j] > min_to[k] ∧ m.clock[j] > max(clock[k], m.clock[k])``,
C2 unchanged; receipt raises ``clock`` componentwise. Both forms make the same
decisions (tested on every receive of many random runs).

The initial checkpoint is not taken through the procedure (CheckMate): ``lc = 0``,
``ckpt = 0``, ``taken = greater = false``. Piggyback size: 4 bytes per integer, one
byte per boolean (``4 + 6n`` bytes, resp. ``9n``). A checkpoint's timestamp is
``lc`` (resp. ``clock[i]``); under HMNR timestamps strictly increase along every
Z-path, so no checkpoint is useless (ZCF; docs/theory.md, "Timestamps along Z-paths").
"""

from __future__ import annotations

from snapcheck.reference.uncoordinated.protocol import UncoordinatedProtocol, UncoordinatedTask
from snapcheck.traces.protocol_facts import TlaMapping

INF = float("inf")
FORMS = ("greater", "clock")


class HMNRTask(UncoordinatedTask):
    """The ``greater[]`` form."""

    use_c1 = True
    use_c2 = True

    def __init__(self, ctx, protocol) -> None:
        super().__init__(ctx, protocol)
        n = len(ctx.sim.tasks)
        self.i = ctx.pid
        self.n = n
        self.piggyback_size = 4 + 6 * n
        self.lc = 0
        self.ckpt = [0] * n
        self.taken = [False] * n
        self.greater = [False] * n
        self.sent_to = [False] * n

    def piggyback(self, ch) -> dict:
        self.sent_to[ch.dst.pid] = True
        return {"lc": self.lc, "ckpt": self.ckpt[:], "taken": self.taken[:], "greater": self.greater[:]}

    def c1(self, ch, pb: dict) -> bool:
        return pb["lc"] > self.lc and any(s and g for s, g in zip(self.sent_to, pb["greater"]))

    def c2(self, pb: dict) -> bool:
        i = self.i
        return pb["ckpt"][i] == self.ckpt[i] and pb["taken"][i]

    def must_force(self, ch, pb: dict) -> str | None:
        if self.use_c1 and self.c1(ch, pb):
            return "C1"
        if self.use_c2 and self.c2(pb):
            return "C2"
        return None

    def checkpoint_taken(self, kind: str, pb: dict | None) -> None:
        n, i = self.n, self.i
        self.sent_to = [False] * n
        self.taken = [True] * n
        self.taken[i] = False
        self.greater = [True] * n
        self.greater[i] = False
        self.lc += 1
        self.ckpt[i] += 1

    def delivered(self, ch, pb: dict) -> None:
        i = self.i
        mlc = pb["lc"]
        if mlc > self.lc:
            self.lc = mlc
            self.greater = list(pb["greater"])
            self.greater[i] = False
        elif mlc == self.lc:
            self.greater = [a and b for a, b in zip(self.greater, pb["greater"])]
        self.merge_ckpt(pb)

    def merge_ckpt(self, pb: dict) -> None:
        i = self.i
        ckpt, taken = self.ckpt, self.taken
        for k, (mc, mt) in enumerate(zip(pb["ckpt"], pb["taken"])):
            if k == i:
                continue
            c = ckpt[k]
            if mc > c:
                ckpt[k] = mc
                taken[k] = mt
            elif mc == c and mt:
                taken[k] = True

    def vars(self) -> dict:
        return {"lc": self.lc, "ckpt": self.ckpt[:], "taken": self.taken[:], "greater": self.greater[:]}

    def restore_vars(self, vars: dict | None) -> None:
        assert vars is not None  # saved by vars(), a dict
        self.lc = vars["lc"]
        self.ckpt = list(vars["ckpt"])
        self.taken = list(vars["taken"])
        self.greater = list(vars["greater"])
        self.sent_to = [False] * self.n


class HMNRClockTask(HMNRTask):
    """The ``clock[]``/``min_to[]`` form."""

    def __init__(self, ctx, protocol) -> None:
        super().__init__(ctx, protocol)
        n = self.n
        self.piggyback_size = 9 * n
        self.clock = [0] * n
        self.min_to = [INF] * n
        del self.lc, self.greater

    def note_send(self, k: int) -> None:
        if not self.sent_to[k]:
            self.sent_to[k] = True
            self.min_to[k] = self.clock[self.i]

    def piggyback(self, ch) -> dict:
        self.note_send(ch.dst.pid)
        return {"clock": self.clock[:], "ckpt": self.ckpt[:], "taken": self.taken[:]}

    def c1(self, ch, pb: dict) -> bool:
        mc = pb["clock"]
        mj = mc[ch.src.pid]
        clock, min_to = self.clock, self.min_to
        for k, s in enumerate(self.sent_to):
            if s and mj > min_to[k] and mj > clock[k] and mj > mc[k]:
                return True
        return False

    def checkpoint_taken(self, kind: str, pb: dict | None) -> None:
        n, i = self.n, self.i
        self.sent_to = [False] * n
        self.min_to = [INF] * n
        self.taken = [True] * n
        self.taken[i] = False
        self.clock[i] += 1
        self.ckpt[i] += 1

    def delivered(self, ch, pb: dict) -> None:
        i = self.i
        mc = pb["clock"]
        clock = self.clock
        mj = mc[ch.src.pid]
        if mj > clock[i]:
            clock[i] = mj
        for k, c in enumerate(mc):
            if k != i and c > clock[k]:
                clock[k] = c
        self.merge_ckpt(pb)

    def vars(self) -> dict:
        return {"clock": self.clock[:], "ckpt": self.ckpt[:], "taken": self.taken[:]}

    def restore_vars(self, vars: dict | None) -> None:
        assert vars is not None  # saved by vars(), a dict
        self.clock = list(vars["clock"])
        self.ckpt = list(vars["ckpt"])
        self.taken = list(vars["taken"])
        self.sent_to = [False] * self.n
        self.min_to = [INF] * self.n


class HMNR(UncoordinatedProtocol):
    name = "hmnr"
    situations = UncoordinatedProtocol.situations + ("forced-checkpoint",)
    family = "cic"
    guarantees = ("z-cycles",)
    cic = "hmnr"
    # Z-cycle freedom is a property of whole histories: model checked, not checked along a trace
    tla = TlaMapping("HMNRTrace", kind="cic", invariants=(), refinement=None)
    summary = "CIC, HMNR greater[] form (CheckMate): UNC + piggybacked vectors, forced checkpoints (ZCF)"
    task_class = HMNRTask

    def __init__(self, form: str | None = None, **params) -> None:
        own = "clock" if issubclass(type(self).task_class, HMNRClockTask) else "greater"
        form = form or own
        if form not in FORMS:
            raise ValueError(f"hmnr: form must be one of {', '.join(FORMS)}, not {form!r}")
        if form != own:
            if type(self).task_class not in (HMNRTask, HMNRClockTask):
                raise ValueError(f"hmnr: this variant exists only in the {own}[] form")
            self.task_class = HMNRClockTask if form == "clock" else HMNRTask
        super().__init__(form=form, **params)


class HMNRClock(HMNR):
    """The same protocol in the ``clock[]``/``min_to[]`` form (registered as ``hmnr-clock``;
    the trace still says ``hmnr``, with ``params.form = "clock"``)."""

    name = "hmnr-clock"
    trace_name = "hmnr"

    summary = "CIC, HMNR clock[]/min_to[] form (BlackSP): same decisions as hmnr; trace name hmnr"
    task_class = HMNRClockTask
