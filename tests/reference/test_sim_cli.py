"""``snapcheck simulate``: writes the trace, lists, reproduces mutants, rejects bad input (exit 2)."""

import json

import pytest

from snapcheck.traces import read_trace


@pytest.fixture
def run(snapcheck_cli):
    return lambda *args: snapcheck_cli(*args, stderr=True)


def test_simulate_writes_a_valid_trace_and_metrics(run, tmp_path):
    out, met = tmp_path / "t.jsonl", tmp_path / "m.json"
    code, text = run(
        "simulate",
        "-p",
        "unaligned",
        "-w",
        "q3",
        "-P",
        "2",
        "-s",
        "7",
        "--fail",
        "join[0]@1500",
        "-o",
        str(out),
        "--metrics-json",
        str(met),
    )
    assert code == 0 and "rounds" in text
    t = read_trace(str(out))
    assert t.header.protocol["name"] == "unaligned" and t.header.seed == 7
    assert any(e.type == "fail" and e.proc == "join[0]" and e.t == 1500 for e in t.events)
    m = json.loads(met.read_text())
    assert m["failures"] == 1 and m["events"] == len(t.events)
    code, text = run("check", str(out))
    assert code == 0


def test_list_names_protocols_workloads_and_mutants(run):
    code, text = run("simulate", "--list")
    assert code == 0
    for name in (
        "chandy-lamport",
        "abs-cyclic",
        "aligned-timeout",
        "reachability",
        "random-cyclic",
        "unaligned-late-snapshot",
        "FLINK-40016",
    ):
        assert name in text


def test_mutant_demo_trace_is_caught_by_check(run, tmp_path):
    out = tmp_path / "bad.jsonl"
    code, _ = run("simulate", "--mutant", "chandy-lamport-no-channel-state", "--demo", "-o", str(out))
    assert code == 0
    t = read_trace(str(out))
    assert t.header.protocol["params"]["mutant"] == "chandy-lamport-no-channel-state"
    assert t.header.metadata["simulator"]["config"]["records"] == 30  # from the demo
    code, text = run("check", str(out))
    assert code == 1 and "dropped" in text


@pytest.mark.parametrize("name", ["abs-cyclic-early-back-edge", "regional-rescale-by-id"])
def test_demo_applies_every_field_of_the_mutants_demo_the_command_line_does_not_give(run, tmp_path, name):
    """``--demo`` is the mutant's demonstration configuration, all of it (its latency or
    recovery mode used to be dropped); an option given on the command line wins."""
    from snapcheck.reference.catalogue import MUTANTS

    demo = MUTANTS[name].demo
    out = tmp_path / "d.jsonl"
    assert run("simulate", "--mutant", name, "--demo", "--records", "3", "-o", str(out))[0] in (0, 1)
    config = read_trace(str(out)).header.metadata["simulator"]["config"]
    given = {"records": 3}
    for key, value in demo.items():
        want = given.get(key, value)
        assert config[key] == (list(map(list, want)) if isinstance(want, tuple) else want), key


@pytest.mark.parametrize(
    "args, message",
    [
        (["--fail", "join[0]"], "TASK@TIME"),
        (["--fail", "join[0]@soon"], "unknown situation"),
        (["--fail", "join[0]@snapshot#0"], "K >= 1"),
        (["--fail", "nosuch[0]@10"], "names no task"),
        (["--straggler", "join[0]=0"], "FACTOR > 0"),
        (["-p", "no-such-protocol"], "unknown protocol"),
        (["-w", "q99"], "unknown workload"),
        (["--mutant", "nope"], "unknown mutant"),
        (["--mutant", "unaligned-no-dedup", "-p", "abs-aligned"], "mutates protocol"),
        (["--demo"], "--demo needs --mutant"),
        (["-P", "0"], "at least 1"),
    ],
)
def test_bad_input_exits_2_with_a_message(run, tmp_path, args, message):
    code, text = run("simulate", "-w", "q3", *args, "-o", str(tmp_path / "x.jsonl"))
    assert code == 2 and message in text
    assert "Traceback" not in text


def test_output_is_required(run):
    code, text = run("simulate", "-p", "abs-aligned")
    assert code == 2 and "--output" in text


def test_simulate_oracle_shows_what_a_campaign_oracle_failure_is(snapcheck_cli, tmp_path):
    """``--oracle`` compares the run's results with its failure-free twin, as a campaign does:
    a mutant that loses logged messages on recovery differs (exit 1, the difference named), a
    correct protocol under the same failures does not, and a run without failures is its own
    twin (said, not judged)."""
    out = str(tmp_path / "t.jsonl")
    code, text = snapcheck_cli("simulate", "--mutant", "unc-no-logging", "--demo", "-o", out, "--oracle")
    assert code == 1 and "oracle: DIFFERS: sink output differs" in text
    code, text = snapcheck_cli(
        "simulate", "-p", "unc", "-w", "q12", "--fail", "window_count[0]@2000", "-o", out, "--oracle"
    )
    assert code == 0 and "failures 1," in text and "oracle: the results equal those of the failure-free run" in text
    code, text = snapcheck_cli("simulate", "-p", "unc", "-o", out, "--oracle")
    assert code == 0 and "oracle: not judged: the run is its own failure-free run" in text
