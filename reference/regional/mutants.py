"""Mutants of ``regional-aligned`` (registered in the protocol catalogue): the pitfalls
raised in FLIP-600's discussion and what could go wrong in an implementation.

=================================  ======================================================  ==========================
mutant                             what is broken                                          checker reports
=================================  ======================================================  ==========================
regional-union-epoch               readers keep a job-wide epoch in union state; a         agreement-broken,
                                   fallback mixes epochs (the reviewers' {100, 101})       restored-state
regional-snapshot-mutation         snapshotState writes the checkpoint id into union       agreement-broken,
                                   state: state that changes in snapshotState              restored-state
regional-fallback-commit           a failed region's sink commits the transaction of       fallback-commit
                                   the round it fell back from
regional-notify-before-correction  the coordinator is notified before it is corrected:     split-dropped,
                                   its checkpointed assignment keeps the fallback          split-lost
                                   readers' new splits
regional-live-correction           the correction also takes the splits back from the      split-duplicate,
                                   running enumerator while the failed region keeps        split-doubled,
                                                                                           duplicate-processing
                                   reading them (the PRs' SourceCoordinator, read with
                                   the PRs' "a failed region keeps running")
regional-no-forced-global          the consecutive-regional limit never forces a global    unbounded-drift
                                   checkpoint
regional-dependent-regions         a job with an edge between slices, its regions taken    dependent-regions,
                                   per subtask as if independent                           orphan
regional-stale-ack                 a region that acknowledged and then failed over         stale-fallback
                                   counts as healthy: the checkpoint holds a state its
                                   restarted incarnation no longer has
regional-rescale-by-id             a rescale after a regional checkpoint reads every       restore-unnamed
                                   subtask's state of the restored round, ignoring the
                                   fallback metadata
=================================  ======================================================  ==========================
"""

from __future__ import annotations

from dataclasses import replace

from snapcheck.reference.regional.protocol import RegionalAligned

_DEMO = {"parallelism": 4, "records": 12, "gap": 80, "interval": 150, "decline_prob": 0.05}
_DISCUSSION = "FLIP-600 discussion (dev@flink.apache.org, June–July 2026)"


class UnionEpoch(RegionalAligned):
    """Every reader keeps the job's configuration epoch in union list state; the
    coordinator announces a new epoch before every second round's barrier, so every
    global checkpoint agrees on it. A region that falls back keeps an older epoch."""

    name = "regional-union-epoch"
    mutant_of = "regional-aligned"
    summary = "readers keep an agreed epoch in union state; a fallback mixes epochs of two checkpoints"
    bug = f"{_DISCUSSION}: union state holding an epoch restored as {{100, 101}}"
    expect = ("agreement-broken", "restored-state")
    prop = "agreement"
    demo = dict(_DEMO)

    agreed = "config-epoch"


class SnapshotMutation(RegionalAligned):
    """Every reader writes the id of the checkpoint it takes into its union state inside
    ``snapshotState``: the state depends on the snapshots taken, not only on the data."""

    name = "regional-snapshot-mutation"
    mutant_of = "regional-aligned"
    summary = "snapshotState writes the checkpoint id into union state; a fallback mixes two ids"
    bug = f"{_DISCUSSION}: state that changes in snapshotState breaks the argument"
    expect = ("agreement-broken", "restored-state")
    prop = "agreement"
    demo = dict(_DEMO)

    agreed = "checkpoint-id"


class FallbackCommit(RegionalAligned):
    """The sink of a region that fell back takes ``notifyRegionalCheckpointFallback`` for a
    completion and commits the transaction of the round it fell back from. It needs the
    PRs' reading, in which that sink is still running (in the FLIP's, it is restarting and
    gets nothing)."""

    name = "regional-fallback-commit"
    mutant_of = "regional-aligned"
    summary = "a failed region's sink commits the transaction of a checkpoint it fell back from"
    bug = f"{_DISCUSSION}: notification rules (healthy regions only may commit)"
    expect = ("fallback-commit",)
    prop = "regional-commit"
    demo = {**_DEMO, "recovery": "region-continue"}

    fallback_commit = True

    @classmethod
    def adjust(cls, cfg):
        return replace(cfg, recovery="region-continue")  # under the FLIP's text the region is restarting


