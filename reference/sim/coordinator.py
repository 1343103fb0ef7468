"""The coordinator of the simulator (role ``coordinator``, outside every global
checkpoint) and its control channels.

It triggers rounds over control channels (at most ``max_concurrent`` in
progress, one every ``interval`` ticks while the dataflow makes progress),
collects acknowledgements and declines, completes or aborts rounds (a decline,
a timeout, a failure), notifies the sinks of completed rounds and, for
protocols with ``abort_notices``, every task of a round aborted by a decline or
a timeout. **Sinks**
commit their output in two phases: staged until the round whose checkpoint
sealed it completes, then published (``output`` events).
"""

from __future__ import annotations

from snapcheck.reference.sim.base import SimulatorBase
from snapcheck.reference.sim.messages import BARRIER, BARRIER_SIZE, CONTROL, CONTROL_SIZE, Chan, Msg

MAX_FINAL_ATTEMPTS = 10  # give up after this many aborted rounds on a quiescent dataflow


class Coordinator(SimulatorBase):
    """Mixin of ``Simulator``: control messages, rounds and output commit."""

    def send_control(self, node, ch: Chan, value, size: int = CONTROL_SIZE, keep_alive: bool = True) -> None:
        """Send ``value`` on control channel ``ch`` (``keep_alive=False``: its delivery does
        not keep the run going, like the coordinator's clock). A completion notification
        (``["commit", n]``) is recorded with ``attrs {"notify": n}``, an operator event
        with ``attrs {"event": id}`` (the vocabulary of the output-commit checks)."""
        seq, mid = self.next_mid(node, ch)
        m = Msg(mid, ch, seq, CONTROL, value, None, size, self.now, self.epoch)
        attrs = self.control_attrs(value)
        if attrs is not None:
            self.log.send_attrs(node.pid, self.now, ch.id, mid, seq, size, None, value, attrs)
        else:
            self.log_send(node.pid, self.now, ch.id, mid, seq, size, None, value)
        self._deliver_control(m, keep_alive)

    def control_attrs(self, value) -> dict | None:
        """The ``attrs`` of a control message's ``send`` event (None: a plain control
        message): ``{"notify": n}`` for a completion notification where sink transactions
        are rounds, ``{"event": id}`` for an operator event."""
        what = value[0]
        if what == "commit" and self.txn_outputs:
            return {"notify": value[1]}
        return {"event": value[1]} if what == "event" else None

    def _deliver_control(self, m: Msg, keep_alive: bool = True) -> None:
        ch = m.ch
        mm = self.m
        mm["control_messages"] += 1
        mm["protocol_bytes"] += m.size
        t = self.now + self.cfg.control_latency
        if self.cfg.control_jitter:
            t += int(self.control_rng.random() * self.cfg.control_jitter)
        if t < ch.last_arrival:  # control channels are FIFO
            t = ch.last_arrival
        ch.last_arrival = t
        (self.at if keep_alive else self.clock)(t, ch.handler, m)

    def _stale_control(self, v, m: Msg) -> bool:
        if not v.alive:
            return True
        if m.epoch != self.epoch:
            self.log.discard(v.pid, self.now, m.ch.id, m.mid, "stale epoch")
            self.m["discarded"] += 1
            return True
        return False

    def on_trigger(self, m: Msg) -> None:
        v = m.ch.dst
        if self._stale_control(v, m):
            return
        self.barrier_received(v, m.ch, m)
        v.proto.on_trigger(m.round, m)
        if not v.wake:
            self.step(v)

    def on_commit(self, m: Msg) -> None:
        v = m.ch.dst
        if self._stale_control(v, m):
            return
        self.log_recv(v.pid, self.now, m.ch.id, m.mid)
        self._publish(v, v.op.commit(m.value[1], self.committed[v.pid]))

    def _publish(self, v, batches: list, of: str | None = None) -> None:
        """Publish committed transactions ``[(txn, records)]``: one ``output`` per transaction
        with ``attrs {"txn", "phase": "commit"}`` (its value the records, or their number
        without recorded values) where transactions are rounds (``txn_outputs``), else one
        plain ``output`` per record. ``of``: the retired sink whose transactions ``v``
        inherited (a restore at another parallelism), recorded as ``attrs.of``."""
        out = self.log.output
        for txn, records in batches:
            if self.txn_outputs:
                attrs = {"txn": txn, "phase": "commit"} if of is None else {"txn": txn, "phase": "commit", "of": of}
                out(v.pid, self.now, list(records) if self.values else len(records), attrs)
            else:
                for val in records:
                    out(v.pid, self.now, val)
            self.outputs.extend(records)

    def tick(self) -> None:
        if self.finished:
            return
        if not self.recovering:
            if self.quiescent():
                if self.rounds:
                    self.stuck = True  # nothing can move and a round never completes
                    self.finished = True
                    return
                if self.last_completed_progress == self.progress:
                    self.finished = True  # everything processed, checkpointed and committed
                    return
                if self.final_attempts >= MAX_FINAL_ATTEMPTS:
                    self.stuck = True  # every final round aborted (declines, timeouts)
                    self.finished = True
                    return
                self.final_attempts += 1
                self.trigger()
            elif len(self.rounds) < self.cfg.max_concurrent and self.progress != self.last_trigger_progress:
                self.trigger()  # (an idle dataflow is not checkpointed again)
        self.clock(self.now + self.cfg.interval, self.tick)

    def trigger(self) -> None:
        if self.rounds:
            self.situation("rounds-overlap")
        r = self.next_round
        self.next_round += 1
        now = self.now
        self.rounds[r] = [now, {}, self.progress]
        self.last_trigger_progress = self.progress
        self.round_started[r] = now
        coord = self.coord
        self.log.round_event("round_start", coord.pid, now, r)
        for ch in self.triggers:
            mid = f"{ch.id}:b{r}"
            b = Msg(mid, ch, None, BARRIER, None, None, BARRIER_SIZE, now, self.epoch)
            b.round = r
            b.started = now
            self.log.marker(coord.pid, now, ch.id, mid, "barrier", r, BARRIER_SIZE)
            self._deliver_control(b)
        if self.cfg.checkpoint_timeout:
            self.clock(now + self.cfg.checkpoint_timeout, self.round_timeout, r)

    def on_ack(self, m: Msg) -> None:
        coord = self.coord
        self.log_recv(coord.pid, self.now, m.ch.id, m.mid)
        what, r = m.value
        st = self.rounds.get(r)
        if st is None:
            return  # aborted or subsumed round
        if what == "decline":
            self.abort(r, f"declined by {m.ch.src.id}", notify=True)
            return
        st[1][m.ch.src.pid] = True
        if len(st[1]) == len(self.tasks):
            self.complete_round(r)
        else:
            self.situation("acknowledged", m.ch.src)

    def complete_round(self, r: int) -> None:
        now = self.now
        start, _, progress = self.rounds.pop(r)
        self.log.round_event("round_complete", self.coord.pid, now, r)
        self.round_durations.append(now - start)
        self.last_completed = r
        self.completed_rounds.add(r)
        self.last_completed_progress = progress
        self.final_attempts = 0
        for old in [o for o in self.rounds if o < r]:
            self.abort(old, f"subsumed by round {r}")
        self.situation("completed-unnotified")
        self.notify_completion(r)

    def notify_completion(self, r: int) -> None:
        """Tell the sinks that round ``r`` completed (they commit what it sealed)."""
        for ch in self.commits:
            self.send_control(self.coord, ch, ["commit", r])

    def abort(self, r: int, reason: str, notify: bool = False) -> None:
        """Abort round ``r``; with ``notify`` (a decline or a timeout) tell every task, over
        its notice channel, so that a task still aligning ``r`` gives it up (Flink's
        notifyCheckpointAborted). Rounds subsumed by a completed one need no notice (every
        task is past them), nor rounds aborted by a failure (every task restarts)."""
        del self.rounds[r]
        self.log.round_event("round_abort", self.coord.pid, self.now, r, reason)
        if notify:
            for ch in self.notices:
                self.send_control(self.coord, ch, ["abort", r])

    def on_notice(self, m: Msg) -> None:
        v = m.ch.dst
        if self._stale_control(v, m):
            return
        self.log_recv(v.pid, self.now, m.ch.id, m.mid)
        v.proto.on_abort(m.value[1])
        if not v.wake:
            self.step(v)

    def round_timeout(self, r: int) -> None:
        if r in self.rounds:
            self.abort(r, "timeout", notify=True)
