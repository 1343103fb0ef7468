"""A protocol the user writes in a module of their own runs on every path of the kit:
``simulate``, ``shrink --simulation``, the Python API, a campaign (tests/spark); a bug of
theirs never crashes the kit; what the checker adds for such protocols."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from snapcheck.checker import CheckOptions, check_trace
from snapcheck.reference import SimConfig, simulate
from snapcheck.reference.catalogue import as_spec, resolve
from snapcheck.reference.coordinated.abs_aligned import AlignedABS, AlignedTask
from snapcheck.reference.oracle import baseline, exactly_once
from snapcheck.reference.uncoordinated.protocol import UNC, UncoordinatedTask
from snapcheck.spark_validation.runner import NONDETERMINISTIC, run_one
from snapcheck.traces import TraceRecorder

MODULE = textwrap.dedent("""
    from snapcheck.reference.coordinated.abs_aligned import AlignedABS, AlignedTask

    class Mine(AlignedABS):
        name = "mine"

    class NoBlockTask(AlignedTask):
        def block(self, ch):
            self.arrived[ch] = True

    class MineNoBlock(Mine):
        name = "mine-no-block"
        mutant_of = Mine
        task_class = NoBlockTask
        bug = "never blocks"
        expect = ("orphan",)
        prop = "consistency"

    class RaisesTask(AlignedTask):
        def on_barrier(self, ch, barrier, overtaking):
            if barrier.round == 2:
                raise ZeroDivisionError("division by zero in round 2")
            super().on_barrier(ch, barrier, overtaking)

    class Raises(Mine):
        name = "raises"
        task_class = RaisesTask

    class NotAProtocol:
        pass
