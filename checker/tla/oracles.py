"""Two oracles held against each other: a trace specification's verdict (``conform``)
and the checker's (``check_trace``) on the same trace.

They *disagree* when the specification REJECTs a trace the checker finds nothing
wrong with, or ACCEPTs one in which the checker reports a violation of a property
the specification expresses. Which checker violation kinds a trace specification
expresses (``MODELLED``) follows from what TLC checks along a trace of it, its
refinement and invariants and the enabling conditions of its steps
(docs/specs.md, "Conformance in the campaigns"):

* ``ChandyLamportTrace``, ``ABSTrace``, ``UnalignedTrace``: the refinement of
  ``ConsistentSnapshot`` (``Consistent``, ``ChannelStateExact``) and FIFO channels:
  every completed snapshot is a consistent cut whose channel state is exactly the
  messages in transit (the checker's ``consistency`` and ``channel-state``
  properties), and a round completes only when every task took it
  (``premature-completion``). Termination is not expressed: a finite trace is a
  prefix of a behaviour, so a round left open is accepted (``incomplete-round``).
* ``BCSTrace``, ``HMNRTrace``: a forced checkpoint is taken exactly when the
  protocol's condition holds (``missing-forced-checkpoint``,
  ``spurious-forced-checkpoint``); the piggybacked values themselves and Z-cycles
  are not in the trace specification.
* ``UncoordinatedTrace``: the recovery line is ``RollbackPropagation``'s
  (``inconsistent-restore``), every in-transit message of the line is logged and
  replayed exactly once (``lost``, ``duplicate-processing``), and no log entry is
  truncated while a recovery line needs it (``premature-truncation``).
* ``RescaleTrace``: every recorded in-flight record reaches a restored task that
  owns its key group and is processed before live input on its channel, and no
  record of the failed epoch is processed after a restore (``in-flight-lost``,
  ``in-flight-misrouted``, ``in-flight-after-live``, ``duplicate-processing``).
  It takes the restored round's snapshot as given: a record both processed before
  the snapshot and recorded as in flight is replayed exactly as the snapshot says,
  so a ``duplicate-processing`` that comes with a broken snapshot (the checker also
  reports ``SNAPSHOT_BROKEN`` kinds) is the snapshot's, outside it (``GIVEN``). So is
  the offset a source restores: a record an input log delivers again that the
  restored state already counted (``input_log_duplicates``).
* ``LiveRobinTrace``: ``ReplicaAgreement`` and the refinement of the
  deterministic merge (``replica-order-divergence``, ``replica-output-divergence``),
  and the sink delivering each output once after deduplication (``dedup-lost``,
  ``dedup-duplicate``); that a replica stalls is liveness (not expressed).
* ``RegionalTrace``: ``NoFallbackCommit``, ``BoundedDrift`` and the fallback
  rules (``fallback-commit``, ``unbounded-drift``, ``stale-fallback``).

Other kinds the checker reports (output commit, changelogs, finished tasks, …) are
outside every specification: a checker violation of one of them with an ACCEPT is
not a disagreement.
"""

from __future__ import annotations

from collections.abc import Iterable

_SNAPSHOT = frozenset(
    {
        "orphan",
        "dropped",
        "phantom",
        "order",
        "duplicate-recorded",
        "wrong-channel",
        "aligned-in-flight",
        "premature-completion",
    }
)
MODELLED: dict[str, frozenset[str]] = {
    "ChandyLamportTrace": _SNAPSHOT,
    "ABSTrace": _SNAPSHOT,
    "UnalignedTrace": _SNAPSHOT,
    "BCSTrace": frozenset({"missing-forced-checkpoint", "spurious-forced-checkpoint"}),
    "HMNRTrace": frozenset({"missing-forced-checkpoint", "spurious-forced-checkpoint"}),
    "UncoordinatedTrace": frozenset({"inconsistent-restore", "lost", "duplicate-processing", "premature-truncation"}),
    "RescaleTrace": frozenset(
        {"in-flight-lost", "in-flight-misrouted", "in-flight-after-live", "duplicate-processing"}
    ),
    "LiveRobinTrace": frozenset(
        {"replica-order-divergence", "replica-output-divergence", "dedup-lost", "dedup-duplicate"}
    ),
    "RegionalTrace": frozenset({"fallback-commit", "unbounded-drift", "stale-fallback"}),
}


SNAPSHOT_BROKEN = _SNAPSHOT | {"inconsistent-restore"}
GIVEN: dict[str, frozenset[str]] = {"RescaleTrace": frozenset({"duplicate-processing"})}
"""Kinds a specification expresses only of a trace whose snapshot the checker finds exact."""


def disagreement(spec: str, verdict: str, checker_kinds: Iterable[str], input_log_only: bool = False) -> str | None:
    """Why the specification ``spec`` (a trace module) with ``verdict`` (ACCEPT or REJECT)
    and the checker reporting ``checker_kinds`` disagree on a trace, or None if they do not.
    ``input_log_only``: every duplicate the checker reports is a record an input log
    delivers again (``input_log_duplicates``), which ``GIVEN`` specifications leave to
    the restored state.

    >>> disagreement("ABSTrace", "REJECT", [])
    'the specification rejects a trace the checker passes'
    >>> disagreement("ABSTrace", "ACCEPT", ["orphan", "incomplete-round"])
    'the checker reports orphan, which ABSTrace expresses, and the specification accepts'
    >>> disagreement("ABSTrace", "ACCEPT", ["incomplete-round"]) is None  # liveness: not expressed
    True
    >>> disagreement("RescaleTrace", "ACCEPT", ["duplicate-processing", "phantom"]) is None  # the snapshot's
    True
    """
    kinds = sorted(set(checker_kinds))
    if verdict == "REJECT" and not kinds:
        return "the specification rejects a trace the checker passes"
    if verdict == "ACCEPT":
        broken = input_log_only or SNAPSHOT_BROKEN.intersection(kinds)
        given = GIVEN.get(spec, frozenset()) if broken else frozenset()
        expressed = [k for k in kinds if k in MODELLED.get(spec, ()) and k not in given]
        if expressed:
            return f"the checker reports {', '.join(expressed)}, which {spec} expresses, and the specification accepts"
    return None


def input_log_duplicates(trace, violations) -> bool:
    """Is every ``duplicate-processing`` among ``violations`` (the checker's on ``trace``)
    of a record an input log (a process of role ``external``) sent: a source reading
    again what the offset in its restored state says it had read?

    >>> from snapcheck.traces import TraceRecorder
    >>> from snapcheck.checker import check_trace
    >>> rec = TraceRecorder([{"id": "in", "role": "external"}, "S"], [("in>S", "in", "S")])
    >>> m = rec.send("in", "in>S"); rec.recv("S", m); _ = rec.checkpoint("S")
    >>> rec.fail("S"); rec.restore("S", 1); rec.recv("S", rec.replay("in", m, "source"))
    >>> t = rec.trace(); report = check_trace(t)
    >>> sorted(report.kinds), input_log_duplicates(t, report.violations)
    (['duplicate-processing'], True)
    """
    external = {p.id for p in trace.header.processes if p.role == "external"}
    sender = {e.mid: e.proc for e in trace.events if e.type == "send"}
    dups = [v for v in violations if v.kind == "duplicate-processing"]
    return bool(dups) and all(sender.get((v.witness.get("messages") or [None])[0]) in external for v in dups)
