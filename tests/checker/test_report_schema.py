"""The JSON Schemas shipped for CI users, tested against real outputs: ``snapcheck check --json``
(many traces, violations, recoveries, z3, unreadable files) and ``snapcheck validate``'s summary.json."""

import glob
import json
import subprocess
import sys

import jsonschema
import pytest

from snapcheck.checker.report import json_schema

GOLDEN = sorted(glob.glob("traces/examples/*.jsonl"))


def validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json_schema(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def check_json(*args) -> dict:
    out = subprocess.run([sys.executable, "-m", "snapcheck", "check", "--json", *args], capture_output=True, text=True)
    doc = json.loads(out.stdout)
    assert doc["exit_code"] == out.returncode
    return doc


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """Traces with rounds, failures and recoveries, a mutant's violations and CIC data."""
    from snapcheck.reference import SimConfig, simulate

    d = tmp_path_factory.mktemp("sim")
    paths = []
    for name, cfg in {
        "unaligned-fail": SimConfig(protocol="unaligned", workload="q3", records=40, failures=(("join[0]", 900),)),
        "unc-fail": SimConfig(protocol="unc", workload="q3", records=40, failures=(("join[0]", 900),)),
        "hmnr": SimConfig(protocol="hmnr", workload="q3", records=40),
        "mutant": SimConfig(mutant="abs-aligned-no-block", workload="q3", records=40),
        "never-fired": SimConfig(protocol="unaligned", workload="q3", records=20, failures=(("join[0]", 60_000_000),)),
    }.items():
        p = d / f"{name}.jsonl"
        p.write_bytes(simulate(cfg).dumps())
        paths.append(str(p))
    bad = d / "bad.jsonl"
    bad.write_text('{"format": "snapcheck-trace", "version": 1, "processes": [], "channels": []}\n{"type": "x"}\n')
    return paths + [str(bad), str(d / "missing.jsonl")]


def test_check_json_of_every_golden_trace_follows_the_schema():
    doc = check_json(*GOLDEN)
    validator("check-report").validate(doc)
    assert len(doc["reports"]) == len(GOLDEN)


def test_check_json_of_simulations_and_bad_files_follows_the_schema(simulated):
    v = validator("check-report")
    for extra in (
        [],
        ["--failures", "all", "--z3", "--z3-min-replay"],
        ["--property", "consistency"],
        ["--require-faults"],
    ):
        doc = check_json(*simulated, *extra)
        v.validate(doc)
        verdicts = [r["verdict"] for r in doc["reports"]]
        assert verdicts[-2:] == ["error", "error"] and doc["exit_code"] == 2
        assert "violation" in verdicts


def test_every_property_is_judged_or_not_judged_with_a_reason(simulated):
    from snapcheck.checker import PROPERTIES

    for r in check_json(*simulated)["reports"]:
        if r["verdict"] == "error":
            continue
        named = r["judged"] + [x["property"] for x in r["not_judged"]]
        assert sorted(named) == sorted(PROPERTIES)
        assert all(x["reason"] for x in r["not_judged"])


def test_the_schema_is_not_vacuous():
    v = validator("check-report")
    doc = check_json(GOLDEN[0])
    v.validate(doc)
    for mutate in (
        lambda d: d["reports"][0].__setitem__("verdict", "green"),
        lambda d: d["reports"][0].pop("not_judged"),
        lambda d: d["reports"][0]["results"].append({"property": "consistency"}),
        lambda d: d.__setitem__("exit_code", 3),
        lambda d: d["reports"][0].__setitem__("surprise", 1),
    ):
        bad = json.loads(json.dumps(doc))
        mutate(bad)
        with pytest.raises(jsonschema.ValidationError):
            v.validate(bad)


def test_validate_summary_follows_its_schema(tmp_path):
    out = tmp_path / "val"
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "snapcheck",
            "validate",
            "--traces",
            "12",
            "--engine",
            "python",
            "--output",
            str(out),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode in (0, 1), res.stderr
    summary = json.loads((out / "summary.json").read_text())
    v = validator("validate-summary")
    v.validate(summary)
    broken = dict(summary, runs="many")
    with pytest.raises(jsonschema.ValidationError):
        v.validate(broken)


def test_a_kind_beyond_the_cap_per_result_is_still_among_the_reports_kinds():
    """Campaigns list one witness per result (max_per_result=1): the kinds of the others
    still count, so a campaign's violation_kinds are those ``check`` reports."""
    from snapcheck.checker import CheckOptions, check_trace
    from snapcheck.traces.golden import golden

    trace = golden("checkmate_fig2b_orphan")
    full = check_trace(trace, CheckOptions())
    capped = check_trace(trace, CheckOptions(max_witnesses=1, max_per_result=1))
    assert capped.kinds == full.kinds
    from snapcheck.checker.report import Report, Violation

    r = Report()
    r.add("p", "s", [Violation("a", "p", "s", "one"), Violation("b", "p", "s", "two")], cap=1)
    assert r.kinds == {"a", "b"} and [v.kind for v in r.violations] == ["a"] and r.results[0].omitted == 1
