"""The simulator's Python API as a user calls it: what ``SimConfig`` means by default,
and the errors a mistake through the API gets (a ``UsageError`` naming the argument,
worded for the API), matching what ``snapcheck simulate`` does on the command line."""

from __future__ import annotations

import pytest

from snapcheck.reference import SimConfig, simulate
from snapcheck.traces.errors import UsageError


@pytest.fixture
def run(snapcheck_cli):
    return lambda *args: snapcheck_cli(*args, stderr=True)


def test_a_mutant_without_a_protocol_runs_on_the_protocol_it_mutates_as_on_the_command_line(run, tmp_path):
    cfg = SimConfig(mutant="unaligned-late-snapshot", workload="q3", seed=4)
    assert cfg.protocol == "unaligned" and SimConfig().protocol == "abs-aligned"
    out = tmp_path / "t.jsonl"
    code, _ = run("simulate", "-m", "unaligned-late-snapshot", "-w", "q3", "-s", "4", "-o", str(out))
    assert code == 0 and simulate(cfg).dumps() == out.read_bytes()
    with pytest.raises(UsageError, match="mutates protocol 'unaligned', not 'abs-aligned'"):
        simulate(SimConfig(protocol="abs-aligned", mutant="unaligned-late-snapshot"))
    with pytest.raises(UsageError, match="abs-aligned is not a mutant"):
        SimConfig(mutant="abs-aligned")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"parallelism": "2"}, r"SimConfig.parallelism: expected an integer >= 1, not '2' \(str\)"),
        ({"parallelism": 0}, r"SimConfig.parallelism: expected an integer >= 1, not 0"),
        ({"seed": "x"}, r"SimConfig.seed: expected an integer, not 'x' \(str\)"),
        ({"seed": 1.5}, r"SimConfig.seed: expected an integer"),
        ({"records": 0}, r"SimConfig.records: expected an integer >= 1 or None"),
        ({"fifo": "no"}, r"SimConfig.fifo: expected True or False"),
        ({"interval": True}, r"SimConfig.interval: expected an integer >= 1, not True \(bool\)"),
        ({"failures": "sink[0]@100"}, r"SimConfig.failures: expected a tuple of"),
        ({"failures": ("map[0]",)}, r"SimConfig.failures: fault 'map\[0\]': expected TASK@TIME"),
        ({"failures": (("map[0]", "soon"),)}, r"SimConfig.failures: \('map\[0\]', 'soon'\) is not"),
        ({"failures": (("nope[0]", 100),)}, r"SimConfig.failures: names no task: 'nope\[0\]' \(tasks: bids\[0\]"),
        ({"failures": (("map[0]", "nowhere", 1),)}, r"SimConfig.failures: unknown situation\(s\) 'nowhere'"),
        ({"stragglers": (("map[0]"),)}, r"SimConfig.stragglers: expected a tuple of \(task id, cost factor\)"),
    ],
)
def test_a_field_of_the_wrong_type_is_a_usage_error_naming_it(fields, message):
    with pytest.raises(UsageError, match=message):
        simulate(SimConfig(**fields))


def test_the_command_line_names_its_own_option(run, tmp_path):
    code, text = run("simulate", "--fail", "nosuch[0]@10", "-o", str(tmp_path / "t.jsonl"))
    assert code == 2 and "--fail: names no task: 'nosuch[0]'" in text and "SimConfig" not in text
