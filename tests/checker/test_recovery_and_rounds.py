"""Observed recoveries (restored line, extra rollback, exactly-once) and coordinated rounds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from snapcheck.checker import CheckOptions, check_trace
from snapcheck.checker.intervals import History
from snapcheck.traces import TraceRecorder


def pipe(logged=True, protocol="unc"):
    return TraceRecorder(["P0", "P1"], [{"id": "c", "src": "P0", "dst": "P1", "logged": logged}], protocol=protocol)


def test_correct_recovery_with_log_replay_is_clean():
    rec = pipe()
    rec.checkpoint("P0")
    m1 = rec.send("P0", "c")
    m2 = rec.send("P0", "c")
    rec.checkpoint("P1")
    rec.recv("P1", m1)
    rec.fail("P1")
    rec.restore("P1", 1, recovery=1)
    r1 = rec.replay("P0", m1)
    rec.recv("P1", r1)
    rec.recv("P1", m2)
    rep = check_trace(rec.trace())
    assert rep.ok, rep.render_text()
    assert rep.observed[0]["restored_line"] == {"P0": "V", "P1": 1}
    assert rep.observed[0]["in_transit"] == [m1, m2] or set(rep.observed[0]["in_transit"]) == {m1, m2}
    assert not rep.observed[0]["extra_rollback"]
    h = History(rec.trace())
    assert h.by_mid[m1].r == 2 and h.by_mid[m1].nrecv == 1  # the replay stands for m1


def test_unlogged_message_whose_processing_is_undone_is_lost():
    rec = pipe(logged=False)
    m1 = rec.send("P0", "c")
    rec.checkpoint("P1")
    rec.recv("P1", m1)
    rec.fail("P1")
    rec.restore("P1", 1)
    rep = check_trace(rec.trace())
    assert rep.kinds == {"lost"}
    v = rep.violations[0]
    assert v.property == "exactly-once" and v.witness["messages"] == [m1]
    assert "nothing can replay it" in v.message


def test_replay_skipping_a_message_on_a_fifo_channel_is_lost():
    rec = pipe(logged=True)
    m1 = rec.send("P0", "c")
    m2 = rec.send("P0", "c")
    rec.checkpoint("P1")
    rec.recv("P1", m1)
    rec.recv("P1", m2)
    rec.fail("P1")
    rec.restore("P1", 1)
    rec.recv("P1", rec.replay("P0", m2))  # off by one: m1 skipped
    rep = check_trace(rec.trace())
    assert rep.kinds == {"lost"}
    assert "processes the later" in rep.violations[0].message


def test_replayable_but_not_yet_replayed_is_a_note():
    rec = pipe(logged=True)
    m1 = rec.send("P0", "c")
    rec.checkpoint("P1")
    rec.recv("P1", m1)
    rec.fail("P1")
    rec.restore("P1", 1)
    rep = check_trace(rec.trace())
    assert rep.ok and any("not yet processed" in n for n in rep.notes)


def _replay_discarded(discard: bool):
    """``m1`` is in transit when ``P1`` restores; ``P0`` replays it from its log and ``P1``
    drops the replay as a duplicate (``discard``) of a message it never processed, or the
    replay is still on its way when the trace ends."""
    rec = pipe(logged=True)
    m1 = rec.send("P0", "c")
    rec.checkpoint("P0")
    rec.checkpoint("P1")
    rec.fail("P1")
    rec.restore("P1", 1, recovery=1)
    r = rec.replay("P0", m1)
    if discard:
        rec.discard("P1", r, reason="duplicate")
    return rec.trace()


def test_discarding_the_only_delivery_of_a_message_never_processed_loses_it():
    """The discard is the message's last chance: it was judged clean, without a word."""
    rep = check_trace(_replay_discarded(True))
    assert rep.kinds == {"lost"} and "discards c:1/r1 at line 8 (as duplicate)" in rep.violations[0].message
    rep = check_trace(_replay_discarded(False))
    assert rep.ok and any("not judged whether c:1 on c is lost" in n for n in rep.notes), rep.notes


def test_messages_pending_at_many_recoveries_get_one_note_per_recovery_not_one_per_message():
    """Each recovery's not-judged messages make one note naming a few of them and their
    count, and a recovery's summary lists at most ``IN_TRANSIT_LISTED`` of its in-transit
    messages beside their count: a note and an id per message and recovery made the
    report quadratic (40,000 pending messages over 400 recoveries: 3.3 GB)."""
    from snapcheck.checker.observed_recovery import IN_TRANSIT_LISTED

    rec = pipe(logged=False)
    for _ in range(3):
        for _ in range(150):
            rec.send("P0", "c")
        rec.fail("P1")
        rec.restore("P1", 0)
    rep = check_trace(rec.trace())
    pending = [n for n in rep.notes if "not judged whether" in n]
    assert rep.ok and len(pending) == 3, pending
    assert pending[2].startswith("recovery 3: not judged whether any of 450 messages (c:1 on c, c:2 on c,")
    assert "and 445 more" in pending[2]
    assert [o["in_transit_count"] for o in rep.observed] == [150, 300, 450]
    assert [len(o["in_transit"]) for o in rep.observed] == [IN_TRANSIT_LISTED] * 3
    assert rep.observed[0]["in_transit"][:2] == ["c:1", "c:2"]


