"""Validation in segments finds exactly what validation of the whole trace finds.

Every mutant trace the snapshot specifications can express (the mutants of
chandy-lamport, abs-*, unaligned and aligned-timeout whose demonstration traces
are failure-free, so that they reach those specifications), correct traces with
declined and aborted rounds, and correct traces long enough for many segments are
validated twice, in segments and whole (``segment=False``); verdict, longest matched
prefix and the location of the first unmatched event must be the same. The traces
are cut for real: each test asserts that segmentation split its traces; the
mutants' short demonstration traces are cut into segments of at least 10 spec
events (more cuts than the default, so more chances for a cut to change a
verdict)."""

from dataclasses import replace

import pytest

from snapcheck.checker.tla import conform as conformance
from snapcheck.checker.tla import segments as segments_module
from snapcheck.checker.tla.conform import ACCEPT, ERROR, REJECT, SEGMENT_EVENTS
from snapcheck.checker.tla.map_rescale import has_recovery
from snapcheck.checker.tla.segments import split
from snapcheck.checker.tla.trace_events import OutOfScope
from snapcheck.reference.catalogue import MUTANTS, tla_mappings
from snapcheck.reference.simulation import SimConfig, simulate
from snapcheck.traces import read_trace

pytestmark = pytest.mark.tlc

SEGMENTED_KINDS = ("snapshot",)


def write(tmp_path, name: str, cfg: SimConfig) -> str:
    path = tmp_path / f"{name}.jsonl"
    simulate(cfg).write(str(path))
    return str(path)


def segments_of(path: str, min_events: int = SEGMENT_EVENTS) -> int:
    """How many segments ``conform`` cuts the trace into (1: not segmented)."""
    try:
        p = conformance.prepare(read_trace(path), tla_mappings())
    except OutOfScope:
        return 1
    return len(split(p, min_events)) if p.family.kind in SEGMENTED_KINDS else 1


def snapshot_mutants() -> list[str]:
    """The mutants whose traces the snapshot specifications judge (failure-free
    demonstration traces of a protocol with a snapshot-family mapping)."""
    mappings = tla_mappings()
    return [
        name
        for name, m in sorted(MUTANTS.items())
        if mappings.get(m.mutant_of) is not None and mappings[m.mutant_of].kind in SEGMENTED_KINDS
    ]


def assert_same(paths: list[str]) -> list:
    segmented = conformance.conform(paths, tla_mappings(), parallel=2)
    whole = conformance.conform(paths, tla_mappings(), parallel=2, segment=False)
    for s, w in zip(segmented, whole):
        assert (s.verdict, s.matched, s.total, s.location) == (w.verdict, w.matched, w.total, w.location), (
            f"segmented:\n{s.render()}\nwhole:\n{w.render()}"
        )
        assert s.verdict != ERROR or not s.message.startswith(("TLC failed", "internal error")), s.render()
    return segmented


def record_fallbacks(monkeypatch) -> list:
    """The traces whose segments ``conform`` had to give up for a whole run (a cut no
    state reached), as they happen."""
    fallbacks: list = []
    combine = conformance.combine

    def recording(p, segments, results):
        v = combine(p, segments, results)
        fallbacks.extend([p.path] if v is None else [])
        return v

    monkeypatch.setattr(conformance, "combine", recording)
    return fallbacks


def test_long_correct_traces_with_declines_in_segments_and_whole(tmp_path):
    """Correct traces, with declined rounds where the specification models them
    (chandy-lamport's does not: its traces here have none)."""
    paths = [
        write(
            tmp_path,
            f"{p}-{seed}",
            SimConfig(protocol=p, workload=w, parallelism=2, seed=seed, records=40, decline_prob=decline),
        )
        for p, w, decline in (
            ("abs-aligned", "q3", 0.1),
            ("aligned-timeout", "q8", 0.1),
            ("unaligned", "q8", 0.1),
            ("chandy-lamport", "q3", 0.0),
        )
        for seed in (1, 2)
    ]
    cuts = [segments_of(p) for p in paths]
    assert all(n >= 3 for n in cuts), cuts
    verdicts = assert_same(paths)
    assert [v.verdict for v in verdicts] == [ACCEPT] * len(paths), [v.render() for v in verdicts]