""")


@pytest.fixture
def userdir(tmp_path):
    (tmp_path / "userproto.py").write_text(MODULE)
    (tmp_path / "broken.py").write_text("import no_such_module_anywhere\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "userproto").write_text(MODULE)  # a path without the .py suffix
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "proto.py").write_text("from .userproto import *\n")  # a package's relative import
    (tmp_path / "pkg" / "userproto.py").write_text(MODULE)
    return tmp_path


def cli(cwd, *args):
    env = dict(os.environ, PYTHONPATH=str(cwd))
    return subprocess.run(
        [sys.executable, "-m", "snapcheck", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_simulate_takes_module_and_file_specs_and_the_trace_names_the_protocol(userdir):
    for spec in ("userproto:Mine", "userproto.py:Mine", str(userdir / "userproto.py") + ":Mine"):
        res = cli(userdir, "simulate", "-p", spec, "-w", "q3", "-s", "3", "-o", "t.jsonl")
        assert res.returncode == 0, res.stderr
        header = json.loads((userdir / "t.jsonl").read_text().splitlines()[0])
        assert header["protocol"]["name"] == "mine" and header["protocol"]["params"]["aligned"] is True
        assert header["metadata"]["simulator"]["config"]["protocol"] == spec
        assert cli(userdir, "check", "t.jsonl").returncode == 0


@pytest.mark.parametrize(
    "spec,reason",
    [
        ("nosuchmodule:X", "ModuleNotFoundError"),
        ("broken:X", "importing broken failed"),
        ("userproto:Nope", "has no class Nope"),
        ("userproto:NotAProtocol", "is not a subclass"),
        ("nofile.py:X", "no such file"),
        (os.path.join("sub", "userproto") + ":Mine", "not a Python module"),
        ("userproto", "unknown protocol"),
        (
            os.path.join("pkg", "proto.py") + ":Mine",
            "named as its module: pkg.proto:CLASS, from the directory above pkg",
        ),
    ],
)
def test_a_module_that_does_not_load_is_exit_2_with_the_reason(userdir, spec, reason):
    res = cli(userdir, "simulate", "-p", spec, "-o", "t.jsonl")
    assert res.returncode == 2 and reason in res.stderr and "Traceback" not in res.stderr


def test_a_user_mutant_is_caught_and_shrinks_to_a_minimal_witness(userdir):
    args = [
        "simulate",
        "-p",
        "userproto:Mine",
        "-m",
        "userproto:MineNoBlock",
        "-w",
        "q12",
        "-P",
        "3",
        "--records",
        "30",
        "--gap",
        "40",
        "--jitter",
        "200",
        "-s",
        "1",
        "-o",
        "bad.jsonl",
    ]
    assert cli(userdir, *args).returncode == 0
    header = json.loads((userdir / "bad.jsonl").read_text().splitlines()[0])
    assert header["protocol"]["name"] == "mine" and header["protocol"]["params"]["mutant"] == "mine-no-block"
    assert cli(userdir, "check", "bad.jsonl").returncode == 1
    res = cli(userdir, "shrink", "bad.jsonl", "--simulation", "--property", "consistency", "-o", "small.jsonl")
    assert res.returncode == 0, res.stderr
    small = (userdir / "small.jsonl").read_text().splitlines()
    assert 2 <= len(small) - 1 <= 6
    assert cli(userdir, "check", "small.jsonl").returncode == 1


def test_a_protocol_that_raises_gives_a_trace_and_a_protocol_error_never_a_traceback(userdir):
    res = cli(userdir, "simulate", "-p", "userproto:Raises", "-w", "q1", "-o", "r.jsonl")
    assert res.returncode == 1 and "Traceback" not in res.stderr  # a violation: the trace says which
    assert "PROTOCOL ERROR" in res.stdout
    lines = [json.loads(x) for x in (userdir / "r.jsonl").read_text().splitlines()]
    last = lines[-1]
    assert last["type"] == "protocol_error" and "ZeroDivisionError" in last["reason"]
    assert last["attrs"]["handler"] == "on_barrier" and len(lines) > 20  # the run up to that point
    res = cli(userdir, "check", "r.jsonl", "--json")
    assert res.returncode == 1
    kinds = set(json.loads(res.stdout)["reports"][0]["violation_kinds"])
    assert "protocol-error" in kinds and "incomplete-round" not in kinds  # the cut run is not blamed twice


def test_acknowledging_a_round_without_its_checkpoint_is_a_protocol_error():
    from snapcheck.reference.coordinated.abs_aligned import AlignedABS, AlignedTask

    class EarlyAckTask(AlignedTask):
        def snapshot(self, r):
            self.latest = r
            self.ctx.complete(r)  # acknowledged before durable
            if self.ctx.checkpoint(r) is not None:
                self.ctx.send_barrier(r)

    class EarlyAck(AlignedABS):
        name = "early-ack"
        task_class = EarlyAckTask

    res = simulate(SimConfig(protocol=EarlyAck, workload="q1", seed=2))
    rep = check_trace(res.trace())
    (v,) = [v for v in rep.violations if v.kind == "protocol-error"]
    assert "acknowledged round 1 without taking its checkpoint" in v.message
    assert res.metrics["protocol_error"]


class Inline(AlignedABS):
    name = "inline"


def test_the_python_api_takes_classes_and_specs():
    class Local(AlignedABS):
        name = "local"

    assert simulate(SimConfig(protocol=Local, workload="q1")).header.protocol["name"] == "local"
    with pytest.raises(ValueError, match="cannot be loaded by name"):
        as_spec(Local)  # a campaign could not ship it
    spec = as_spec(Inline)
    assert spec.endswith("test_user_protocols.py:Inline") and resolve(spec) is Inline
    row = run_one(0, 7, SimConfig(protocol=Inline, workload="q3", seed=7))
    assert row["verdict"] == "clean" and row["protocol"] == spec and row["oracle"] == "ok"
    with pytest.raises(ValueError, match="constructor parameters"):
        as_spec(Inline(depth=3))


def test_failure_free_runs_of_user_protocols_are_held_to_the_dataflows_results():
    from snapcheck.reference.coordinated.abs_aligned import AlignedABS, AlignedTask

    class Forwards(AlignedABS):
        name = "forwards"

    class NeverForwardsTask(AlignedTask):
        def snapshot(self, r):
            self.latest = r
            if not self.ctx.inputs and self.ctx.checkpoint(r) is not None:
                self.ctx.complete(r)  # sources checkpoint; nobody else ever does

    class NeverForwards(AlignedABS):
        name = "never-forwards"
        task_class = NeverForwardsTask

    good = SimConfig(protocol=Forwards, workload="q3", seed=4)
    assert baseline(good).protocol == "chandy-lamport" and not baseline(good).failures
    assert exactly_once(good) == []
    bad = SimConfig(protocol=NeverForwards, workload="q3", seed=4)
    assert exactly_once(bad)  # no round completes: nothing is ever published
    assert baseline(SimConfig(protocol="abs-aligned")) is None  # the kit's own: its own failure-free run


def test_a_round_declared_complete_before_a_checkpoint_is_premature_even_if_it_comes_later():
    def trace(late: bool):
        rec = TraceRecorder(
            [{"id": "C", "role": "coordinator"}, "A", "B"], [("a>b", "A", "B")], params={"aligned": True}
        )
        rec.round_start("C", 1)
        rec.checkpoint("A", kind="coordinated", round=1)
        if not late:
            rec.checkpoint("B", kind="coordinated", round=1)
        rec.round_complete("C", 1)
        if late:
            rec.checkpoint("B", kind="coordinated", round=1)
        return rec.trace()

    rep = check_trace(trace(late=True), CheckOptions())
    (v,) = [v for v in rep.violations if v.kind == "premature-completion"]
    assert v.property == "completion" and "B (line" in v.message
    assert check_trace(trace(late=False), CheckOptions()).ok


def test_acknowledging_a_round_before_its_channel_state_is_recorded_is_caught():
    """A Chandy-Lamport task that acknowledges its round at the snapshot, before the other
    inputs' markers closed their recordings: the round completes with channel state still
    to come (a failure then would restore it without that state)."""
    from snapcheck.reference.coordinated.chandy_lamport import ChandyLamport
    from tests.protocol_samples import AckAtSnapshot

    def kinds(protocol, seed):
        cfg = SimConfig(protocol=protocol, workload="q3", seed=seed, latency=30, jitter=400)
        return check_trace(simulate(cfg).trace()).kinds

    assert all(kinds(ChandyLamport, s) == set() for s in range(3))
    assert all("completion-before-channel-state" in kinds(AckAtSnapshot, s) for s in range(3))


class _Unwritable:
    """Something no trace line can hold; its default repr carries a memory address."""


@pytest.mark.parametrize("hook", ["piggyback", "vars"])
def test_a_value_no_trace_can_hold_is_a_protocol_error_at_its_hook_with_the_same_bytes_every_time(hook):
    """A CIC protocol's piggyback or checkpoint variables go into the trace: a value JSON
    cannot hold ends the run with a protocol_error naming the hook (not a traceback when
    the trace is written), and the reason has no memory address, so a reproduction gives
    the same bytes."""
    from snapcheck.reference.cic.bcs import BCS, BCSTask

    class Task(BCSTask):
        def piggyback(self, ch):
            return {"sn": _Unwritable()} if hook == "piggyback" else super().piggyback(ch)

        def vars(self):
            return {"sn": _Unwritable()} if hook == "vars" else super().vars()

    class Unwritable(BCS):
        name = "unwritable"
        task_class = Task

    runs = [simulate(SimConfig(protocol=Unwritable, workload="q1", records=20)) for _ in range(2)]
    last = runs[0].trace().events[-1]
    assert last.type == "protocol_error" and last.attrs == {"handler": hook}, last
    assert "no trace can hold" in last.reason and "0x" not in last.reason
    assert runs[0].dumps() == runs[1].dumps()


def test_an_exception_naming_an_object_gives_the_same_trace_bytes_every_time():
    """An exception's message often holds a default repr (``<... at 0x7f...>``), whose
    address differs between processes: the protocol_error keeps the rest of it."""
    from snapcheck.reference.coordinated.abs_aligned import AlignedABS, AlignedTask

    class Task(AlignedTask):
        def on_barrier(self, ch, barrier, overtaking):
            raise ValueError(f"cannot align with {_Unwritable()!r}")

    class Raises(AlignedABS):
        name = "raises-repr"
        task_class = Task

    runs = [simulate(SimConfig(protocol=Raises, workload="q1", records=20)) for _ in range(2)]
    reason = runs[0].trace().events[-1].reason
    assert "cannot align with <" in reason and "_Unwritable object at 0x…>" in reason, reason
    assert runs[0].dumps() == runs[1].dumps()


def test_a_users_names_are_printed_as_written_and_what_a_module_prints_stays_off_stdout(tmp_path):
    """A path holding rich markup (``[/b]``) or an emoji code (``:Loop:``) is printed as
    it is (it crashed the summary, or became ➿); a module that prints when imported does
    not spoil ``--json``."""
    (tmp_path / "br[/b]").mkdir(parents=True)  # the directory br[ and in it b]
    (tmp_path / "br[/b]" / "p.py").write_text('print("hello from import")\n' + MODULE + "\nLoop = Mine\n")
    res = cli(tmp_path, "protocols", "br[/b]/p.py:Loop", "--json")
    assert res.returncode == 0 and json.loads(res.stdout)[0]["name"], res.stdout[:300]
    assert "hello from import" in res.stderr
    res = cli(
        tmp_path, "validate", "-n", "2", "--engine", "python", "-p", "br[/b]/p.py:Loop", "--mutants", "none", "-o", "o"
    )
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr[-2000:]
    assert "br[/b]/p.py:Loop" in res.stdout and "➿" not in res.stdout


SET_ORDER = textwrap.dedent("""
    from snapcheck.reference.coordinated.abs_aligned import AlignedABS, AlignedTask

    class FirstByHashTask(AlignedTask):
        def block(self, ch):  # "the first input needs no blocking": first in a set of strings
            if ch.id == next(iter({c.id for c in self.ctx.inputs})):
                self.arrived[ch] = True
            else:
                super().block(ch)

    class FirstByHash(AlignedABS):
        name = "first-by-hash"
        task_class = FirstByHashTask
