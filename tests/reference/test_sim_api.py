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
