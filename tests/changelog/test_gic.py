"""gic-changelog: the model, its trace and the checker's changelog properties.

Oracles independent of the checker: the final state of a run with failures equals
the failure-free run's (the restored backend really is the checkpoint's state);
the model's own count of artifacts missing at a restore."""

from dataclasses import replace

import pytest

from snapcheck.checker import CheckOptions, check_trace
from snapcheck.reference import MUTANTS, PROTOCOLS, SimConfig, simulate
from snapcheck.reference.catalogue import mutants_of
from snapcheck.reference.changelog.protocol import GicChangelog
from snapcheck.traces import TraceRecorder
from snapcheck.traces.jsonl import parse_trace

CHANGELOG_MUTANTS = {m.name: m for m in mutants_of("gic-changelog")}

NEW_KINDS = {
    "changelog-gap",
    "changelog-overlap",
    "changelog-mismatch",
    "artifact-unknown",
    "artifact-deleted-referenced",
    "restore-missing-artifact",
}
FAILS = [(), (("task[0]", 51), ("task[1]", 58)), (("task[1]", 33),), (("task[2]", 97), ("task[0]", 140))]


def test_registered():
    assert PROTOCOLS["gic-changelog"] is GicChangelog
    for name in CHANGELOG_MUTANTS:
        assert MUTANTS[name].mutant_of == "gic-changelog"


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("failures", FAILS)
def test_correct_clean_and_state_restored(seed, failures):
    cfg = SimConfig(protocol="gic-changelog", parallelism=3, records=150, seed=seed, failures=failures)
    res = simulate(cfg)
    trace = parse_trace(res.dumps().decode())  # valid v1 trace
    report = check_trace(trace)
    assert report.ok, [v.message for v in report.violations]
    props = {r.property for r in report.results}
    assert {"changelog-restore", "artifact-retention", "consistency"} <= props
    assert bool(failures) == ("exactly-once" in props)  # checked where there are restores
    assert res.final_states == simulate(replace(cfg, failures=())).final_states
    m = res.metrics
    assert m["missing_at_restore"] == 0 and m["materializations"] > 0 and m["artifacts_deleted"] > 0


def test_materialization_boundary_is_crossed():
    """Some handle clips a segment that spans the materialization boundary, and
    some checkpoint's handle has a materialization and a changelog tail."""
    res = simulate(SimConfig(protocol="gic-changelog", parallelism=2, records=150, seed=3))
    created = {
        e.attrs["artifact"]: e.attrs
        for e in res.events
        if e.type == "output" and e.attrs and e.attrs.get("op") == "create"
    }
    handles = [e.vars for e in res.events if e.type == "checkpoint" and e.vars and "changelog" in e.vars]
    assert any(h["materialization"] and h["changelog"] for h in handles)
    assert any(lo > created[s]["from"] for h in handles for s, lo, _ in h["changelog"])


@pytest.mark.parametrize("name", sorted(CHANGELOG_MUTANTS))
def test_mutant_caught_and_base_clean(name):
    mut = CHANGELOG_MUTANTS[name]
    for seed in range(4):
        cfg = SimConfig(protocol="gic-changelog", mutant=name, seed=seed, **mut.demo)
        res = simulate(cfg)
        report = check_trace(res.trace())
        assert report.kinds & set(mut.expect), (name, seed, report.kinds)
        assert report.kinds <= NEW_KINDS, report.kinds  # the data-channel properties see nothing
        base = simulate(replace(cfg, mutant=None))
        assert check_trace(base.trace()).ok
    if "failures" in mut.demo:  # the bug really loses state
        assert res.final_states != simulate(replace(cfg, failures=(), mutant=None)).final_states


def test_gc_race_restore_reads_deleted_artifact():
    mut = CHANGELOG_MUTANTS["gic-gc-race"]
    res = simulate(SimConfig(protocol="gic-changelog", mutant="gic-gc-race", seed=0, **mut.demo))
    assert res.metrics["missing_at_restore"] > 0
    assert "restore-missing-artifact" in check_trace(res.trace()).kinds


def test_gic_uploads_less_per_checkpoint():
    m = simulate(SimConfig(protocol="gic-changelog", parallelism=2, records=300, seed=1)).metrics
    assert 0 < m["checkpoint_bytes_mean"] < m["incremental_bytes_mean"] < m["full_bytes_mean"]


def test_deterministic():
    cfg = SimConfig(protocol="gic-changelog", seed=5, failures=(("task[0]", 44),))
    assert simulate(cfg).dumps() == simulate(cfg).dumps()


# -- hand-written traces: one change per record, artifacts by hand --------------------------------
def _trace(handle, deletes_before_restore=(), restore=False, mat_to=2, deletes_before_completion=(), retained=1):
    rec = TraceRecorder(
        [{"id": "src", "role": "source"}, "T", {"id": "C", "role": "coordinator"}],
        [("src->T", "src", "T")],
        protocol="gic-changelog",
        params={"retained": retained},
    )
    for _ in range(2):
        rec.recv("T", rec.send("src", "src->T", value=1))
    rec.output("T", 32, attrs={"artifact": "m", "op": "create", "type": "materialization", "from": 0, "to": mat_to})
    for _ in range(2):
        rec.recv("T", rec.send("src", "src->T", value=1))
    rec.output("T", 48, attrs={"artifact": "s", "op": "create", "type": "changelog", "from": 1, "to": 4})
    rec.round_start("C", 1)
    rec.checkpoint("src", "coordinated", round=1)
    rec.checkpoint("T", "coordinated", round=1, vars=handle)
    for a in deletes_before_completion:
        rec.output("C", a, attrs={"artifact": a, "op": "delete"})
    rec.round_complete("C", 1)
    for a in deletes_before_restore:
        rec.output("C", a, attrs={"artifact": a, "op": "delete"})
    if restore:
        rec.fail("T")
        rec.restore("src", 1, recovery=1, round=1)
        rec.restore("T", 1, recovery=1, round=1)
    return parse_trace(rec.dumps().decode())


