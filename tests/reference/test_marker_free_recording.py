"""A protocol whose markers do not end channel recording (Lai and Yang, "On distributed
snapshots", with Mattern's white-message counters, on non-FIFO channels), written as a
user would: it is judged clean when it declares so
(``barriers_delimit_channel_state = False``), and a checkpoint taken in ``on_process``
(before the record's effect) is one the trace shows before the record's ``recv``."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from snapcheck.checker import check_trace
from snapcheck.reference import SimConfig, simulate
from snapcheck.reference.catalogue import declaration_problems
from snapcheck.reference.oracle import exactly_once
from snapcheck.reference.protocol import Protocol, TaskProtocol
from snapcheck.reference.testing import sim_configs

FORCED: list = []  # (round, the red record that forced its receiver's checkpoint of the round)


class CountingTask(TaskProtocol):
    """A record is *white* for round r when its sender had not checkpointed r when it
    sent it (its sequence number is at most the count the sender published at its
    checkpoint: the piggyback), *red* otherwise. A task checkpoints r at the trigger, at
    the first marker of r, or before the first red record of r; every white record it
    processes after its checkpoint is channel state; an input is done once every white
    record of it was processed; the round is acknowledged when every input is done."""

    def __init__(self, ctx, protocol):
        super().__init__(ctx, protocol)
        self.latest = 0
        self.active: dict = {}  # round -> (ckpt, {channel id: recorded records})
        self.seen: dict = {c.id: set() for c in ctx.inputs}
        self.base: dict = {c.id: 0 for c in ctx.inputs}
        self.markers: set = set()

    def count(self, r, ch):
        return self.protocol.counts.get((r, ch.id))

    def white(self, r, ch, msg) -> bool:
        c = self.count(r, ch)
        return c is None or msg.seq <= c

    def on_restore(self, ckpt, round):
        self.latest = round
        for c in self.ctx.inputs:
            self.base[c.id] = self.protocol.counts.get((round, c.id), 0)

    def on_trigger(self, round, barrier):
        self.start(round)

    def on_barrier(self, ch, barrier, overtaking):
        self.markers.add((barrier.round, ch.id))
        if barrier.round > self.latest:
            self.start(barrier.round)
        else:
            self.check(barrier.round)

    def on_cancel(self, ch, marker):
        self.active.pop(marker.round, None)
        if marker.round > self.latest:
            self.latest = marker.round
            self.ctx.send_cancel(marker.round)

    def on_arrival(self, ch, msg):
        if not self.protocol.force_on_process:
            self.force(ch, msg)

    def on_process(self, ch, msg):
        if ch.id not in self.seen:
            return  # a source's external input
        if msg.seq > self.base[ch.id] and not msg.recovered:
            self.seen[ch.id].add(msg.seq)
        if self.protocol.force_on_process:
            self.force(ch, msg)
        for r, (_, pending) in list(self.active.items()):
            if ch.id in pending and self.white(r, ch, msg):
                pending[ch.id].append(msg)
        for r in list(self.active):
            self.check(r)

    def force(self, ch, msg):
        r = self.protocol.latest.get(ch.id)
        if ch.id in self.seen and r is not None and not self.white(r, ch, msg) and r > self.latest:
            self.start(r)  # red: checkpoint before the record counts
            FORCED.append((r, msg.mid))

    def start(self, r):
        for old in [o for o in self.active if o < r]:
            del self.active[old]
        self.latest = r
        ckpt = self.ctx.checkpoint(r)
        if ckpt is None:
            self.ctx.send_cancel(r)
            return
        for c in self.ctx.outputs:
            self.protocol.counts[(r, c.id)] = c.seq
            self.protocol.latest[c.id] = r
        self.ctx.send_barrier(r)
        self.active[r] = (ckpt, {c.id: [] for c in self.ctx.inputs})
        self.check(r)

    def done(self, r, ch) -> bool:
        c = self.count(r, ch)
        if c is None or any(m.recovered for m in self.ctx.queued(ch)):
            return False
        return all(s in self.seen[ch.id] for s in range(self.base[ch.id] + 1, c + 1))

    def check(self, r):
        entry = self.active.get(r)
        if entry is None:
            return
        ckpt, pending = entry
        by_id = {c.id: c for c in self.ctx.inputs}
        for cid in list(pending):
            if self.done(r, by_id[cid]):
                recorded = pending.pop(cid)
                if recorded:
                    self.ctx.record(ckpt, by_id[cid], recorded)
        markers = all((r, c.id) in self.markers for c in self.ctx.inputs)
        if not pending and (markers or not self.protocol.wait_markers):
            del self.active[r]
            self.ctx.complete(r)


class Counting(Protocol):
    """Acknowledges once the counters say every white record was processed; its markers
    only make tasks checkpoint, as it declares."""

    name = "counting"
    family = "coordinated"
    task_class = CountingTask
    observe_processing = True
    observe_arrivals = True
    fifo = False
    max_rounds_in_flight = 1
    barriers_delimit_channel_state = False
    wait_markers = False
    force_on_process = False

    def __init__(self, **params):
        super().__init__(**params)
        self.counts: dict = {}  # (round, channel id) -> records sent before the sender's checkpoint
        self.latest: dict = {}  # channel id -> the newest round its sender checkpointed


class CountingUndeclared(Counting):
    """The same protocol without the declaration: held to Chandy and Lamport's rule."""

    name = "counting-undeclared"
    barriers_delimit_channel_state = True


