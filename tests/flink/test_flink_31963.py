"""FLINK-31963 on real Flink 1.17.0 and 1.17.1 (slow; needs both releases' ``pyflink``
directories: ``SNAPCHECK_FLINK_1170`` / ``SNAPCHECK_FLINK_1171``, or ``.flink-envs/f1170`` /
``.flink-envs/f1171`` virtual environments at the repository root, see docs/flink.md).

The same run on each release: ``stateless-mid`` (src -> relay without state -> slow sink, network
channels), unaligned, a failure, then a restore at parallelism 2 of the latest retained
checkpoint. A run *exercises* the bug when the restored checkpoint (read from its ``_metadata``)
has the relay without any state of its own, channel state in the sink's input buffers from the
relay, and no output-part handles of the source toward the relay (1.17.0 already assigned a
stateless operator with upstream output state). The verdicts are compared without being told
which release is which: 1.17.0 must show ``skipped-reassignment`` and nothing else, 1.17.1 must
be clean with the relay's new subtasks restored."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from snapcheck.commands.flink import Judgement
from snapcheck.flink.build import FlinkSetupError, build
from snapcheck.flink.expectations import stateless_operators
from snapcheck.flink.run import RunConfig, run_job
from snapcheck.traces.jsonl import parse_trace

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parents[2]
SEEDS = tuple(range(21, 33))  # a run exercises the bug about one time in three
# one slot per task manager, relay and sink in slot groups of their own: every exchange of the
# relay is a network channel; small segments and many exclusive buffers let the sink's input
# buffers take the whole backlog, so that the relay and its upstream end with empty buffers
CONF = {
    "local.number-taskmanager": "6",
    "taskmanager.numberOfTaskSlots": "1",
    "taskmanager.memory.segment-size": "4kb",
    "taskmanager.network.memory.buffers-per-channel": "200",
    "taskmanager.network.memory.floating-buffers-per-gate": "100",
    "taskmanager.memory.network.min": "32mb",
    "taskmanager.memory.network.max": "32mb",
}


def flink_home(version: str) -> str | None:
    env = os.environ.get(f"SNAPCHECK_FLINK_{version.replace('.', '')}")
    if env:
        return env
    found = sorted(ROOT.glob(f".flink-envs/f{version.replace('.', '')}/lib/python3*/site-packages/pyflink"))
    return str(found[0]) if found else None


def config(seed: int) -> RunConfig:
    return RunConfig(
        job="stateless-mid",
        mode="unaligned",
        parallelism=1,
        records=1500,
        rate=3000,
        work={"sink": 2000},
        interval_ms=100,
        fails=["sink:0:1000"],
        rescale="failure:2",
        seed=seed,
        timeout_s=90,
        conf=CONF,
    )


def exercised(trace) -> bool:
    """The restored checkpoint has the relay without state, channel state next to it, and none
    of it as output part of the relay's upstream."""
    _, ops = stateless_operators(trace)
    return any(s.op == "relay" and s.adjacent and not any("toward relay" in a for a in s.adjacent) for s in ops)


def judged_run(version: str, tmp_path) -> tuple[int, Judgement]:
    home = flink_home(version)
    if home is None:
        pytest.skip(
            f"Flink {version} is not installed (set SNAPCHECK_FLINK_{version.replace('.', '')} or create "
            f".flink-envs/f{version.replace('.', '')}, see docs/flink.md)"
        )
    try:
        jar = build(home=home)
    except FlinkSetupError as exc:
        pytest.skip(f"Flink {version} or the JDK is not usable: {exc}")
    assert jar.flink_version == version
    for seed in SEEDS:
        outcome = run_job(config(seed), tmp_path / f"{version}-{seed}", jar)
        assert outcome.status == "completed", outcome.merged.header["metadata"]["flink"].get("error")
        j = Judgement(parse_trace(outcome.merged.dumps().decode(), f"{version}-{seed}.jsonl"))
        if exercised(j.trace):
            return seed, j
    pytest.fail(
        f"Flink {version}: no run of seeds {SEEDS} restored a checkpoint in which the relay had no state "
        "of its own next to channel state; FLINK-31963 was not exercised"
    )


def test_flink_1170_skips_the_stateless_relay_and_1171_does_not(tmp_path):
    verdicts = {}
    for version in ("1.17.0", "1.17.1"):
        _, j = judged_run(version, tmp_path)
        relay = next(s for s in stateless_operators(j.trace)[1] if s.op == "relay")
        verdicts[version] = (j.kinds, len(relay.skipped), len(relay.restores), j.render())
    kinds, skipped, restores, text = verdicts["1.17.0"]
    assert kinds == ["skipped-reassignment"], text
    assert skipped == restores == 2, text
    kinds, skipped, restores, text = verdicts["1.17.1"]
    assert kinds == [] and skipped == 0 and restores == 2, text