def test_aligned_timeout_with_declines_is_accepted(tmp_path):
    """A task gave a declined (or aborted) round up and still holds that round's barrier
    in an input buffer when the next round's alignment times out: the new barrier
    overtakes the obsolete one as a priority event, which is dropped later (the reference,
    as Flink). Seed 1: a round-3 barrier overtaken after a decline; seed 2: barriers of an
    aborted round the task snapshotted (11) and of one it gave up (12) overtaken by 13."""
    paths = [
        write(
            tmp_path,
            f"at{seed}",
            SimConfig(
                protocol="aligned-timeout", workload="q8", parallelism=2, seed=seed, records=40, decline_prob=0.1
            ),
        )
        for seed in (1, 2)
    ]
    verdicts = conformance.conform(paths, tla_mappings())
    assert [v.verdict for v in verdicts] == [ACCEPT, ACCEPT], [v.render() for v in verdicts]


@pytest.mark.slow
def test_every_snapshot_mutant_gives_the_same_verdict_in_segments_and_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(conformance, "SEGMENT_EVENTS", 10)
    names = snapshot_mutants()
    assert len(names) >= 8, names
    paths = [
        write(tmp_path, name, SimConfig(protocol=MUTANTS[name].mutant_of, mutant=name, **MUTANTS[name].demo))
        for name in names
    ]
    split_ones = [n for n, p in zip(names, paths) if not has_recovery(read_trace(p)) and segments_of(p, 10) > 1]
    assert len(split_ones) >= len(names) // 2, split_ones
    verdicts = assert_same(paths)
    assert sum(v.verdict == REJECT for v in verdicts) >= len(names) // 3, [v.render() for v in verdicts]


def stale_cuts(path: str, min_events: int = SEGMENT_EVENTS) -> list[int]:
    """The rounds after which ``conform`` cuts the trace although the round was aborted
    and some channel's last processed marker is of an older round (a task declined the
    round without cancellation markers, so its downstream never heard of it)."""
    p = conformance.prepare(read_trace(path), tla_mappings())
    segs = split(p, min_events)
    family, procs, coords, data_chans, ctrl_chans, ends, back = p.topology
    out = []
    for seg in segs[1:]:
        before = p.events[: seg.offset]
        r = max((e["n"] for e in before if e["op"] == "start"), default=0)
        closed = {e["c"]: e["n"] for e in before if e["op"] == "recv" and e["k"] != "d"}
        aborted = any(e["op"] == "abort" and e["n"] == r for e in before)
        if aborted and any(closed.get(c, 0) < r for c in set(data_chans) | set(ctrl_chans)):
            out.append(r)
    return out


def test_cuts_after_aborted_rounds_some_tasks_never_heard_of(tmp_path, monkeypatch):
    """Unaligned checkpoints on a cyclic graph with declines: a task that declines
    sends no cancellation markers, the round is aborted and the tasks downstream never
    handle it, so after it some channels stay closed at older rounds. The trace is still
    cut there (a run of aborted rounds leaves no long segment), every cut is reached
    (no fallback to a whole run) and the verdicts equal the whole run's."""
    fallbacks = record_fallbacks(monkeypatch)
    paths = [
        write(
            tmp_path,
            f"{protocol}-{seed}",
            SimConfig(
                protocol=protocol,
                workload="random-cyclic",
                parallelism=2,
                seed=seed,
                records=12,
                decline_prob=0.2,
                interval=100,
                aligned_timeout=200,
                latency=2,
                jitter=5,
                buffer=1,
                out_buffer=1,
            ),
        )
        for protocol, seed in (("unaligned", 2), ("unaligned", 6), ("aligned-timeout", 9))
    ]
    for path in paths:
        assert stale_cuts(path), path
        p = conformance.prepare(read_trace(path), tla_mappings())
        assert max(s.real for s in split(p, SEGMENT_EVENTS)) <= 3 * SEGMENT_EVENTS, path
    verdicts = assert_same(paths)
    assert not fallbacks, fallbacks
    assert [v.verdict for v in verdicts] == [ACCEPT] * len(paths), [v.render() for v in verdicts]


