"""What the plug-in interface promises a user's protocol (docs/protocols.md, "Writing your
own protocol"): the arguments its handlers get, the task context, one run's protocol
instance, and the facts by which it says where it can run."""

from __future__ import annotations

import pytest

from snapcheck.reference import SimConfig, simulate
from snapcheck.reference.coordinated.abs_aligned import AlignedABS, AlignedTask

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