def test_replay_without_deduplication_is_duplicate_processing():
    rec = pipe()
    m1 = rec.send("P0", "c")
    rec.recv("P1", m1)
    rec.checkpoint("P1")
    rec.fail("P1")
    rec.restore("P1", 1)
    rec.recv("P1", rec.replay("P0", m1))  # m1 is already in C_{P1,1}
    rep = check_trace(rec.trace())
    assert rep.kinds == {"duplicate-processing"}
    # with deduplication it is fine
    rec = pipe()
    m1 = rec.send("P0", "c")
    rec.recv("P1", m1)
    rec.checkpoint("P1")
    rec.fail("P1")
    rec.restore("P1", 1)
    rec.discard("P1", rec.replay("P0", m1))
    assert check_trace(rec.trace()).ok


def test_restoring_latest_checkpoints_without_rollback_propagation_is_inconsistent():
    rec = pipe()
    rec.checkpoint("P0")
    m = rec.send("P0", "c")  # after P0's checkpoint
    rec.recv("P1", m)
    rec.checkpoint("P1")  # P1's checkpoint reflects m
    rec.fail("P0")
    rec.restore("P0", 1, recovery=7)
    rec.restore("P1", 1, recovery=7)
    m_again = rec.send("P0", "c")  # regenerated (same seq), processed again
    rec.recv("P1", m_again)
    rep = check_trace(rec.trace())
    assert rep.kinds == {"inconsistent-restore", "duplicate-processing"}
    inc = [v for v in rep.violations if v.kind == "inconsistent-restore"][0]
    assert inc.subject == "recovery 7" and inc.witness["messages"] == [m]
    assert rep.observed[0]["maximal_line"] == {"P0": 1, "P1": 0}


def test_extra_rollback_is_a_note_not_a_violation():
    rec = pipe()
    rec.checkpoint("P0")
    rec.checkpoint("P0")
    rec.fail("P0")
    rec.restore("P0", 1)  # 2 was possible
    rep = check_trace(rec.trace())
    assert rep.ok and rep.observed[0]["extra_rollback"]
    assert any("extra rollback" in n for n in rep.notes)


def test_restoring_the_round_before_an_aborted_one_is_no_extra_rollback():
    """A checkpoint of a round the coordinator aborted is nobody's to restore: the maximal
    line stops below it, and restoring the last complete round is not called wasteful."""
    rec = TraceRecorder(["P0", {"id": "C", "role": "coordinator"}], [])
    rec.checkpoint("P0", round=1)
    rec.round_complete("C", 1)
    rec.checkpoint("P0", round=2)
    rec.round_abort("C", 2)
    rec.fail("P0")
    rec.restore("P0", 1)
    rep = check_trace(rec.trace())
    assert rep.ok and not rep.observed[0]["extra_rollback"], rep.notes
    assert rep.observed[0]["maximal_line"] == {"P0": 1}
    assert not any("extra rollback" in n for n in rep.notes)


def test_processing_a_rolled_back_send_that_is_never_regenerated_is_phantom():
    rec = TraceRecorder(["P0", "P1", "P2"], [("c", "P0", "P1"), ("d", "P0", "P2")])
    rec.checkpoint("P0")
    m = rec.send("P0", "c")
    rec.fail("P0")
    rec.restore("P0", 1)
    rec.send("P0", "d")  # P0 takes another path after recovery
    rec.recv("P1", m)  # stale copy from the network
    rep = check_trace(rec.trace())
    assert rep.kinds == {"phantom"}


@pytest.mark.parametrize("processed", [True, False])
def test_restoring_a_checkpoint_an_earlier_restore_rolled_back_undoes_the_current_incarnations_sends(processed):
    """``P0`` takes checkpoints 1 and 2, restores 1, sends ``m1``; then restores 2 (kept
    from the abandoned incarnation). That state holds nothing ``P0`` did since restoring
    1: ``P1``, which processed ``m1`` and is not restored, keeps an orphan. The recovery
    was judged as if ``P0`` had kept its current state (a hostile hunt found it passed)."""
    rec = TraceRecorder(["P0", "P1"], [("c", "P0", "P1")])
    rec.checkpoint("P0")
    rec.checkpoint("P0")
    rec.fail("P0")
    rec.restore("P0", 1)
    m = rec.send("P0", "c")
    if processed:
        rec.recv("P1", m)
    rec.fail("P0")
    rec.restore("P0", 2)
    rep = check_trace(rec.trace())
    if not processed:
        assert rep.ok, [v.message for v in rep.violations]
        return
    (v,) = rep.violations
    assert (v.kind, v.subject, v.witness["messages"]) == ("inconsistent-restore", "recovery 2", [m])
    assert "restores at line 9 its checkpoint 2, which an earlier restore had rolled back" in v.message


