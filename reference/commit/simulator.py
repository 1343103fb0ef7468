"""The simulator with explicit control channels, two-phase-commit sinks and a
recovery policy: the ground of docs/bug-zoo.md, "Output commit, control channels and lineage"
(property classes P4–P6).

``CommitSimulator`` extends ``reference.sim.engine.Simulator`` (it is selected by the
protocol's ``simulator`` attribute); the data path and the aligned barrier
protocol are unchanged. What it adds, and how it shows in the trace:

* **Lossy, reordering control channels.** Completion notifications
  (coordinator → sink, ``attrs {"notify": n}``) and operator events
  (coordinator → source, ``attrs {"event": id}``, FLINK-21996's split
  assignments) travel on channels of kind ``control`` with ``fifo: false`` and
  ``attrs {"loss": p, "jitter": j}``: each message is lost with probability ``p``
  (a ``send`` without ``recv``) or delivered after ``control_latency + U[0, j)``.
* **Two-phase-commit sinks** (``reference.operators.Sink``, as in every coordinated run;
  the notification channels are what this simulator adds): at its checkpoint of round ``n`` a sink
  pre-commits the records staged since its last checkpoint (an ``output`` event
  ``attrs {"txn": n, "phase": "pre-commit"}``, value = number of records, right
  after the checkpoint event); a notification of round ``m`` commits every staged
  transaction ``≤ m`` (subsumption), one ``output`` per transaction
  ``attrs {"txn": n, "phase": "commit"}`` whose value is the records; the sink
  acknowledges ``["committed", m]``. On recovery the restored sink commits what
  its restored checkpoint sealed (``recoverAndCommit``).
* **Reliable final commit and end of stream** (FLIP-147, FLINK-21080, FLINK-38614):
  once the input is exhausted and the last round completed, the coordinator
  re-sends the latest notification until every sink acknowledged it, then sends
  end-of-stream on a reliable channel; the sink writes ``output``
  ``attrs {"phase": "end"}`` and closes (later notifications are discarded,
  reason ``sink finished``).
* **Operator events with acknowledgements** (the fix of FLINK-21996 and
  FLINK-23233; none, and no event channels, when the protocol's ``events``
  parameter is 0): a source acknowledges each event (``["event-ack", id]``) on its
  FIFO control channel; when a task's checkpoint acknowledgement of round ``n``
  arrives while an event sent to it before round ``n`` started is still
  unacknowledged, round ``n`` is aborted; unacknowledged events are re-sent every
  tick, and events acknowledged after the restored round's checkpoint are
  re-sent after a recovery (the coordinator's restored state has them unassigned).
* **Recovery policy**: restore the last *completed* round (mutants restore the
  latest round every task checkpointed although it was aborted — Wallaroo #3032 —
  or the empty initial state — FLINK-34518).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from snapcheck.reference.sim.engine import Simulator
from snapcheck.reference.sim.messages import Chan, Msg, Stored
from snapcheck.traces.model import Channel

if TYPE_CHECKING:
    from snapcheck.reference.protocol import Protocol

    class CommitProtocol(Protocol):
        """The switches a protocol run by ``CommitSimulator`` declares (``commit.protocol``,
        ``regional.protocol``, which import this module)."""

        sink_class: type
        commit_on_checkpoint: bool
        final_resend: bool
        eos_early: bool
        await_event_acks: bool
        restore_policy: str


class CommitSimulator(Simulator):
    protocol: CommitProtocol

    def __init__(self, cfg, workload, protocol, log_class):
        super().__init__(cfg, workload, protocol, log_class)
        self.m.update(control_lost=0, notifications_resent=0, events_sent=0, events_resent=0, rounds_aborted_events=0)
        horizon = max((e.records[-1][0] for e in self.externals if e.records), default=0)
        n = int(protocol.params.get("events", 0))
        for ch in self.event_chans.values():
            for k in range(1, n + 1):
                self.at(horizon * k // (n + 1), self.send_event, ch, f"{ch.dst.id}#{k}")

    # -- construction ----------------------------------------------------------------
    def _build(self, log_class) -> None:
        super()._build(log_class)
        p = self.protocol
        params = p.params
        self.control_rng = random.Random(f"{self.cfg.seed}/control")  # lossy channels and control jitter
        self.lossy: dict[Chan, tuple[float, int]] = {}
        chans = self.header.channels
        where = {c.id: i for i, c in enumerate(chans)}
        coord = self.coord
        notify = (float(params.get("notify_loss", 0.0)), int(params.get("notify_jitter", 0)))
        for ch in self.commits:
            ch.fifo = False
            self.lossy[ch] = notify
            chans[where[ch.id]] = Channel(
                ch.id, coord.id, ch.dst.id, fifo=False, kind="control", attrs={"loss": notify[0], "jitter": notify[1]}
            )
        self.eos: list[Chan] = []
        for t in self.tasks:
            if t.is_sink:
                c = Chan(f"coordinator->{t.id}/eos", coord, t)
                c.handler = self.on_eos
                self.eos.append(c)
                chans.append(Channel(c.id, coord.id, t.id, kind="control"))
                t.op = p.sink_class()
                t.initial = Stored(0, "initial", None, t.op.snapshot(), None, t.initial.counts)
        event = (float(params.get("event_loss", 0.0)), int(params.get("event_jitter", 0)))
        self.event_chans: dict[int, Chan] = {}
        for t in self.tasks if int(params.get("events", 0)) else ():  # (no events: no event channels)
            if t.is_source:
                c = Chan(f"coordinator->{t.id}/events", coord, t, fifo=False)
                c.handler = self.on_event
                self.event_chans[t.pid] = c
                self.lossy[c] = event
                chans.append(
                    Channel(
                        c.id,
                        coord.id,
                        t.id,
                        fifo=False,
                        kind="control",
                        attrs={"loss": event[0], "jitter": event[1], "operator_events": True},
                    )
                )
        self.sink_acked = {t.pid: 0 for t in self.tasks if t.is_sink}
        self.closed: set[int] = set()
        self.end_sent = False
        self.waiting_sinks: list[str] = []
        # operator events: id -> [channel, acked at (ack arrival counter) or None, last sent]
        self.events: dict[str, list] = {}
        self.arrivals = 0  # coordinator's ack arrival counter
        self.ckpt_ack_at: dict[tuple[int, int], int] = {}  # (task pid, round) -> ack arrival counter
        self.round_events: dict[int, dict[int, list[str]]] = {}

    # -- control channels ---------------------------------------------------------------
    def _deliver_control(self, m: Msg, keep_alive: bool = True) -> None:
        lossy = self.lossy.get(m.ch)
        if lossy is None:
            super()._deliver_control(m, keep_alive)
            return
        loss, jitter = lossy
        self.m["control_messages"] += 1
        self.m["protocol_bytes"] += m.size
        rng = self.control_rng
        if rng.random() < loss:
            self.m["control_lost"] += 1
            return
        self.at(self.now + self.cfg.control_latency + int(rng.random() * jitter), m.ch.handler, m)

    # -- operator events (FLINK-21996) ---------------------------------------------------------
    def send_event(self, ch: Chan, ident: str) -> None:
        st = self.events.get(ident)
        if st is None:
            self.events[ident] = [ch, None, self.now]
            self.m["events_sent"] += 1
        else:
            st[2] = self.now
            self.m["events_resent"] += 1
        self.send_control(self.coord, ch, ["event", ident])

    def on_event(self, m: Msg) -> None:
        v = m.ch.dst
        if self._stale_control(v, m):
            return
        self.log_recv(v.pid, self.now, m.ch.id, m.mid)
        self.send_control(v, v.ack, ["event-ack", m.value[1]])

    def unacked(self, pid: int | None = None) -> list[str]:
        return [k for k, (ch, acked, _) in self.events.items() if acked is None and (pid is None or ch.dst.pid == pid)]

    def trigger(self) -> None:
        r = self.next_round
        super().trigger()
        per: dict[int, list[str]] = {}
        for k in self.unacked():
            per.setdefault(self.events[k][0].dst.pid, []).append(k)
        self.round_events[r] = per

    def on_ack(self, m: Msg) -> None:
        what = m.value[0]
        self.arrivals += 1
        if what in ("event-ack", "committed"):
            self.log_recv(self.coord.pid, self.now, m.ch.id, m.mid)
            v = m.ch.src
            if what == "committed":
                self.sink_acked[v.pid] = max(self.sink_acked[v.pid], m.value[1])
            elif self.events[m.value[1]][1] is None and m.epoch == self.epoch:
                self.events[m.value[1]][1] = self.arrivals  # (an older epoch's ack was rolled back)
            return
        r = m.value[1]
        v = m.ch.src
        if what == "ack":
            self.ckpt_ack_at[(v.pid, r)] = self.arrivals
            if self.protocol.await_event_acks and r in self.rounds:
                missing = [k for k in self.round_events.get(r, {}).get(v.pid, ()) if self.events[k][1] is None]
                if missing:
                    self.log_recv(self.coord.pid, self.now, m.ch.id, m.mid)
                    self.m["rounds_aborted_events"] += 1
                    self.abort(r, f"operator event {missing[0]} to {v.id} unacknowledged")
                    return
        super().on_ack(m)

    # -- two-phase-commit sinks -----------------------------------------------------------
    def take_checkpoint(self, v, round: int):
        n = super().take_checkpoint(v, round)
        if n is not None and v.is_sink and self.protocol.commit_on_checkpoint:
            self._publish(v, v.op.commit(round, self.committed[v.pid]))
        return n

    def on_commit(self, m: Msg) -> None:
        v = m.ch.dst
        if self._stale_control(v, m):
            return
        if v.pid in self.closed:
            self.log.discard(v.pid, self.now, m.ch.id, m.mid, "sink finished")
            return
        self.log_recv(v.pid, self.now, m.ch.id, m.mid)
        r = m.value[1]
        self._publish(v, v.op.commit(r, self.committed[v.pid]))
        self.send_control(v, v.ack, ["committed", r])

    def on_eos(self, m: Msg) -> None:
        v = m.ch.dst
        if self._stale_control(v, m):
            return
        self.log_recv(v.pid, self.now, m.ch.id, m.mid)
        self.closed.add(v.pid)
        self.log.output(v.pid, self.now, "end-of-stream", {"phase": "end"})

    def send_end(self) -> None:
        self.end_sent = True
        for ch in self.eos:
            self.send_control(self.coord, ch, ["end"])

    def complete_round(self, r: int) -> None:
        super().complete_round(r)
        if self.protocol.eos_early and not self.end_sent and self._input_done():
            self.send_end()  # FLINK-38614: end-of-stream overtakes the final commit

    def _input_done(self) -> bool:
        return self.last_completed_progress == self.progress and all(
            len(e.sent) == len(e.records) for e in self.externals
        )

    # -- the coordinator's clock and the end of the run --------------------------------------
    def tick(self) -> None:
        if not self.finished and not self.recovering:
            if self.protocol.await_event_acks:
                for k in self.unacked():
                    if self.now - self.events[k][2] >= self.cfg.interval:
                        self.send_event(self.events[k][0], k)
            idle = self.quiescent() and not self.rounds and self.last_completed_progress == self.progress
            if idle and self._closing():
                self.clock(self.now + self.cfg.interval, self.tick)
                return
        super().tick()

    def _closing(self) -> bool:
        """One step of the orderly end of the run; False when the run may finish."""
        p = self.protocol
        if p.await_event_acks and self.unacked():
            return True
        if p.eos_early and not self.end_sent:
            self.send_end()
            return True
        late = [ch for ch in self.commits if self.sink_acked[ch.dst.pid] < self.last_completed]
        if late and not self.end_sent:
            if not p.final_resend:
                self.waiting_sinks = [ch.dst.id for ch in late]  # FLINK-21080: they wait forever
                return False
            for ch in late:
                self.m["notifications_resent"] += 1
                self.send_control(self.coord, ch, ["commit", self.last_completed])
            return True
        if not self.end_sent:
            self.send_end()
            return True
        return False

    # -- recovery ---------------------------------------------------------------------------
    def restore_all(self) -> None:
        policy = self.protocol.restore_policy
        if policy == "latest-taken":
            taken = [r for r in range(1, self.next_round) if all(r in v.round_ckpt for v in self.tasks)]
            self.last_completed = max(taken + [self.last_completed])
        elif policy == "empty":
            self.last_completed = 0
        line = self.last_completed
        super().restore_all()
        if self.protocol.await_event_acks:  # the coordinator's restored state: re-send
            for _k, st in self.events.items():
                ch, acked, _ = st
                covered = line and acked is not None and acked <= self.ckpt_ack_at.get((ch.dst.pid, line), 0)
                if not covered:
                    st[1] = None
                    st[2] = -self.cfg.interval
            for k in self.unacked():
                self.send_event(self.events[k][0], k)

    def metrics(self) -> dict:
        out = super().metrics()
        out["waiting_sinks"] = list(self.waiting_sinks)
        out["uncommitted_txns"] = sum(len(t.op.staged) for t in self.tasks if t.is_sink)
        return out
