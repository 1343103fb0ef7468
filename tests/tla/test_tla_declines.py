"""Declined, aborted, subsumed and cancelled rounds in trace validation (ABSTrace,
UnalignedTrace), on hand-made traces, most of them of the diamond s -> a, s -> b -> a
(where aligned ABS without cancellation deadlocks under backpressure).

A cancellation marker is a ``send`` with ``kind: "cancel"`` and its round (mid
``<ch>:c<round>``), received with a ``recv``; a decline is the task's control
message ``["decline", r]`` to the coordinator or, without one, its first
cancellation marker of the round; the declining task takes no checkpoint of that
round. The traces are built with ``TraceRecorder``; the TLC
tests give the mapped traces to TLC directly (``validate_batch``), and one test
goes end to end through files."""

import pytest

from snapcheck.checker.tla import conform as conformance
from snapcheck.checker.tla.conform import ACCEPT, REJECT, validate_batch
from snapcheck.checker.tla.trace_events import OutOfScope
from snapcheck.reference.catalogue import tla_mappings
from snapcheck.traces import TraceRecorder


def prepare(trace):
    return conformance.prepare(trace, tla_mappings())


def line_of(rec: TraceRecorder, **match) -> int:
    """File line (header = 1) of the first recorded event with these fields."""
    for n, e in enumerate(rec.events, 2):
        if all(e.get(k) == v for k, v in match.items()):
            return n
    raise AssertionError(f"no event {match}")


def cancel(rec: TraceRecorder, sender: str, receiver: str, ch: str, r: int) -> None:
    """The cancellation marker of round r sent on ch, then received."""
    rec.recv(receiver, rec.cancel(sender, ch, r))


# the diamond s -> a, s -> b -> a, then a -> k; b tells the coordinator its declines
DIAMOND_CHANNELS = [
    {"id": "co>s", "src": "co", "dst": "s", "kind": "control"},
    {"id": "b>co", "src": "b", "dst": "co", "kind": "control"},
    ("s>a", "s", "a"),
    ("s>b", "s", "b"),
    ("b>a", "b", "a"),
    ("a>k", "a", "k"),
]


