"""What the checker says about regional checkpoints: clean reference traces are judged by
every regional property (not vacuously), each violation kind is found in an edited
reference trace at the edited place (and not without the edit), and every mutant of
regional-aligned is caught with its kind while the correct protocol is clean."""

import random
from dataclasses import replace

import orjson
import pytest

from snapcheck.checker import CheckOptions, check_trace
from snapcheck.reference import PROTOCOLS, SimConfig, simulate
from snapcheck.reference.catalogue import mutants_of
from snapcheck.traces import read_trace

REGIONAL = {"regional-restore", "regional-cut", "regional-commit", "split-assignment", "regional-drift"}


def _run_with(predicate, reading="region-restart"):
    for seed in range(80):
        fields = PROTOCOLS["regional-aligned"].random_config(random.Random(seed), True, seed=seed)
        res = simulate(SimConfig(protocol="regional-aligned", seed=seed, **{**fields, "recovery": reading}))
        if predicate(res):
            return res
    raise AssertionError("no such run")


def _regional(res):
    return [e for e in res.events if e.type == "round_complete" and e.attrs and e.attrs.get("fallback")]


@pytest.fixture(scope="module")
def run():
    """A FLIP-reading run with a regional completion followed by a restore of its region."""

    def ok(res):
        done = _regional(res)
        return done and any(e.type == "restore" and e.round == done[0].round for e in res.events)

    return _run_with(ok)


def _lines(res) -> list[dict]:
    return [orjson.loads(x) for x in res.dumps().splitlines()]


def _check(tmp_path, lines, name="t.jsonl"):
    p = tmp_path / name
    p.write_bytes(b"\n".join(orjson.dumps(x) for x in lines) + b"\n")
    return check_trace(read_trace(str(p)), CheckOptions(crosscheck=False))


def _kinds(report):
    return {v.kind for v in report.violations}


def test_a_clean_regional_trace_is_judged_by_every_regional_property(run, tmp_path):
    report = _check(tmp_path, _lines(run))
    assert report.ok, [v.message for v in report.violations]
    assert REGIONAL <= {r.property for r in report.results}
    n = _regional(run)[0].round
    entry = report.rounds[str(n)]
    assert entry["status"] == "complete" and entry["fallback"] and "in_transit" in entry


def test_restoring_another_checkpoint_than_the_metadata_names_is_restore_unnamed(run, tmp_path):
    lines = _lines(run)
    n = _regional(run)[0].round
    restore = next(x for x in lines[1:] if x["type"] == "restore" and x.get("round") == n and x["ckpt"] > 0)
    restore["ckpt"] = max(
        [
            x["ckpt"]
            for x in lines[1:]
            if x["type"] == "checkpoint" and x["proc"] == restore["proc"] and x["ckpt"] < restore["ckpt"]
        ],
        default=0,
    )
    restore.pop("attrs", None)
    assert "restore-unnamed" in _kinds(_check(tmp_path, lines))


def test_a_restored_state_that_differs_from_the_checkpoints_is_restored_state(run, tmp_path):
    lines = _lines(run)
    restore = next(x for x in lines[1:] if x["type"] == "restore" and x["ckpt"] > 0)
    restore["attrs"]["digest"] = "0" * 16
    report = _check(tmp_path, lines)
    assert _kinds(report) == {"restored-state"}
    assert report.violations[0].witness["checkpoints"] == [[restore["proc"], restore["ckpt"]]]


def test_a_fallback_to_a_round_without_a_checkpoint_is_unresolved(run, tmp_path):
    lines = _lines(run)
    done = next(x for x in lines[1:] if x["type"] == "round_complete" and x.get("attrs", {}).get("fallback"))
    proc = sorted(done["attrs"]["fallback"])[0]
    done["attrs"]["fallback"][proc] = done["round"] + 1000
    report = _check(tmp_path, lines)
    assert "fallback-unresolved" in _kinds(report)
    # the round's own snapshot has no state of proc to judge: said, not passed in silence
    assert f"its fallback names no checkpoint of {proc}" in report.rounds[str(done["round"])]["not_analysed"]
    assert any(n.startswith(f"round {done['round']}: its fallback names no checkpoint") for n in report.notes)


def test_a_channel_between_regions_of_a_mixed_checkpoint_is_dependent_regions(run, tmp_path):
    lines = _lines(run)
    done = _regional(run)[0]
    region = {
        p["id"]: p["attrs"]["region"] for p in lines[0]["processes"] if p.get("attrs", {}).get("region") is not None
    }
    fell = next(p for p in done.attrs["fallback"] if p.startswith("src"))
    healthy = next(p for p, r in region.items() if p.startswith("sink") and p not in done.attrs["fallback"])
    lines[0]["channels"].append({"id": f"{fell}->{healthy}", "src": fell, "dst": healthy})
    report = _check(tmp_path, lines)
    v = next(v for v in report.violations if v.kind == "dependent-regions")
    assert v.witness["channel"] == f"{fell}->{healthy}" and v.witness["round"] == done.round


def test_agreed_values_mixed_by_a_fallback_are_agreement_broken_and_name_both_rounds(run, tmp_path):
    def agreed(value_of):
        lines = _lines(run)
        for x in lines[1:]:
            if x["type"] == "checkpoint" and x["proc"].startswith("src"):
                x["attrs"] = {"agreed": {"epoch": value_of(x)}}
        return _check(tmp_path, lines)

    assert agreed(lambda x: 7).ok
    report = agreed(lambda x: x["round"])  # the checkpoint id written in snapshotState
    v = next(v for v in report.violations if v.kind == "agreement-broken")
    rounds = set(v.witness["rounds"].values())
    assert len(rounds) == 2 and max(rounds) == int(v.subject.split()[1])
    assert {p for p, _ in v.witness["checkpoints"]} == set(v.witness["rounds"])


