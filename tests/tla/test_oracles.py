"""When the specification's verdict and the checker's disagree (``checker.tla.oracles``)."""

import pytest

from snapcheck.checker.tla.oracles import MODELLED, SNAPSHOT_BROKEN, disagreement


@pytest.mark.parametrize("spec", sorted(MODELLED))
def test_an_accepted_trace_with_an_expressed_violation_is_a_disagreement(spec):
    for kind in MODELLED[spec]:
        assert disagreement(spec, "ACCEPT", [kind]) is not None
        assert disagreement(spec, "REJECT", [kind]) is None  # both found something wrong
    assert disagreement(spec, "REJECT", []) is not None
    assert disagreement(spec, "ACCEPT", ["incomplete-round", "uncommitted"]) is None  # expressed by none


def test_a_rescale_duplicate_that_comes_with_a_broken_snapshot_is_the_snapshots():
    """``RescaleTrace`` replays what the restored snapshot recorded: a duplicate caused by a
    record both processed and recorded as in flight is outside it, but a lost or misrouted
    in-flight record is its own whatever else the checker found."""
    for broken in sorted(SNAPSHOT_BROKEN):
        assert disagreement("RescaleTrace", "ACCEPT", ["duplicate-processing", broken]) is None
        assert disagreement("RescaleTrace", "ACCEPT", ["in-flight-lost", broken]) is not None
    assert disagreement("RescaleTrace", "ACCEPT", ["duplicate-processing", "incomplete-round"]) is not None
    assert disagreement("UncoordinatedTrace", "ACCEPT", ["duplicate-processing", "orphan"]) is not None


def test_a_duplicate_of_a_record_an_input_log_delivers_again_is_the_restored_offsets():
    """A source that reads again a record its restored offset says it had read: the offset
    is restored state, which ``RescaleTrace`` takes as given, so its ACCEPT is no
    disagreement (a rescale hunt's source-rewind traces); an in-flight duplicate is."""
    assert disagreement("RescaleTrace", "ACCEPT", ["duplicate-processing"], input_log_only=True) is None
    assert disagreement("RescaleTrace", "ACCEPT", ["duplicate-processing"]) is not None
    assert disagreement("RescaleTrace", "ACCEPT", ["duplicate-processing", "in-flight-lost"], input_log_only=True)
    assert disagreement("UncoordinatedTrace", "ACCEPT", ["duplicate-processing"], input_log_only=True) is not None