""")


def test_a_protocol_iterating_a_set_of_strings_gives_one_trace_under_any_hash_seed(tmp_path):
    """Python salts string hashes per process; Spark's workers run with PYTHONHASHSEED=0,
    and so does every snapcheck command (it starts again with it), so a reproduction
    command pasted into any shell gives the campaign's trace."""
    (tmp_path / "sets.py").write_text(SET_ORDER)
    traces = []
    for salt in ("1", "2", "3", "random"):
        env = dict(os.environ, PYTHONPATH=str(tmp_path), PYTHONHASHSEED=salt)
        cmd = [
            sys.executable,
            "-m",
            "snapcheck",
            "simulate",
            "-p",
            "sets:FirstByHash",
            "-w",
            "q3",
            "-o",
            f"{salt}.jsonl",
        ]
        res = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr
        traces.append((tmp_path / f"{salt}.jsonl").read_bytes())
    assert len(set(traces)) == 1


def test_shrinking_a_simulation_whose_protocol_file_is_elsewhere_says_so_exit_2(userdir, tmp_path_factory):
    """The header names a protocol file as the command did (relative): from another
    directory the simulation cannot be rerun, and shrink says why (it was a traceback)."""
    res = cli(
        userdir,
        "simulate",
        "-p",
        "userproto.py:Mine",
        "--mutant",
        "userproto.py:MineNoBlock",
        "-w",
        "q1",
        "-s",
        "1",
        "-o",
        "bad.jsonl",
    )
    assert res.returncode == 0, res.stderr
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    cmd = [
        sys.executable,
        "-m",
        "snapcheck",
        "shrink",
        str(userdir / "bad.jsonl"),
        "--simulation",
        "--property",
        "consistency",
    ]
    res = subprocess.run(cmd, cwd=elsewhere, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert "userproto.py: no such file" in res.stderr and "run from that directory" in res.stderr


NONDET_MODULE = textwrap.dedent("""
    import random

    from snapcheck.reference.coordinated.abs_aligned import AlignedABS, AlignedTask

    class LeakyTask(AlignedTask):
        seen = []  # shared by every run of this process

        def on_barrier(self, ch, barrier, overtaking):
            LeakyTask.seen.append(barrier.round)
            if len(LeakyTask.seen) > 40:  # "the job has warmed up": skip alignment
                self.arrived[ch] = True
                return
            super().on_barrier(ch, barrier, overtaking)

    class Leaky(AlignedABS):
        name = "leaky"
        task_class = LeakyTask

    DICE = random.Random()  # seeded from the operating system: not the run's seed (the global
    # generator is: every run seeds it)

    class DiceTask(AlignedTask):
        def block(self, ch):
            if DICE.random() < 0.5:
                super().block(ch)
            else:
                self.arrived[ch] = True

    class Dice(AlignedABS):
        name = "dice"
        task_class = DiceTask
""")


@pytest.mark.parametrize("cls", ["Leaky", "Dice"])
def test_a_protocol_that_depends_on_more_than_the_seed_is_told_so(tmp_path, cls):
    """State kept by a class from run to run, or a generator not seeded from the run: a campaign
    run's reproduction command would not give its trace. The runs say so
    (nondeterministic-run), whatever else they break; the correct protocol never does."""
    from snapcheck.spark_validation.configs import Selection, draw_config

    (tmp_path / "nondet.py").write_text(NONDET_MODULE)
    sel = Selection.of([f"{tmp_path / 'nondet.py'}:{cls}"], mutants=())
    rows = [run_one(i, i, draw_config(i, i, sel)) for i in range(12)]
    assert any(NONDETERMINISTIC in r["violation_kinds"] for r in rows), [r["violation_kinds"] for r in rows]
    (tmp_path / "mine.py").write_text(MODULE)
    good = Selection.of([f"{tmp_path / 'mine.py'}:Mine"], mutants=())
    rows = [run_one(i, i, draw_config(i, i, good)) for i in range(12)]
    assert not any(NONDETERMINISTIC in r["violation_kinds"] for r in rows)


WARMED_MODULE = textwrap.dedent("""
    from snapcheck.reference.coordinated.abs_aligned import AlignedABS, AlignedTask

    HANDLED = set()  # (task, round) pairs some earlier run of this process aligned

    class WarmedTask(AlignedTask):
        def on_barrier(self, ch, barrier, overtaking):
            key = (self.ctx.id, barrier.round)
            if key in HANDLED and barrier.round > 2:  # "seen it before": skip alignment
                self.arrived[ch] = True
                return
            HANDLED.add(key)
            super().on_barrier(ch, barrier, overtaking)

    class Warmed(AlignedABS):
        name = "warmed"
        task_class = WarmedTask
""")


def test_a_run_that_only_reads_state_earlier_runs_left_is_told_so(tmp_path):
    """A cache that earlier runs of the process filled (the driver's first draw, the dry
    runs of targeted exploration, earlier runs): a campaign's run changes nothing, and
    simulated again in the same process it gives the same trace, but its reproduction
    command, a fresh process, may not. Every failing run is either told so
    (nondeterministic-run) or its command, pasted in a fresh process, writes its very
    bytes."""
    import hashlib
    import shlex

    from snapcheck.spark_validation.main_job import run_validation

    (tmp_path / "warmed.py").write_text(WARMED_MODULE)
    summary = run_validation(
        10,
        str(tmp_path / "out"),
        protocols=f"{tmp_path / 'warmed.py'}:Warmed",
        mutants="none",
        engine="python",
        progress=False,
    )
    failing = summary["failing_runs"]
    assert any(NONDETERMINISTIC in r["violation_kinds"] for r in failing), failing
    for r in failing:
        if NONDETERMINISTIC in r["violation_kinds"]:
            continue
        argv = shlex.split(r["command"])
        pasted = subprocess.run([sys.executable, "-m", *argv], cwd=tmp_path, capture_output=True, timeout=120)
        assert pasted.returncode in (0, 1), pasted.stderr  # 1: the oracle (--oracle) found what the run did
        written = (tmp_path / argv[argv.index("-o") + 1]).read_bytes()
        assert hashlib.sha256(written).hexdigest() == r["trace_sha256"], r["command"]


def test_a_class_handed_to_the_api_is_named_so_that_its_command_loads_it(tmp_path, monkeypatch):
    """A class of a package module with relative imports is named MODULE:CLASS (its file
    path would not load: the relative import fails); a class of the campaign's own script
    (__main__) is refused: its command would run that script again."""
    from snapcheck.reference.catalogue import as_spec
    from snapcheck.traces.errors import UsageError

    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "base.py").write_text(MODULE)
    (tmp_path / "mypkg" / "mine.py").write_text("from .base import Mine\n\n\nclass Pkg(Mine):\n    name = 'pkg'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from mypkg.mine import Pkg  # type: ignore[import-not-found]

    assert as_spec(Pkg) == "mypkg.mine:Pkg"
    script = type("Script", (Pkg,), {"__module__": "__main__"})
    with pytest.raises(UsageError, match="__main__"):
        as_spec(script)


def test_checkpointing_a_round_the_coordinator_never_started_is_a_protocol_error():
    """A local checkpoint written as ctx.checkpoint(10_000 + k): the trace looked like a
    coordinator that hung on round 10,001 (incomplete-round), and the oracle like lost output."""

    class LocalTask(AlignedTask):
        def on_trigger(self, round, barrier):
            self.ctx.checkpoint(10_000 + round)

    class Local(AlignedABS):
        name = "local-rounds"
        task_class = LocalTask

    last = simulate(SimConfig(protocol=Local, workload="q1")).trace().events[-1]
    assert last.type == "protocol_error" and "round 10001 was never started by the coordinator" in last.reason


BASE_FILE = textwrap.dedent("""
    from snapcheck.reference.coordinated.abs_aligned import AlignedABS

    class Base(AlignedABS):
        name = "base-of-a-file"
""")
MUTANT_FILE = textwrap.dedent("""
    from base_file import Base
    from snapcheck.reference.coordinated.abs_aligned import AlignedTask

    class NoBlockTask(AlignedTask):
        def block(self, ch):
            self.arrived[ch] = True

    class NoBlock(Base):
        name = "no-block-of-a-file"
        mutant_of = Base
        task_class = NoBlockTask
""")


def test_a_user_mutant_gives_the_same_bytes_whether_its_base_is_named_or_not(tmp_path):
    """A mutant whose base lives in another file of the user's: ``--mutant FILE:CLASS``
    alone names that base as the user would (relative to the current directory), so the
    trace is the one ``--protocol BASE --mutant ...`` writes (its header named the base
    by its absolute path)."""
    (tmp_path / "base_file.py").write_text(BASE_FILE)
    (tmp_path / "mutant_file.py").write_text(MUTANT_FILE)
    common = ["--mutant", "mutant_file.py:NoBlock", "-w", "q3", "-s", "3", "--fail", "join[0]@900"]
    alone = cli(tmp_path, "simulate", *common, "-o", "a.jsonl")
    named = cli(tmp_path, "simulate", "-p", "base_file.py:Base", *common, "-o", "b.jsonl")
    assert alone.returncode == named.returncode == 0, alone.stderr + named.stderr
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    header = json.loads((tmp_path / "a.jsonl").read_text().splitlines()[0])
    assert header["metadata"]["simulator"]["config"]["protocol"] == "base_file.py:Base"


def test_a_protocol_and_its_mutant_handed_to_the_api_as_classes_of_one_module(tmp_path, monkeypatch):
    """``run_validation(protocols=[Mine], mutants=[MineNoBlock])`` with both imported from
    one module: the mutant, named beside its base, loads by that name too (it was refused
    as a class that "cannot be loaded by name in another process")."""
    (tmp_path / "siblings.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    import siblings  # type: ignore[import-not-found]

    assert as_spec(siblings.Mine) == "siblings.py:Mine"
    spec = as_spec(siblings.MineNoBlock, "mutant")
    assert spec == "siblings.py:MineNoBlock" and resolve(spec) is siblings.MineNoBlock


def test_listing_a_user_protocol_gives_every_fact_it_declares_and_the_mutants_beside_it(userdir):
    res = cli(userdir, "protocols", "--json", "userproto:Mine")
    assert res.returncode == 0, res.stderr
    (row,) = [r for r in json.loads(res.stdout) if r["name"] == "mine"]
    assert row["mutants"] == ["userproto:MineNoBlock"]
    assert {"fifo", "dedup", "observe_arrivals", "observe_processing", "abort_notices"} <= set(row)


def test_a_user_protocols_own_mutants_run_by_default(tmp_path):
    """As every catalogue mutant of a selected built-in protocol runs by default, so do the
    mutants a user's protocol module defines for it (``mutant_of``); ``none`` runs none."""
    from snapcheck.spark_validation.configs import Selection

    (tmp_path / "mine.py").write_text(MODULE)
    spec = f"{tmp_path / 'mine.py'}:Mine"
    assert Selection.of([spec]).mutants == (f"{tmp_path / 'mine.py'}:MineNoBlock",)
    assert Selection.of([spec], mutants=()).mutants == ()
    assert Selection.of(["chandy-lamport"]).mutants == ("chandy-lamport-no-channel-state", "chandy-lamport-non-fifo")


def test_a_protocol_drawing_from_the_global_random_runs_alike_from_the_same_command():
    """A protocol that draws from Python's global ``random`` (an upload time, a backoff)
    gets the same draws from the same seed however the generator stood before, and the
    caller's generator is as it was: its runs reproduce from their command (a designer
    hunt found three different traces from one command)."""
    import random

    from snapcheck.reference.coordinated.chandy_lamport import ChandyLamport, ChandyLamportTask

    class RandomAckTask(ChandyLamportTask):
        def done(self, r):
            del self.active[r]
            self.ctx.set_timer(self.ctx.now + random.randint(1, 300), ("ack", r))

        def on_timer(self, key):
            self.ctx.complete(key[1])

    class RandomAck(ChandyLamport):
        name = "random-ack"
        task_class = RandomAckTask

    cfg = SimConfig(protocol=RandomAck, workload="q1", seed=5, records=20)
    random.seed(1)
    before = random.getstate()
    first = simulate(cfg).trace().events
    assert random.getstate() == before  # the caller's generator as it was
    random.random()
    assert simulate(cfg).trace().events == first
    assert simulate(SimConfig(protocol=RandomAck, workload="q1", seed=6, records=20)).trace().events != first


@pytest.mark.parametrize("answer", ["no", None, 1])
def test_a_barrier_priority_that_is_not_a_bool_is_a_protocol_error(answer):
    """``barrier_priority`` answers True or False; ``"no"`` was taken as true (barriers
    overtook, and the run was blamed for aligned-in-flight records), ``None`` as false."""
    from snapcheck.reference.coordinated.unaligned import Unaligned, UnalignedTask

    class Answers(UnalignedTask):
        def barrier_priority(self, ch, barrier):
            return answer

    class Odd(Unaligned):
        name = "odd-priority"
        task_class = Answers

    res = simulate(SimConfig(protocol=Odd, workload="q1", seed=2))
    (v,) = [v for v in check_trace(res.trace()).violations if v.kind == "protocol-error"]
    assert f"returns a bool (True: the barrier overtakes), not {type(answer).__name__} {answer!r}" in v.message
    assert res.trace().events[-1].attrs["handler"] == "barrier_priority"


def test_a_must_force_answering_a_number_is_a_protocol_error():
    """``must_force`` answers a reason, True/False or None; ``pb["sn"] - self.sn`` (an int)
    forced a checkpoint when the difference was negative as well (a designer hunt)."""
    from snapcheck.reference.cic.bcs import BCS, BCSTask

    class Difference(BCSTask):
        def must_force(self, ch, pb):
            return pb["sn"] - self.sn

    class ByDifference(BCS):
        name = "by-difference"
        task_class = Difference

    res = simulate(SimConfig(protocol=ByDifference, workload="reachability", parallelism=2, seed=1))
    last = res.trace().events[-1]
    assert last.type == "protocol_error" and last.attrs["handler"] == "must_force"
    assert "returns a reason (a str), True, False or None, not int" in last.reason


class EpochTask(UncoordinatedTask):
    piggyback_size = 4

    def piggyback(self, ch):
        return {"epoch": 1}  # not BCS's "sn"


class ClaimsBCS(UNC):
    name = "claims-bcs"
    cic = "bcs"
    task_class = EpochTask


def test_a_run_whose_trace_cannot_be_checked_still_counts_what_it_reached():
    """A protocol declaring ``cic = "bcs"`` without BCS's piggyback: its traces cannot be
    checked (bad input), and the campaign listed runs of 0 events that reached no
    situation ("not explored"), though they ran (a designer hunt)."""
    cfg = SimConfig(protocol=ClaimsBCS, workload="reachability", parallelism=2, seed=1, records=10)
    row = run_one(0, 1, cfg)
    assert row["verdict"] == "error" and "CIC checks cannot read this trace" in row["error"]
    assert row["events"] > 0 and json.loads(row["situations"]), row
