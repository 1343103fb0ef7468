"""``snapcheck validate --conform``: campaign runs validated against their TLA+ trace
specifications, and the specification's verdict held against the checker's.

Real TLC runs on small campaigns (the Python engine, and local[2] in the slow test):
the chosen subset is a function of the seeds alone; a mutant trace the specification
rejects while the checker passes it counts as caught (by the specification); a
correct protocol's REJECT is a failing run whose reproduction command gives the same
verdict; a checker that contradicts the specification is reported as a disagreement
with the trace kept."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from snapcheck.checker.tla.manifest import specs_dir
from snapcheck.spark_validation.campaign import _rows, read_results, run_campaign
from snapcheck.spark_validation.configs import Selection
from snapcheck.spark_validation.conformance import chosen
from snapcheck.spark_validation.main_job import run_validation

pytestmark = pytest.mark.tlc

SNAPCHECK = str(Path(sys.executable).parent / "snapcheck")


def _failure_free_campaign(n: int, out: Path, protocol: str) -> dict:
    """The summary of ``n`` failure-free runs of ``protocol`` on q1, every one conformed."""
    return run_validation(
        n,
        str(out),
        protocols=[protocol],
        workloads=["q1"],
        mutants=(),
        failures=False,
        conform=1.0,
        engine="python",
        progress=False,
    )


def _seeds_with(rows, column: str) -> set[int]:
    return {r["seed"] for r in rows if r[column] is not None}


def test_the_chosen_runs_are_a_function_of_the_seed_whatever_the_partitioning():
    sel = Selection(protocols=("chandy-lamport",), workloads=("q1",), failures=False, conform=0.4)
    whole = _rows(0, 10, 100, sel)
    parts = _rows(0, 4, 100, sel) + _rows(4, 10, 100, sel)
    assert whole == parts
    picked = _seeds_with(whole, "conform")
    assert picked == {s for s in range(100, 110) if chosen(s, 0.4)}
    assert 0 < len(picked) < 10
    # failure-free runs of a correct protocol on a topology its specification models: all accepted
    assert {r["conform"] for r in whole if r["seed"] in picked} == {"accept"}
    # its own specification, or RescaleTrace for the runs that restore at another parallelism
    assert {r["conform_spec"] for r in whole if r["seed"] in picked} <= {"ChandyLamportTrace", "RescaleTrace"}
    assert all(r["disagreement"] is None and r["trace"] is None for r in whole)


def test_a_mutant_the_specification_rejects_is_caught_by_it(tmp_path):
    """aligned-no-cancel declines a round without sending cancellation markers: a rule
    ABSTrace states and the checker does not (it sees only the consequence, an alignment
    that never ends, when one happens). In this five-run campaign (base seed 1) runs 1 and 3
    are the mutant's (a small campaign gives every second run to its one mutant), and one of
    them declines without such a consequence: the checker passes it, the specification
    rejects it."""
    s = run_validation(
        5,
        str(tmp_path / "v"),
        protocols=["abs-aligned"],
        workloads=["q8"],
        mutants=["aligned-no-cancel"],
        conform=1.0,
        seed=1,
        engine="python",
        progress=False,
    )
    rows = [r for r in read_results(s["results"]).to_pylist() if r["mutant"]]
    rejected = [r for r in rows if r["conform"] == "reject"]
    assert rejected and all(r["verdict"] == "clean" for r in rejected)  # only the specification sees it
    (m,) = s["mutants"]
    assert m["caught"] == len({r["run_id"] for r in rows if r["conform"] == "reject" or r["verdict"] != "clean"})
    assert m["caught_by_spec"] == len(rejected) and not m["escaped"] and "TLA+ REJECT" in m["reported"]
    assert not s["failing_runs"] and s["ok"]  # a mutant's catch fails nothing
    c = next(c for c in s["conformance"] if c["mutant"])
    assert (c["mutant"], c["chosen"], c["rejected"]) == ("aligned-no-cancel", len(rows), len(rejected))
    assert c["conformed"] == c["accepted"] + c["rejected"]
    # checker clean, specification REJECT: listed as a disagreement, both verdicts, the trace kept
    d = s["disagreements"][0]
    assert (d["spec_verdict"], d["checker_verdict"], d["spec"]) == ("REJECT", "clean", "ABSTrace")
    assert (tmp_path / "v" / d["trace"]).read_text().startswith('{"format":"snapcheck-trace"')
    _follows_the_schema(tmp_path / "v" / "summary.json")


def test_a_correct_run_the_specification_rejects_fails_with_a_command_reproducing_it(tmp_path, monkeypatch):
    """A specification that wrongly rejects long traces (UncoordinatedTrace limited to 30
    events, in a copy of specs/ named by SNAPCHECK_SPECS): the correct runs it rejects are
    failing runs, and their reproduction command gives the same verdict."""
    specs = tmp_path / "specs"
    shutil.copytree(specs_dir(), specs)
    module = specs / "UncoordinatedTrace.tla"
    text = module.read_text()
    assert "TraceNext == cursor < Len(Traces[traceNo]) /\\ " in text
    module.write_text(text.replace("TraceNext == cursor < Len(Traces[traceNo]) /\\ ", "TraceNext == cursor < 30 /\\ "))
    monkeypatch.setenv("SNAPCHECK_SPECS", str(specs))
    out = tmp_path / "v"
    s = _failure_free_campaign(2, out, "unc")
    assert not s["ok"] and len(s["failing_runs"]) == 2
    for f in s["failing_runs"]:
        assert (f["verdict"], f["conform"]) == ("clean", "reject")  # the checker passed it
        assert f["command"].endswith(f"-o run-{f['seed']}.jsonl && snapcheck conform run-{f['seed']}.jsonl")
        location = f["conform_detail"].split(": ")[0]
        assert location.startswith(f"run-{f['seed']}.jsonl:")
        run = subprocess.run(
            f["command"].replace("snapcheck ", SNAPCHECK + " "),
            shell=True,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=dict(os.environ, SNAPCHECK_SPECS=str(specs)),
            timeout=600,
        )
        assert run.returncode == 1, run.stdout + run.stderr
        assert f"{location}: first event no behaviour of the specification matches" in run.stdout
        assert (out / "traces" / f"run-{f['seed']}.jsonl").is_file()  # kept
    md = (out / "summary.md").read_text()
    assert "TLA+ REJECT" in md and "snapcheck conform run-" in md


def test_a_checker_contradicting_the_specification_is_a_disagreement(tmp_path, monkeypatch):
    """A checker made to report an orphan on every trace: the specification, which
    expresses consistency, accepts them; every conformed run is a disagreement."""
    import snapcheck.checker as checker
    from snapcheck.checker.report import Violation

    real = checker.check_trace

    def planted(trace, opts=None):
        report = real(trace, opts)
        report.add("consistency", "round 1", [Violation("orphan", "consistency", "round 1", "planted")])
        return report

    monkeypatch.setattr(checker, "check_trace", planted)
    s = _failure_free_campaign(3, tmp_path / "v", "abs-aligned")
    by_abs = [r for r in read_results(s["results"]).to_pylist() if r["conform_spec"] == "ABSTrace"]
    assert len(by_abs) >= 2 and len(s["disagreements"]) == len(by_abs)  # (a rescaled run goes to RescaleTrace)
    for d in s["disagreements"]:
        assert (d["spec_verdict"], d["checker_verdict"], d["spec"]) == ("ACCEPT", "orphan", "ABSTrace")
        assert "orphan, which ABSTrace expresses" in d["why"]
        assert (tmp_path / "v" / d["trace"]).is_file()
    assert s["conformance"][0]["disagreements"] == len(by_abs)
    _follows_the_schema(tmp_path / "v" / "summary.json")


def _follows_the_schema(path: Path) -> None:
    """summary.json follows checker/schema/validate-summary.schema.json, which constrains the
    conformance part (a disagreement without the specification's verdict is refused)."""
    import jsonschema

    from snapcheck.checker.report import json_schema

    schema = json_schema("validate-summary")
    jsonschema.Draft202012Validator.check_schema(schema)
    v = jsonschema.Draft202012Validator(schema)
    summary = json.loads(path.read_text())
    v.validate(summary)
    assert summary["conformance"] and "conform_fraction" in summary
    broken = dict(
        summary,
        disagreements=[
            {k: x for k, x in d.items() if k != "spec_verdict"}
            for d in [*summary["disagreements"], {"spec_verdict": "ACCEPT"}]
        ],
    )
    with pytest.raises(jsonschema.ValidationError):
        v.validate(broken)
    with pytest.raises(jsonschema.ValidationError):
        v.validate(dict(summary, conformance=[dict(summary["conformance"][0], rejected=-1)]))


def test_without_java_the_chosen_runs_are_counted_not_conformed(monkeypatch):
    monkeypatch.setenv("SNAPCHECK_JAVA", "/nonexistent/bin/java")
    sel = Selection(protocols=("chandy-lamport",), workloads=("q1",), failures=False, conform=1.0)
    rows = _rows(0, 3, 100, sel)
    assert [r["conform"] for r in rows] == ["no-java"] * 3
    assert all("no Java on this executor" in r["conform_detail"] for r in rows)
    assert [r["verdict"] for r in rows] == ["clean"] * 3  # the checker's verdicts stand


def test_conform_is_a_fraction_of_the_runs(tmp_path):
    for bad in ("0", "1.5", "-0.1"):
        run = subprocess.run(
            [SNAPCHECK, "validate", "-n", "2", "--engine", "python", "--conform", bad, "-o", str(tmp_path / "v")],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 2 and "0 < FRACTION <= 1" in run.stderr, run.stderr
        assert "Traceback" not in run.stderr


@pytest.mark.slow
@pytest.mark.spark
def test_spark_conforms_the_same_runs_with_the_same_verdicts(spark, tmp_path):
    sel = Selection.of(
        protocols=["abs-aligned", "unc"],
        workloads=["q1", "q12"],
        mutants=["aligned-no-cancel", "unc-no-logging"],
        conform=0.5,
    )
    py = run_campaign(20, sel, str(tmp_path / "py"), base_seed=25, engine="python", progress=False)
    sp = run_campaign(20, sel, str(tmp_path / "sp"), base_seed=25, engine="spark", progress=False)
    a, b = read_results(py.results).to_pylist(), read_results(sp.results).to_pylist()
    assert a == b
    assert _seeds_with(b, "conform") == {s for s in range(25, 45) if chosen(s, 0.5)}
    assert {"accept"} <= {r["conform"] for r in b}