class CountingOnProcess(Counting):
    """Forces its checkpoint in ``on_process``, before the red record is processed, and
    waits for every marker before acknowledging (so it needs no declaration)."""

    name = "counting-on-process"
    force_on_process = True
    wait_markers = True
    barriers_delimit_channel_state = True


def _judge(cfg: SimConfig) -> tuple[list[str], list]:
    res = simulate(cfg)
    report = check_trace(res.trace())
    return sorted({v.kind for v in report.violations}), exactly_once(cfg, res)


SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


@SETTINGS
@given(sim_configs(protocols=[Counting]))
def test_a_protocol_whose_markers_do_not_end_recording_is_clean_when_it_says_so(cfg):
    assert _judge(cfg) == ([], []), cfg


@SETTINGS
@given(sim_configs(protocols=[CountingOnProcess]))
def test_a_checkpoint_taken_in_on_process_precedes_the_record(cfg):
    assert _judge(cfg) == ([], []), cfg


def test_on_process_runs_before_the_records_recv():
    """The forced checkpoint is written before the ``recv`` of the red record that forced it."""
    FORCED.clear()
    trace = simulate(SimConfig(protocol=CountingOnProcess, workload="q3", seed=2)).trace()
    assert FORCED, "no checkpoint was forced by a record"
    ckpt_line = {(e.proc, e.round): e.line for e in trace.events if e.type == "checkpoint"}
    recv = {e.mid: e for e in trace.events if e.type == "recv"}
    for r, mid in FORCED:
        assert ckpt_line[(recv[mid].proc, r)] < recv[mid].line, (r, mid)


def test_undeclared_the_same_acknowledgement_is_completion_before_channel_state_with_a_hint():
    """Without the declaration, barriers still travelling at the completion are the
    Chandy-Lamport violation, and the message says what to declare."""
    found = None
    for seed in range(20):
        res = simulate(SimConfig(protocol=CountingUndeclared, workload="q3", seed=seed))
        bad = [v for v in check_trace(res.trace()).violations if v.kind == "completion-before-channel-state"]
        if bad:
            found = bad[0]
            break
    assert found is not None
    assert "barriers_delimit_channel_state = False" in found.message


def test_the_declaration_must_be_a_boolean():
    bad = type("Bad", (Counting,), {"barriers_delimit_channel_state": "no"})
    assert declaration_problems(bad) == ["barriers_delimit_channel_state = 'no': expected True or False"]


def test_the_declaration_reaches_the_header_and_the_catalogue_row():
    from snapcheck.reference.catalogue import entry

    res = simulate(SimConfig(protocol=Counting, workload="q1", seed=0))
    assert res.trace().header.protocol["params"]["barriers_delimit_channel_state"] is False
    assert entry(Counting)["barriers_delimit_channel_state"] is False
    plain = simulate(SimConfig(protocol="abs-aligned", workload="q1", seed=0)).trace().header.protocol["params"]
    assert "barriers_delimit_channel_state" not in plain  # the default is not written


class ForgetfulTask(CountingTask):
    """Forgets, after a restore, that the restored round is over: a record its upstream
    sent after that round's checkpoint looks red, and the fresh task checkpoints the
    restored round again (the bug a user's own first Lai-Yang had)."""

    def on_restore(self, ckpt, round):
        pass


class Forgetful(Counting):
    name = "forgetful"
    task_class = ForgetfulTask


def test_a_second_checkpoint_of_a_completed_round_is_a_protocol_error():
    """A recovery to the round would restore one of the two checkpoints: the simulator
    refuses the second one where it is taken (it used to replace the first silently)."""
    last = (
        simulate(SimConfig(protocol=Forgetful, workload="q3", seed=0, failures=[("join[0]", 900)])).trace().events[-1]
    )
    assert last.type == "protocol_error" and last.attrs["handler"] == "checkpoint", last
    assert "round 1 already has this task's checkpoint 1 and is complete" in last.reason, last.reason


class NextInLineTask(CountingTask):
    """Takes a channel's white records as recorded once its last white record was
    processed: right on FIFO channels, wrong where records overtake each other."""

    def done(self, r, ch) -> bool:
        c = self.count(r, ch)
        if c is None or any(m.recovered for m in self.ctx.queued(ch)):
            return False
        return c <= self.base[ch.id] or c in self.seen[ch.id]


class NextInLine(Counting):
    name = "counting-next-in-line"
    task_class = NextInLineTask
    mutant_of = Counting
    bug = "a channel's recording ends with its last white record, as if channels were FIFO"
    expect = ("dropped",)
    prop = "channel-state"
