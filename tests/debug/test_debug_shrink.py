"""Delta debugging: ddmin itself, trace candidates (always valid, consistently
renumbered), and shrunk traces that still fail and are 1-minimal."""

from __future__ import annotations

import os
import random
import re
import shlex
from pathlib import Path

import debug_samples as S
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from snapcheck.checker import CheckOptions, check_trace
from snapcheck.cli import cli, main
from snapcheck.debug.shrink import CheckerPredicate, ShrinkError, TraceShrinker, ddmin, shrink_trace
from snapcheck.traces import TraceRecorder, read_trace
from snapcheck.traces.errors import TraceErrors
from snapcheck.traces.jsonl import parse_trace
from snapcheck.traces.writer import dumps_trace

EXAMPLES = Path(__file__).resolve().parents[2] / "traces" / "examples"


# -- ddmin --------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.data())
def test_ddmin_finds_a_one_minimal_subset(n, data):
    """For a monotone failure "contains one of these sets", ddmin returns one of the sets
    (or a 1-minimal superset), and every single removal passes."""
    elems = list(range(n))
    cores = data.draw(st.lists(st.sets(st.sampled_from(elems), min_size=1, max_size=3), min_size=1, max_size=3))
    fails = lambda kept: any(c <= set(kept) for c in cores)  # noqa: E731
    out = ddmin(elems, fails)
    assert fails(out)
    for x in out:
        assert not fails([y for y in out if y != x])
    assert any(c == set(out) for c in cores) or all(not c < set(out) for c in cores)


def test_ddmin_empty_failure():
    assert ddmin([1, 2, 3], lambda kept: True) == []


# -- candidates -----------------------------------------------------------------------
def _valid(sh: TraceShrinker, removed) -> bool:
    header, events, _, _ = sh.candidate(removed)
    if not header.processes:
        return True
    try:
        parse_trace(dumps_trace(header, events).decode())
    except TraceErrors as exc:
        raise AssertionError(exc.render()) from None
    return True


@pytest.mark.parametrize(
    "make",
    [
        S.example_c,
        S.aligned,
        S.unaligned,
        S.failure,
        S.rescaled,
        lambda: S.random_trace(21, fail=True),
        lambda: S.random_trace(22, fail=True),
    ],
)
def test_every_candidate_is_a_valid_trace(make):
    t = make()
    sh = TraceShrinker(t)
    elems = sh.elements()
    rnd = random.Random(len(elems))
    for x in elems:  # each element alone
        assert _valid(sh, [x])
    for _ in range(60):  # and random subsets
        assert _valid(sh, rnd.sample(elems, rnd.randrange(len(elems) + 1)))


def test_a_rescale_with_checkpoint_numbers_past_1_shrinks(tmp_path):
    """A rescale names checkpoints by number in its sources and retires (Flink numbers them
    by checkpoint id: 7, 9, …): the renumbered candidates rename them all."""
    text = S.as_text(S.rescaled(lose_a1=True)).replace('"ckpt":1', '"ckpt":7').replace('"ckpt":2', '"ckpt":9')
    (tmp_path / "t.jsonl").write_text(text)
    out = tmp_path / "s.jsonl"
    code = _exit("shrink", tmp_path / "t.jsonl", "--property", "rescale-state", "-o", out)
    assert code == 0
    shrunk = read_trace(str(out))
    kept = [(e.type, e.proc, e.ckpt) for e in shrunk.events]
    assert kept == [("checkpoint", q, 1) for q in ("a0", "a1")] + [("retire", q, 1) for q in ("a0", "a1")] + [
        ("restore", "n0", 0)
    ]
    assert check_trace(shrunk).kinds >= {"key-group-lost"}


def test_renumbering_follows_the_recorder():
    t = S.failure()
    sh = TraceShrinker(t)
    # remove the first message and P0's checkpoint: seq, ckpt and mids move down
    header, events, _, _ = sh.candidate([("message", "c01:1"), ("checkpoint", ("P1", 1))])
    # P1's checkpoint is gone, so the failure restoring it goes too
    assert [e["type"] for e in events if e["proc"] == "P1"] == ["recv", "recv"]
    sends = [(e["mid"], e["seq"]) for e in events if e["type"] == "send"]
    assert sends == [("c01:1", 1), ("c01:2", 2)]
    assert [e["idx"] for e in events if e["proc"] == "P0"] == list(range(sum(e["proc"] == "P0" for e in events)))
    replay = [e for e in events if e["type"] == "replay"][0]
    assert replay["replay_of"] == "c01:1" and replay["mid"] == "c01:1/r1"
    trunc = [e for e in events if e["type"] == "log_truncate"][0]
    assert trunc["through_seq"] == 0  # seq 1 (removed) is below every survivor