def test_more_regional_completions_in_a_row_than_declared_is_unbounded_drift(run, tmp_path):
    lines = _lines(run)
    assert "unbounded-drift" not in _kinds(_check(tmp_path, lines))
    lines[0]["protocol"]["params"]["max_consecutive"] = 0
    assert "unbounded-drift" in _kinds(_check(tmp_path, lines))


def test_a_coordinator_state_that_disagrees_with_the_readers_is_split_dropped_and_doubled(run, tmp_path):
    lines = _lines(run)
    done = next(x for x in lines[1:] if x["type"] == "round_complete" and len(x["attrs"]["assignment"]) >= 2)
    assignment = done["attrs"]["assignment"]
    a, b = sorted(assignment)[:2]
    if assignment[a] == assignment[b]:
        b = next(s for s in sorted(assignment) if assignment[s] != assignment[a])
    assignment[a], assignment[b] = assignment[b], assignment[a]
    kinds = _kinds(_check(tmp_path, lines))
    assert {"split-dropped", "split-doubled"} <= kinds


def test_the_checker_decides_from_the_trace_not_from_the_protocol_name(run, tmp_path):
    lines = _lines(run)
    lines[0]["protocol"]["name"] = "someone-elses-regional-checkpoints"
    report = _check(tmp_path, lines)
    assert report.ok and REGIONAL <= {r.property for r in report.results}


@pytest.mark.parametrize("mutant", [m.name for m in mutants_of("regional-aligned")])
def test_every_mutant_is_caught_with_its_kind_and_the_correct_protocol_is_clean(mutant):
    m = next(x for x in mutants_of("regional-aligned") if x.name == mutant)
    caught = 0
    for seed in range(8):
        cfg = replace(SimConfig(protocol=m.mutant_of, mutant=mutant), **{**m.demo, "seed": seed})
        report = check_trace(simulate(cfg).trace(), CheckOptions(crosscheck=False))
        hit = [v for v in report.violations if v.kind in m.expect]
        caught += bool(hit)
        if hit and m.prop in {v.property for v in hit}:
            assert all(v.lines for v in hit if v.kind != "split-lost")
        correct = check_trace(simulate(replace(cfg, mutant=None)).trace(), CheckOptions(crosscheck=False))
        assert correct.ok, (seed, [v.message for v in correct.violations][:2])
    assert caught >= 5, f"{mutant}: caught on {caught}/8 demo seeds"


def test_a_round_declared_complete_without_a_checkpoint_is_incomplete_and_not_judged_as_a_cut(run, tmp_path):
    """A regional completion lacking a healthy task's checkpoint is ``incomplete-round``
    (termination) and is judged no further: no cut, commit or agreement finding on a cut
    that does not exist, even when a channel joins the two regions it would mix."""
    lines = _lines(run)
    done = _regional(run)[0]
    fell = next(p for p in done.attrs["fallback"] if p.startswith("src"))
    gone = next(
        x
        for x in lines[1:]
        if x["type"] == "checkpoint"
        and x.get("round") == done.round
        and x["proc"].startswith("sink")
        and x["proc"] not in done.attrs["fallback"]
    )
    lines[0]["channels"].append({"id": f"{fell}->{gone['proc']}", "src": fell, "dst": gone["proc"]})
    lines = [x for x in lines if x is not gone]
    for x in lines[1:]:
        if x["proc"] == gone["proc"] and x["idx"] > gone["idx"]:
            x["idx"] -= 1
    report = _check(tmp_path, lines)
    assert "incomplete-round" in _kinds(report)
    about = [v.kind for v in report.violations if v.witness.get("round") == done.round]
    assert about == ["incomplete-round"], about


def _failover_then_completion(fallback: dict | None):
    """Regions A and B (declared in attrs.region); round 1 completes; both checkpoint
    round 2; A fails over and restores round 1 while round 2 is pending; then round 2
    completes, with ``fallback`` as its attrs."""
    from snapcheck.traces import TraceRecorder

    procs = [{"id": "A", "attrs": {"region": 0}}, {"id": "B", "attrs": {"region": 1}}]
    rec = TraceRecorder([*procs, {"id": "C", "role": "coordinator"}], [])
    for r in (1, 2):
        rec.round_start("C", r)
        _ = rec.checkpoint("A", "coordinated", round=r)
        _ = rec.checkpoint("B", "coordinated", round=r)
        if r == 1:
            rec.round_complete("C", 1)
    rec.fail("A")
    rec.restore("A", 1, round=1)
    rec.round_complete("C", 2, attrs=fallback)
    return rec.trace()


def test_a_global_completion_after_a_region_failed_over_is_stale_fallback():
    """With regions declared, a round completing globally (no fallback) after a region
    that had taken its checkpoint failed over holds a state the region's new incarnation
    no longer has: ``stale-fallback``, also when no round ever completed regionally (the
    campaign's ``regional-stale-ack`` runs, seed 7000149); completed with that region
    falling back, it is clean."""
    from snapcheck.checker import check_trace

    assert "stale-fallback" in check_trace(_failover_then_completion(None)).kinds
    clean = check_trace(_failover_then_completion({"fallback": {"A": 1}}))
    assert "stale-fallback" not in clean.kinds and any(r.property == "regional-cut" for r in clean.results)
