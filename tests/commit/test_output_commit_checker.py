"""The output-commit, control-delivery and recovery-lineage properties on hand-built traces."""

import pytest

from snapcheck.checker import CheckOptions, check_trace
from snapcheck.traces import TraceRecorder

PROCS = [{"id": "C", "role": "coordinator"}, {"id": "A", "role": "source"}, {"id": "S", "role": "sink"}]
CHANS = [
    {"id": "C->S", "src": "C", "dst": "S", "kind": "control", "fifo": False},
    {"id": "C->A", "src": "C", "dst": "A", "kind": "control", "fifo": False},
    {"id": "A->S", "src": "A", "dst": "S"},
]
PROPS = {"output-commit", "control-delivery", "recovery-lineage"}


def rec():
    return TraceRecorder(PROCS, CHANS, protocol="test-2pc")


def out(r, proc, value, **attrs):
    r.output(proc, value, attrs=attrs)


def notify(r, n):
    return r.send("C", "C->S", value=["commit", n], attrs={"notify": n})


def kinds(r, props=PROPS):
    return check_trace(r.trace(), CheckOptions(properties=set(props))).kinds


def round1(r):
    r.round_start("C", 1)
    r.checkpoint("A", "coordinated", round=1)
    r.checkpoint("S", "coordinated", round=1)
    out(r, "S", 2, txn=1, phase="pre-commit")
    r.round_complete("C", 1)


def test_clean_commit_and_end():
    r = rec()
    round1(r)
    r.recv("S", notify(r, 1))
    out(r, "S", ["x", "y"], txn=1, phase="commit")
    out(r, "S", "end-of-stream", phase="end")
    assert kinds(r) == set()


def test_commit_before_notification_is_premature():
    r = rec()
    round1(r)
    out(r, "S", ["x", "y"], txn=1, phase="commit")
    assert kinds(r) == {"premature-commit"}


def test_notification_sent_before_completion_is_premature():
    r = rec()
    r.round_start("C", 1)
    r.checkpoint("A", "coordinated", round=1)
    r.checkpoint("S", "coordinated", round=1)
    out(r, "S", 2, txn=1, phase="pre-commit")
    r.recv("S", notify(r, 1))
    out(r, "S", ["x", "y"], txn=1, phase="commit")
    r.round_complete("C", 1)
    assert kinds(r) == {"premature-commit"}


def test_duplicate_commit():
    r = rec()
    round1(r)
    r.recv("S", notify(r, 1))
    out(r, "S", ["x"], txn=1, phase="commit")
    r.recv("S", notify(r, 1))
    out(r, "S", ["x"], txn=1, phase="commit")
    assert kinds(r) == {"duplicate-commit"}


def test_lost_notification_uncommitted_unless_subsumed():
    r = rec()
    round1(r)
    notify(r, 1)  # lost: never received
    assert kinds(r) == {"uncommitted"}
    r.round_start("C", 2)
    r.checkpoint("A", "coordinated", round=2)
    r.checkpoint("S", "coordinated", round=2)
    r.round_complete("C", 2)
    r.recv("S", notify(r, 2))  # subsumes the lost one
    out(r, "S", ["x", "y"], txn=1, phase="commit")
    assert kinds(r) == set()


def test_end_of_stream_before_final_commit():
    r = rec()
    round1(r)
    out(r, "S", "end-of-stream", phase="end")
    assert kinds(r) == {"eos-before-commit"}


def test_restore_undoes_pre_commit_of_an_aborted_round():
    r = rec()
    round1(r)
    r.recv("S", notify(r, 1))
    out(r, "S", ["x", "y"], txn=1, phase="commit")
    r.round_start("C", 2)
    r.checkpoint("A", "coordinated", round=2)
    r.checkpoint("S", "coordinated", round=2)
    out(r, "S", 1, txn=2, phase="pre-commit")
    r.fail("S")
    r.round_abort("C", 2, "failure")
    r.restore("A", 1, recovery=1, round=1)
    r.restore("S", 1, recovery=1, round=1)
    assert kinds(r) == set()