def test_regenerated_messages_keep_their_sequence_numbers():
    """After a restore the sender regenerates (ch, seq) under a new epoch; removing an
    earlier message renumbers the original and the regenerated copy alike."""
    from snapcheck.traces import TraceRecorder

    rec = TraceRecorder(["P0", "P1"], [("c", "P0", "P1")])
    rec.send("P0", "c")
    rec.checkpoint("P0")
    m2 = rec.send("P0", "c")
    rec.recv("P1", m2)
    rec.fail("P0")
    rec.restore("P0", 1)
    m2b = rec.send("P0", "c")  # regenerated: seq 2 again, mid c:2@1
    rec.recv("P1", m2b)
    t = parse_trace(rec.dumps().decode())
    header, events, _, _ = TraceShrinker(t).candidate([("message", "c:1")])
    sends = [(e["mid"], e["seq"]) for e in events if e["type"] == "send"]
    assert sends == [("c:1", 1), ("c:1@1", 1)]
    parse_trace(dumps_trace(header, events).decode())


# -- shrinking with an independent oracle --------------------------------------------------
def _assert_one_minimal(result, violates):
    sh = TraceShrinker(result.trace, result.options)
    for x in sh.elements():
        header, events, opts, _ = sh.candidate([x])
        if not header.processes:
            continue
        cand = parse_trace(dumps_trace(header, events).decode())
        assert not violates(cand, opts), f"removing {x} still fails"


@pytest.mark.parametrize("seed", [1, 3, 5, 8])
def test_shrink_random_traces_with_an_independent_oracle(seed):
    t = S.random_trace(seed, n=4, steps=70)
    assert S.orphan_wrt_last(t)
    res = shrink_trace(t, S.orphan_wrt_last)
    assert res.invalid == 0
    assert S.orphan_wrt_last(res.trace)
    assert len(res.trace.events) < len(t.events)
    # an orphan needs its send, its processing and the receiver's checkpoint: nothing else
    assert sorted(e.type for e in res.trace.events) == ["checkpoint", "recv", "send"]
    assert len(res.trace.processes) == 2 and len(res.trace.channels) == 1
    _assert_one_minimal(res, S.orphan_wrt_last)


def test_shrink_refuses_a_passing_trace():
    with pytest.raises(ShrinkError):
        shrink_trace(S.example_a(), lambda t, o, names: False)


# -- shrinking with the checker -----------------------------------------------------------
def _violates(prop, kind):
    return CheckerPredicate(prop, kind, lambda d: CheckOptions(properties={prop}, **d))


@pytest.mark.parametrize("seed", [1, 8, 13])
def test_shrink_z_cycle_with_the_checker(seed):
    t = S.random_trace(seed, n=3, steps=50)
    violates = _violates("z-cycles", "useless-checkpoint")
    assert violates(t, {})
    res = shrink_trace(t, violates, {}, "useless-checkpoint", "z-cycles")
    assert res.invalid == 0 and violates(res.trace, res.options)
    report = check_trace(res.trace, CheckOptions(properties={"z-cycles"}))
    assert "useless-checkpoint" in report.kinds
    # worked example A of docs/theory.md: the smallest Z-cycle needs two messages and two
    # checkpoints of one process
    assert sum(e.type == "send" for e in res.trace.events) == 2
    _assert_one_minimal(res, violates)