def test_a_receive_whose_send_a_later_restore_undoes_fails_exactly_once_when_judged_alone():
    """B processes m, then A's restore undoes m's send and A never sends it again: the
    restored line's orphan (observed-recovery), reported once in a whole check; when
    exactly-once is judged without observed-recovery, it is that property's phantom,
    never a pass."""
    rec = TraceRecorder(["A", "B"], [("ab", "A", "B")], protocol="unc")
    rec.checkpoint("A")
    rec.recv("B", rec.send("A", "ab"))
    rec.fail("A")
    rec.restore("A", 1)
    whole = check_trace(rec.trace())
    assert whole.kinds == {"inconsistent-restore"}
    alone = check_trace(rec.trace(), CheckOptions(properties={"exactly-once"}))
    assert alone.kinds == {"phantom"} and alone.violations[0].lines == [3, 4, 6]


def test_regenerated_copy_processed_once_as_the_old_incarnation_is_fine():
    """docs/trace-format.md's example: the sink processes the pre-failure incarnation and
    discards the regenerated copy: one logical message, processed once."""
    rec = pipe(logged=False)
    rec.checkpoint("P0")
    m = rec.send("P0", "c")
    rec.fail("P0")
    rec.restore("P0", 1)
    m2 = rec.send("P0", "c")
    rec.recv("P1", m)
    rec.discard("P1", m2)
    assert check_trace(rec.trace()).ok


def test_recovery_groups_without_ids():
    rec = TraceRecorder(["A", "B"], [("ab", "A", "B")])
    rec.checkpoint("A")
    rec.checkpoint("B")
    rec.fail("A")
    rec.restore("A", 1)
    rec.restore("B", 1)  # same recovery (no restored process acted in between)
    rec.send("A", "ab")
    rec.fail("B")
    rec.restore("B", 1)  # a second recovery
    rep = check_trace(rec.trace())
    assert [o["subject"] for o in rep.observed] == ["recovery 1", "recovery 2"]
    assert rep.observed[0]["restored_line"] == {"A": 1, "B": 1}


def round_one_begun():
    """Coordinator ``C`` starts round 1; ``S`` checkpoints it and sends its barrier to ``T``:
    the recorder and that barrier."""
    rec = TraceRecorder(
        [{"id": "C", "role": "coordinator"}, "S", "T"],
        [("st", "S", "T"), {"id": "cs", "src": "C", "dst": "S", "kind": "control"}],
        protocol="abs-aligned",
    )
    rec.round_start("C", 1)
    rec.recv("S", rec.barrier("C", "cs", 1))
    rec.checkpoint("S", kind="coordinated", round=1)
    return rec, rec.barrier("S", "st", 1)


def rounds_trace(complete=True, abort=False, fail=False):
    rec, bb = round_one_begun()
    if complete:
        rec.recv("T", bb)
        rec.checkpoint("T", kind="coordinated", round=1)
        rec.round_complete("C", 1)
    if abort:
        rec.round_abort("C", 1, reason="timeout")
    if fail:
        rec.fail("T")
        rec.restore("T", 0)
    return rec.trace()


def test_complete_round_is_analysed_as_a_cut():
    rep = check_trace(rounds_trace())
    assert rep.ok and rep.rounds["1"]["status"] == "complete"
    assert [r.subject for r in rep.results if r.property == "consistency"] == ["round 1"]


def test_incomplete_round_reports_who_waits_for_which_barrier():
    rep = check_trace(rounds_trace(complete=False))
    assert rep.kinds == {"incomplete-round"}
    v = rep.violations[0]
    assert "T (no checkpoint of round 1) waits for the barrier on st from S: sent at line" in v.message
    assert v.witness["round"] == 1


def test_a_failure_after_a_participants_checkpoint_leaves_the_round_complete():
    """``S`` checkpoints round 1 and sends its barrier, then fails; ``T`` receives the
    barrier, checkpoints, and the coordinator completes the round before it learns of
    the failure: a whole, consistent snapshot (a `fail` between the checkpoints of a round
    does not make it incomplete; only a `round_abort` before them does, docs/checker.md)."""
    rec, bb = round_one_begun()
    rec.fail("S")
    rec.recv("T", bb)
    rec.checkpoint("T", kind="coordinated", round=1)
    rec.round_complete("C", 1)
    rec.restore("S", 1)
    rep = check_trace(rec.trace())
    assert rep.ok and rep.rounds["1"]["status"] == "complete", rep.kinds


def test_aborted_or_failed_rounds_terminate():
    assert check_trace(rounds_trace(complete=False, abort=True)).ok
    assert check_trace(rounds_trace(complete=False, fail=True)).ok


def _whole_round_never_declared(declares: bool, complete_first: bool = True):
    """The coordinator starts rounds 1 and 2 and completes round 1 (if ``declares``, and
    ``complete_first``); round 2's checkpoints and barrier are all there, but the
    coordinator never completes or aborts it."""
    rec = TraceRecorder(
        [{"id": "C", "role": "coordinator"}, "S", "T"],
        [("st", "S", "T"), {"id": "cs", "src": "C", "dst": "S", "kind": "control"}],
        protocol="abs-aligned",
    )
    for r in (1, 2):
        if declares:
            rec.round_start("C", r)
        rec.recv("S", rec.barrier("C", "cs", r))
        rec.checkpoint("S", kind="coordinated", round=r)
        rec.recv("T", rec.barrier("S", "st", r))
        rec.checkpoint("T", kind="coordinated", round=r)
        if declares and complete_first and r == 1:
            rec.round_complete("C", 1)
    return rec.trace()


