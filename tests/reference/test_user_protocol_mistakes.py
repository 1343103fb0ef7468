"""A user's mistake in writing a protocol is told as such: a declaration the kit cannot use
(a misspelt fact, a handler with the wrong signature, a ``task_class`` that is not a
``TaskProtocol``, a ``mutant_of`` naming nothing) is exit 2 naming the attribute before
anything runs; a handler that calls the task context with something it cannot take ends
the run with a ``protocol-error`` at the call, never with an invalid trace (so does a second
barrier of a round on one output, whose message id the trace would hold twice); and every
protocol error names the line of the user's file it came from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from snapcheck.checker import check_trace
from snapcheck.reference import SimConfig, simulate
from snapcheck.reference.catalogue import MUTANTS, PROTOCOLS, declaration_problems, load
from snapcheck.traces import read_trace
from snapcheck.traces.errors import UsageError
from snapcheck.traces.writer import write_trace

MODULE = textwrap.dedent("""
    from snapcheck.reference.protocol import Protocol, TaskProtocol


    class Task(TaskProtocol):
        def on_trigger(self, round, barrier):
            self.ctx.checkpoint(round)
            self.ctx.send_barrier(round)
            self.ctx.complete(round)

        def on_barrier(self, ch, barrier, overtaking):
            self.ctx.block(ch)


    class Good(Protocol):
        name = "good"
        task_class = Task


    class Typo(Good):
        topologies = "acylic"


    class OneMode(Good):
        recovery_modes = "restart-all"


    class Partial(Good):
        recovery_modes = ("restart-all", "partial")  # the shared simulator restarts every task


    class Own(Good):
        topologies = "own"  # processes of its own need a simulator of its own


    class Promises(Good):
        guarantees = ("z-cycle-free",)  # the checker knows "z-cycles"


    class Cic(Good):
        cic = "bsc"


    class Misspelt(Good):
        mutant_of = Good
        expect = ("orphans",)  # the checker says "orphan"
        prop = "consistency"


    class NoRounds(Good):
        max_rounds_in_flight = 0


    class OneSituation(Good):
        situations = "alignment"  # a string: its letters would be the situations a campaign looks for


    class OneJobFault(Good):
        job_faults = "rescale"


    class TlaName(Good):
        tla = "ABSTrace"


    class CrashTargets(Good):
        crash_targets = 5


    class DemoTypo(Good):
        mutant_of = Good
        expect = ("orphan",)
        prop = "consistency"
        demo = {"recods": 5, "latency": "40"}


    class NoBase(Good):
        mutant_of = "no-such-protocol"


    class Instance(Good):
        task_class = Task(None, None)


    class NotATask:
        pass


    class Plain(Good):
        task_class = NotATask


    class ShortTask(TaskProtocol):
        def on_barrier(self, ch, barrier):
            pass


    class Short(Good):
        task_class = ShortTask


    from snapcheck.reference.uncoordinated.protocol import UncoordinatedProtocol, UncoordinatedTask


    class ForceTask(UncoordinatedTask):
        def must_force(self, pb):
            return None


    class Force(UncoordinatedProtocol):
        name = "force"
        family = "cic"
        task_class = ForceTask


    class NoPiggybackTask(UncoordinatedTask):
        piggyback = None


    class NoPiggyback(Force):
        task_class = NoPiggybackTask


    class SizeTask(UncoordinatedTask):
        piggyback_size = "4"


    class Size(Force):
        task_class = SizeTask


    class NameInt(Force):
        name = 5


    class SimulatorName(Force):
        simulator = "UncoordinatedSimulator"


    class CicInitTask(UncoordinatedTask):
        def __init__(self, ctx, protocol):
            super().__init__(ctx, protocol)
            raise RuntimeError("no state")


    class CicInit(Force):
        task_class = CicInitTask


    class CicVarsTask(UncoordinatedTask):
        def vars(self):
            raise RuntimeError("no vars")


    class CicVars(Force):
        task_class = CicVarsTask


    class CicVarsListTask(UncoordinatedTask):
        def vars(self):
            return [1, 2]


    class CicVarsList(Force):
        task_class = CicVarsListTask


    class CicPiggybackIntTask(UncoordinatedTask):
        def piggyback(self, ch):
            return 5


    class CicPiggybackInt(Force):
        task_class = CicPiggybackIntTask


    class AnswerTwiceTask(Task):
        def on_trigger(self, round, barrier):
            super().on_trigger(round, barrier)
            self.ctx.decline(round)


    class AnswerTwice(Good):
        task_class = AnswerTwiceTask


    from snapcheck.reference.cic.bcs import BCS, BCSTask


    class ForcedThenRaisesTask(BCSTask):
        def checkpoint_taken(self, kind, pb):
            super().checkpoint_taken(kind, pb)
            self.forced = kind == "forced"

        def delivered(self, ch, pb):
            if getattr(self, "forced", False):
                raise ValueError("after a forced checkpoint")


    class ForcedThenRaises(BCS):
        name = "forced-then-raises"
        task_class = ForcedThenRaisesTask


    class StaticTask(Task):
        @staticmethod
        def on_barrier(ch, barrier, overtaking):
            pass


    class Static(Good):
        task_class = StaticTask


    class StringRoundTask(Task):
        def on_trigger(self, round, barrier):
            self.ctx.checkpoint(round)
            self.ctx.send_barrier(str(round))


    class StringRound(Good):
        task_class = StringRoundTask


    class NumberedSituationTask(Task):
        def on_trigger(self, round, barrier):
            self.ctx.situation(42)


    class NumberedSituation(Good):
        task_class = NumberedSituationTask


    class TwiceTask(Task):
        def on_trigger(self, round, barrier):
            self.ctx.checkpoint(round)
            self.ctx.send_barrier(round)
            self.ctx.send_barrier(round)


    class Twice(Good):
        task_class = TwiceTask


    class AgainTask(Task):
        def on_trigger(self, round, barrier):
            super().on_trigger(round, barrier)
            self.ctx.checkpoint(round)


    class Again(Good):
        task_class = AgainTask


    class TwiceCancelTask(Task):
        def on_trigger(self, round, barrier):
            self.ctx.send_cancel(round)
            self.ctx.send_cancel(round)


    class TwiceCancel(Good):
        task_class = TwiceCancelTask


    class ForeignChannelTask(Task):
        def on_trigger(self, round, barrier):
            n = self.ctx.checkpoint(round)
            self.ctx.record(n, "a channel", [])


    class ForeignChannel(Good):
        task_class = ForeignChannelTask


    class MisfiledTask(Task):
        taken = None

        def on_barrier(self, ch, barrier, overtaking):
            if self.taken is None:
                self.taken = self.ctx.checkpoint(barrier.round)
                self.ctx.send_barrier(barrier.round)

        def on_process(self, ch, msg):
            others = [c for c in self.ctx.inputs if c is not ch]
            if others and self.taken is not None:
                self.ctx.record(self.taken, others[0], [msg])


    class Misfiled(Good):
        task_class = MisfiledTask
        observe_processing = True


    class RaisesTask(Task):
        def on_barrier(self, ch, barrier, overtaking):
            {}["missing"]


    class Raises(Good):
        task_class = RaisesTask


    class ExitsTask(Task):
        def on_barrier(self, ch, barrier, overtaking):
            import sys
            sys.exit(0)


    class Exits(Good):
        task_class = ExitsTask


    class RaiseAdjust(Good):
        name = "raise-adjust"
        mutant_of = Good

        @classmethod
        def adjust(cls, cfg):
            raise RuntimeError("no")


    import dataclasses


    class NoneAdjust(RaiseAdjust):
        name = "none-adjust"

        @classmethod
        def adjust(cls, cfg):
            dataclasses.replace(cfg, interval=100)  # made, and not returned


    class ExitAdjust(RaiseAdjust):
        name = "exit-adjust"

        @classmethod
        def adjust(cls, cfg):
            import sys
            sys.exit(0)


    class RaiseInit(Good):
        name = "raise-init"

        def __init__(self, **params):
            super().__init__(**params)
            self.table = {}["x"]


    class RaiseInitMutant(RaiseInit):
        name = "raise-init-mutant"
        mutant_of = Good


    class Unfifo(Good):
        fifo = "no"


    class Hmnr(Good):
        name = "hmnr"  # the catalogue's, which promises what this one does not


    class KitMutantName(Good):
        name = "abs-aligned-no-block"  # a kit mutant's


    class OneRound(Good):
        name = "one-round"
        max_rounds_in_flight = 1


    class Base(Protocol):
        pass