def diamond(
    protocol="abs-aligned",
    *,
    cancels=True,
    tells=True,
    early_cancel=False,
    early_recv=False,
    late_checkpoint=False,
    forward=False,
    subsume=False,
) -> TraceRecorder:
    """Round 1: s snapshots and sends its barriers, then record r1 on s>a; a blocks s>a
    at s's barrier; b declines round 1, sending a cancellation marker on b>a (unless
    not ``cancels``: the behaviour without cancellation); the coordinator aborts
    round 1. Round 2 completes.

    ``tells``: b tells the coordinator of its decline (without it, its cancellation
    marker is the decline, as the trace format says); ``early_cancel``: b sends its
    cancellation marker before it processed s's barrier, declining a round it does
    not align yet (a bug).
    ``early_recv``: a processes r1 from its blocked input before anything gave the
    round up (a bug); ``late_checkpoint``: a snapshots round 1 after its cancellation;
    ``forward``: a forwards the cancellation on a>k; ``subsume``: a second source s2
    into b declines round 1 instead, b gives the round up on s2's cancellation marker
    without forwarding it, and the coordinator aborts round 1 only when round 2
    completed -- round 2's barrier on b>a subsumes a's alignment of round 1."""
    procs = [{"id": "co", "role": "coordinator"}, {"id": "s", "role": "source"}, "a", "b", {"id": "k", "role": "sink"}]
    chans = list(DIAMOND_CHANNELS)
    if subsume:
        procs.append({"id": "s2", "role": "source"})
        chans += [
            {"id": "co>s2", "src": "co", "dst": "s2", "kind": "control"},
            {"id": "s2>co", "src": "s2", "dst": "co", "kind": "control"},
            ("s2>b", "s2", "b"),
        ]
    rec = TraceRecorder(procs, chans, protocol=protocol)
    rec.round_start("co", 1)
    t1 = rec.barrier("co", "co>s", 1)
    rec.recv("s", t1)
    rec.checkpoint("s", kind="coordinated", round=1)
    sa1, sb1 = rec.barrier("s", "s>a", 1), rec.barrier("s", "s>b", 1)
    r1 = rec.send("s", "s>a", value=1)
    rec.recv("a", sa1)
    if early_recv:
        rec.recv("a", r1)
    if subsume:
        rec.recv("s2", rec.barrier("co", "co>s2", 1))
        rec.recv("co", rec.send("s2", "s2>co", value=["decline", 1]))
        cancel(rec, "s2", "b", "s2>b", 1)
        rec.recv("b", sb1)  # obsolete: b gave round 1 up
    else:
        if early_cancel:
            cancel(rec, "b", "a", "b>a", 1)
        rec.recv("b", sb1)
        if tells:
            rec.recv("co", rec.send("b", "b>co", value=["decline", 1]))
        if cancels and not early_cancel:
            cancel(rec, "b", "a", "b>a", 1)
            if forward:
                cancel(rec, "a", "k", "a>k", 1)
        rec.round_abort("co", 1, reason="declined by b")
    if late_checkpoint:
        rec.checkpoint("a", kind="coordinated", round=1)
    rec.round_start("co", 2)
    rec.recv("s", rec.barrier("co", "co>s", 2))
    rec.checkpoint("s", kind="coordinated", round=2)
    sa2, sb2 = rec.barrier("s", "s>a", 2), rec.barrier("s", "s>b", 2)
    rec.recv("b", sb2)
    if subsume:
        rec.recv("s2", rec.barrier("co", "co>s2", 2))
        rec.checkpoint("s2", kind="coordinated", round=2)
        rec.recv("b", rec.barrier("s2", "s2>b", 2))
    rec.checkpoint("b", kind="coordinated", round=2)
    rec.recv("a", rec.barrier("b", "b>a", 2))  # with subsume: gives up round 1
    if not early_recv:
        rec.recv("a", r1)
    rec.recv("a", sa2)
    rec.checkpoint("a", kind="coordinated", round=2)
    rec.recv("k", rec.barrier("a", "a>k", 2))
    rec.checkpoint("k", kind="coordinated", round=2)
    rec.round_complete("co", 2)
    if subsume:
        rec.round_abort("co", 1, reason="subsumed by round 2")
    return rec


def verdicts(recs, tmp_path):
    """Verdicts of TLC on the traces of the recorders (named for their keys): one run
    per topology."""
    groups: dict = {}
    for name, rec in recs.items():
        trace = rec.trace()
        trace.path = str(tmp_path / f"{name}.jsonl")
        p = prepare(trace)
        groups.setdefault(p.topology, []).append((name, p))
    out = {}
    for members in groups.values():
        out.update(zip([n for n, _ in members], validate_batch([p for _, p in members])))
    return out


# -- mapping (no TLC) --------------------------------------------------------------


def test_declines_cancellations_and_aborts_are_mapped():
    p = prepare(diamond(forward=True).trace())
    ops = [(e["op"], p.names.get(e["p"], e["p"]), p.names.get(e["c"], e["c"]), e["k"], e["n"]) for e in p.events]
    assert ("decline", "b", "", "", 1) in ops
    assert ("send", "b", "b>a", "cancel", 1) in ops and ("recv", "a", "b>a", "cancel", 1) in ops
    assert ("send", "a", "a>k", "cancel", 1) in ops
    # the declines a first cancellation marker implies: a's (it gave the round up on
    # b's marker), and b's own when b does not tell the coordinator
    implied = [(e["op"], p.names.get(e["p"]), e["n"]) for e in p.events if e["x"] == 1 and e["op"] == "decline"]
    assert implied == [("decline", "a", 1)]
    silent = prepare(diamond(tells=False).trace())
    assert [(silent.names.get(e["p"]), e["x"]) for e in silent.events if e["op"] == "decline"] == [("b", 1)]
    assert ("abort", "co", "", "", 1) in ops and ("complete", "co", "", "", 2) in ops
    assert p.ignored["recv (external input or control message)"] == 1  # the decline's receipt


def test_chandy_lamport_traces_with_aborts_stay_outside_its_specification():
    rec = diamond()
    rec.header.protocol["name"] = "chandy-lamport"
    with pytest.raises(OutOfScope, match="rounds that all complete") as exc:
        prepare(rec.trace())
    assert exc.value.line == line_of(rec, type="send", value=["decline", 1])