def test_a_whole_round_the_coordinator_never_resolves_hangs():
    rep = check_trace(_whole_round_never_declared(declares=True))
    assert rep.kinds == {"incomplete-round"}, rep.render_text()
    v = rep.violations[0]
    assert v.subject == "round 2" and "neither completes nor aborts it" in v.message
    # without coordinator events, rounds are whole by their checkpoints and barriers alone
    assert check_trace(_whole_round_never_declared(declares=False)).ok


def test_started_rounds_that_are_whole_but_never_resolved_hang_even_if_none_was_resolved():
    rep = check_trace(_whole_round_never_declared(declares=True, complete_first=False))
    assert rep.kinds == {"incomplete-round"}
    assert sorted(v.subject for v in rep.violations) == ["round 1", "round 2"]


def test_a_round_of_no_participant_does_not_hang():
    """A trace cut down to its coordinator's ``round_start`` (what shrinking a hanging round
    reached: it removed every task) has nothing waiting; the witness of a hanging round
    keeps a task that took its checkpoint of it."""
    rec = TraceRecorder([{"id": "C", "role": "coordinator"}, "A"], [])
    rec.round_start("C", 1)
    assert check_trace(TraceRecorder([{"id": "C", "role": "coordinator"}], []).trace()).ok
    only_coordinator = TraceRecorder([{"id": "C", "role": "coordinator"}], [])
    only_coordinator.round_start("C", 1)
    rep = check_trace(only_coordinator.trace())
    assert rep.kinds == set()
    # ... nor is it judged: passing it would be vacuous, and a trace of nothing else judges nothing
    assert "termination" in rep.not_judged and "no process takes part in it" in rep.not_judged["termination"]
    assert not rep.judged and rep.rounds["1"]["not_analysed"].startswith("no process takes part")
    only_coordinator.round_complete("C", 1)
    rep = check_trace(only_coordinator.trace())
    assert not rep.judged and {"completion", "consistency"} <= set(rep.not_judged)
    _ = rec.checkpoint("A", "coordinated", round=1)
    assert check_trace(rec.trace()).kinds == {"incomplete-round"}


def _round_with_m_in_transit(protocol: str):
    """Round 1 on S -> T, each triggered by the coordinator C: S sends m, checkpoints and
    sends its barrier; T checkpoints and processes m (in transit for the round). Returns
    the recorder, m, S's barrier and T's checkpoint number."""
    rec = TraceRecorder(
        [{"id": "C", "role": "coordinator"}, "S", "T"],
        [
            ("st", "S", "T"),
            {"id": "cs", "src": "C", "dst": "S", "kind": "control"},
            {"id": "ct", "src": "C", "dst": "T", "kind": "control"},
        ],
        protocol=protocol,
    )
    rec.round_start("C", 1)
    m = rec.send("S", "st")
    rec.recv("S", rec.barrier("C", "cs", 1))
    rec.checkpoint("S", kind="coordinated", round=1)
    bb = rec.barrier("S", "st", 1)
    rec.recv("T", rec.barrier("C", "ct", 1))
    t = rec.checkpoint("T", kind="coordinated", round=1)
    rec.recv("T", m)
    return rec, m, bb, t


def _late_barrier_trace(abort_first: bool):
    """T checkpoints on C's barrier, S's message m is in transit and never recorded;
    S's barrier reaches T after (or before) the coordinator aborts the round."""
    rec, _, bb, _ = _round_with_m_in_transit("unaligned")
    if abort_first:
        rec.round_abort("C", 1, reason="timeout")
    rec.recv("T", bb)
    if not abort_first:
        rec.round_abort("C", 1, reason="timeout")
    return rec.trace()


def test_round_aborted_before_its_last_barrier_is_not_judged_as_a_cut():
    rep = check_trace(_late_barrier_trace(abort_first=True))
    assert rep.ok, rep.render_text()
    assert rep.rounds["1"]["status"] == "aborted"
    # whole before the abort, but aborted: the coordinator discarded the snapshot, the report says so
    late = check_trace(_late_barrier_trace(abort_first=False))
    assert late.ok and late.rounds["1"]["status"] == "aborted", late.render_text()
    assert "discarded its snapshot" in late.rounds["1"]["not_analysed"]
    assert any(n.startswith("round 1: aborted at line") for n in late.notes)


def test_a_whole_round_a_failure_ends_before_its_completion_is_not_judged_as_a_snapshot():
    rec, _, bb, _ = _round_with_m_in_transit("unaligned")
    rec.recv("T", bb)  # whole, with m missing from its channel state, and never declared complete
    rec.fail("T")
    rep = check_trace(rec.trace())
    assert "dropped" not in rep.kinds and rep.rounds["1"]["status"] == "interrupted by failure", rep.render_text()
    assert "before the failure at line" in rep.rounds["1"]["not_analysed"]


