"""Regional checkpoints (FLIP-600) on aligned and on unaligned barriers.

``RegionalAligned`` and ``RegionalUnaligned`` are the kit's aligned ABS and
unaligned checkpoints with FLIP-600's coordinator (``reference.regional.simulator``)
on the embarrassingly parallel jobs it targets (``reference.regional.job``).

Two readings of the proposal (``SimConfig.recovery``; ``restart-all``, the
config's default, is the first):

* ``region-restart`` — the FLIP's text: a region that fell back restarts by
  region failover from its fallback state and gets no notification; the
  metadata names, per subtask, the resolved round of the state it keeps.
* ``region-continue`` — the pull requests (apache/flink #28963–#28966): a region
  whose checkpoint failed without a task failure keeps running; its tasks get
  ``notifyRegionalCheckpointFallback`` (which commits nothing); the metadata
  names the completed checkpoint whose state was reused (``refCheckpointId``),
  chains left to the reader.

Parameters (written to the header, drawn from the seed by ``from_config``):
``max_consecutive`` — regional completions in a row before a global checkpoint
is forced (``execution.checkpointing.region.max-consecutive-failures``);
``max_failure_ratio`` — the largest share of failed regions a regional
completion accepts (``…region.max-failure-ratio``); ``reading`` and ``refs`` as
above; plus the commit simulator's notification loss and delay.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from snapcheck.reference.coordinated.abs_aligned import AlignedABS
from snapcheck.reference.coordinated.unaligned import Unaligned
from snapcheck.reference.operators import Sink
from snapcheck.reference.regional.job import JobShape
from snapcheck.reference.regional.rescale import RESCALE
from snapcheck.reference.regional.simulator import RegionalSimulator
from snapcheck.traces.protocol_facts import TlaMapping

READINGS = ("region-restart", "region-continue")
DEFAULTS = {"notify_loss": 0.0, "notify_jitter": 0, "event_loss": 0.0, "event_jitter": 0, "events": 0}

if TYPE_CHECKING:  # a mixin of a barrier protocol: checked as a Protocol
    from snapcheck.reference.protocol import Protocol as _Protocol
else:
    _Protocol = object


class RegionalCheckpoints(_Protocol):
    """The facts and switches shared by both regional protocols (a mixin of a barrier
    protocol). Each mutant flips one switch."""

    family = "regional"
    topologies = "own"
    crash_targets = "src[i], op<k>[i] or sink[i]: a task of slice i (the middle operators depend on the seed)"
    recovery_modes = READINGS
    simulator = RegionalSimulator
    guarantees = ()
    # the commit simulator's switches (two-phase-commit sinks, reliable final commit)
    sink_class = Sink
    commit_on_checkpoint = False
    final_resend = True
    eos_early = False
    await_event_acks = True
    restore_policy = "latest-completed"
    # regional switches
    regions_by = "components"  # pipeline regions: connected components of the data channels
    cross_edge = False  # the job has a src -> sink hash edge across slices
    agreed: str | None = None  # union state all readers agree on: "config-epoch" | "checkpoint-id"
    forces_global = True  # after max_consecutive regional completions the next must be global
    corrects_coordinator = True  # the enumerator's checkpointed state is corrected before notification
    live_correction = False  # the correction also takes the splits back from running readers
    fallback_commit = False  # a failed region's sink commits on the round it fell back from
    fails_acked_regions = True  # a region that fails over fails every pending round, acknowledged or not
    rescale_by_id = False  # a rescale reads each subtask's state of the restored round, ignoring fallbacks

    def __init__(self, **params) -> None:
        super().__init__(**{**DEFAULTS, **params})

    @classmethod
    def from_config(cls, cfg):
        """The protocol for ``cfg``: its reading (``cfg.recovery``) and the limits drawn from the seed."""
        reading = READINGS[0] if cfg.recovery == "restart-all" else cfg.recovery
        if reading not in READINGS:
            raise ValueError(f"recovery {cfg.recovery!r} is not a reading of {cls.name} ({', '.join(READINGS)})")
        rng = random.Random(f"{cfg.seed}/regional")
        return cls(
            reading=reading,
            refs="resolved" if reading == READINGS[0] else "immediate",
            max_consecutive=1 + int(rng.random() * 3),
            max_failure_ratio=(0.5, 1.0)[int(rng.random() * 2)],
        )

    @classmethod
    def task_names(cls, cfg) -> list[str]:
        """Every operator of the job's shape (drawn from the seed), one task per slice."""
        names = JobShape.draw(cfg.seed).operator_names()
        return [f"{name}[{i}]" for name in names for i in range(cfg.parallelism)]

    @classmethod
    def random_config(cls, rnd, failures: bool, hard: bool = False, seed: int = 0) -> dict:
        """2–4 slices, 3–8 records per split, a checkpoint interval of a sixth to a twelfth
        of the input span, declines on every run (0.2–0.6 expected per round, so that
        regions fail and final rounds still succeed), either reading; half the runs
        crash one or two tasks (``hard``: nine in ten, one to three). Half the runs have
        a slow slice (one task three to ten times slower: the skew regional checkpoints
        are made for, which keeps rounds pending while other regions acknowledge, fail
        and recover) and no checkpoint timeout; the others a timeout in two runs in
        three (under the FLIP's reading a region that can never meet the timeout falls
        back and restarts at every round and the job never finishes: a limit of that
        reading these draws leave out). A quarter of the aligned runs are rescaled
        (``reference.regional.rescale``): a third of those in the middle of the input,
        two thirds right after the first round that completed regionally (the moment
        FLIP-600's discussion asked about: which state does a rescale read?).
        The job's shape comes from ``seed`` (``JobShape.draw``), so crash targets and
        times fit it."""
        shape = JobShape.draw(seed)
        regions = rnd.randint(2, 4)
        records = rnd.randint(3, 8)
        gap = rnd.choice((40, 80, 150))
        span = records * gap * shape.splits_per_reader
        interval = max(100, span // rnd.randint(6, 12))
        tasks = regions * len(shape.operator_names())
        fields = dict(
            parallelism=regions,
            records=records,
            gap=gap,
            interval=interval,
            max_concurrent=1 if cls.max_rounds_in_flight == 1 else rnd.randint(1, 2),
            checkpoint_timeout=rnd.choice((None, 4 * interval, 8 * interval)),
            decline_prob=round(rnd.choice((0.1, 0.2, 0.3)) / tasks, 4),
            latency=rnd.randint(1, 80),
            jitter=rnd.choice((1, 30, 60)),
            buffer=rnd.randint(1, 6),
            out_buffer=rnd.randint(1, 4),
            recovery=rnd.choice(READINGS),
            failures=(),
        )
        if failures and rnd.random() < (0.9 if hard else 0.5):
            names = shape.operator_names()
            crashes = sorted(
                (f"{rnd.choice(names)}[{rnd.randrange(regions)}]", rnd.randrange(span + 4 * interval))
                for _ in range(rnd.randint(1, 3) if hard else rnd.randint(1, 2))
            )
            fields["failures"] = tuple(crashes)
        if rnd.random() < 0.5:  # a slow slice, without a checkpoint timeout (docstring)
            fields["stragglers"] = (
                (f"{rnd.choice(shape.operator_names())}[{rnd.randrange(regions)}]", rnd.choice((3.0, 5.0, 10.0))),
            )
            fields["checkpoint_timeout"] = None
        if failures and RESCALE in cls.job_faults and rnd.random() < 0.25:  # rescaled once: in the middle of the input,
            if rnd.random() < 2 / 3:  # or right after the first round that completed with regions falling back
                fields["failures"] += ((RESCALE, "regional-completion", 1),)
            else:
                fields["failures"] += ((RESCALE, span // 3 + rnd.randrange(span // 3 + 1)),)
        return fields


_DEMO = {"parallelism": 3, "records": 6, "gap": 80, "interval": 300, "decline_prob": 0.1}


# what regional rounds add to a barrier protocol's situations (reference.regional.simulator)
REGIONAL_SITUATIONS = ("region-acknowledged", "regional-completion", "acknowledged-fallback")


class RegionalAligned(RegionalCheckpoints, AlignedABS):
    name = "regional-aligned"
    situations = AlignedABS.situations + REGIONAL_SITUATIONS
    job_faults = (RESCALE,)  # rescaling needs aligned checkpoints (reference.regional.rescale)
    summary = (
        "FLIP-600 regional checkpoints on aligned barriers: a failed region keeps an older state, "
        "the rest completes; split enumerator, 2PC sinks, forced global checkpoints"
    )
    tla = TlaMapping(
        "RegionalTrace",
        kind="regional",
        refinement=None,
        invariants=(
            "ComposedConsistent",
            "ComposedChannelStateExact",
            "NoFallbackCommit",
            "SplitsAgree",
            "NoSplitReadTwice",
            "NoStaleState",
            "BoundedDrift",
        ),
    )
    demo = dict(_DEMO)


class RegionalUnaligned(RegionalCheckpoints, Unaligned):
    name = "regional-unaligned"
    situations = Unaligned.situations + REGIONAL_SITUATIONS
    summary = "FLIP-600 regional checkpoints on unaligned barriers (channel state persisted per region)"
    tla = None  # RegionalTrace models aligned snapshots (no channel state)
    demo = dict(_DEMO)
