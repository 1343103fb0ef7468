"""What the plug-in interface promises a user's protocol (docs/protocols.md, "Writing your
own protocol"): the arguments its handlers get, the task context, one run's protocol
instance, and the facts by which it says where it can run."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest
from hypothesis import find, given, settings

from snapcheck.checker import check_trace
from snapcheck.reference import SimConfig, simulate
from snapcheck.reference.catalogue import PROTOCOLS, declaration_problems, entry
from snapcheck.reference.coordinated.abs_aligned import AlignedABS, AlignedTask
from snapcheck.reference.testing import sim_configs
from snapcheck.spark_validation.configs import Selection, draw_config
from snapcheck.traces.errors import UsageError

RESTORES: list = []  # (task, ckpt, round) of every on_restore of ``Restores``


class RestoresTask(AlignedTask):
    def on_restore(self, ckpt, round):
        RESTORES.append((self.ctx.id, ckpt, round))


class Restores(AlignedABS):
    name = "restores"
    task_class = RestoresTask


def test_a_restore_of_the_initial_state_hands_on_restore_round_0_and_the_trace_no_round():
    RESTORES.clear()
    res = simulate(SimConfig(protocol=Restores, workload="q1", parallelism=1, seed=1, failures=(("map[0]", 5),)))
    assert RESTORES and {(ckpt, r) for _, ckpt, r in RESTORES} == {(0, 0)}
    restores = [e for e in res.trace().events if e.type == "restore"]
    assert restores and all(e.round is None and e.ckpt == 0 for e in restores)


@pytest.mark.parametrize("rescale, restored", [(("failure", 5, 3), 0), (("savepoint", 1500, 3), 3)])
def test_the_tasks_of_a_rescaled_job_get_checkpoint_0_and_the_restored_round(rescale, restored):
    RESTORES.clear()
    simulate(SimConfig(protocol=Restores, workload="q1", parallelism=2, seed=3, rescale=(rescale,)))
    assert sorted({(ckpt, r) for task, ckpt, r in RESTORES if task.startswith("g1.")}) == [(0, restored)]


class Fixed(AlignedABS):
    name = "fixed-parallelism"
    rescalable = False


def test_a_protocol_that_does_not_rescale_is_refused_a_rescale_with_the_reason():
    with pytest.raises(UsageError, match="rescalable = False"):
        simulate(SimConfig(protocol=Fixed, workload="q1", rescale=(("savepoint", 1500, 3),)))


def test_simulate_rescale_of_a_protocol_that_does_not_rescale_is_exit_2(tmp_path):
    (tmp_path / "fixed.py").write_text(
        "from snapcheck.reference.coordinated.abs_aligned import AlignedABS\n\n"
        "class Fixed(AlignedABS):\n    name = 'fixed'\n    rescalable = False\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "snapcheck", "simulate", "-p", "fixed.py:Fixed", "--rescale", "savepoint@1500:3"]
        + ["-o", "x.jsonl"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2 and "rescalable = False" in run.stderr


@pytest.mark.parametrize("explore", ["stress", "uniform"])  # not landed: a dry run of a rescale differs
def test_campaigns_rescale_only_the_protocols_that_declare_they_can(explore):
    """The runs of a protocol declaring ``rescalable = False`` are those of the same protocol
    declaring True, except the rescale; the draws of a rescalable protocol keep theirs."""
    with_rescales = 0
    for run in range(120):
        drawn = {
            cls: draw_config(run, run, Selection.of(protocols=[cls], mutants=(), explore=explore))
            for cls in (Restores, Fixed)
        }
        assert not drawn[Fixed].rescale
        assert replace(drawn[Fixed], protocol=None) == replace(
            drawn[Restores], protocol=None, rescale=(), max_parallelism=16
        )
        with_rescales += bool(drawn[Restores].rescale)
    assert with_rescales > 10


def test_the_rescalable_fact_is_listed_and_checked():
    assert entry(Fixed)["rescalable"] is False and entry(AlignedABS)["rescalable"] is True
    bad = type("Bad", (AlignedABS,), {"rescalable": "no", "__module__": "mine"})
    assert declaration_problems(bad) == ["rescalable = 'no': expected True or False"]


@pytest.mark.parametrize("name", list(PROTOCOLS))
def test_the_catalogues_rescalable_fact_is_what_simulate_does(name):
    """``rescalable`` is True exactly for the protocols ``simulate`` restores at another
    parallelism; the others are refused by that fact, a protocol with a rescale fault of
    its own simulator (``job_faults``) being pointed to it."""
    cls = PROTOCOLS[name]
    cfg = SimConfig(protocol=name, workload="q1", records=4, rescale=(("savepoint", 700, 3),))
    if cls.rescalable:
        assert any(e.type == "retire" for e in simulate(cfg).events)
        return
    with pytest.raises(UsageError, match=r"rescalable = False: its own simulator does not model it\)") as refused:
        simulate(cfg)
    assert ("--fail rescale@TIME" in str(refused.value)) == ("rescale" in cls.job_faults)


@pytest.mark.parametrize("name", list(PROTOCOLS))
def test_the_catalogues_finished_inputs_fact_is_what_simulate_does(name):
    """``finished_inputs`` is True exactly for the protocols ``simulate`` runs with finishing
    sources (``snapcheck protocols --json`` said True for the ten with their own simulator,
    which refuse them); the others are refused by that fact."""
    cfg = SimConfig(protocol=name, workload="q1", records=4, finish_sources=True)
    if PROTOCOLS[name].finished_inputs:
        assert any(e.type == "finish" for e in simulate(cfg).events)
        return
    with pytest.raises(UsageError, match=r"finished_inputs = False"):
        simulate(cfg)


def test_a_protocol_with_its_own_simulator_is_not_rescalable_unless_it_says_so():
    own = type("Own", (AlignedABS,), {"simulator": object, "__module__": "mine"})
    assert own.rescalable is False and declaration_problems(own) == []
    claims = type("Claims", (own,), {"rescalable": True, "__module__": "mine"})
    assert declaration_problems(claims)[0].startswith("rescalable = True: a rescale (SimConfig.rescale) is modelled")
    assert own.finished_inputs is False
    claims = type("Claims", (own,), {"finished_inputs": True, "__module__": "mine"})
    assert declaration_problems(claims)[0].startswith(
        "finished_inputs = True: finishing sources (SimConfig.finish_sources) is modelled"
    )


@settings(max_examples=40, deadline=None)
@given(sim_configs(protocols=[Fixed, Restores], cyclic=False, rescales=True))
def test_the_hypothesis_strategies_rescale_only_the_protocols_that_declare_they_can(cfg):
    assert not cfg.rescale or cfg.protocol is Restores


def test_the_hypothesis_strategies_draw_rescales_that_run_clean():
    cfg = find(sim_configs(protocols=[Restores], cyclic=False, rescales=True), lambda c: bool(c.rescale))
    assert check_trace(simulate(cfg).trace()).ok


class OnceTask(AlignedTask):
    def on_trigger(self, round, barrier):
        if (self.ctx.id, round) in self.protocol.triggered:  # state of another run: it gives up
            self.ctx.decline(round)
            return
        self.protocol.triggered.add((self.ctx.id, round))
        super().on_trigger(round, barrier)


class Once(AlignedABS):
    name = "once"
    task_class = OnceTask

    def __init__(self, **params):
        super().__init__(**params)
        self.triggered: set = set()  # kept on the instance, which every task of one run shares


def test_runs_given_one_protocol_instance_each_start_from_it_as_it_was_given():
    once = Once()
    cfg = SimConfig(protocol=once, workload="q1", seed=2)
    first, again = simulate(cfg), simulate(cfg)
    assert first.dumps() == again.dumps() and check_trace(again.trace()).ok
    assert once.triggered == set()


def test_a_protocol_instance_that_cannot_be_copied_is_a_usage_error_naming_the_reason():
    import threading

    held = Once()
    held.lock = threading.Lock()  # type: ignore[attr-defined]
    with pytest.raises(UsageError, match="cannot be copied for the run .*lock"):
        simulate(SimConfig(protocol=held, workload="q1", seed=2))


def test_simulate_demo_of_a_mutant_without_a_demo_is_exit_2(tmp_path):
    (tmp_path / "nodemo.py").write_text(
        "from snapcheck.reference.coordinated.abs_aligned import AlignedABS\n\n"
        "class Bug(AlignedABS):\n    name = 'bug'\n    mutant_of = 'abs-aligned'\n"
        "    bug = 'none'\n    expect = ('orphan',)\n    prop = 'consistency'\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "snapcheck", "simulate", "--mutant", "nodemo.py:Bug", "--demo", "-o", "x.jsonl"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2 and "declares no demonstration config" in run.stderr, run.stderr
    assert not (tmp_path / "x.jsonl").exists()