def test_a_whole_round_declared_complete_is_judged_even_if_an_abort_follows():
    rec, _, bb, _ = _round_with_m_in_transit("unaligned")
    rec.recv("T", bb)
    rec.round_complete("C", 1)
    rec.round_abort("C", 1, reason="late")
    rep = check_trace(rec.trace())
    assert rep.rounds["1"]["status"] == "complete", rep.render_text()
    assert rep.kinds == {"dropped", "contradictory-outcome"}, rep.render_text()  # and its two outcomes are reported


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["complete", "abort"]), min_size=1, max_size=4), st.booleans())
def test_a_round_has_one_outcome(outcomes, whole):
    """A round declared complete and also aborted (either order), or complete twice, is a
    contradictory-outcome naming every outcome's line (it was judged clean); one
    completion, or aborts alone, are not."""
    rec, bb = round_one_begun()
    if whole:
        rec.recv("T", bb)
        rec.checkpoint("T", kind="coordinated", round=1)
    for o in outcomes:
        rec.round_complete("C", 1) if o == "complete" else rec.round_abort("C", 1, reason="x")
    rep = check_trace(rec.trace())
    found = [v for v in rep.violations if v.kind == "contradictory-outcome"]
    if "complete" in outcomes and len(outcomes) > 1:
        (v,) = found
        lines = [e.line for e in rec.trace().events if e.type in ("round_complete", "round_abort")]
        assert v.lines == lines and v.witness["outcomes"] == [
            ["round_complete" if o == "complete" else "round_abort", ln] for o, ln in zip(outcomes, lines)
        ]
    else:
        assert not found, rep.render_text()


def test_round_rolled_back_later_is_analysed_before_the_restore():
    rec = TraceRecorder(["A", "B"], [("ab", "A", "B")], protocol="chandy-lamport")
    for r in (1, 2):
        rec.checkpoint("A", kind="coordinated", round=r)
        b = rec.barrier("A", "ab", r)
        m = rec.send("A", "ab")
        rec.recv("B", b)
        rec.checkpoint("B", kind="coordinated", round=r)
        rec.recv("B", m)
    rec.fail("B")
    rec.restore("A", 1, recovery=1)
    rec.restore("B", 1, recovery=1)
    rep = check_trace(rec.trace(), CheckOptions(properties={"consistency", "channel-state", "termination"}))
    assert rep.rounds["2"]["analysed_before_line"] > 0
    assert rep.ok


def test_failure_set_options_and_semantics():
    rec = pipe()
    rec.checkpoint("P0")
    m = rec.send("P0", "c")
    rec.recv("P1", m)
    rec.checkpoint("P1")
    t = rec.trace()
    rep = check_trace(t, CheckOptions(failures=["P0"]))
    assert rep.recovery_lines["P0"] == {"P0": 1, "P1": 0}
    assert rep.recovery["P0"]["chain"]["P1"][0].startswith("P1: V -> 0")
    assert check_trace(t, CheckOptions(failures=["P1"])).recovery_lines["P1"] == {"P0": "V", "P1": 1}
    rep = check_trace(t, CheckOptions(failures=["P1"], semantics="restart-all"))
    assert rep.recovery_lines["P1"] == {"P0": 1, "P1": 0}
    assert {r.subject for r in rep.results if r.property == "recovery-line"} == {"failures P1"}


def _two_inflight_channels(params: dict):
    """S0 and S1 each send one message to K; K's snapshot of round 1 records only S0's channel
    (as empty), and both messages are processed after it: both are in transit."""
    rec = TraceRecorder(
        [{"id": "C", "role": "coordinator"}, "S0", "S1", "K"],
        [("a", "S0", "K"), ("b", "S1", "K")],
        protocol="unaligned",
        params=params,
    )
    rec.round_start("C", 1)
    ma, mb = rec.send("S0", "a"), rec.send("S1", "b")
    for p in ("S0", "S1", "K"):
        rec.checkpoint(p, kind="coordinated", round=1)
    rec.record("K", 1, "a", [])
    rec.recv("K", ma)
    rec.recv("K", mb)
    rec.round_complete("C", 1)
    return rec.trace()


def test_channel_state_observed_at_restore_judges_only_shown_channels():
    full = check_trace(_two_inflight_channels({}))
    assert sorted(v.witness["messages"][0] for v in full.violations if v.kind == "dropped") == ["a:1", "b:1"]
    partial = check_trace(_two_inflight_channels({"channel_state": "observed-at-restore"}))
    # the channel whose (empty) recorded state is shown is still judged; the other is a note
    assert [v.witness["messages"] for v in partial.violations if v.kind == "dropped"] == [["a:1"]]
    assert partial.stats["unobservable_in_transit"] == 1
    assert any("b:1" in n and "not judged as dropped" in n for n in partial.notes)


def _down_during_first_recovery(p1_restores: int):
    """P1 and P0 fail; P0 restores in recovery 1 while P1 is still down; P1 restores its
    checkpoint ``p1_restores`` in recovery 2; P0 then regenerates c#1 and P1 processes it."""
    rec = pipe()
    rec.checkpoint("P0")
    rec.checkpoint("P1")
    m1 = rec.send("P0", "c")
    rec.recv("P1", m1)
    rec.checkpoint("P1")
    rec.fail("P1")
    rec.fail("P0")
    rec.restore("P0", 1, recovery=1)
    rec.restore("P1", p1_restores, recovery=2)
    rec.recv("P1", rec.send("P0", "c"))
    return check_trace(rec.trace())


