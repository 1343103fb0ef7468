"""The trace module of ``Unaligned`` keeps one of two equivalent handlings of a barrier
at the head of its queue in mode ``aligned_timeout`` (``HeadIsAligned`` in
``specs/UnalignedTrace.tla``): handled as the priority trigger of an unaligned
snapshot, or aligned and then snapshotted as timed out, both lead to the same
snapshot and nothing else tells them apart. Keeping one must change no verdict
and no location of a first unmatched event, on correct traces and on traces with
a checkpoint dropped or taken one event earlier, while the states TLC explores
shrink (with k tasks aligning at once, 2^k states per event become one)."""

import json
import random
import re
import shutil

import pytest

from snapcheck.checker.tla import conform as conformance
from snapcheck.checker.tla.conform import ACCEPT, REJECT
from snapcheck.checker.tla.manifest import specs_dir
from snapcheck.reference.catalogue import tla_mappings
from snapcheck.reference.simulation import SimConfig, simulate
from snapcheck.traces import read_trace

pytestmark = [pytest.mark.tlc, pytest.mark.slow]


def both_handlings(tmp_path):
    """A copy of the specifications whose UnalignedTrace keeps both handlings."""
    copy = tmp_path / "specs"
    shutil.copytree(specs_dir(), copy)
    module = copy / "UnalignedTrace.tla"
    text = module.read_text()
    both = re.sub(r"HeadIsAligned\(pos\) ==\n(    .*\n)+", "HeadIsAligned(pos) == TRUE\n", text)
    assert both != text
    module.write_text(both)
    return copy


def traces(tmp_path) -> list[str]:
    """A trace of tasks that align at once (diamond, parallelism 3, one-record buffers,
    a short alignment timeout) and copies of it in which a task's checkpoint is dropped
    or taken one event of its own earlier (its events renumbered, so that each copy
    is a well-formed trace)."""
    cfg = SimConfig(
        protocol="aligned-timeout",
        workload="diamond",
        parallelism=3,
        seed=3,
        records=3,
        gap=30,
        interval=150,
        aligned_timeout=50,
        latency=4,
        jitter=5,
        buffer=1,
        out_buffer=1,
        decline_prob=0.05,
    )
    header, *records = [json.loads(line) for line in simulate(cfg).dumps().decode().splitlines()]
    checkpoints = [i for i, r in enumerate(records) if r["type"] == "checkpoint" and r["idx"] > 1]
    rnd = random.Random(7)
    paths = [tmp_path / "trace.jsonl"]
    variants = [records]
    for k in range(8):
        changed = [dict(r) for r in records]
        i = rnd.choice(checkpoints)
        proc = changed[i]["proc"]
        if k % 2:  # taken before the task's previous event
            j = max(n for n in range(i) if changed[n]["proc"] == proc)
            changed.insert(j, changed.pop(i))
        else:
            del changed[i]
        own = [r for r in changed if r["proc"] == proc]
        for n, r in enumerate(own, start=own[0]["idx"]):
            r["idx"] = n
        variants.append(changed)
        paths.append(tmp_path / f"changed-{k}.jsonl")
    for path, variant in zip(paths, variants):
        path.write_text("".join(json.dumps(r) + "\n" for r in [header, *variant]))
    return [str(p) for p in paths]


def test_one_handling_of_a_barrier_at_the_head_gives_the_same_verdicts(tmp_path, monkeypatch):
    paths = traces(tmp_path)
    shipped = conformance.conform(paths, tla_mappings(), parallel=2)
    monkeypatch.setenv("SNAPCHECK_SPECS", str(both_handlings(tmp_path)))
    both = conformance.conform(paths, tla_mappings(), parallel=2)
    for s, b in zip(shipped, both):
        assert (s.verdict, s.matched, s.location) == (b.verdict, b.matched, b.location), (s.render(), b.render())
    assert shipped[0].verdict == ACCEPT, shipped[0].render()
    assert sum(v.verdict == REJECT for v in shipped) >= 2, [v.render() for v in shipped]


def test_one_handling_of_a_barrier_at_the_head_explores_far_fewer_states(tmp_path, monkeypatch):
    prepared = conformance.prepare(read_trace(traces(tmp_path)[0]), tla_mappings())
    shipped, _ = conformance._run_tlc([prepared], [0], "Progress", 600, True)
    monkeypatch.setenv("SNAPCHECK_SPECS", str(both_handlings(tmp_path)))
    both, _ = conformance._run_tlc([prepared], [0], "Progress", 600, True)
    assert shipped.distinct is not None and both.distinct is not None
    assert shipped.distinct <= 1.2 * len(prepared.events) and both.distinct >= 5 * shipped.distinct, (
        len(prepared.events),
        shipped.distinct,
        both.distinct,
    )
