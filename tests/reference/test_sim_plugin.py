"""The plug-in interface: a user's own protocol runs in the simulator and is judged
by the checker; the public strategies drive it."""

import pytest
from hypothesis import HealthCheck, given, settings

from snapcheck.checker import check_trace
from snapcheck.reference import SimConfig, simulate
from snapcheck.reference.oracle import exactly_once
from snapcheck.reference.protocol import Protocol, TaskProtocol
from snapcheck.reference.testing import sim_configs


class MyAlignedTask(TaskProtocol):
    """A user's aligned barrier protocol, with the source snapshot delayed by a timer."""

    def __init__(self, ctx, protocol):
        super().__init__(ctx, protocol)
        self.seen = {}
        self.cancelled = set()

    def on_trigger(self, round, barrier):
        self.ctx.set_timer(self.ctx.now + 25, round)

    def on_timer(self, round):
        self.snapshot(round)

    def on_barrier(self, ch, barrier, overtaking):
        if barrier.round in self.cancelled:
            return
        self.ctx.block(ch)
        self.seen.setdefault(barrier.round, []).append(ch)
        if len(self.seen[barrier.round]) == len(self.ctx.inputs):
            del self.seen[barrier.round]
            self.snapshot(barrier.round)
            self.ctx.unblock_all()

    def snapshot(self, round):
        if self.ctx.checkpoint(round) is None:  # declined: downstream must not wait for our barrier
            self.ctx.send_cancel(round)
            return
        self.ctx.send_barrier(round)
        self.ctx.complete(round)

    def on_cancel(self, ch, marker):
        if marker.round in self.cancelled:
            return
        self.cancelled.add(marker.round)
        if self.seen.pop(marker.round, None) is not None:
            self.ctx.unblock_all()
        self.ctx.send_cancel(marker.round)


class MyAligned(Protocol):
    name = "my-aligned"
    task_class = MyAlignedTask
    aligned = True


class ForgetfulTask(MyAlignedTask):
    """Snapshots at the first barrier without blocking or recording anything."""

    def on_barrier(self, ch, barrier, overtaking):
        if barrier.round not in self.seen:
            self.seen[barrier.round] = []
            self.snapshot(barrier.round)


class Forgetful(Protocol):
    name = "forgetful"
    task_class = ForgetfulTask


def test_a_users_protocol_is_clean_and_exactly_once():
    cfg = SimConfig(protocol=MyAligned(), workload="q3", seed=5, failures=(("join[1]", 1200),))
    res = simulate(cfg)
    assert res.header.protocol["name"] == "my-aligned"
    assert check_trace(res.trace()).ok
    assert exactly_once(cfg, res) == []
    assert res.metrics["rounds_completed"] > 1


def test_a_broken_users_protocol_is_caught():
    res = simulate(SimConfig(protocol=Forgetful(), workload="q12", parallelism=3, seed=1, records=30, gap=40))
    kinds = {v.kind for v in check_trace(res.trace()).violations}
    assert kinds & {"orphan", "dropped"}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sim_configs(protocols=[MyAligned()], cyclic=False))
def test_a_users_protocol_under_the_public_strategies(cfg):
    res = simulate(cfg)
    assert check_trace(res.trace()).ok
    assert exactly_once(cfg, res) == []


class HeartbeatTask(MyAlignedTask):
    """MyAligned plus a heartbeat: every task re-arms a timer every ``period`` ticks for ever."""

    period = 40

    def __init__(self, ctx, protocol):
        super().__init__(ctx, protocol)
        self.beats = 0
        ctx.set_timer(ctx.now + self.period, "beat")

    def on_timer(self, key):
        if key != "beat":
            return super().on_timer(key)
        self.beats += 1
        self.ctx.set_timer(self.ctx.now + self.period, "beat")


class Heartbeat(MyAligned):
    name = "heartbeat"
    task_class = HeartbeatTask


class StuckClockTask(HeartbeatTask):
    period = 0  # re-armed for the tick it fires at


class StuckClock(MyAligned):
    name = "stuck-clock"
    task_class = StuckClockTask


def test_a_periodic_timer_does_not_keep_a_finished_run_alive():
    cfg = SimConfig(protocol=MyAligned, workload="q3", seed=2)
    plain, beating = simulate(cfg), simulate(SimConfig(protocol=Heartbeat, workload="q3", seed=2))
    assert not beating.metrics["stuck"] and not beating.metrics["truncated"]
    assert beating.metrics["rounds_completed"] == plain.metrics["rounds_completed"]
    # it ends within the idle ticks the coordinator allows once only the heartbeats are left
    assert beating.metrics["sim_time"] <= plain.metrics["sim_time"] + 12 * cfg.interval
    assert check_trace(beating.trace()).ok and exactly_once(SimConfig(protocol=Heartbeat, workload="q3", seed=2)) == []


def test_a_timer_that_never_lets_the_clock_advance_is_a_protocol_error():
    res = simulate(SimConfig(protocol=StuckClock, workload="q1", seed=0))
    last = res.trace().events[-1]
    assert last.type == "protocol_error" and "never lets the simulated clock advance" in last.reason
    assert last.attrs["handler"] == "on_timer"


class SpinningTask(MyAlignedTask):
    """Waits inside on_barrier for a record that cannot arrive while it waits."""

    def on_barrier(self, ch, barrier, overtaking):
        while barrier.round == 2 and not self.ctx.queued(ch):
            pass
        super().on_barrier(ch, barrier, overtaking)