def test_cli_shrink_golden_orphan(tmp_path):
    """CheckMate Figure 2(b): m1 and O1 are irrelevant to the orphan m2."""
    out = tmp_path / "small.jsonl"
    res = CliRunner().invoke(
        cli, ["shrink", str(EXAMPLES / "checkmate_fig2b_orphan.jsonl"), "--property", "orphan", "-o", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert "still orphan (consistency)" in res.output
    small = read_trace(str(out))
    assert [p.id for p in small.processes] == ["O2", "O3"]
    assert small.header.metadata["expected"]["violations"] == ["orphan"]
    cut = small.header.metadata["expected"]["check"]["cut"]
    assert cut == {"O2": 1, "O3": 1}
    report = check_trace(small, CheckOptions(cut=cut))
    assert report.kinds == {"orphan"}
    _assert_one_minimal_cli(small, cut)


@pytest.mark.parametrize("golden", ["checkmate_fig5_domino_cyclic", "theory_a_zcycle", "checkmate_fig2b_orphan"])
def test_a_shrunk_trace_holds_its_own_expectation(tmp_path, golden):
    """``check --expect`` holds on what ``shrink`` writes, also for a property the trace's
    protocol does not promise (useless checkpoints are violations only when z-cycles is
    asked for: the expectation asks for it); the original's notes are not carried over."""
    out = tmp_path / "small.jsonl"
    prop = "orphan" if "orphan" in golden else "z-cycles"
    res = CliRunner().invoke(cli, ["shrink", str(EXAMPLES / f"{golden}.jsonl"), "--property", prop, "-o", str(out)])
    assert res.exit_code == 0, res.output
    meta = read_trace(str(out)).header.metadata
    assert "notes" not in meta and "facts" not in meta["expected"].get("check", {})
    assert meta["expected"]["verdict"] == "violation" and meta["expected"]["violations"]
    if prop == "z-cycles":
        assert meta["expected"]["check"]["properties"] == ["z-cycles"]
    assert CliRunner().invoke(cli, ["check", "--expect", str(out)]).exit_code == 0


def test_cli_shrink_default_output_is_beside_the_trace(tmp_path, capsys, monkeypatch):
    """Without -o the shrunk trace is the trace's path with its extension replaced, also
    when a directory name has a dot and the file has no extension (it used to land in the
    parent directory as 'runs.shrunk.jsonl'); an output directory that takes no file is
    refused before the shrinking starts."""
    runs = tmp_path / "runs.2024"
    runs.mkdir()
    for name in ("orphan", "orphan.v1.jsonl"):
        (runs / name).write_bytes((EXAMPLES / "checkmate_fig2b_orphan.jsonl").read_bytes())
        assert _exit("shrink", runs / name, "--property", "orphan") == 0
    assert sorted(p.name for p in runs.iterdir()) == [
        "orphan",
        "orphan.shrunk.jsonl",
        "orphan.v1.jsonl",
        "orphan.v1.shrunk.jsonl",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.2024"]
    if os.path.isdir("/proc/self/fd"):  # no file can be made there, whoever runs the test
        import snapcheck.debug.shrink

        def started(*args, **kwargs):
            raise AssertionError("the shrinking started")

        monkeypatch.setattr(snapcheck.debug.shrink, "shrink_trace", started)
        capsys.readouterr()
        assert _exit("shrink", runs / "orphan", "--property", "orphan", "-o", "/proc/self/fd/x.jsonl") == 2
        assert "cannot write /proc/self/fd/x.jsonl" in capsys.readouterr().err


def _assert_one_minimal_cli(small, cut):
    violates = _violates("consistency", "orphan")
    sh = TraceShrinker(small, {"cut": cut})
    for x in sh.elements():
        header, events, opts, _ = sh.candidate([x])
        if header.processes:
            assert not violates(parse_trace(dumps_trace(header, events).decode()), opts), x


def _exit(*args) -> int:
    try:
        main([str(a) for a in args])
    except SystemExit as exc:
        return exc.code
    return 0


def test_cli_shrink_errors(tmp_path, capsys):
    clean = EXAMPLES / "checkmate_fig2a_consistent.jsonl"
    assert _exit("shrink", clean, "--property", "orphan", "-o", tmp_path / "x.jsonl") == 2
    assert "finds no orphan violation (consistency)" in capsys.readouterr().err
    assert _exit("shrink", clean, "--property", "no-such-thing", "-o", tmp_path / "x.jsonl") == 2
    capsys.readouterr()
    assert _exit("shrink", clean, "--property", "consistency", "--kind", "dropped", "-o", tmp_path / "x.jsonl") == 2
    # it said only that the trace shows no dropped violation of consistency
    assert "--kind dropped is a kind of channel-state, not of --property consistency" in capsys.readouterr().err
    assert _exit("shrink", "--property", "orphan") == 2
    assert _exit("shrink", clean, "--simulation", "--property", "orphan") == 2
    assert _exit("shrink", "--simulate", "{not json", "--property", "orphan") == 2
    assert _exit("shrink", "--simulate", '{"failures": 5}', "--property", "lost") == 2
    assert "failures must be a list of entries (lists), not 5" in capsys.readouterr().err
    assert _exit("shrink", "--simulate", '{"protocol": "unc", "zzz": 1}', "--property", "lost") == 2
    assert "unknown field(s) zzz (known: protocol, workload" in capsys.readouterr().err
    assert not (tmp_path / "x.jsonl").exists()


def test_elements_cover_every_event():
    """Removing every element removes every event (nothing is unshrinkable by accident)."""
    for t in (S.failure(), S.unaligned(), S.aligned()):
        sh = TraceShrinker(t)
        elems = [x for x in sh.elements() if x[0] != "process"]
        header, events, _, _ = sh.candidate(elems)
        assert events == [] and len(header.processes) == len(t.processes)


# -- simulation configurations ---------------------------------------------------------------
def test_shrink_config_with_a_model_run():
    """A fake 'simulator' whose run fails iff parallelism >= 3, records >= 5 and the failure
    list holds ('b', 2): the shrunk config is exactly the boundary, and 1-minimal."""
    from snapcheck.debug.shrink_sim import shrink_config

    def run(cfg):
        return cfg  # the "trace" is the config itself

    def fails(cfg):
        return cfg["parallelism"] >= 3 and cfg["records"] >= 5 and ["b", 2] in cfg["failures"]

    start = {"parallelism": 8, "records": 40, "failures": [["a", 1], ["b", 2], ["c", 3]], "stragglers": [], "seed": 5}
    res = shrink_config(start, fails, run)
    assert res.config == {"parallelism": 3, "records": 5, "failures": [["b", 2]], "stragglers": [], "seed": 5}
    assert res.runs < 60
    with pytest.raises(ValueError):
        shrink_config(start, lambda c: False, run)


def test_shrink_config_treats_a_refused_configuration_as_passing():
    """A run the simulator refuses (here: a failure naming a task that a parallelism below 3
    does not have) is not a failing run: the shrunk parallelism stays where the task exists."""
    from snapcheck.debug.shrink_sim import shrink_config

    def run(cfg):
        if any(int(t[1:]) >= cfg["parallelism"] for t, _ in cfg["failures"]):
            raise ValueError("--fail names no task")
        return cfg

    start = {"parallelism": 6, "records": 9, "failures": [["t2", 4]], "stragglers": [], "seed": 1}
    res = shrink_config(start, lambda cfg: bool(cfg["failures"]), run)
    assert res.config == {"parallelism": 3, "records": 1, "failures": [["t2", 4]], "stragglers": [], "seed": 1}


def test_cli_shrink_a_failing_simulation(tmp_path):
    """The 'abs-aligned-no-block' mutant (ABS without blocking) fails with seed 3; the
    shrunk trace is the orphan itself: a send after the sender's round-1 checkpoint,
    processed before the receiver's."""
    import json as _json

    config = {
        "mutant": "abs-aligned-no-block",
        "workload": "q12",
        "parallelism": 3,
        "records": 12,
        "gap": 60,
        "seed": 3,
    }
    out = tmp_path / "sim.jsonl"
    res = CliRunner().invoke(
        cli, ["shrink", "--simulate", _json.dumps(config), "--property", "consistency", "-o", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert "configuration:" in res.output and "still orphan (consistency)" in res.output
    small = read_trace(str(out))
    assert sorted(e.type for e in small.events) == ["checkpoint", "checkpoint", "recv", "send"]
    origin = small.header.metadata["shrunk_from"]
    assert origin["config"]["seed"] == 3 and origin["config"]["records"] <= 12
    assert check_trace(small, CheckOptions(properties={"consistency"})).kinds == {"orphan"}
    # the command it prints re-creates the smallest failing run, which still fails
    (line,) = [x for x in res.output.splitlines() if x.startswith("the smallest failing run: snapcheck simulate ")]
    args = shlex.split(line.split(": ", 1)[1])[1:]
    args[args.index("-o") + 1] = str(tmp_path / "again.jsonl")
    assert CliRunner().invoke(cli, args).exit_code == 0
    again = read_trace(str(tmp_path / "again.jsonl"))
    from snapcheck.debug.shrink_sim import sim_config

    assert sim_config(again.header.metadata["simulator"]["config"]) == sim_config(origin["config"])
    assert "orphan" in check_trace(again).kinds
    # the same through --simulation on the simulator's own trace
    from snapcheck.debug.shrink_sim import simulate_config
    from snapcheck.traces.writer import write_trace

    full = tmp_path / "full.jsonl"
    write_trace(str(full), simulate_config(config))
    res = CliRunner().invoke(
        cli, ["shrink", str(full), "--simulation", "--property", "orphan", "-o", str(tmp_path / "sim2.jsonl")]
    )
    assert res.exit_code == 0, res.output
    assert len(read_trace(str(tmp_path / "sim2.jsonl")).events) == 4


def _hang_trace():
    """Round 1 completes; in round 2, B receives A's barrier and never takes its checkpoint."""
    from snapcheck.traces import TraceRecorder

    rec = TraceRecorder(
        [{"id": "C", "role": "coordinator"}, "A", "B"],
        [("ab", "A", "B"), {"id": "ca", "src": "C", "dst": "A", "kind": "control"}],
        protocol="abs-aligned",
    )
    for r in (1, 2):
        rec.round_start("C", r)
        rec.recv("A", rec.barrier("C", "ca", r))
        rec.checkpoint("A", kind="coordinated", round=r)
        rec.recv("B", rec.send("A", "ab"))
        rec.recv("B", rec.barrier("A", "ab", r))
        if r == 1:
            rec.checkpoint("B", kind="coordinated", round=r)
            rec.round_complete("C", r)
        rec.recv("B", rec.send("A", "ab"))
    return rec.trace()


def test_shrinking_a_hang_keeps_what_holds_the_round_up():
    """A round that never ends can be made by removing any event that ends one (say
    B's receipt of round 1's barrier); the shrunk trace keeps the original's witness:
    B never takes its checkpoint of round 2 although no barrier is missing."""
    trace = _hang_trace()

    def options(d):
        return CheckOptions(properties={"termination"}, **d)

    like = CheckerPredicate("termination", "incomplete-round", options, like=(trace, {}))
    res = shrink_trace(trace, like, {}, "incomplete-round", "termination")
    (v,) = [v for v in check_trace(res.trace, options({})).violations if v.kind == "incomplete-round"]
    assert v.subject == "round 2"
    assert "B never takes its checkpoint of round 2 (no barrier is missing on its inputs)" in v.message
    assert len(res.trace.events) < len(trace.events)  # (by kind alone: 1 event, round 1 "never ends")


@pytest.mark.parametrize("aligned, kind", [(True, "aligned-in-flight"), (False, "dropped")])
def test_shrinking_a_message_in_flight_keeps_its_processing_after_the_cut(aligned, kind):
    """``m2`` is sent before A's checkpoint and processed by B after B's: in flight at round 1,
    and not in the channel state. Removing B's processing of it (or of any earlier message)
    also leaves a message in flight, never processed: a witness that tells another story (a
    loss, not a record the snapshot missed), so the shrunk trace keeps the processing."""
    rec = TraceRecorder(
        [{"id": "C", "role": "coordinator"}, "A", "B"], [("ab", "A", "B")], protocol="mine", params={"aligned": aligned}
    )
    rec.recv("B", rec.send("A", "ab"))
    rec.round_start("C", 1)
    late = rec.send("A", "ab")
    rec.checkpoint("A", kind="coordinated", round=1)
    rec.checkpoint("B", kind="coordinated", round=1)
    rec.recv("B", late)
    rec.round_complete("C", 1)
    trace = rec.trace()

    def options(d):
        return CheckOptions(properties={"channel-state"}, **d)

    like = CheckerPredicate("channel-state", kind, options, like=(trace, {}))
    res = shrink_trace(trace, like, {}, kind, "channel-state")
    [v] = [v for v in check_trace(res.trace, options({})).violations if v.kind == kind]
    assert v.witness["processed"] is True and "processed by B at line" in v.message
    assert [res.names.get(m, m) for m in v.witness["messages"]] == [late]


def test_shrinking_keeps_a_recovery_whole():
    """The job restores both tasks at round 1, whose cut has an orphan. Dropping B's restore
    leaves the same violation (B's current state reflects the receive too) in a smaller
    trace, but of a recovery that restores A alone, which this job never makes."""
    rec = TraceRecorder([{"id": "C", "role": "coordinator"}, "A", "B"], [("ab", "A", "B")], protocol="mine")
    rec.round_start("C", 1)
    rec.checkpoint("A", kind="coordinated", round=1)
    rec.recv("B", rec.send("A", "ab"))
    rec.checkpoint("B", kind="coordinated", round=1)
    rec.round_complete("C", 1)
    rec.fail("A")
    rec.restore("A", 1, round=1, recovery=1)
    rec.restore("B", 1, round=1, recovery=1)
    trace = rec.trace()

    def options(d):
        return CheckOptions(properties={"observed-recovery"}, **d)

    like = CheckerPredicate("observed-recovery", "inconsistent-restore", options)
    res = shrink_trace(trace, like, {}, "inconsistent-restore", "observed-recovery")
    assert sorted(e.proc for e in res.trace.events if e.type == "restore") == ["A", "B"]


def _z_witness_holds_in(trace, kind, messages, checkpoints) -> bool:
    """Independently of the checker, in a failure-free ``trace``: ``messages`` in order form
    a Z-path from the first of ``checkpoints`` to the last (a Z-cycle when there is one),
    and for ``rdt`` no causal path doubles it: no event of the first checkpoint's process
    after that checkpoint happens before the last (docs/theory.md, "Z-paths")."""
    interval, where, send, recv, known = {}, {}, {}, {}, {}
    clock: dict[str, dict[str, int]] = {p.id: {} for p in trace.processes}
    for e in trace.events:
        clock[e.proc][e.proc] = e.idx
        if e.type == "send":
            send[e.mid] = (e.proc, interval.get(e.proc, 0), dict(clock[e.proc]))
        elif e.type == "recv":
            for q, i in send[e.mid][2].items():
                clock[e.proc][q] = max(clock[e.proc].get(q, -1), i)
            recv[e.mid] = (e.proc, interval.get(e.proc, 0))
        elif e.type == "checkpoint":
            interval[e.proc] = e.ckpt
            where[(e.proc, e.ckpt)], known[(e.proc, e.ckpt)] = e.idx, dict(clock[e.proc])
    (first, a), (last, b) = checkpoints[0], checkpoints[-1]
    path = [(send[m][0], send[m][1], *recv[m]) for m in messages]
    ok = path[0][0] == first and path[0][1] >= a and path[-1][2] == last and path[-1][3] < b
    ok &= all(q == p and s >= r for (_, _, p, r), (q, s, _, _) in zip(path, path[1:]))
    if kind == "rdt":
        ok &= known[(last, b)].get(first, -1) <= where.get((first, a), -1)
    return ok


@pytest.mark.parametrize("prop, kind", [("z-cycles", "useless-checkpoint"), ("rdt", "rdt")])
def test_a_shrunk_z_path_is_a_z_path_of_the_trace_shrunk(prop, kind):
    """Removing a checkpoint makes two intervals one, which can join messages into a
    Z-path that does not exist (a Z-cycle, an untracked dependency), and removing a
    message can undo the causal path that doubled one: the shrunk trace must show a
    Z-path of the original trace, its messages and checkpoints mapped back. Before,
    ``snapcheck shrink --property rdt`` made a Z-path of one process's messages by
    removing the checkpoint between them, on a process the original reports nothing of."""
    shrunk = 0
    for seed in range(40):
        t = S.random_trace(seed, n=3, steps=40)
        violates = _violates(prop, kind)
        if not violates(t, {}):
            continue
        like = CheckerPredicate(prop, kind, violates.base_options, like=(t, {}))
        res = shrink_trace(t, like, {}, kind, prop)
        [v, *_] = like.matches(check_trace(res.trace, CheckOptions(properties={prop})), res.names)
        back = [res.names.get(m, m) for m in v.witness["messages"]]
        ckpts = [res.names.get((p, c), (p, c)) for p, c in v.witness["checkpoints"]]
        if kind == "useless-checkpoint":
            ckpts *= 2
        assert _z_witness_holds_in(t, kind, back, ckpts), (seed, back, ckpts)
        shrunk += 1
    assert shrunk >= 5


LOSSES = [  # (simulation, kind, what the printed witness must say: as every original one does)
    (
        ["--mutant", "rescale-race", "--demo"],
        "dropped",
        r"/r1 on g1\.bids\[0\]->g1\.window_count\[0\] is re-injected from recovered channel state by g1\.window_count\[0\]",
    ),
    (
        ["--mutant", "unc-no-logging", "-w", "q3", "-P", "2", "-s", "5", "--records", "40", "--fail", "join[0]@1500"],
        "lost",
        r"its processing at line \d+ was undone",
    ),
    (["--mutant", "rescale-race", "--demo"], "in-flight-lost", r"old channel bids\[[12]\]->window_count"),
]


@pytest.mark.parametrize("simulation, kind, witness", LOSSES)
def test_shrinking_a_loss_keeps_the_lost_message(tmp_path, capsys, simulation, kind, witness):
    """Deleting the processing or the replay of any message makes it "lost" or "dropped":
    the shrunk trace shows the original loss (one of the original messages, lost the
    same way), not one the shrinker made. Before, rescale-race shrank to a message to a
    sink whose processing was deleted, and unc-no-logging to one "not yet processed"."""
    run, small = tmp_path / "run.jsonl", tmp_path / "small.jsonl"
    assert _exit("simulate", *simulation, "-o", run) == 0
    original = check_trace(read_trace(run), CheckOptions())
    channels = {m.rsplit(":", 1)[0] for v in original.violations if v.kind == kind for m in v.witness["messages"]}
    capsys.readouterr()
    assert _exit("shrink", run, "--property", kind, "-o", small) == 0
    explanation = capsys.readouterr().out.splitlines()[1]
    assert re.search(witness, explanation), explanation
    shrunk = [v for v in check_trace(read_trace(small), CheckOptions()).violations if v.kind == kind]
    assert any(v.message == explanation and v.witness["messages"][0].rsplit(":", 1)[0] in channels for v in shrunk)


@pytest.fixture(scope="module")
def rescaled_regional():
    """A regional trace with a rescale whose restores name the checkpoints they took
    list-state elements of (``attrs.elements``)."""
    from snapcheck.reference import SimConfig, simulate
    from snapcheck.reference.catalogue import MUTANTS

    demo = MUTANTS["regional-rescale-by-id"].demo
    return simulate(
        SimConfig(**{**demo, "protocol": "regional-aligned", "mutant": "regional-rescale-by-id", "seed": 3})
    ).trace()


def _element_rounds(events) -> dict:
    """(restoring process, time) -> the rounds of the checkpoints its elements name."""
    rnd = {(e["proc"], e["ckpt"]): e.get("round") for e in events if e["type"] == "checkpoint"}
    return {
        (e["proc"], e["t"]): [rnd.get((p, c)) if c > 0 else 0 for p, c in e["attrs"]["elements"]]
        for e in events
        if e["type"] == "restore" and (e.get("attrs") or {}).get("elements")
    }


@given(data=st.data())
@settings(max_examples=25, deadline=None)
def test_a_candidate_keeps_what_a_rescales_elements_name(rescaled_regional, data):
    """A rescale's restore names the checkpoints it took elements of by their numbers,
    which a candidate renumbers: each element still names the checkpoint of the same
    round, and a restore whose named checkpoint was removed goes with it (the witness of
    ``regional-rescale-by-id`` once blamed a checkpoint the original never named)."""
    trace = rescaled_regional
    original = _element_rounds([e.to_dict() for e in trace.events])
    assert original
    sh = TraceShrinker(trace)
    elems = [x for x in sh.elements() if x[0] in ("checkpoint", "process")]
    removed = data.draw(st.lists(st.sampled_from(elems), max_size=6, unique=True))
    _, kept, _, _ = sh.candidate(removed)
    after = _element_rounds(kept)
    assert all(after[k] == original[k] for k in after)
    assert all(None not in rounds for rounds in after.values())


def test_a_shrunk_trace_expects_every_kind_it_shows(tmp_path, capsys):
    """``metadata.expected`` lists the kinds the shrunk trace shows, all of them, so that
    ``check --expect`` on it holds: shrunk for one property, the trace also shows kinds of
    others (a Z-cycle made of messages whose piggybacks break the protocol's rules), and
    listing only the shrunk property's kinds made ``check --expect`` exit 1."""
    run, small = tmp_path / "run.jsonl", tmp_path / "small.jsonl"
    assert _exit("simulate", "--mutant", "hmnr-no-c1", "--demo", "-o", run) == 0
    assert _exit("shrink", run, "--property", "z-cycles", "-o", small) == 0
    expected = read_trace(small).header.metadata["expected"]["violations"]
    assert "useless-checkpoint" in expected and len(expected) > 1, expected
    capsys.readouterr()
    assert _exit("check", "--expect", small) == 0, capsys.readouterr().out


def _stale_bcs():
    """BCS whose piggyback cache a forced checkpoint does not refresh (a user's bug): its
    sends log an ``sn`` lower than the protocol's."""
    from snapcheck.reference.cic.bcs import BCS, BCSTask

    class StaleTask(BCSTask):
        def __init__(self, ctx, protocol):
            super().__init__(ctx, protocol)
            self.cache = 0

        def piggyback(self, ch):
            return {"sn": self.cache}

        def checkpoint_taken(self, kind, pb):
            super().checkpoint_taken(kind, pb)
            if kind != "forced":
                self.cache = self.sn

    class Stale(BCS):
        name = "stale-bcs"
        task_class = StaleTask

    return Stale


def test_a_shrunk_mismatch_differs_the_same_way():
    """The original logs ``sn`` lower than re-simulation gives (the stale cache, the real
    bug); deleting the sender's checkpoints made re-simulation give less, so the shrunk
    trace said the logged ``sn`` was too high: the same kind at the same message, the
    opposite bug. The logged and re-simulated values are part of the identity now, and
    no other violation of the property may name the kept one's message unless the
    original shows it too."""
    from snapcheck.reference import SimConfig, simulate

    cfg = SimConfig(protocol=_stale_bcs()(recovery="partial"), workload="reachability", parallelism=1, seed=85,
                    records=10, gap=20, interval=250, latency=5, jitter=20, buffer=1, out_buffer=1, control_latency=1,
                    control_jitter=400, detect_delay=600, decline_prob=0.15)  # fmt: skip
    trace = simulate(cfg).trace()
    violates = _violates("cic-conformance", "piggyback-mismatch")
    original = {
        str(v.witness["differs"]) for v in violates.check(trace, {}).violations if v.kind == "piggyback-mismatch"
    }
    assert original
    like = CheckerPredicate("cic-conformance", "piggyback-mismatch", violates.base_options, like=(trace, {}))
    res = shrink_trace(trace, like, {}, "piggyback-mismatch", "cic-conformance")
    report = violates.check(res.trace, res.options)
    kept = [v for v in report.violations if v.kind == "piggyback-mismatch"]
    assert kept and {str(v.witness["differs"]) for v in kept} <= original
    logged, resimulated = next(iter(kept[0].witness["differs"].values()))
    assert logged < resimulated  # stale: lower than the protocol's


def test_a_round_declared_complete_too_early_does_not_shrink_to_one_that_never_ends():
    """Round 1 is declared complete while ``B`` still waits for a barrier (sent, never
    received). Deleting the ``round_complete`` leaves the same processes holding it up, but
    in a round that never ends: a hang, not a premature completion. The shrunk trace keeps
    the completion."""
    rec = TraceRecorder([{"id": "C", "role": "coordinator"}, "A", "B", "D"], [("ab", "A", "B"), ("db", "D", "B")])
    rec.round_start("C", 1)
    for p in ("A", "D"):
        rec.checkpoint(p, kind="coordinated", round=1)
    rec.recv("B", rec.barrier("D", "db", round=1))
    rec.checkpoint("B", kind="coordinated", round=1)
    rec.barrier("A", "ab", round=1)  # never received: B still records ab
    rec.recv("B", rec.send("D", "db"))
    rec.round_complete("C", 1)
    trace = rec.trace()
    violates = _violates("termination", "incomplete-round")
    like = CheckerPredicate("termination", "incomplete-round", violates.base_options, like=(trace, {}))
    res = shrink_trace(trace, like, {}, "incomplete-round", "termination")
    assert any(e.type == "round_complete" for e in res.trace.events)
    [v] = like.matches(violates.check(res.trace, res.options), res.names)
    assert v.message.startswith("Round 1 is declared complete at line")


def test_a_shrunk_witness_stands_without_a_violation_of_another_property_made_beside_it():
    """A Chandy-Lamport task that acknowledges its round at its snapshot, before its other
    inputs' markers close their recordings: a completion before the channel state. Shrunk,
    removing the other tasks' checkpoints of that round made it a round declared complete
    that never completes (an ``incomplete-round`` of the same round, which the run does not
    show) beside the kept violation; the witness must show the kept one alone."""
    from snapcheck.reference import SimConfig, simulate
    from tests.protocol_samples import AckAtSnapshot

    trace = simulate(SimConfig(protocol=AckAtSnapshot, workload="q3", seed=0, latency=30, jitter=400)).trace()
    prop, kind = "completion", "completion-before-channel-state"
    assert check_trace(trace).kinds == {kind}

    def options(d):
        return CheckOptions(properties={prop}, **d)

    res = shrink_trace(trace, CheckerPredicate(prop, kind, options, like=(trace, {})), {}, kind, prop)
    assert check_trace(res.trace).kinds == {kind}
    assert len(res.trace.events) < 10


def _rounds_trace(skip_b_round_1: bool = False):
    """Rounds 1 and 2 complete at A and B; B never takes its checkpoint of round 3; with
    ``skip_b_round_1``, B's checkpoint of round 1 is missing too (round 1 is then declared
    complete and is not)."""
    rec = TraceRecorder(
        [{"id": "co", "role": "coordinator"}, "A", "B"],
        [
            {"id": "co>A", "src": "co", "dst": "A", "kind": "control"},
            {"id": "co>B", "src": "co", "dst": "B", "kind": "control"},
        ],
        protocol="abs-aligned",
    )
    for r in (1, 2, 3):
        rec.round_start("co", r)
        ta, tb = rec.barrier("co", "co>A", r), rec.barrier("co", "co>B", r)
        rec.recv("A", ta)
        rec.checkpoint("A", kind="coordinated", round=r)
        rec.recv("B", tb)
        if r < 3:
            if not (skip_b_round_1 and r == 1):
                rec.checkpoint("B", kind="coordinated", round=r)
            rec.round_complete("co", r)
    return rec.trace()


def test_violations_made_by_removing_events_elsewhere_are_named():
    """What the shrinker made away from the kept violation (another round) is not refused,
    but ``made`` names it, and ``snapcheck shrink`` prints it as not part of the witness."""
    original, candidate = _rounds_trace(), _rounds_trace(skip_b_round_1=True)
    like = CheckerPredicate(
        "termination", "incomplete-round", lambda d: CheckOptions(properties={"termination"}, **d), like=(original, {})
    )
    assert like(candidate, {})  # round 3's hang is kept, round 1 is another subject
    assert [(v.kind, v.subject) for v in like.made(like.check_all(candidate, {}))] == [("incomplete-round", "round 1")]
    assert like.made(like.check_all(original, {})) == []


def _without_process(trace, proc: str):
    """``trace`` with ``proc``, its channels and every event of either removed, written
    out and read back (None: what is left is no valid trace); an independent removal,
    not the shrinker's."""
    h = trace.header
    chans = [c for c in h.channels if proc not in (c.src, c.dst)]
    gone = {c.id for c in h.channels} - {c.id for c in chans}
    header = type(h)(
        processes=[p for p in h.processes if p.id != proc],
        channels=chans,
        protocol=h.protocol,
        seed=h.seed,
        metadata=h.metadata,
    )
    events = [e.to_dict() for e in trace.events if e.proc != proc and e.ch not in gone]
    try:
        return parse_trace(dumps_trace(header, events).decode(), "t.jsonl")
    except TraceErrors:
        return None


def test_a_process_that_only_takes_part_in_a_recovery_is_shrunk_away():
    """A recovery restores several processes as one, but a process removed whole takes
    only its own restore away: the rest of the recovery stays. Before, removing it removed
    the whole recovery (and the violation), so the result kept four processes that held
    nothing but a checkpoint and a restore, and called itself 1-minimal. Checked here by
    an independent removal of each process of the result."""
    from snapcheck.reference import SimConfig, simulate

    cfg = SimConfig(
        protocol="unc",
        mutant="unc-no-logging",
        workload="q12",
        parallelism=2,
        records=8,
        seed=0,
        failures=(("window_count[0]", 700), ("sink[1]", 900)),
    )
    trace = simulate(cfg).trace()

    def options(d):
        return CheckOptions(properties={"exactly-once"}, **d)

    like = CheckerPredicate("exactly-once", "lost", options, like=(trace, {}))
    res = shrink_trace(trace, like, {}, "lost", "exactly-once")
    for p in res.trace.processes:
        smaller = _without_process(res.trace, p.id)
        assert smaller is None or "lost" not in check_trace(smaller, options({})).kinds, f"{p.id} could go"
    assert len(res.trace.processes) == 2


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b'{"records": "\xff"}', "not UTF-8 text (byte 13"),
        (b"[" * 5000 + b"]" * 5000, "not JSON: depth limit exceeded"),
        (b" " * 30000, "longer than 20,000 bytes (--max-line-bytes)"),
    ],
)
def test_a_bad_simulate_file_is_bad_input_naming_it(tmp_path, capsys, content, reason):
    """``--simulate @FILE`` read the whole file (``@/dev/zero`` grew without bound) and
    crashed on bytes that are not UTF-8 and on deep nesting (exit 3, a traceback)."""
    path = tmp_path / "c.json"
    path.write_bytes(content)
    code = _exit(
        "--max-line-bytes",
        20000,
        "shrink",
        "--property",
        "consistency",
        "--simulate",
        f"@{path}",
        "-o",
        tmp_path / "s.jsonl",
    )
    err = capsys.readouterr().err
    assert code == 2 and reason in err and "Traceback" not in err, err


def test_running_out_of_memory_is_said_in_a_line_and_never_exit_1(monkeypatch, tmp_path, capsys):
    """Exit 1 means a violation: a process out of memory, whose handler raised again while
    printing the traceback, exited 1."""
    import snapcheck.commands.debug as debug

    def exhausted(*_):
        raise MemoryError

    monkeypatch.setattr(debug, "_sim_config", exhausted)
    code = _exit("shrink", "--property", "consistency", "--simulate", "{}", "-o", tmp_path / "s.jsonl")
    err = capsys.readouterr().err
    assert code == 3 and "out of memory" in err and "Traceback" not in err
