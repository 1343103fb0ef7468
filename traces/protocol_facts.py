"""What a trace's protocol declares about itself: the vocabulary shared by the
protocol catalogue (``snapcheck.reference.catalogue``, which writes these facts
into the trace header), the checker (which decides from them what to hold the
trace to) and TLA+ trace validation (which picks the specification from them).

Nothing here knows a protocol by name. A protocol states its facts in the
header's ``protocol.params``:

* ``aligned`` (bool): every snapshot has empty channel state except on
  back-edges (aligned barriers); any message in flight across a round's cut is
  then a violation.
* ``guarantees`` (list of property names from ``PROMISABLE``): properties the
  protocol promises beyond those every checkpointing protocol is held to.
  ``"z-cycles"``: Z-cycle freedom, no checkpoint is useless (Netzer and Xu,
  "Necessary and sufficient conditions for consistent global snapshots");
  ``"rdt"``: rollback-dependency trackability (Wang, "Consistent global
  checkpoints that contain a given set of local checkpoints"), which implies
  Z-cycle freedom. The older spellings ``zcf: true`` and ``rdt: true`` are read
  too.
* ``cic`` (``"bcs"`` or ``"hmnr"``): the communication-induced protocol whose
  rules produced the trace's piggybacks and checkpoint variables, so the
  checker can re-decide every forced checkpoint.
* ``channel_state`` (one of ``CHANNEL_STATE_FORMS``): ``"observed-at-restore"`` when
  recorded channel state is visible only where a restore observed it; ``"recorded"``
  (the default) when every recorded channel state is in the trace; ``"none"`` when the
  protocol records none (aligned barriers), judged as ``"recorded"``.
* ``barriers_delimit_channel_state`` (bool, default true): a round's barrier (marker)
  on a channel ends the channel state its receiver records for the round, as in Chandy
  and Lamport's algorithm and Flink's; false when barriers only make tasks checkpoint
  and the protocol ends each channel's recording otherwise (counters of messages sent
  and received, colours: Lai and Yang, "On distributed snapshots"; Mattern, "Efficient
  algorithms for distributed snapshots and global virtual time approximation"). A
  round is then complete once every participant checkpointed it, whatever barriers are
  still travelling.

>>> facts = DeclaredFacts.of({"name": "my-cic", "params": {"guarantees": ["rdt"], "cic": "bcs"}})
>>> facts.promises("z-cycles"), facts.promises("rdt"), facts.cic
(True, True, 'bcs')
>>> DeclaredFacts.of({"name": "none"}).promises("z-cycles")
False
"""

from __future__ import annotations

from dataclasses import dataclass, field

PROMISABLE = ("z-cycles", "rdt")
CIC_FORMS = ("bcs", "hmnr")
OBSERVED_AT_RESTORE = "observed-at-restore"
CHANNEL_STATE_FORMS = ("recorded", OBSERVED_AT_RESTORE, "none")


@dataclass(frozen=True)
class DeclaredFacts:
    """The facts a trace header declares (optionally completed by ``supplement``,
    e.g. the catalogue's facts for a protocol known by name; the header wins)."""

    aligned: bool = False
    guarantees: frozenset = frozenset()
    cic: str | None = None
    channel_state: str | None = None
    barriers_delimit: bool = True
    declared: frozenset = frozenset()  # which of the keys above the header (or supplement) states

    @classmethod
    def of(cls, protocol: dict | None, supplement: dict | None = None) -> DeclaredFacts:
        params = dict(supplement or {})
        params.update((protocol or {}).get("params") or {})
        guarantees = {g for g in params.get("guarantees") or () if isinstance(g, str)}
        if params.get("zcf"):
            guarantees.add("z-cycles")
        if params.get("rdt"):
            guarantees.add("rdt")
        if "rdt" in guarantees:
            guarantees.add("z-cycles")
        cic = params.get("cic")
        keys = ("aligned", "guarantees", "zcf", "rdt", "cic", "channel_state", "barriers_delimit_channel_state")
        declared = {k for k in keys if k in params}
        return cls(
            aligned=bool(params.get("aligned", False)),
            guarantees=frozenset(guarantees),
            cic=cic if cic in CIC_FORMS else None,
            channel_state=params.get("channel_state"),
            barriers_delimit=params.get("barriers_delimit_channel_state", True) is not False,
            declared=frozenset(declared),
        )

    def promises(self, prop: str) -> bool:
        """Does the protocol promise ``prop`` (one of ``PROMISABLE``)?"""
        return prop in self.guarantees

    @property
    def observed_at_restore(self) -> bool:
        return self.channel_state == OBSERVED_AT_RESTORE


@dataclass(frozen=True)
class TlaMapping:
    """How a protocol's traces are validated against its TLA+ specification: the
    trace specification module in ``specs/`` and how TLC checks it.

    ``kind`` selects the mapping of trace events to specification events
    (``snapshot``: barrier snapshots; ``cic``: forced checkpoints; ``unc``:
    uncoordinated checkpoints with logging and recovery; ``replication``: active
    replicas). ``mode`` is the Unaligned specification's mode; ``models_arrival``:
    the specification distinguishes arrival from processing; ``back_edges``: the
    header's back-edges are modelled (cyclic ABS); ``aligned``: its snapshots record
    channel state only on the back-edges it models (aligned ABS); ``invariants`` are checked
    along the trace and ``refinement`` is the property every step must satisfy.
    """

    module: str
    kind: str = "snapshot"
    mode: str | None = None
    models_arrival: bool = False
    back_edges: bool = False
    aligned: bool = False
    invariants: tuple = ("Consistent", "ChannelStateExact")
    refinement: str | None = "AbsSpec"
    notes: tuple = field(default=())