def test_a_process_down_during_a_recovery_is_judged_when_it_restores():
    ok = _down_during_first_recovery(1)
    assert ok.ok, ok.render_text()
    assert ok.observed[0]["down"] == ["P1"] and ok.observed[0]["failed"] == ["P0", "P1"]
    assert ok.observed[0]["maximal_line"] == {"P0": 1, "P1": 1}
    # restoring the checkpoint that reflects the receive of the undone send is an orphan,
    # found by the recovery in which P1 restores
    bad = _down_during_first_recovery(2)
    inconsistent = [v for v in bad.violations if v.kind == "inconsistent-restore"]
    assert [v.subject for v in inconsistent] == ["recovery 2"]
    assert inconsistent[0].witness["messages"] == ["c:1"]
    assert "duplicate-processing" in bad.kinds


def _acknowledged_while_recording(late: str):
    """Chandy-Lamport on S -> T: T checkpoints on the coordinator's barrier, then records m,
    in transit on st, when S's barrier arrives. ``late``: what comes after the round's
    ``round_complete`` — nothing, S's barrier and T's record, or an empty record only."""
    rec, m, bb, t = _round_with_m_in_transit("chandy-lamport")
    if late != "barrier":
        rec.recv("T", bb)
        rec.record("T", t, "st", [m])
    if late == "empty record":
        rec.record("T", t, "st", [])
    rec.round_complete("C", 1)
    if late == "barrier":
        rec.recv("T", bb)
        rec.record("T", t, "st", [m])
    return rec.trace()


def test_a_round_declared_complete_while_its_channel_state_is_recorded_is_reported():
    assert check_trace(_acknowledged_while_recording("nothing")).ok
    rep = check_trace(_acknowledged_while_recording("barrier"))
    (v,) = rep.violations
    assert (v.kind, v.property) == ("completion-before-channel-state", "completion")
    assert v.lines == [12, 13, 14]  # the completion, the barrier's receipt, the record
    assert "the barrier on st reaches T at line 13" in v.message and "T records channel state of st" in v.message
    assert check_trace(_acknowledged_while_recording("empty record")).ok  # recording nothing adds nothing


def test_a_message_an_aligned_round_records_is_reported_once():
    """Recorded as channel state and in transit: one aligned-in-flight violation per
    message, at its record (it was reported twice)."""
    rec = TraceRecorder(["A", "B"], [("a2b", "A", "B")], protocol="mine", params={"aligned": True})
    m = rec.send("A", "a2b")
    rec.checkpoint("A", round=1)
    b = rec.barrier("A", "a2b", round=1)
    rec.checkpoint("B", round=1)
    rec.record("B", 1, "a2b", [m])
    rec.recv("B", m)
    rec.recv("B", b)
    found = [v for v in check_trace(rec.trace()).violations if v.kind == "aligned-in-flight"]
    assert [(v.witness["messages"], v.lines) for v in found] == [([m], [6])]


def _chandy_lamport_pq(recorded: bool, merged: bool):
    """A Chandy-Lamport round on P <-> Q in which q1 is in transit on qp: P records it
    (``recorded``) or not. ``merged``: the file lists all of P's events, then all of Q's
    (a merge of per-process logs: P's receipts of q1 and of Q's marker come before their
    sends), else the recorder's causal order."""
    import json

    from snapcheck.traces.jsonl import parse_trace

    rec = TraceRecorder(["P", "Q"], [("pq", "P", "Q"), ("qp", "Q", "P")], protocol="chandy-lamport")
    p1 = rec.send("P", "pq")
    rec.checkpoint("P", kind="coordinated", round=1)
    mk1 = rec.barrier("P", "pq", 1)
    q1 = rec.send("Q", "qp")
    rec.recv("Q", p1)
    rec.recv("Q", mk1)
    rec.checkpoint("Q", kind="coordinated", round=1)
    mkq = rec.barrier("Q", "qp", 1)
    rec.record("Q", 1, "pq", [])
    rec.recv("P", q1)
    rec.recv("P", mkq)
    rec.record("P", 1, "qp", [q1] if recorded else [])
    trace = rec.trace()
    events = sorted(trace.events, key=lambda e: e.proc) if merged else trace.events
    lines = [trace.header.to_dict(), *(e.to_dict() for e in events)]
    return parse_trace("\n".join(json.dumps(x) for x in lines), "merged" if merged else "causal")


def test_a_merge_of_per_process_logs_is_judged_as_the_causal_order():
    """A barrier received before its send in the file is received (docs/trace-format.md,
    convention 5): the round is complete, not waiting for that barrier, and its channel
    state is judged. The merged logs were reported incomplete-round ("sent at line 12,
    never received") and the dropped q1 went unreported."""
    for recorded, kinds in ((True, set()), (False, {"dropped"})):
        causal = check_trace(_chandy_lamport_pq(recorded, merged=False))
        merged = check_trace(_chandy_lamport_pq(recorded, merged=True))
        assert causal.kinds == merged.kinds == kinds, merged.render_text()
        assert merged.rounds["1"]["status"] == "complete"
        assert [r.property for r in merged.results] == [r.property for r in causal.results]