# -- verdicts (TLC) ---------------------------------------------------------------


@pytest.mark.tlc
@pytest.mark.parametrize("protocol", ["abs-aligned", "aligned-timeout"])
def test_declined_rounds_are_judged_step_by_step(tmp_path, protocol):
    recs = {
        "cancel": diamond(protocol),
        "forward": diamond(protocol, forward=True),
        "silent": diamond(protocol, tells=False, forward=True),
        "early-cancel": diamond(protocol, tells=False, early_cancel=True),
        "no-cancel": diamond(protocol, cancels=False),
        "subsume": diamond(protocol, subsume=True),
        "early": diamond(protocol, early_recv=True),
        "late": diamond(protocol, late_checkpoint=True),
    }
    v = verdicts(recs, tmp_path)
    for name in ("cancel", "forward", "silent", "subsume"):
        assert v[name].verdict == ACCEPT, v[name].render()
    # a cancellation marker is a decline: aligned ABS declines only a round it aligned,
    # so one of a round whose barrier b has not processed is none (with a timeout, a
    # task may decide a started round whose barrier has not come: accepted)
    if protocol == "abs-aligned":
        assert v["early-cancel"].verdict == REJECT
        assert v["early-cancel"].location.endswith(f":{line_of(recs['early-cancel'], type='send', mid='b>a:c1')}")
    else:
        assert v["early-cancel"].verdict == ACCEPT, v["early-cancel"].render()
    # a decline without cancellation markers (the deadlocking behaviour): the decliner
    # owes them, so its next event is not a behaviour of the specification
    assert v["no-cancel"].verdict == REJECT
    assert v["no-cancel"].location.endswith(f":{line_of(recs['no-cancel'], type='recv', mid='s>b:b2')}")
    # r1 processed from s>a while a aligns round 1 and nothing gave the round up yet
    assert v["early"].verdict == REJECT
    assert v["early"].location.endswith(f":{line_of(recs['early'], type='recv', mid='s>a:1')}")
    # a checkpoint of round 1 after a gave it up on b's cancellation marker
    assert v["late"].verdict == REJECT
    assert v["late"].location.endswith(f":{line_of(recs['late'], type='checkpoint', proc='a', round=1)}")


def timed_out(recv_before_abort: bool, b_first: bool = False) -> TraceRecorder:
    """The coordinator times round 1 out while a aligns it (a blocked s>a at s's
    barrier, b has not processed s's barrier yet); a processes r1 from s>a after the
    abort (or before it: a bug); b then snapshots round 1 anyway (``b_first``: b does
    so between the abort and a's record, so a learns of the abort only after steps of
    another task), and a drops its barrier of the given-up round."""
    rec = TraceRecorder(
        [{"id": "co", "role": "coordinator"}, {"id": "s", "role": "source"}, "a", "b"],
        [
            {"id": "co>s", "src": "co", "dst": "s", "kind": "control"},
            ("s>a", "s", "a"),
            ("s>b", "s", "b"),
            ("b>a", "b", "a"),
        ],
        protocol="abs-aligned",
    )
    rec.round_start("co", 1)
    rec.recv("s", rec.barrier("co", "co>s", 1))
    rec.checkpoint("s", kind="coordinated", round=1)
    sa1, sb1 = rec.barrier("s", "s>a", 1), rec.barrier("s", "s>b", 1)
    r1 = rec.send("s", "s>a", value=1)
    rec.recv("a", sa1)
    if recv_before_abort:
        rec.recv("a", r1)
    rec.round_abort("co", 1, reason="timeout")
    if b_first:
        rec.recv("b", sb1)
        rec.checkpoint("b", kind="coordinated", round=1)
    if not recv_before_abort:
        rec.recv("a", r1)
    if not b_first:
        rec.recv("b", sb1)
        rec.checkpoint("b", kind="coordinated", round=1)
    rec.recv("a", rec.barrier("b", "b>a", 1))  # obsolete at a
    return rec


