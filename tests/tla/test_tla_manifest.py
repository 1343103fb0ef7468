"""Every TLC configuration of specs/manifest.json gives its recorded result,
number of distinct states and depth. The default configurations run in the
default test set (all of them in one parallel batch, once per session); the
heavy ones are slow tests."""

import json
import os

import pytest

from snapcheck.checker.tla.manifest import load_manifest, run_entries, specs_dir
from snapcheck.traces.errors import UsageError

MANIFEST = load_manifest()
DEFAULT = [e for e in MANIFEST.entries if not e.heavy]
HEAVY = [e for e in MANIFEST.entries if e.heavy]
PARALLEL = max(1, min(2, os.cpu_count() or 1))


def test_manifest_covers_every_config_file_and_every_protocol():
    cfgs = {p.stem for p in specs_dir().glob("MC*.cfg")}
    assert cfgs == {e.name for e in MANIFEST.entries}
    specs = {e.spec for e in MANIFEST.entries}
    assert specs == {
        "ConsistentSnapshot",
        "ChandyLamport",
        "ABS",
        "Unaligned",
        "Uncoordinated",
        "CIC_BCS",
        "CIC_HMNR",
        "LiveRobin",
        "Rescale",
        "RegionalCheckpoint",
    }


def test_every_protocol_has_a_check_a_mutant_and_a_trap():
    for spec in {e.spec for e in MANIFEST.entries} - {"ConsistentSnapshot"}:
        kinds = {e.kind for e in DEFAULT if e.spec == spec}
        assert {"check", "mutant", "trap"} <= kinds, spec


def test_mutants_and_traps_must_fail_and_checks_must_pass():
    for e in MANIFEST.entries:
        if e.kind in ("check", "liveness"):
            assert e.expected == "pass", e.name
        elif e.kind == "trap":
            assert e.expected.startswith("invariant:Trap"), e.name
        else:
            assert e.expected != "pass", e.name


def test_coordinated_protocols_state_refinement_and_termination():
    for spec in ("ChandyLamport", "ABS", "Unaligned"):
        cfgs = [(specs_dir() / e.config).read_text() for e in DEFAULT if e.spec == spec]
        assert any("PROPERTY AbsSpec" in c for c in cfgs), spec
        assert any("PROPERTY Termination" in c for c in cfgs), spec


def test_rescale_refines_the_snapshot_and_its_mutants_lose_in_flight_records():
    cfgs = {e.name: (specs_dir() / e.config).read_text() for e in DEFAULT if e.spec == "Rescale"}
    assert all("PROPERTY OldSpec" in cfgs[n] for n in ("MCRescale", "MCRescale_up"))
    bugs = {e.name: e.expected for e in DEFAULT if e.spec == "Rescale" and e.kind == "mutant"}
    assert bugs == {
        f"MCRescale_bug_{b}": "invariant:NoInFlightLost" for b in ("race", "skip_stateless", "undispatched")
    }


def test_selection_by_name():
    assert {e.spec for e in MANIFEST.select("ChandyLamport")} == {"ChandyLamport"}
    assert [e.name for e in MANIFEST.select("MCABS_bug_no_blocking")] == ["MCABS_bug_no_blocking"]
    assert all(not e.heavy for e in MANIFEST.select(None))
    assert any(e.heavy for e in MANIFEST.select(None, heavy=True))
    with pytest.raises(UsageError, match="no configuration matches"):
        MANIFEST.select("NoSuchSpec")


def test_bad_manifests_are_refused(tmp_path):
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(UsageError, match="malformed JSON"):
        load_manifest(tmp_path / "manifest.json")
    entry = {"name": "MCX", "spec": "X", "module": "MCX", "kind": "check", "expected": "pass"}
    (tmp_path / "manifest.json").write_text(json.dumps({"configs": [entry]}))
    with pytest.raises(UsageError, match="MCX.cfg does not exist"):
        load_manifest(tmp_path / "manifest.json")
    (tmp_path / "MCX.cfg").write_text("")
    (tmp_path / "MCX.tla").write_text("")
    (tmp_path / "manifest.json").write_text(json.dumps({"configs": [dict(entry, kind="weird")]}))
    with pytest.raises(UsageError, match="kind 'weird'"):
        load_manifest(tmp_path / "manifest.json")


@pytest.fixture(scope="session")
def default_outcomes():
    return {o.entry.name: o for o in run_entries(DEFAULT, specs_dir(), parallel=PARALLEL)}


@pytest.mark.tlc
@pytest.mark.parametrize("entry", DEFAULT, ids=lambda e: e.name)
def test_default_config_matches_manifest(entry, default_outcomes):
    outcome = default_outcomes[entry.name]
    assert outcome.matches, f"{entry.name}: {'; '.join(outcome.differences())}\n{outcome.result.error_text()}"


@pytest.mark.tlc
@pytest.mark.slow
@pytest.mark.parametrize("entry", HEAVY, ids=lambda e: e.name)
def test_heavy_config_matches_manifest(entry):
    (outcome,) = run_entries([entry], specs_dir())
    assert outcome.matches, f"{entry.name}: {'; '.join(outcome.differences())}\n{outcome.result.error_text()}"