def _failing_twice(second_rereads: bool):
    """Source S reads r1, r2, r3 from an external log E; S checkpoints after r1, then
    processes r2 and fails. Recovery 1 re-reads r2 and S processes it; S fails again
    before its next checkpoint, and recovery 2 re-reads r2 (``second_rereads``) or skips
    it, S processing r3 next."""
    rec = TraceRecorder([{"id": "E", "role": "external"}, {"id": "S", "role": "source"}], [("es", "E", "S")])
    r1, r2, r3 = (rec.send("E", "es") for _ in range(3))
    rec.recv("S", r1)
    rec.checkpoint("S")
    rec.recv("S", r2)
    for recovery in (1, 2):
        rec.fail("S")
        rec.restore("S", 1, recovery=recovery)
        if recovery == 1 or second_rereads:
            rec.recv("S", rec.replay("E", r2, source="source"))
    rec.recv("S", r3)
    return check_trace(rec.trace())


def test_a_loss_is_blamed_on_the_recovery_after_which_it_is_lost():
    """Recovery 1 re-read r2 correctly; recovery 2 undid that and skipped r2. One loss,
    by recovery 2 (recovery 1 was blamed too, "after the recovery it is never processed",
    although it was processed after it)."""
    assert _failing_twice(second_rereads=True).ok
    rep = _failing_twice(second_rereads=False)
    assert [(v.kind, v.subject) for v in rep.violations] == [("lost", "recovery 2")], rep.render_text()
    assert "processes the later es:3" in rep.violations[0].message


def _orphan_round(restore: bool, resend: bool = False):
    """Round 1 of ``A -> B``: A checkpoints, then sends ``m1``, which B processes before its
    own checkpoint: an orphan of the round. With ``restore``, A fails and the job restores
    round 1 (rolling back A's send); with ``resend``, A then sends the record again."""
    rec = TraceRecorder([{"id": "C", "role": "coordinator"}, "A", "B"], [("ab", "A", "B")], protocol="mine")
    rec.round_start("C", 1)
    rec.checkpoint("A", kind="coordinated", round=1)
    m = rec.send("A", "ab")
    rec.recv("B", m)
    rec.checkpoint("B", kind="coordinated", round=1)
    rec.round_complete("C", 1)
    if restore:
        rec.fail("A")
        rec.restore("A", 1, round=1, recovery=1)
        rec.restore("B", 1, round=1, recovery=1)
    if resend:
        rec.recv("B", rec.send("A", "ab"))
    return rec.trace()


@pytest.mark.parametrize("restore, resend", [(False, False), (True, False), (True, True)])
def test_a_round_stays_inconsistent_when_a_recovery_restores_it_and_undoes_the_orphans_send(restore, resend):
    """Restoring round 1 rolls back A's send of the orphan; the effective history then no longer
    has the send, and the round's orphan passed. A send of the record again after A's
    checkpoint (the re-execution) reflects nothing in A's checkpoint either."""
    report = check_trace(_orphan_round(restore, resend), CheckOptions(properties={"consistency"}))
    [v] = [v for v in report.violations if v.property == "consistency"]
    assert v.kind == "orphan" and v.subject == "round 1" and v.witness["messages"] == ["ab:1"]
    if restore:
        assert "undone by the restore at line 9" in v.message
    explicit = check_trace(_orphan_round(restore, resend), CheckOptions(cut={"A": 1, "B": 1}))
    assert [v.kind for v in explicit.violations if v.subject.startswith("cut")] == ["orphan"]


def test_a_receive_whose_send_a_recovery_undid_and_the_sender_redid_before_the_cut_is_no_orphan():
    """B processed ``m1`` before its checkpoint; A's send was undone by A's own recovery to
    checkpoint 0 and A sent the record again (same channel and sequence number) before its
    checkpoint of round 1: the round reflects both, consistent."""
    rec = TraceRecorder([{"id": "C", "role": "coordinator"}, "A", "B"], [("ab", "A", "B")], protocol="mine")
    rec.recv("B", rec.send("A", "ab"))
    rec.fail("A")
    rec.restore("A", 0)
    rec.send("A", "ab")  # the same record again: channel ab, sequence number 1
    rec.round_start("C", 1)
    rec.checkpoint("A", kind="coordinated", round=1)
    rec.checkpoint("B", kind="coordinated", round=1)
    rec.round_complete("C", 1)
    report = check_trace(rec.trace(), CheckOptions(properties={"consistency"}))
    assert report.violations == [] and report.results  # judged, and passed