def test_publishing_a_transaction_a_restore_rolled_back():
    """Round 1 aborts after the sink pre-committed transaction 1 at its checkpoint of it;
    the restore of the initial state rolls the transaction back; round 2 completes, and
    the sink publishes transaction 1 with 2: ``rolled-back-commit`` (it passed, as the
    notification of round 2 covers 1). Restoring a checkpoint that holds the transaction
    stages it again: publishing it then is the recovery's commit, clean; so is publishing
    it after it is pre-committed again."""

    def run(restored: int, again: bool):
        r = rec()
        r.round_start("C", 1)
        r.checkpoint("A", "coordinated", round=1)
        r.checkpoint("S", "coordinated", round=1)
        out(r, "S", 1, txn=1, phase="pre-commit")
        r.fail("S")
        if restored:
            r.round_complete("C", 1)
        else:
            r.round_abort("C", 1, "failure")
        r.restore("A", restored, recovery=1)
        r.restore("S", restored, recovery=1)
        if again:
            out(r, "S", 1, txn=1, phase="pre-commit")
        r.round_start("C", 2)
        r.checkpoint("A", "coordinated", round=2)
        r.checkpoint("S", "coordinated", round=2)
        out(r, "S", 1, txn=2, phase="pre-commit")
        r.round_complete("C", 2)
        r.recv("S", notify(r, 2))
        out(r, "S", ["x"], txn=1, phase="commit")
        out(r, "S", ["x"], txn=2, phase="commit")
        return check_trace(r.trace(), CheckOptions(properties={"output-commit"})).violations

    (v,) = run(0, False)
    assert (v.kind, v.lines, v.witness) == ("rolled-back-commit", [5, 9, 17], {"txn": 1})
    assert run(1, False) == [] and run(0, True) == []


def test_operator_event_missing_from_completed_round():
    r = rec()
    ev = r.send("C", "C->A", value=["event", "A#1"], attrs={"event": "A#1"})
    r.round_start("C", 1)
    r.checkpoint("A", "coordinated", round=1)
    r.recv("A", ev)  # after A's checkpoint: in neither snapshot
    r.checkpoint("S", "coordinated", round=1)
    r.round_complete("C", 1)
    assert kinds(r) == {"control-dropped"}


def test_operator_event_in_snapshot_and_rolled_back():
    r = rec()
    ev = r.send("C", "C->A", value=["event", "A#1"], attrs={"event": "A#1"})
    r.recv("A", ev)
    r.round_start("C", 1)
    r.checkpoint("A", "coordinated", round=1)
    r.checkpoint("S", "coordinated", round=1)
    r.round_complete("C", 1)
    assert kinds(r) == set()
    r2 = rec()  # received, then undone by a restore to ckpt 0
    ev = r2.send("C", "C->A", value=["event", "A#1"], attrs={"event": "A#1"})
    r2.recv("A", ev)
    r2.fail("A")
    r2.restore("A", 0, recovery=1)
    r2.restore("S", 0, recovery=1)
    r2.round_start("C", 1)
    r2.checkpoint("A", "coordinated", round=1)
    r2.checkpoint("S", "coordinated", round=1)
    r2.round_complete("C", 1)
    assert kinds(r2) == {"control-dropped"}


def _recover(r, rounds, ckpts):
    r.fail("S")
    for (p, c), rnd in zip(ckpts, rounds):
        r.restore(p, c, recovery=1, round=rnd)


def test_recovery_lineage():
    def base():
        r = rec()
        round1(r)
        r.round_start("C", 2)
        r.checkpoint("A", "coordinated", round=2)
        r.checkpoint("S", "coordinated", round=2)
        r.round_abort("C", 2, "timeout")
        return r

    r = base()
    _recover(r, [1, 1], [("A", 1), ("S", 1)])
    assert kinds(r, {"recovery-lineage"}) == set()
    r = base()
    _recover(r, [2, 2], [("A", 2), ("S", 2)])
    assert kinds(r, {"recovery-lineage"}) == {"restore-aborted"}
    r = base()
    _recover(r, [None, None], [("A", 0), ("S", 0)])
    assert kinds(r, {"recovery-lineage"}) == {"restore-stale"}
    r = base()
    _recover(r, [1, 2], [("A", 1), ("S", 2)])
    assert kinds(r, {"recovery-lineage"}) == {"restore-mixed", "restore-aborted"}


def test_a_restore_without_its_round_goes_back_to_the_round_of_what_it_takes():
    """``round`` is optional on a restore: the round is then that of the checkpoint it takes
    (its own, or its ``sources``'). Restoring round 1's checkpoints after round 1 completed
    is the latest round, not the empty initial state (it was judged restore-stale)."""

    def base():
        r = rec()
        round1(r)
        return r

    r = base()
    _recover(r, [None, None], [("A", 1), ("S", 1)])
    assert kinds(r, {"recovery-lineage"}) == set()
    r = base()
    r.round_start("C", 2)
    r.checkpoint("A", "coordinated", round=2)
    r.checkpoint("S", "coordinated", round=2)
    r.round_complete("C", 2)
    _recover(r, [None, None], [("A", 1), ("S", 1)])  # behind round 2: stale, whether said or not
    assert kinds(r, {"recovery-lineage"}) == {"restore-stale"}


