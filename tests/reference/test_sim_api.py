"""The simulator's Python API as a user calls it: what ``SimConfig`` means by default,
and the errors a mistake through the API gets (a ``UsageError`` naming the argument,
worded for the API), matching what ``snapcheck simulate`` does on the command line."""

from __future__ import annotations

import io
import re

import pytest
from hypothesis import HealthCheck, given, settings
from rich.console import Console

from snapcheck.reference import Protocol, SimConfig, TaskProtocol, simulate
from snapcheck.reference.catalogue import resolve
from snapcheck.reference.testing import sim_configs
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
        ({"parallelism": "2"}, r"SimConfig.parallelism: expected an integer >= 1 and <= 256, not '2' \(str\)"),
        ({"parallelism": 0}, r"SimConfig.parallelism: expected an integer >= 1 and <= 256, not 0"),
        ({"parallelism": 100_000}, r"SimConfig.parallelism: expected an integer >= 1 and <= 256, not 100000"),
        ({"seed": "x"}, r"SimConfig.seed: expected an integer, not 'x' \(str\)"),
        ({"seed": 1.5}, r"SimConfig.seed: expected an integer"),
        (
            {"seed": 2**63},
            r"SimConfig.seed: expected an integer of at most 64 bits \(signed\), not 9223372036854775808",
        ),
        ({"decline_prob": float("nan")}, r"SimConfig.decline_prob: expected a number >= 0 and <= 1, not nan"),
        ({"hot_ratio": float("nan")}, r"SimConfig.hot_ratio: expected a number >= 0 and <= 1, not nan"),
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


class ShortTask(TaskProtocol):
    def on_barrier(self, ch, barrier):  # the simulator passes overtaking too
        pass


class Short(Protocol):
    name = "short"
    task_class = ShortTask


SHORT = "ShortTask.on_barrier(self, ch, barrier) cannot be called as on_barrier(self, ch, barrier, overtaking)"


@pytest.mark.parametrize("protocol", [Short, Short()], ids=["class", "instance"])
def test_a_protocol_given_as_an_object_gets_the_declaration_checks_of_the_command_line(protocol):
    with pytest.raises(UsageError, match=re.escape(SHORT)):
        simulate(SimConfig(protocol=protocol))
    with pytest.raises(UsageError, match=re.escape(SHORT)):
        sim_configs(protocols=[protocol])  # when the strategy is made, not at its first draw


def test_the_command_line_gives_the_same_reason(run, tmp_path):
    (tmp_path / "short.py").write_text(
        "from snapcheck.reference.protocol import Protocol, TaskProtocol\n"
        "class ShortTask(TaskProtocol):\n    def on_barrier(self, ch, barrier):\n        pass\n"
        "class Short(Protocol):\n    name = 'short'\n    task_class = ShortTask\n"
    )
    code, text = run("simulate", "-p", f"{tmp_path / 'short.py'}:Short", "-o", str(tmp_path / "t.jsonl"))
    assert code == 2 and SHORT in text


@pytest.mark.parametrize(
    ("protocols", "names"),
    [("abs-aligned", {"abs-aligned"}), ("abs-aligned, unaligned", {"abs-aligned", "unaligned"})],
)
def test_sim_configs_reads_one_string_as_run_validation_does(protocols, names):
    drawn = set()

    @settings(max_examples=20, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(sim_configs(protocols=protocols, with_failures=False))
    def draw(cfg):
        drawn.add(cfg.protocol)

    draw()
    assert drawn <= names and drawn


def test_sim_configs_takes_one_class_as_a_list_of_one_and_refuses_what_names_no_protocol():
    @settings(max_examples=3, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(sim_configs(protocols=resolve("unaligned"), with_failures=False))
    def draw(cfg):
        assert cfg.protocol is resolve("unaligned")

    draw()
    with pytest.raises(UsageError, match="protocols: expected a list of names, MODULE:CLASS specs or Protocol classes"):
        sim_configs(protocols=3)
    with pytest.raises(UsageError, match="unknown protocol 'no-such'"):
        sim_configs(protocols="no-such")


def test_run_validation_takes_none_for_no_mutant_and_one_name_as_the_command_line_does(tmp_path):
    from snapcheck.spark_validation.main_job import run_validation

    summary = run_validation(
        2,
        str(tmp_path),
        protocols="abs-aligned",
        workloads="q1",
        mutants="none",
        engine="python",
        progress=False,
        console=Console(file=io.StringIO()),
        oracle=False,
    )
    assert summary["mutants_selected"] == [] and summary["protocols_selected"] == ["abs-aligned"] and summary["ok"]