""")


@pytest.fixture
def userdir(tmp_path):
    (tmp_path / "mine.py").write_text(MODULE)
    return tmp_path


def cli(cwd, *args):
    env = dict(os.environ, PYTHONPATH=str(cwd))
    return subprocess.run(
        [sys.executable, "-m", "snapcheck", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize(
    "cls,reason",
    [
        ("Typo", "topologies = 'acylic': expected one of any, acyclic, cyclic, own"),
        ("Promises", "guarantees = ('z-cycle-free',): expected a tuple of 'z-cycles', 'rdt'"),
        ("Cic", "cic = 'bsc': expected None or one of 'bcs', 'hmnr'"),
        ("OneMode", "recovery_modes = 'restart-all': expected a tuple"),
        ("Partial", "the shared dataflow simulator recovers by restarting every task"),
        ("Own", "topologies = 'own': the shared dataflow simulator runs a protocol on the campaign's workloads"),
        ("NoRounds", "max_rounds_in_flight = 0: expected None (any) or a positive integer"),
        ("NoBase", "mutant_of = 'no-such-protocol': unknown protocol"),
        ("Unfifo", "fifo = 'no': expected True or False"),
        ("Hmnr", "name = 'hmnr': the catalogue's protocol of that name declares other facts"),
        ("KitMutantName", "name = 'abs-aligned-no-block': the name of the kit's mutant abs-aligned-no-block"),
        ("Protocol", "Protocol itself is the base class every protocol subclasses"),
        ("Instance", "task_class = an instance of Task: expected a subclass of"),
        ("Plain", "task_class = NotATask: expected a subclass of"),
        (
            "Short",
            "ShortTask.on_barrier(self, ch, barrier) cannot be called as on_barrier(self, ch, barrier, overtaking)",
        ),
        # the hooks of a simulator of the kit's other than the shared one: before, the run
        # ended at the first receive with a protocol error blamed on the coordinator
        ("Force", "ForceTask.must_force(self, pb) cannot be called as must_force(self, ch, pb)"),
        ("NoPiggyback", "NoPiggybackTask.piggyback = None: not a method (called as piggyback(self, ch))"),
        # before, a run blamed its first send on the coordinator ("+ for int and str")
        ("Size", "SizeTask.piggyback_size = '4': expected an int (as UncoordinatedTask.piggyback_size = 0)"),
        ("NameInt", "name = 5: expected a non-empty string"),  # traces the kit itself refused as bad input
        ("SimulatorName", "simulator = 'UncoordinatedSimulator': expected a simulator class"),  # a traceback
        # silently taken before: a campaign's coverage looked for the situations "a", "l", "i", …
        ("OneSituation", "situations = 'alignment': expected a tuple of situation names, e.g. ('alignment',)"),
        ("OneJobFault", "job_faults = 'rescale': expected a tuple of fault names"),
        ("TlaName", "tla = 'ABSTrace': expected None or a TlaMapping"),
        ("CrashTargets", "crash_targets = 5: expected None or a sentence"),
    ],
)
def test_a_declaration_the_kit_cannot_use_is_a_usage_error_naming_the_attribute(userdir, cls, reason):
    with pytest.raises(UsageError) as err:
        load(f"{userdir / 'mine.py'}:{cls}")
    assert reason in str(err.value)


def test_a_demo_configuration_the_kit_cannot_build_is_exit_2_naming_the_field(userdir):
    """``simulate --demo`` of a mutant whose ``demo`` misspells a field or gives a value of
    another type: exit 2 naming each (a traceback, exit 3, before)."""
    res = cli(userdir, "simulate", "--mutant", "mine:DemoTypo", "--demo", "-w", "q1", "-o", "t.jsonl")
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert "'recods' is not a SimConfig field (did you mean 'records'?)" in res.stderr
    assert "demo['latency'] = '40': expected int" in res.stderr
    assert not (userdir / "t.jsonl").exists()


def test_the_cli_says_it_before_anything_runs_exit_2(userdir):
    res = cli(userdir, "simulate", "-p", "mine:Typo", "-w", "q1", "-o", "t.jsonl")
    assert res.returncode == 2 and "topologies = 'acylic'" in res.stderr and "Traceback" not in res.stderr
    assert not (userdir / "t.jsonl").exists()


def test_a_mutant_expecting_a_kind_the_checker_never_reports_is_exit_2_before_the_campaign(userdir):
    """A misspelt expected kind would never match a finding: the mutant would look as if no
    run caught it by its kind. The campaign says so before it starts (no Spark, no output)."""
    res = cli(userdir, "validate", "-n", "10", "--protocols", "mine:Good", "--mutants", "mine:Misspelt", "-o", "out")
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert "mutant mine:Misspelt: expect: 'orphans' is not a violation kind" in res.stderr
    assert "did you mean 'orphan'?" in res.stderr and not (userdir / "out").exists()


def test_listing_a_mutant_whose_expectation_a_campaign_would_refuse_says_why_exit_2(userdir):
    """``snapcheck protocols FILE:CLASS`` is where a user reads what the kit makes of a
    class: it lists the mutant, then says what ``validate`` would refuse, exit 2."""
    res = cli(userdir, "protocols", "mine:Misspelt")
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert "mutants" in res.stdout and "mutant mine:Misspelt: expect: 'orphans'" in res.stderr
    res = cli(userdir, "protocols", "mine:Good")
    assert res.returncode == 0 and not res.stderr, res.stderr


def test_every_protocol_of_the_kit_declares_itself_correctly():
    assert [name for name, cls in {**PROTOCOLS, **MUTANTS}.items() if declaration_problems(cls)] == []


def last_event(userdir, cls, file="mine.py", workload="q1"):
    res = simulate(SimConfig(protocol=f"{userdir / file}:{cls}", workload=workload))
    trace = res.trace()
    return trace, trace.events[-1]


@pytest.mark.parametrize(
    "cls,call,reason",
    [
        ("StringRound", "send_barrier", "a round is an int, not str '1'"),
        # the campaign sorted situations by name: a TypeError in the kit, every run listed as the kit's failure
        ("NumberedSituation", "situation", "a situation's name is a str, not int 42"),
        ("ForeignChannel", "record", "'a channel' is not one of the input channels it may name here"),
        ("Twice", "send_barrier", "sent a second barrier of round 1 on"),
        ("TwiceCancel", "send_cancel", "sent a second cancel of round 1 on"),
        ("Again", "checkpoint", "round 1 already has this task's checkpoint 1 and is in flight"),
        # a decline after an acknowledgement: before, no round ever completed and the run passed
        ("AnswerTwice", "decline", "declined round 1, which it already acknowledged (ctx.complete)"),
    ],
)
def test_a_call_the_task_context_cannot_take_is_a_protocol_error_not_an_invalid_trace(userdir, cls, call, reason):
    trace, last = last_event(userdir, cls)
    assert last.type == "protocol_error" and last.attrs["handler"] == call
    assert reason in last.reason and last.reason.endswith("in on_trigger)") and "(at mine.py:" in last.reason
    write_trace(userdir / "t.jsonl", trace.header, trace.events)
    assert "protocol-error" in check_trace(read_trace(userdir / "t.jsonl")).kinds  # a valid trace, judged


@pytest.mark.parametrize(
    "cls,handler,reason",
    [
        ("CicInit", "__init__", "RuntimeError: no state"),
        ("CicVars", "vars", "RuntimeError: no vars"),
        ("CicVarsList", "vars", "vars() returned [1, 2], not a dict: a trace holds it as a JSON object"),
        ("CicPiggybackInt", "piggyback", "piggyback() returned 5, not a dict: a trace holds it as a JSON object"),
    ],
)
def test_a_cic_hook_that_raises_or_returns_what_no_trace_holds_is_a_protocol_error(userdir, cls, handler, reason):
    """In the uncoordinated simulator too: a task's constructor or ``vars`` that raises at
    set-up used to end the kit with a traceback (exit 3), and ``vars``/``piggyback``
    returning a list or an int gave a trace that ``check`` refused as bad input."""
    trace, last = last_event(userdir, cls)
    assert last.type == "protocol_error" and last.attrs["handler"] == handler, last
    assert reason in last.reason
    write_trace(userdir / "t.jsonl", trace.header, trace.events)
    assert "protocol-error" in check_trace(read_trace(userdir / "t.jsonl")).kinds


def test_recording_a_record_as_state_of_another_channel_is_a_protocol_error_not_an_invalid_trace(userdir):
    """Recovery would re-inject the record on the channel it was filed under, a receive on
    a channel it was never sent on: a trace no reader takes (exit 2 for check, shrink and
    render), and a wrong-channel bug nobody could look at."""
    trace, last = last_event(userdir, "Misfiled", workload="q3")
    assert last.type == "protocol_error" and last.attrs["handler"] == "record"
    assert "a channel's recorded state holds records of that channel" in last.reason and "(at mine.py:" in last.reason
    write_trace(userdir / "t.jsonl", trace.header, trace.events)
    assert "protocol-error" in check_trace(read_trace(userdir / "t.jsonl")).kinds


def test_a_protocol_error_names_the_line_of_the_users_file_it_came_from(userdir):
    _, last = last_event(userdir, "Raises")
    number = MODULE.splitlines().index('        {}["missing"]') + 1
    assert last.reason.endswith(f"KeyError: 'missing' (at mine.py:{number}, in on_barrier)")


def test_a_handler_that_calls_sys_exit_is_a_protocol_error_not_a_silent_end(userdir):
    trace, last = last_event(userdir, "Exits")
    assert last.type == "protocol_error" and "SystemExit: 0" in last.reason and "(at mine.py:" in last.reason
    assert "protocol-error" in check_trace(trace).kinds


@pytest.mark.parametrize(
    "cls,why",
    [
        ("RaiseAdjust", "adjust raised RuntimeError: no"),
        ("ExitAdjust", "adjust raised SystemExit: 0"),
        # before, blamed on the constructor: "AttributeError: 'NoneType' object has no attribute"
        ("NoneAdjust", r"adjust\(cfg\) returned None, not a SimConfig"),
    ],
)
def test_a_mutant_whose_adjust_raises_or_exits_is_a_usage_error_before_anything_runs(userdir, cls, why):
    from snapcheck.spark_validation.configs import Selection

    base, mutant = f"{userdir / 'mine.py'}:Good", f"{userdir / 'mine.py'}:{cls}"
    with pytest.raises(UsageError, match=why):
        simulate(SimConfig(protocol=base, mutant=mutant, workload="q1"))
    with pytest.raises(UsageError, match=why):  # a campaign's driver, before Spark starts
        Selection.of(protocols=(base,), mutants=(mutant,)).check()


def test_two_protocol_directories_with_a_module_of_the_same_name_are_refused(tmp_path):
    """dirA/p.py and dirB/p.py each import their own common.py: one process holds one
    module named common, so dirB's protocol would silently run with dirA's (its bug
    hidden: its runs were all clean). The second is refused, exit 2, naming both files."""
    for d, body in (("dirA", "def act(): return None\n"), ("dirB", "def act(): raise ValueError('B')\n")):
        (tmp_path / d).mkdir()
        (tmp_path / d / "common.py").write_text(body)
        (tmp_path / d / "p.py").write_text(
            "from common import act\nfrom snapcheck.reference.catalogue import PROTOCOLS\n\n\n"
            "class P(PROTOCOLS['abs-aligned']):\n    name = 'p'\n"
        )
    res = cli(tmp_path, "validate", "-n", "2", "--engine", "python", "-p", "dirA/p.py:P,dirB/p.py:P", "-o", "out")
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert "dirB" in res.stderr and "common" in res.stderr and "already imported" in res.stderr


def test_a_constructor_that_raises_is_exit_2_naming_the_line_before_anything_runs(userdir):
    """As a protocol, as a mutant, in ``simulate`` and before a campaign starts: the user's
    line, never a traceback (the protocol's own constructor was a kit traceback, exit 3,
    and a campaign ran every run of it into an error)."""
    number = MODULE.splitlines().index('        self.table = {}["x"]') + 1
    why = f"its constructor raised KeyError: 'x' (at mine.py:{number}, in __init__)"
    res = cli(userdir, "simulate", "-p", "mine:RaiseInit", "-w", "q1", "-o", "t.jsonl")
    assert res.returncode == 2 and why in res.stderr and "Traceback" not in res.stderr, res.stderr
    res = cli(userdir, "validate", "-n", "4", "--protocols", "mine:RaiseInit", "--engine", "python", "-o", "out")
    assert res.returncode == 2 and why in res.stderr and not (userdir / "out").exists(), res.stderr
    res = cli(userdir, "validate", "-n", "4", "-p", "mine:Good", "--mutants", "mine:RaiseInitMutant", "-o", "out")
    assert res.returncode == 2 and why in res.stderr and not (userdir / "out").exists(), res.stderr


def test_more_rounds_at_once_than_a_protocol_runs_is_a_usage_error(userdir):
    from snapcheck.spark_validation.configs import Selection, draw_config

    with pytest.raises(UsageError, match="one-round runs at most 1 round"):
        simulate(SimConfig(protocol=f"{userdir / 'mine.py'}:OneRound", workload="q1", max_concurrent=2))
    sel = Selection.of(protocols=(f"{userdir / 'mine.py'}:OneRound",), mutants=(), explore="swarm")
    assert {draw_config(i, i, sel).max_concurrent for i in range(200)} == {1}  # what a campaign draws


def test_a_protocol_error_on_a_spark_executor_names_the_users_file_not_the_shipped_copy(tmp_path):
    """An executor imports the shipped copy of ``mine.py`` as
    ``snapcheck_user_<hash>_mine.py``: the trace names ``mine.py`` all the same, so the run
    gives the same bytes there as its reproduction command gives on the user's machine."""
    (tmp_path / "snapcheck_user_0123456789ab_mine.py").write_text(MODULE)
    _, last = last_event(tmp_path, "Raises", "snapcheck_user_0123456789ab_mine.py")
    number = MODULE.splitlines().index('        {}["missing"]') + 1
    assert last.reason.endswith(f"KeyError: 'missing' (at mine.py:{number}, in on_barrier)")