class NotifyBeforeCorrection(RegionalAligned):
    """The coordinator's checkpointed split assignment is not corrected for the fallback
    readers (notified first, it treats what it handed out up to the round as checkpointed):
    a split handed to a fallback reader after its round is assigned in the checkpoint but
    held by no reader."""

    name = "regional-notify-before-correction"
    mutant_of = "regional-aligned"
    summary = "the source coordinator is notified before it is corrected for the fallback"
    bug = f"{_DISCUSSION}: checkpointCoordinatorForRegionFallback must run before notification"
    expect = ("split-dropped", "split-lost")
    prop = "split-assignment"
    demo = dict(_DEMO)

    corrects_coordinator = False


class LiveCorrection(RegionalAligned):
    """The correction also gives the fallback readers' new splits back to the running
    enumerator (apache/flink #28963's SourceCoordinator), while the failed region keeps
    running and reading them (the PRs' reading): the enumerator hands them out again."""

    name = "regional-live-correction"
    mutant_of = "regional-aligned"
    summary = "the correction returns splits to the live enumerator while the failed region still reads them"
    bug = "apache/flink #28963–#28966 (SourceCoordinator region fallback adds the splits back at once)"
    expect = ("split-duplicate", "split-doubled", "duplicate-processing")
    prop = "split-assignment"
    demo = {**_DEMO, "recovery": "region-continue"}

    live_correction = True

    @classmethod
    def adjust(cls, cfg):
        return replace(cfg, recovery="region-continue")


class NoForcedGlobal(RegionalAligned):
    """The consecutive-regional limit never forces a global checkpoint: failed regions
    may keep historical state for ever."""

    name = "regional-no-forced-global"
    mutant_of = "regional-aligned"
    summary = "the max-consecutive-failures rule never forces a global checkpoint"
    bug = f"{_DISCUSSION}: two-tier max-consecutive-failures (Tier 1 never fires)"
    expect = ("unbounded-drift",)
    prop = "regional-drift"
    demo = {**_DEMO, "seed": 1}  # seed 0's run never reaches the bug (tests/reference/test_mutant_demos.py)

    forces_global = False


class DependentRegions(RegionalAligned):
    """The job has a hash edge from the sources to the sinks of other slices, but its
    regions are taken per subtask index, as if the slices were independent."""

    name = "regional-dependent-regions"
    mutant_of = "regional-aligned"
    summary = "a job whose slices are joined by an edge, its regions treated as independent"
    bug = f"{_DISCUSSION}: regions joined by BLOCKING/HYBRID or any other edge are not independent"
    expect = ("dependent-regions", "orphan")
    prop = "regional-cut"
    demo = dict(_DEMO)

    regions_by = "subtask"
    cross_edge = True
    # Its job has an edge the base protocol's has not: the base's failure-free run is no
    # reference for its results (every run would "differ" by that edge's records).
    failure_free_oracle = False


class StaleAck(RegionalAligned):
    """A region that acknowledged a pending round and then failed over still counts as
    healthy for that round: the completed checkpoint holds a state its restarted
    incarnation no longer has (Flink aborts pending checkpoints on failover "to ensure
    the EXACTLY_ONCE semantics"; a regional implementation that lets them complete must
    fail the region instead)."""

    name = "regional-stale-ack"
    mutant_of = "regional-aligned"
    summary = "a region that acknowledged a round and then failed over counts as healthy for it"
    bug = "not raised in the FLIP-600 discussion (found by the kit)"
    expect = ("stale-fallback",)
    prop = "regional-cut"
    demo = {
        **_DEMO,
        "failures": (("sink[0]", 600), ("sink[1]", 1400), ("sink[3]", 2200), ("sink[0]", 3000)),
        "stragglers": (("op0[2]", 10.0),),
    }  # a slow region keeps rounds pending across failovers

    fails_acked_regions = False


class RescaleById(RegionalAligned):
    """Rescaling after a regional checkpoint reads every subtask's state of the round being
    restored (the state handles of that checkpoint id), ignoring the fallback metadata:
    a task whose region fell back but that had acknowledged the round brings its newer
    state, which the rest of its region does not match. Rescaling is modelled inside the
    family (``reference.regional.rescale``)."""

    name = "regional-rescale-by-id"
    mutant_of = "regional-aligned"
    summary = "a rescale after a regional checkpoint ignores the fallback and reads the restored round's states"
    bug = f'{_DISCUSSION}: "how do we find the right OperatorSubtaskState, especially in case of rescaling?"'
    expect = ("restore-unnamed",)
    prop = "regional-restore"
    # seed 1: seed 0's run never reaches the bug (tests/reference/test_mutant_demos.py runs every demo)
    demo = {**_DEMO, "failures": (("rescale", 1800),), "recovery": "region-continue", "seed": 1}

    rescale_by_id = True