@pytest.mark.tlc
def test_the_coordinators_abort_ends_an_alignment(tmp_path):
    """A round the coordinator aborted (here timed out, no task declined it) ends a
    task's alignment once the abort reached it: a record of a blocked input processed
    after the abort is accepted, before the abort rejected."""
    recs = {"after": timed_out(False), "later": timed_out(False, b_first=True), "before": timed_out(True)}
    v = verdicts(recs, tmp_path)
    assert v["after"].verdict == ACCEPT, v["after"].render()
    assert v["later"].verdict == ACCEPT, v["later"].render()
    assert v["before"].verdict == REJECT
    assert v["before"].location.endswith(f":{line_of(recs['before'], type='recv', mid='s>a:1')}")


def test_files_with_cancellation_markers(tmp_path):
    """End to end through files: with cancellation markers accepted, without them
    rejected at the decliner's first step after its decline."""
    good, bad = tmp_path / "cancel.jsonl", tmp_path / "no-cancel.jsonl"
    diamond().write(good)
    without = diamond(cancels=False)
    without.write(bad)
    v_good, v_bad = conformance.conform([str(good), str(bad)], tla_mappings())
    assert v_good.verdict == ACCEPT, v_good.render()
    assert v_bad.verdict == REJECT, v_bad.render()
    assert v_bad.location == f"{bad}:{line_of(without, type='recv', mid='s>b:b2')}"


# -- a cancellation after the task's own snapshot ------------------------------------


def cyclic_late_cancel() -> TraceRecorder:
    """abs-cyclic on the loop s -> a -> b, b -> a (a back-edge), b -> k: a snapshots
    round 1 on its only regular input and logs the back-edge; b declines round 1 and
    sends cancellation markers; the one on the back-edge reaches a while a still waits
    for a marker of round 1 there, and a forwards a cancellation marker behind its
    barrier (as Flink's task does when its barrier handler aborts the pending
    checkpoint)."""
    rec = TraceRecorder(
        [{"id": "co", "role": "coordinator"}, {"id": "s", "role": "source"}, "a", "b", {"id": "k", "role": "sink"}],
        [
            {"id": "co>s", "src": "co", "dst": "s", "kind": "control"},
            {"id": "b>co", "src": "b", "dst": "co", "kind": "control"},
            ("s>a", "s", "a"),
            ("a>b", "a", "b"),
            {"id": "b>a", "src": "b", "dst": "a", "back_edge": True},
            ("b>k", "b", "k"),
        ],
        protocol="abs-cyclic",
    )
    rec.round_start("co", 1)
    rec.recv("s", rec.barrier("co", "co>s", 1))
    rec.checkpoint("s", kind="coordinated", round=1)
    rec.recv("a", rec.barrier("s", "s>a", 1))
    rec.checkpoint("a", kind="coordinated", round=1)
    rec.recv("b", rec.barrier("a", "a>b", 1))
    rec.recv("co", rec.send("b", "b>co", value=["decline", 1]))
    to_a, to_k = rec.cancel("b", "b>a", 1), rec.cancel("b", "b>k", 1)
    rec.recv("a", to_a)
    cancel(rec, "a", "b", "a>b", 1)  # obsolete at b, which declined the round
    rec.recv("k", to_k)
    rec.round_abort("co", 1, reason="declined by b")
    return rec


