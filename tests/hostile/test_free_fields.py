"""Hostile values in the trace format's free-form fields: a protocol's ``params``, events'
``attrs``, ``piggyback`` and ``vars``, the header's ``metadata`` — what the JSON Schema
leaves to each family of checks (2PC transactions, HMNR and BCS piggybacks, changelog
handles, split assignments, replicas, the simulator's configuration). Whatever value
such a field holds, ``snapcheck check`` exits 0, 1, 2 or 4 (nothing judged, said), never with a traceback, in
bounded time; a field a family cannot read is exit 2 naming the family and, when an
event was being read, its line (``checker.free_fields``).

The seeds are small reference-simulator traces of the protocols that write these
fields; hypothesis picks a trace, a line, a path inside a free-form field and a
hostile value (or deletes the field).
"""

from __future__ import annotations

import json
import time
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from snapcheck.reference import SimConfig, simulate
from tests.hostile.commands import run

SEEDS = (
    SimConfig(protocol="hmnr", workload="q1", records=4, seed=3),
    SimConfig(protocol="bcs", workload="q1", records=4, seed=3),
    SimConfig(protocol="abs-aligned-2pc", workload="q3", records=6, seed=3, failures=(("join[0]", 1500),)),
    SimConfig(protocol="regional-aligned", records=4, seed=3, failures=(("op0[0]", 900),)),
    SimConfig(protocol="gic-changelog", workload="q3", records=6, seed=3, failures=(("task[0]", 1500),)),
    SimConfig(protocol="liverobin", workload="q3", records=6, seed=3, failures=(("U[0]#0", 1500),)),
    SimConfig(protocol="unc", workload="q3", records=6, seed=3, failures=(("join[0]", 1500),)),
    SimConfig(protocol="unaligned", workload="q12", records=6, seed=5, rescale=(("savepoint", 1500, 3),)),
)
FREE = {"piggyback", "vars", "attrs", "params", "metadata"}
HOSTILE = ("1", "", -1, 0, 2**62, 1.5, None, True, {}, [], [1], {"a": 1}, "V", [[0, 1]], ["a"], [None], "DELETE")
SECONDS = 20.0


@cache
def seeded() -> list[list[dict]]:
    """Each seed trace as its lines' JSON objects."""
    return [[json.loads(line) for line in simulate(c).dumps().splitlines()] for c in SEEDS]


def free_paths(obj, path=(), inside=False):
    """Every path to a value inside a free-form field of ``obj``."""
    if inside:
        yield path
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from free_paths(v, (*path, k), inside or k in FREE)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from free_paths(v, (*path, i), inside)


def test_every_seed_has_free_fields_to_break():
    for config, lines in zip(SEEDS, seeded(), strict=True):
        assert sum(1 for o in lines for _ in free_paths(o)) > 10, config.protocol


@settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_a_hostile_free_field_is_judged_or_refused_never_a_crash(data, tmp_path):
    lines = [dict(o) for o in data.draw(st.sampled_from(seeded()), label="seed")]
    candidates = [(i, p) for i, o in enumerate(lines) for p in free_paths(o)]
    i, path = data.draw(st.sampled_from(candidates), label="field")
    value = data.draw(st.sampled_from(HOSTILE), label="value")
    obj = json.loads(json.dumps(lines[i]))
    parent = obj
    for key in path[:-1]:
        parent = parent[key]
    if value == "DELETE":
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    lines[i] = obj
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(o) + "\n" for o in lines))
    start = time.monotonic()
    code, out = run(["check", str(trace)])
    assert code in (0, 1, 2, 4) and "Traceback" not in out, (i + 1, path, value, out[-3000:])  # 4: nothing judged
    assert time.monotonic() - start < SECONDS, (i + 1, path, value)
    if code == 2:
        assert str(trace) in out, out


def test_an_unreadable_field_names_its_family_and_line(tmp_path):
    """A BCS piggyback whose clock is a string: the CIC checks cannot read it, and name
    the line of the event they were reading, one of the message's life (its send, the
    forced checkpoint its receipt decides, or its receipt)."""
    lines = seeded()[1]
    at = next(i for i, o in enumerate(lines) if "sn" in (o.get("piggyback") or {}))
    bad = json.loads(json.dumps(lines[at]))
    bad["piggyback"]["sn"] = "1"
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(bad if k == at else o) + "\n" for k, o in enumerate(lines)))
    code, out = run(["check", str(trace)])
    assert code == 2 and "the CIC checks cannot read this trace: TypeError" in out, out
    named = int(out.split(": line ")[1].split(":")[0])  # an event of the message's life: send to receipt
    received = next(k for k, o in enumerate(lines) if o.get("type") == "recv" and o.get("mid") == bad["mid"])
    assert at + 1 <= named <= received + 1, out


def _set(header: dict, path: tuple, value) -> dict:
    header = json.loads(json.dumps(header))
    parent = header
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return header


@pytest.mark.parametrize(
    ("seed", "path", "value", "message"),
    [
        (3, ("protocol", "params", "max_consecutive"), "3", "params.max_consecutive must be an integer of at least 0"),
        (3, ("protocol", "params", "max_consecutive"), True, "params.max_consecutive must be an integer of at least 0"),
        (3, ("processes", 6, "attrs", "records"), -1, "attrs.records of process 'split[0]' must be an integer"),
        (5, ("protocol", "params", "replicas"), "1", "params.replicas must map each task to a list of its replica"),
        (6, ("metadata", "simulator", "config", "failures"), [["join[0]"]], "failures[0] must be [task, time] or"),
    ],
)
def test_a_mistyped_parameter_is_refused_not_read_as_absent(seed, path, value, message, tmp_path):
    """A parameter of the wrong type used to read as absent or as another value: a limit
    of consecutive regional checkpoints given as a string made the drift "not judged:
    the protocol declares no limit", ``true`` a limit of 1, a malformed requested fault
    vanished from the coverage; a negative split size judged nothing."""
    lines = seeded()[seed]
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(_set(o, path, value) if k == 0 else o) + "\n" for k, o in enumerate(lines)))
    code, out = run(["check", str(trace)])
    assert code == 2 and f"{trace}: line 1: " in out and message in out, out


def test_a_split_of_absurd_size_is_judged_in_bounded_time(tmp_path):
    """A split declared with 2^62 records: its records are counted, never listed one by
    one (that ran out of memory); every sink ended, so most of them are lost."""
    lines = seeded()[3]
    trace = tmp_path / "t.jsonl"
    huge = _set(lines[0], ("processes", 6, "attrs", "records"), 2**62)
    trace.write_text("".join(json.dumps(huge if k == 0 else o) + "\n" for k, o in enumerate(lines)))
    start = time.monotonic()
    code, out = run(["check", str(trace), "--property", "split-assignment"])
    assert code == 1 and f"{2**62 - 4:,}".replace(",", "") in out.replace(",", ""), out[-2000:]
    assert time.monotonic() - start < SECONDS
