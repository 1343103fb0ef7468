"""``snapcheck specs check`` and ``snapcheck conform`` from the command line."""

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from snapcheck.checker.tla.apalache import parse_apalache
from snapcheck.checker.tla.manifest import specs_dir
from tests.tla.test_tla_conform import two_messages


def snapcheck(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "snapcheck", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=900,
    )


def specs_copy(tmp_path, change=None):
    """A copy of specs/ whose manifest holds only the tiny MCConsistentSnapshot_trap entry."""
    d = tmp_path / "specs"
    shutil.copytree(specs_dir(), d, ignore=shutil.ignore_patterns("manifest.json"))
    man = json.loads((specs_dir() / "manifest.json").read_text())
    entry = next(e for e in man["configs"] if e["name"] == "MCConsistentSnapshot_trap")
    entry.update(change or {})
    (d / "manifest.json").write_text(json.dumps({"version": 1, "configs": [entry]}))
    return d


@pytest.mark.tlc
def test_specs_check_prints_the_table_and_exits_zero(tmp_path):
    r = snapcheck("specs", "check", env={"SNAPCHECK_SPECS": str(specs_copy(tmp_path))})
    assert r.returncode == 0, r.stdout + r.stderr
    for col in ("spec", "config", "expected", "result", "distinct states", "depth", "time"):
        assert col in r.stdout
    assert "MCConsistentSnapshot_trap" in r.stdout and "invariant:TrapNonEmptyChannelState" in r.stdout
    assert "1 as expected, 0 differ" in r.stdout


@pytest.mark.tlc
def test_specs_check_fails_when_the_state_count_changes(tmp_path):
    r = snapcheck("specs", "check", env={"SNAPCHECK_SPECS": str(specs_copy(tmp_path, {"distinct": 34}))})
    assert r.returncode == 1
    assert "distinct states 33 (expected 34)" in r.stdout


@pytest.mark.tlc
def test_specs_check_update_rewrites_the_manifest(tmp_path):
    d = specs_copy(tmp_path, {"distinct": 1, "depth": 1})
    r = snapcheck("specs", "check", "--update", env={"SNAPCHECK_SPECS": str(d)})
    assert r.returncode == 0, r.stdout + r.stderr
    entry = json.loads((d / "manifest.json").read_text())["configs"][0]
    assert (entry["distinct"], entry["depth"]) == (33, 4)


def test_unknown_name_is_a_usage_error():
    r = snapcheck("specs", "check", "NoSuchProtocol")
    assert r.returncode == 2 and "no configuration matches 'NoSuchProtocol'" in r.stderr


def test_apalache_backend_without_apalache(tmp_path):
    env = {"PATH": str(tmp_path), "SNAPCHECK_APALACHE": ""}
    r = subprocess.run(
        [sys.executable, "-m", "snapcheck", "specs", "check", "ConsistentSnapshot", "--backend", "apalache"],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
    )
    assert r.returncode == 2
    assert "Apalache is not installed: no 'apalache-mc' on PATH" in r.stderr


def test_apalache_backend_runs_apalache_mc(tmp_path):
    log = tmp_path / "args.txt"
    fake = tmp_path / "apalache-mc"
    fake.write_text(
        f'#!/bin/sh\necho "$@" >> {log}\n'
        "case \"$*\" in *trap*) echo 'State 3: Invariant TrapNonEmptyChannelState violated'; exit 12;; esac\n"
        "exit 0\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    r = snapcheck(
        "specs",
        "check",
        "ConsistentSnapshot",
        "--backend",
        "apalache",
        "--length",
        "7",
        env={"SNAPCHECK_APALACHE": str(fake)},
    )
    assert r.returncode == 0, r.stdout + r.stderr
    calls = log.read_text().splitlines()
    assert "check --config=MCConsistentSnapshot.cfg --length=7" in calls[0] and "MCConsistentSnapshot.tla" in calls[0]
    assert "invariant:TrapNonEmptyChannelState" in r.stdout