def timeout_late_cancel(finished_forwards: bool = False) -> TraceRecorder:
    """aligned-timeout on the diamond s -> a, s -> b -> a, then a -> k -> z: a aligns
    round 1 on s>a, times out and takes an unaligned snapshot (recording b>a until its
    marker of round 1 comes); k snapshots round 1 aligned on its only input and
    forwards the barrier. b declines round 1; its cancellation marker reaches a while a
    still records b>a: a gives the round up and forwards a cancellation marker behind
    its barrier. k has finished round 1: the marker is obsolete there, and
    ``finished_forwards`` makes k forward it anyway (not what Flink does: its barrier
    handler ignores the cancellation of a checkpoint whose barriers all arrived)."""
    rec = TraceRecorder(
        [
            {"id": "co", "role": "coordinator"},
            {"id": "s", "role": "source"},
            "a",
            "b",
            "k",
            {"id": "z", "role": "sink"},
        ],
        [*DIAMOND_CHANNELS, ("k>z", "k", "z")],
        protocol="aligned-timeout",
        params={"timeout": 10},
    )
    rec.round_start("co", 1)
    rec.recv("s", rec.barrier("co", "co>s", 1))
    rec.checkpoint("s", kind="coordinated", round=1)
    sa1, sb1 = rec.barrier("s", "s>a", 1), rec.barrier("s", "s>b", 1)
    rec.recv("a", sa1)
    rec.checkpoint("a", kind="coordinated", round=1)  # the alignment timed out
    ak1 = rec.barrier("a", "a>k", 1)
    rec.recv("k", ak1)
    rec.checkpoint("k", kind="coordinated", round=1)
    rec.recv("z", rec.barrier("k", "k>z", 1))
    rec.checkpoint("z", kind="coordinated", round=1)
    rec.recv("b", sb1)
    rec.recv("co", rec.send("b", "b>co", value=["decline", 1]))
    cancel(rec, "b", "a", "b>a", 1)
    cancel(rec, "a", "k", "a>k", 1)
    if finished_forwards:
        cancel(rec, "k", "z", "k>z", 1)
    rec.round_abort("co", 1, reason="declined by b")
    return rec


@pytest.mark.tlc
def test_a_cancellation_after_the_snapshot_is_forwarded_while_markers_are_due(tmp_path):
    """A task that snapshotted round n and still waits for markers of n (a back-edge it
    logs; an input whose channel state it records after an alignment timeout) gives n
    up on a cancellation marker of n and forwards one behind its barrier; a task whose
    markers of n all came drops it."""
    recs = {
        "cyclic": cyclic_late_cancel(),
        "timeout": timeout_late_cancel(),
        "finished-forwards": timeout_late_cancel(finished_forwards=True),
    }
    v = verdicts(recs, tmp_path)
    assert v["cyclic"].verdict == ACCEPT, v["cyclic"].render()
    assert v["timeout"].verdict == ACCEPT, v["timeout"].render()
    bad = recs["finished-forwards"]
    assert v["finished-forwards"].verdict == REJECT
    assert v["finished-forwards"].location.endswith(f":{line_of(bad, type='send', mid='k>z:c1')}")


def priority_overtakes_older_barrier() -> TraceRecorder:
    """aligned-timeout, s -> a: the coordinator times round 1 out before a processed s's
    barrier of it; round 2's barrier reaches a behind it and record r1, times out and is
    handled as a priority event ahead of both -- a round a has not heard of is
    subsumed, as in Flink, where a priority barrier jumps the whole input queue. r1,
    sent between the two snapshots of s, is in transit for round 2 (a's input part);
    the barrier of round 1 is dropped when a reaches it."""
    rec = TraceRecorder(
        [{"id": "co", "role": "coordinator"}, {"id": "s", "role": "source"}, {"id": "a", "role": "sink"}],
        [{"id": "co>s", "src": "co", "dst": "s", "kind": "control"}, ("s>a", "s", "a")],
        protocol="aligned-timeout",
        params={"timeout": 10},
    )
    rec.round_start("co", 1)
    rec.recv("s", rec.barrier("co", "co>s", 1))
    rec.checkpoint("s", kind="coordinated", round=1)
    b1 = rec.barrier("s", "s>a", 1)
    r1 = rec.send("s", "s>a", value=1)
    rec.round_abort("co", 1, reason="timeout")
    rec.round_start("co", 2)
    rec.recv("s", rec.barrier("co", "co>s", 2))
    rec.checkpoint("s", kind="coordinated", round=2)
    b2 = rec.barrier("s", "s>a", 2)
    rec.arrive("a", b1)
    rec.arrive("a", r1)
    rec.recv("a", b2)  # priority: ahead of r1 and of round 1's barrier
    ca = rec.checkpoint("a", kind="coordinated", round=2)
    rec.record("a", ca, "s>a", [r1])
    rec.recv("a", b1)  # obsolete
    rec.recv("a", r1)
    rec.round_complete("co", 2)
    return rec


@pytest.mark.tlc
def test_a_priority_barrier_overtakes_the_barrier_of_an_older_round(tmp_path):
    v = verdicts({"overtake": priority_overtakes_older_barrier()}, tmp_path)
    assert v["overtake"].verdict == ACCEPT, v["overtake"].render()