def test_a_mutant_names_its_base_by_a_path_relative_to_its_own_file(tmp_path):
    """``mutant_of = "mine.py:Good"`` beside ``mine.py``: the mutant loads from any
    directory (it was read from the current one, so a command run elsewhere failed)."""
    (tmp_path / "protos").mkdir()
    (tmp_path / "protos" / "mine.py").write_text(MODULE)
    (tmp_path / "protos" / "bug.py").write_text(
        "from mine import Good\n\n\nclass Bug(Good):\n    name = 'bug'\n    mutant_of = 'mine.py:Good'\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    res = cli(elsewhere, "simulate", "--mutant", str(tmp_path / "protos" / "bug.py") + ":Bug", "-o", "t.jsonl")
    assert res.returncode == 0, res.stderr
    header = json.loads((elsewhere / "t.jsonl").read_text().splitlines()[0])
    assert header["protocol"]["name"] == "good" and header["protocol"]["params"]["mutant"] == "bug"


def test_a_static_handler_that_takes_the_arguments_is_accepted(userdir):
    """Python calls a ``@staticmethod`` handler without ``self``: it was refused as "cannot
    be called as on_barrier(self, ch, barrier, overtaking)"."""
    assert declaration_problems(load(f"{userdir / 'mine.py'}:Static")) == []


def test_a_syntax_error_in_the_users_file_names_that_file_not_pythons_import_machinery(tmp_path):
    (tmp_path / "bad.py").write_text("from snapcheck.reference.protocol import Protocol\nclass Mine(Protocol)\n")
    with pytest.raises(UsageError) as err:
        load(f"{tmp_path / 'bad.py'}:Mine")
    assert "SyntaxError: expected ':' (bad.py, line 2)" in str(err.value) and "frozen" not in str(err.value)


def test_a_forced_checkpoint_whose_receive_the_protocol_error_cut_off_is_not_judged_spurious(userdir):
    """The protocol raises in ``delivered`` right after a forced checkpoint: the receive it
    was taken for is never logged. It was reported as a spurious forced checkpoint ("but
    the trace ends") beside the protocol error; the run broke, and that is all it shows."""
    res = simulate(
        SimConfig(
            protocol=f"{userdir / 'mine.py'}:ForcedThenRaises",
            workload="reachability",
            parallelism=2,
            records=6,
            seed=1,
        )
    )
    trace = res.trace()
    assert trace.events[-1].type == "protocol_error" and "after a forced checkpoint" in trace.events[-1].reason
    assert any(e.type == "checkpoint" and e.kind == "forced" for e in trace.events)
    kinds = check_trace(trace).kinds
    assert "protocol-error" in kinds and "spurious-forced-checkpoint" not in kinds, kinds