@pytest.mark.parametrize("cap", [1, 3])
@pytest.mark.parametrize("protocol", ["chandy-lamport", "abs-aligned"])
def test_a_capped_result_lists_the_first_violations_and_counts_the_rest_by_kind(protocol, cap):
    """Violations beyond the cap per result are counted by kind without a witness being
    built (``CutAnalysis`` stops building them: a trace with many messages in transit at
    many rounds took minutes). Each result lists what the uncapped check lists first,
    and counts and names the kinds of the others alike: random rounds of three processes
    that checkpoint in any order while messages fly (orphans, dropped and aligned-in-flight
    messages)."""
    import random

    beyond = 0
    for seed in range(30):
        rnd = random.Random(seed)
        procs = ["P0", "P1", "P2"]
        chans = [(f"{a}>{b}", a, b) for a in procs for b in procs if a != b]
        rec = TraceRecorder(procs, chans, protocol=protocol)
        flying: list[tuple[str, str]] = []
        for r in range(1, 4):
            for p in rnd.sample(procs, 3):
                for _ in range(rnd.randint(0, 3)):
                    ch, _, dst = rnd.choice(chans)
                    flying.append((dst, rec.send(ch[: ch.index(">")], ch)))
                rnd.shuffle(flying)
                keep = []
                for dst, m in flying:
                    if rnd.random() < 0.4:
                        rec.recv(dst, m)
                    else:
                        keep.append((dst, m))
                flying = keep
                rec.checkpoint(p, kind="coordinated", round=r)
        trace = rec.trace()
        full = check_trace(trace, CheckOptions(max_per_result=None))
        capped = check_trace(trace, CheckOptions(max_per_result=cap))
        assert [(r.property, r.subject) for r in full.results] == [(r.property, r.subject) for r in capped.results]
        for f, c in zip(full.results, capped.results):
            assert [v.to_json() for v in c.violations] == [v.to_json() for v in f.violations[:cap]]
            assert c.omitted == max(len(f.violations) - cap, 0) + f.omitted
            assert c.omitted_kinds == {v.kind for v in f.violations[cap:]} - {v.kind for v in f.violations[:cap]}
        assert full.kinds == capped.kinds
        beyond += sum(c.omitted for c in capped.results)
    assert beyond  # results over the cap were met


@pytest.mark.parametrize("b_checkpointed", [True, False])
def test_a_barrier_after_completion_is_late_channel_state_only_for_a_receiver_that_was_recording(b_checkpointed):
    """``B`` receives round 1's barrier after the round was declared complete. Had ``B``
    taken its checkpoint of round 1 before, it was recording the channel: the round was
    declared complete before its channel state was final. Without a checkpoint of the
    round, ``B`` recorded nothing, and the round is declared complete while it is not (a
    ``termination`` matter); it used to be reported as both."""
    from snapcheck.traces import TraceRecorder

    rec = TraceRecorder([{"id": "C", "role": "coordinator"}, "A", "B"], [("ab", "A", "B")], protocol="mine")
    rec.round_start("C", 1)
    rec.checkpoint("A", kind="coordinated", round=1)
    b = rec.barrier("A", "ab", round=1)
    if b_checkpointed:
        rec.checkpoint("B", kind="coordinated", round=1)
    rec.round_complete("C", 1)
    rec.recv("B", b)
    report = check_trace(rec.trace(), CheckOptions(properties={"completion", "termination"}))
    assert ("completion-before-channel-state" in report.kinds) == b_checkpointed, report.kinds
    assert ("incomplete-round" in report.kinds) != b_checkpointed, report.kinds


def test_a_recovery_the_protocol_broke_in_the_middle_of_is_said_not_judged():
    """The job restarts A and B, and the protocol raises in A's ``on_restore``: B's restore
    never comes. Judging the recovery as if it had restored A alone reported orphans of a
    restore no one made; it is said to be interrupted, and not judged."""
    rec = TraceRecorder(["A", "B"], [("ab", "A", "B")], protocol="mine")
    rec.checkpoint("A")
    rec.recv("B", rec.send("A", "ab"))
    rec.checkpoint("B")
    rec.fail("A")
    rec.fail("B")
    rec.restore("A", 0, recovery=1)
    rec.protocol_error("A", "in on_restore of A: RuntimeError: boom", attrs={"handler": "on_restore"})
    report = check_trace(rec.trace(), CheckOptions(properties={"observed-recovery", "exactly-once"}))
    assert not report.violations, report.violations
    assert any(
        "recovery 1 (restore at line(s) 8) was interrupted by the protocol error at line 9" in n for n in report.notes
    )
    assert "observed-recovery" in report.not_judged


def test_a_recovery_whose_process_restores_thrice_is_judged_by_its_last_restore():
    """One recovery, three restores of ``P0`` (checkpoint 2, then 1 twice): the first is
    rolled back by the second, and the last is what ``P0`` restored. Judging restores of
    rolled-back checkpoints crashed on it (``KeyError``) in a campaign's synthetic traces."""
    rec = TraceRecorder(["P0", "P1"], [("c", "P0", "P1")])
    rec.checkpoint("P0")
    rec.checkpoint("P0")
    rec.fail("P0")
    rec.restore("P0", 2, recovery=1)
    rec.restore("P0", 1, recovery=1)
    rec.restore("P0", 1, recovery=1)
    rep = check_trace(rec.trace())
    assert rep.ok, [v.message for v in rep.violations]