@pytest.mark.slow
def test_cuts_with_obsolete_markers_in_flight(tmp_path, monkeypatch):
    """Aligned checkpoints that time out into unaligned ones on a cyclic graph with
    one-record buffers and declines: barriers of finished rounds queue behind the
    records on slow channels, so some are nearly always in flight and a cut that
    waited for none would leave segments of dozens of rounds. The trace is cut where
    the markers in flight are obsolete (``segments.clean_cuts``): several times as
    many segments as without such cuts, every cut reached (no fallback to a whole
    run), and the verdicts equal the whole run's."""
    fallbacks = record_fallbacks(monkeypatch)
    paths = [
        write(
            tmp_path,
            f"at-{seed}",
            SimConfig(
                protocol="aligned-timeout",
                workload="reachability",
                parallelism=2,
                seed=seed,
                records=5,
                gap=30,
                interval=150,
                aligned_timeout=50,
                latency=4,
                jitter=1,
                buffer=1,
                out_buffer=1,
                control_latency=1,
                decline_prob=0.1,
            ),
        )
        for seed in (1, 5)
    ]
    for path in paths:
        p = conformance.prepare(read_trace(path), tla_mappings())
        with monkeypatch.context() as clean:  # the cuts where every round is finished
            clean.setattr(segments_module, "OPEN_CUTS", frozenset())
            with_obsolete = len(split(p, SEGMENT_EVENTS))
            clean.setattr(segments_module, "OBSOLETE_IN_FLIGHT", frozenset())
            without = len(split(p, SEGMENT_EVENTS))
        assert with_obsolete >= 3 * without, (path, with_obsolete, without)
    verdicts = assert_same(paths)
    assert not fallbacks, fallbacks
    assert [v.verdict for v in verdicts] == [ACCEPT] * len(paths), [v.render() for v in verdicts]


@pytest.mark.slow
def test_cuts_with_late_barriers_of_aborted_rounds(tmp_path, monkeypatch):
    """Aligned checkpoints that time out on a cyclic graph, with a checkpoint timeout
    shorter than a round takes there: every round is aborted after some tasks took
    their checkpoint, and the barriers of those rounds pile up on the slow channels
    of the cycle. Each such barrier only ends the recording of an aborted round's
    channel state; the trace is cut with them in flight (``segments.LATE_BARRIERS``),
    into segments of at most three rounds where, without such cuts, one segment holds
    dozens; every cut is reached and the verdict is the whole run's."""
    fallbacks = record_fallbacks(monkeypatch)
    cfg = SimConfig(
        protocol="aligned-timeout",
        workload="reachability",
        parallelism=2,
        seed=2,
        records=4,
        gap=50,
        interval=80,
        checkpoint_timeout=300,
        aligned_timeout=150,
        latency=13,
        jitter=400,
        buffer=1,
        out_buffer=1,
        decline_prob=0.1,
    )
    path, (without, _), (rounds, _) = _longest_segments(tmp_path, monkeypatch, cfg, "LATE_BARRIERS")
    assert without >= 10
    assert rounds <= 3
    _assert_accepted_as_whole(path, fallbacks)


# A cycle whose checkpoint timeout is shorter than a round takes behind a straggler
# ten times slower: every round is aborted, and rounds overlap.
STRAGGLER_CYCLE = SimConfig(
    protocol="unaligned",
    workload="reachability",
    parallelism=2,
    seed=2,
    records=3,
    gap=30,
    interval=120,
    checkpoint_timeout=300,
    latency=13,
    jitter=400,
    out_buffer=1,
    control_latency=75,
    control_jitter=75,
    stragglers=(("join[0]", 10.0),),
    decline_prob=0.1,
)