class Spinning(MyAligned):
    name = "spinning"
    task_class = SpinningTask


def test_a_handler_that_never_returns_is_a_protocol_error_not_a_hang(monkeypatch):
    from snapcheck.reference.sim import watchdog

    monkeypatch.setattr(watchdog, "HANDLER_BUDGET", 0.2)
    res = simulate(SimConfig(protocol=Spinning, workload="q1", seed=0))
    last = res.trace().events[-1]
    assert last.type == "protocol_error" and last.attrs["handler"] == "on_barrier"
    assert "HandlerTimeout: on_barrier has not returned after 0.2 s (at test_sim_plugin.py:" in last.reason
    assert "raised in the simulator" not in last.reason
    assert "protocol-error" in check_trace(res.trace()).kinds
    assert simulate(SimConfig(protocol=MyAligned, workload="q1", seed=0)).metrics["protocol_error"] is None


def test_a_stuck_handler_is_stopped_within_a_quarter_budget_after_its_budget():
    """The documented bound: between 1 and 1.25 budgets after the call (the watchdog looks
    four times per budget). Reading the clock at the fourth look stopped it 1.5 budgets
    after in two thirds of the trials, when that reading fell a hair short."""
    import time

    from snapcheck.reference.sim.watchdog import HandlerTimeout, handler_watchdog

    task = SpinningTask.__new__(SpinningTask)
    for _ in range(4):
        start = time.monotonic()
        with pytest.raises(HandlerTimeout), handler_watchdog(0.6):
            SwallowingTask.on_barrier(task, None, None, False)
        assert 0.6 * 0.99 <= time.monotonic() - start < 0.6 * 1.4


class SwallowingTask(MyAlignedTask):
    """Retries forever, and its ``except Exception`` would swallow an ordinary exception."""

    def on_barrier(self, ch, barrier, overtaking):
        while True:
            try:
                sum(range(1000))
            except Exception:  # noqa: BLE001, S112 - the user's mistake under test
                continue


class RaisesBase(MyAlignedTask):
    """Raises a ``BaseException`` that is neither an ``Exception`` nor ``SystemExit``."""

    error: type[BaseException] = GeneratorExit

    def on_barrier(self, ch, barrier, overtaking):
        raise self.error("from the protocol")


class RaisesInterrupt(RaisesBase):
    error = KeyboardInterrupt


@pytest.mark.parametrize(
    "task,kind",
    [(SwallowingTask, "HandlerTimeout"), (RaisesBase, "GeneratorExit"), (RaisesInterrupt, "KeyboardInterrupt")],
)
def test_whatever_a_handler_raises_or_swallows_ends_the_run_with_a_protocol_error(monkeypatch, task, kind):
    """The watchdog's timeout is not an ``Exception`` (an ``except Exception`` loop does
    not swallow it); a ``BaseException`` of the protocol's own, a ``KeyboardInterrupt``
    raised without Ctrl-C too, is its error, not the kit's."""
    from snapcheck.reference.sim import watchdog

    monkeypatch.setattr(watchdog, "HANDLER_BUDGET", 0.2)
    cls = type("P", (MyAligned,), {"name": "p", "task_class": task})
    last = simulate(SimConfig(protocol=cls, workload="q1", seed=0)).trace().events[-1]
    assert last.type == "protocol_error" and last.attrs["handler"] == "on_barrier", last
    assert last.reason.split(": ", 2)[1] == kind, last.reason


class GiveUpFirstTask(TaskProtocol):
    """Snapshot on the first barrier and forward it (one input per task); the sink gives
    round 1 up after its snapshot — declining it if the protocol says so."""

    def on_trigger(self, round, barrier):
        self.take(round)

    def on_barrier(self, ch, barrier, overtaking):
        self.take(barrier.round)

    def take(self, r):
        if self.ctx.checkpoint(r) is None:
            self.ctx.send_cancel(r)
            return
        self.ctx.send_barrier(r)
        if r == 1 and not self.ctx.outputs:
            if self.protocol.tell:
                self.ctx.decline(r)
            return
        self.ctx.complete(r)


class GiveUpSilently(Protocol):
    name = "give-up-silently"
    task_class = GiveUpFirstTask
    topologies = "acyclic"
    tell = False


class GiveUpAndDecline(GiveUpSilently):
    name = "give-up-and-decline"
    tell = True


def test_a_round_given_up_silently_hangs_and_a_declined_one_is_aborted():
    cfg = dict(workload="q1", parallelism=1, seed=3, max_concurrent=1)
    silent = simulate(SimConfig(protocol=GiveUpSilently(), **cfg))
    assert silent.metrics["stuck"] and silent.metrics["rounds_completed"] == 0
    rep = check_trace(silent.trace())
    assert rep.kinds == {"incomplete-round"} and rep.violations[0].subject == "round 1", rep.render_text()
    told = simulate(SimConfig(protocol=GiveUpAndDecline(), **cfg))
    aborts = [e for e in told.trace().events if e.type == "round_abort"]
    assert [(e.round, e.reason) for e in aborts][:1] == [(1, "declined by sink[0]")]
    assert not told.metrics["stuck"] and told.metrics["rounds_completed"] >= 1
    assert check_trace(told.trace()).ok