def test_apalache_result_parsing():
    assert parse_apalache("", 0) == "pass"
    assert parse_apalache("Invariant Consistent violated", 12) == "invariant:Consistent"
    assert parse_apalache("", 12) == "violation"
    assert parse_apalache("", 120) == "type-error"
    assert parse_apalache("", None) == "timeout"


@pytest.mark.tlc
def test_conform_exit_codes(tmp_path):
    good, bad_path = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    two_messages().write(good)
    two_messages(reordered=True).write(bad_path)
    r = snapcheck("conform", str(good))
    assert r.returncode == 0 and "ACCEPT" in r.stdout
    r = snapcheck("conform", str(good), str(bad_path))
    assert r.returncode == 1 and f"{bad_path}:4" in r.stdout and "1 accepted, 1 rejected" in r.stdout
    r = snapcheck("conform", str(good), str(tmp_path / "missing.jsonl"))
    assert r.returncode == 2 and "cannot open" in r.stdout


@pytest.mark.tlc
def test_conform_json_and_junit_say_every_verdict_and_what_was_not_judged(tmp_path, snapcheck_cli):
    """``--json`` (valid against its schema) and ``--junit``: a REJECT is a failure at its
    FILE:LINE, a trace outside the specifications is skipped with what they do not model,
    an unreadable trace is an error; an ACCEPT lists the events it does not vouch for."""
    import xml.etree.ElementTree as ET

    import jsonschema

    from snapcheck.checker.tla.conform import ERRORS
    from snapcheck.traces import TraceRecorder

    good, bad, missing, other = (tmp_path / f"{n}.jsonl" for n in ("good", "bad", "missing", "other"))
    two_messages().write(good)
    two_messages(reordered=True).write(bad)
    rec = TraceRecorder(["a", "b"], [("a>b", "a", "b")], protocol="changelog")  # no TLA+ specification
    rec.recv("b", rec.send("a", "a>b"))
    rec.write(other)
    junit = tmp_path / "conform.xml"
    paths = [str(p) for p in (good, bad, missing, other)]
    code, out = snapcheck_cli("conform", "--json", "--junit", str(junit), *paths)
    schema = json.loads((specs_dir().parent / "checker" / "schema" / "conform-report.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    doc = json.loads(out)
    jsonschema.Draft202012Validator(schema).validate(doc)
    assert set(schema["$defs"]["verdict"]["properties"]["error"]["enum"]) == {None, *ERRORS}
    assert code == doc["exit_code"] == 2 and doc["counts"] == {"accept": 1, "reject": 1, "error": 2}
    v = {Path(e["trace"]).stem: e for e in doc["verdicts"]}
    assert [e["trace"] for e in doc["verdicts"]] == paths
    assert v["good"]["verdict"] == "ACCEPT" and v["good"]["matched_prefix"] == v["good"]["mapped_events"] > 0
    assert v["bad"]["verdict"] == "REJECT" and v["bad"]["location"] == f"{bad}:4"
    assert v["bad"]["matched_prefix"] < v["bad"]["mapped_events"]
    assert v["missing"]["error"] == "invalid-trace" and "cannot open" in v["missing"]["message"]
    assert v["other"]["error"] == "outside-specification" and "changelog" in v["other"]["message"]
    root = ET.parse(junit).getroot()
    cases = {Path(c.get("name")).stem: [e.tag for e in c if e.tag != "system-out"] for c in root.iter("testcase")}
    assert cases == {"good": [], "bad": ["failure"], "missing": ["error"], "other": ["skipped"]}
    assert root.get("tests") == "4" and root.get("failures") == "1" and root.get("skipped") == "1"
    fail = next(c for c in root.iter("testcase") if c.get("name") == str(bad)).find("failure")
    assert f"{bad}:4" in fail.get("message")
    # the text report is unchanged without --json; the JUnit file never replaces an input
    code, out = snapcheck_cli("conform", "--junit", str(good), str(good), stderr=True)
    assert code == 2 and good.read_text().startswith("{")