def test_open_cuts_when_aborted_rounds_overlap(tmp_path, monkeypatch):
    """Unaligned checkpoints on a cyclic graph with a straggler ten times slower and a
    checkpoint timeout shorter than a round takes there: every round is aborted, rounds
    overlap, and tasks keep snapshotting, declining and recording aborted rounds long
    after the abort, so there is hardly a point after which no event refers to an older
    round. Without open cuts (``segments.OPEN_CUTS``) one segment holds 1,712 events
    and 23 rounds (a campaign trace of this kind, 26,359 events: one segment of 20,323
    and 143 rounds, which TLC did not finish in 900 s); with them the trace is cut where
    the rounds still referred to are aborted and the events determine the state,
    into segments of at most six rounds; every cut is reached (no fallback to a whole
    run) and the verdict is the whole run's."""
    fallbacks = record_fallbacks(monkeypatch)
    path, (without, _), (rounds, events) = _longest_segments(tmp_path, monkeypatch, STRAGGLER_CYCLE, "OPEN_CUTS")
    assert without >= 15
    assert rounds <= 6 and events <= 3 * SEGMENT_EVENTS, (rounds, events)
    _assert_accepted_as_whole(path, fallbacks)


# Checkpoint timeouts shorter than a round takes: every round is aborted.
ALIGNED_ABORTED = {
    # three rounds in flight at once: no point has every started round finished
    "abs-aligned": SimConfig(
        protocol="abs-aligned",
        workload="diamond",
        parallelism=2,
        seed=1,
        records=3,
        gap=30,
        interval=80,
        max_concurrent=3,
        checkpoint_timeout=300,
        latency=44,
        jitter=1,
        buffer=2,
        control_latency=75,
    ),
    # a cycle with a straggler ten times slower: rounds overlap
    "aligned-timeout": replace(STRAGGLER_CYCLE, protocol="aligned-timeout", seed=3, aligned_timeout=50),
}


@pytest.mark.parametrize(("protocol", "rounds_without"), [("abs-aligned", 12), ("aligned-timeout", 6)])
def test_open_cuts_in_the_aligned_forms(tmp_path, monkeypatch, protocol, rounds_without):
    """Aligned ABS with three rounds in flight at once, and aligned checkpoints with a
    timeout on a cycle with a straggler, every round aborted: tasks keep aligning
    aborted rounds (and learn of the abort only when their next event needs it), and
    rounds overlap. Without open cuts for the aligned forms the longest segment holds
    14 rounds and 1,181 of 1,962 events (abs-aligned) or 6 rounds and 363 of 2,105
    events (aligned-timeout); campaign run 7,025,590 of abs-aligned (8,777 spec
    events) had a segment of 7,507 events and 67 rounds, accepted after 690 s. With
    them the trace is also cut where the rounds still referred to are each aborted,
    at the cut or later, nothing is owed and the events determine the state (tasks
    aligning included), into segments of a few rounds; every cut is reached and the
    verdict is the whole run's."""
    fallbacks = record_fallbacks(monkeypatch)
    cfg = ALIGNED_ABORTED[protocol]
    path, (without, _), (rounds, events) = _longest_segments(tmp_path, monkeypatch, cfg, "OPEN_CUTS")
    assert without >= rounds_without
    assert rounds <= 5 and events <= 2 * SEGMENT_EVENTS, (rounds, events)
    _assert_accepted_as_whole(path, fallbacks)


def _longest_segments(tmp_path, monkeypatch, cfg, cuts: str):
    """The trace of ``cfg`` and, without and with the cuts that ``segments.<cuts>``
    allows, the most rounds and the most real events of one of its segments."""
    path = write(tmp_path, cuts.lower(), cfg)
    p = conformance.prepare(read_trace(path), tla_mappings())

    def longest() -> tuple[int, int]:
        segs = split(p, SEGMENT_EVENTS)
        return max(s.prepared.bounds["TRounds"] for s in segs), max(s.real for s in segs)

    with monkeypatch.context() as without:
        without.setattr(segments_module, cuts, frozenset())
        before = longest()
    return path, before, longest()


def _assert_accepted_as_whole(path, fallbacks) -> None:
    """Segmented and whole, the trace is accepted, and every cut was reached."""
    verdicts = assert_same([path])
    assert not fallbacks, fallbacks
    assert [v.verdict for v in verdicts] == [ACCEPT], [v.render() for v in verdicts]