def test_a_restore_is_judged_by_the_checkpoint_it_restores_not_by_its_round():
    """A restore's ``round`` stands only where that round keeps the state restored: the
    initial state restored ``as round 1`` after round 1 completed is stale (it was taken
    for round 1 and passed), while a regional completion of round 2 that keeps A's state
    of round 1 makes A's checkpoint of round 1 round 2's state."""

    def base():
        r = rec()
        round1(r)
        return r

    r = base()
    _recover(r, [1, 1], [("A", 0), ("S", 0)])
    assert kinds(r, {"recovery-lineage"}) == {"restore-stale"}
    r = base()
    r.round_start("C", 2)
    r.checkpoint("S", "coordinated", round=2)
    r.round_complete("C", 2, attrs={"fallback": {"A": 1}})
    _recover(r, [2, 2], [("A", 1), ("S", 2)])
    assert kinds(r, {"recovery-lineage"}) == set()
    r = base()
    r.round_start("C", 2)
    r.checkpoint("S", "coordinated", round=2)
    r.round_complete("C", 2)  # keeps no older state: A's checkpoint of round 1 is not round 2's
    _recover(r, [2, 2], [("A", 1), ("S", 2)])
    assert kinds(r, {"recovery-lineage"}) == {"restore-mixed", "restore-stale"}


def _handover(old_publishes: bool, old_retires: bool):
    """Sink S hands round 1's transaction 1 to its successor N (a restore naming S's
    checkpoint), which publishes it as S's (``attrs.of``). ``old_publishes``: S publishes
    it itself first; ``old_retires``: S retires at its checkpoint (else it keeps running)."""
    r = TraceRecorder(
        [*PROCS, {"id": "N", "role": "sink", "appears": True}],
        [*CHANS, {"id": "C->N", "src": "C", "dst": "N", "kind": "control"}, {"id": "A->N", "src": "A", "dst": "N"}],
        protocol="test-2pc",
    )
    round1(r)
    if old_publishes:
        r.recv("S", notify(r, 1))
        out(r, "S", ["x"], txn=1, phase="commit")
    if old_retires:
        r.retire("S", ckpt=1)
    r.restore("A", 1, recovery=1, round=1)
    r.restore(
        "N", 0, recovery=1, round=1, sources=[{"proc": "S", "ckpt": 1}], channels=[{"old": "A->S", "new": "A->N"}]
    )
    out(r, "N", ["x"], txn=1, phase="commit", of="S")
    return check_trace(r.trace(), CheckOptions(properties={"output-commit"}))


def test_a_transaction_published_by_the_old_sink_and_by_its_successor_cites_both():
    """The witness names both publications and the text says why the second is one too
    many: the old sink had published it before retiring, or it never retired (a zombie).
    Before, only the successor's line was cited, with "after S retired" for a sink that
    never retired."""
    assert _handover(old_publishes=False, old_retires=True).ok
    for retires, why in ((True, "S had published it before it retired"), (False, "S never retired at a checkpoint")):
        rep = _handover(old_publishes=True, old_retires=retires)
        (v,) = rep.violations
        assert v.kind == "duplicate-commit" and v.lines == [9, 13 if retires else 12], v.lines
        assert "published twice: by S itself at line 9, and as S's by a successor at line" in v.message
        assert why in v.message and ("retired without" not in v.message)


def test_the_rounds_a_line_and_a_transaction_meet_agree_with_their_definitions():
    """``completed_before`` and ``covering`` (bisections, where a scan of every completed
    round per question made a trace of many rounds and transactions quadratic) against
    their definitions, on random completion orders."""
    import random

    from snapcheck.checker.output_commit import _Coordination
    from snapcheck.checker.trace_index import TraceIndex

    for seed in range(40):
        rnd = random.Random(seed)
        rec = TraceRecorder(["T", {"id": "C", "role": "coordinator"}], [])
        rounds = rnd.sample(range(1, 30), rnd.randint(1, 12))
        for r in rounds:
            rec.round_start("C", r)
            rec.round_complete("C", r)
        coord = _Coordination(TraceIndex(rec.trace()))
        done = coord.complete_line
        for line in range(1, 2 * len(rounds) + 3):
            assert coord.completed_before(line) == max((r for r, ln in done.items() if ln < line), default=0)
        for n in range(1, max(done) + 1):
            assert coord.covering(n) == min(r for r in done if r >= n)


@pytest.mark.parametrize("broke", [False, True])
def test_a_transaction_unpublished_when_the_protocol_broke_is_not_owed_yet(broke):
    """A run a protocol error ends stops before the notification of a completed round can
    reach the sink: its transaction is not ``uncommitted``, a note says it was not judged
    (a designer's run was reported ``protocol-error, uncommitted``)."""
    rec = TraceRecorder([{"id": "S", "role": "sink"}, {"id": "C", "role": "coordinator"}], [])
    rec.checkpoint("S", round=1)
    rec.output("S", [], attrs={"txn": 1, "phase": "pre-commit"})
    rec.round_complete("C", 1)
    if broke:
        rec.protocol_error("S", "in on_process of S: boom")
    report = check_trace(rec.trace())
    assert report.kinds == ({"protocol-error"} if broke else {"uncommitted"})
    assert broke == any("not judged: the run ended there" in n for n in report.notes)
