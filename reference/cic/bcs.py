"""BCS communication-induced checkpointing (Briatico, Ciuffoletti, Simoncini, "A
distributed domino-effect free recovery algorithm", 1984), exactly as docs/theory.md,
"BCS", states it, on top of UNC (``reference.uncoordinated.protocol``).

Each task keeps a sequence number ``sn`` (0 at the initial checkpoint):

* basic checkpoint: ``sn := sn + 1``, the checkpoint is timestamped ``sn``;
* send: piggyback ``m.sn := sn`` (4 bytes);
* receive ``m``: if ``m.sn > sn``, then ``sn := m.sn`` and a forced checkpoint
  timestamped ``m.sn`` is taken *before* the message is processed.

``sn`` is constant within an interval and every message goes from an interval
with timestamp ``a`` to one with timestamp ``≥ a``; timestamps strictly increase
along every Z-path, so no checkpoint is useless (ZCF).
"""

from __future__ import annotations

from snapcheck.reference.uncoordinated.protocol import UncoordinatedProtocol, UncoordinatedTask
from snapcheck.traces.protocol_facts import TlaMapping


class BCSTask(UncoordinatedTask):
    piggyback_size = 4

    def __init__(self, ctx, protocol) -> None:
        super().__init__(ctx, protocol)
        self.sn = 0

    def piggyback(self, ch) -> dict:
        return {"sn": self.sn}

    def must_force(self, ch, pb: dict) -> str | None:
        return "sn" if pb["sn"] > self.sn else None

    def checkpoint_taken(self, kind: str, pb: dict | None) -> None:
        if kind == "forced":
            assert pb is not None  # a forced checkpoint comes with the piggyback that forced it
            self.sn = pb["sn"]
        else:
            self.sn += 1

    def vars(self) -> dict:
        return {"sn": self.sn}

    def restore_vars(self, vars: dict | None) -> None:
        assert vars is not None  # saved by vars(), a dict
        self.sn = vars["sn"]


class BCS(UncoordinatedProtocol):
    name = "bcs"
    situations = UncoordinatedProtocol.situations + ("forced-checkpoint",)
    family = "cic"
    guarantees = ("z-cycles",)
    cic = "bcs"
    tla = TlaMapping("BCSTrace", kind="cic", invariants=(), refinement=None)
    summary = "CIC, BCS: UNC + piggybacked sequence number, forced checkpoints (ZCF)"
    task_class = BCSTask