def _kinds(trace):
    return check_trace(trace, CheckOptions(properties={"changelog-restore", "artifact-retention"})).kinds


def test_checker_exact_handle_clean():
    assert _kinds(_trace({"materialization": "m", "changelog": [["s", 2, 4]], "sqn": 4}, restore=True)) == set()


@pytest.mark.parametrize(
    "handle,kind",
    [
        ({"materialization": "m", "changelog": [["s", 3, 4]]}, "changelog-gap"),  # inclusive boundary
        ({"materialization": "m", "changelog": [["s", 1, 4]]}, "changelog-overlap"),  # sqn 1 twice
        ({"materialization": "m", "changelog": [["s", 2, 5]]}, "artifact-unknown"),  # beyond the segment
        ({"materialization": "x", "changelog": [["s", 2, 4]]}, "artifact-unknown"),  # never created
        ({"materialization": None, "changelog": [["s", 1, 4]]}, "changelog-gap"),  # sqn 0 missing
    ],
)
def test_checker_handle_violations(handle, kind):
    assert _kinds(_trace(handle)) == {kind}


def test_checker_mismatch_when_snapshot_claims_more_than_applied():
    # the snapshot claims 3 changes when 2 were applied; coverage [0,3) + [3,4) looks exact
    t = _trace({"materialization": "m", "changelog": [["s", 3, 4]]}, mat_to=3)
    assert _kinds(t) == {"changelog-mismatch"}


def test_checker_retention():
    h = {"materialization": "m", "changelog": [["s", 2, 4]]}
    assert _kinds(_trace(h, deletes_before_restore=("s",))) == {"artifact-deleted-referenced"}
    assert _kinds(_trace(h, deletes_before_restore=("m",), restore=True)) == {
        "artifact-deleted-referenced",
        "restore-missing-artifact",
    }


@pytest.mark.parametrize("deleted", ["m", "s"])
def test_a_round_completing_with_an_artifact_already_deleted_is_caught(deleted):
    """The checkpoint references an artifact deleted before its round completed: the latest
    completed checkpoint cannot be restored. Only deletions after a completion were judged,
    so this passed unless a restore happened to read it."""
    h = {"materialization": "m", "changelog": [["s", 2, 4]]}
    trace = _trace(h, deletes_before_completion=(deleted,))
    assert _kinds(trace) == {"artifact-deleted-referenced"}
    [v] = check_trace(trace).violations
    assert v.message.startswith("round 1 completes at line") and f"references artifact {deleted}" in v.message


@pytest.mark.parametrize("retained", ["2", 0, -1, None, True, 1.5])
def test_a_retained_count_that_is_not_a_whole_number_of_at_least_1_is_bad_input(retained):
    """``retained: 0`` kept every round (``[-0:]``), ``"2"`` was read as 2, ``null`` crashed."""
    from snapcheck.checker.free_fields import UnreadableField

    with pytest.raises(UnreadableField, match="params.retained must be a whole number of at least 1"):
        check_trace(_trace({"materialization": "m", "changelog": [["s", 2, 4]]}, retained=retained))


def test_the_handles_of_a_task_a_rescale_created_are_not_judged_and_a_note_says_so():
    """Its state starts with its sources' changes and artifacts: a handle referencing the
    old tasks' segments was ``artifact-unknown`` ("never created by this task"), one
    dropping all of them passed."""
    rec = TraceRecorder(
        [{"id": "src", "role": "source"}, "T", {"id": "N", "appears": True}, {"id": "C", "role": "coordinator"}],
        [("src->T", "src", "T"), ("src->N", "src", "N")],
        protocol="gic-changelog",
    )
    rec.recv("T", rec.send("src", "src->T", value=1))
    rec.output("T", 16, attrs={"artifact": "t/c1", "op": "create", "type": "changelog", "from": 0, "to": 1})
    rec.round_start("C", 1)
    rec.checkpoint("src", "coordinated", round=1)
    rec.checkpoint("T", "coordinated", round=1, vars={"materialization": None, "changelog": [["t/c1", 0, 1]]})
    rec.round_complete("C", 1)
    rec.retire("T", 1)
    rec.restore("N", 0, recovery=1, round=1, sources=[{"proc": "T", "ckpt": 1}])
    rec.recv("N", rec.send("src", "src->N", value=1))
    rec.output("N", 16, attrs={"artifact": "n/c1", "op": "create", "type": "changelog", "from": 0, "to": 1})
    rec.checkpoint(
        "N", "coordinated", round=2, vars={"materialization": None, "changelog": [["t/c1", 0, 1], ["n/c1", 0, 1]]}
    )
    report = check_trace(parse_trace(rec.dumps().decode()), CheckOptions(properties={"changelog-restore"}))
    assert report.kinds == set()
    assert any("the handles of N are not judged" in n for n in report.notes), report.notes
