"""The data path of the simulator: channels and the tasks that read them.

* **Channels** are credit-based bounded buffers (Flink's network stack): a sent
  record waits in the sender's output buffer until the receiver's input buffer
  has room (``buffer`` records in flight or queued); a task whose output buffer
  holds ``out_buffer`` records stops processing (backpressure). Delivery takes
  ``latency + U[0, jitter)`` ticks; FIFO channels never reorder (a later message
  arrives no earlier than an earlier one), non-FIFO channels may. Barriers need
  no credit but keep their FIFO place unless sent with priority. Back-edges are
  unbounded, so a cycle cannot deadlock on credits.
* **Tasks** are single-threaded. A task takes the next record from its unblocked
  input channels in arrival order (ties: channel order), *processes* it (``recv``:
  the operator state changes and the outputs are sent, all at that instant) and is
  then busy for its processing cost. Handling a barrier costs ``barrier_cost``.
* **Sources** read a replayable input partition: an ``external`` process (an
  input log such as a Kafka partition: never fails, every record durable, its
  channel ``logged``) sends each record at its availability time; the source's
  state is its offset.
* A message whose epoch is not its channel's (sent before a recovery discarded
  what was in flight) is dropped on arrival (``discard``, reason ``stale epoch``)
  when the protocol deduplicates.
"""

from __future__ import annotations

from heapq import heappush

from snapcheck.reference.sim.base import ProtocolBroke, SimulatorBase
from snapcheck.reference.sim.messages import BARRIER, CANCEL, DATA, FORWARD, HASH, Chan, External, Msg
from snapcheck.reference.topology import partition


class Network(SimulatorBase):
    """Mixin of ``Simulator``: moving records through channels and tasks."""

    partition = staticmethod(partition)  # the receiving subtask of a keyed record

    def ext_send(self, ext: External, i: int) -> None:
        records = ext.records
        t, value, size = records[i]
        ch = ext.chan
        assert ch is not None  # set when the dataflow is built
        seq = i + 1
        mid = f"{ch.id}:{seq}"
        m = Msg(mid, ch, seq, DATA, value, None, size, t, ch.epoch)
        self.log_send(ext.pid, t, ch.id, mid, seq, size, None, value if self.values else None)
        ext.sent.append(m)
        v = ch.dst
        if v.alive:
            m.arr = t
            ch.inq.append(m)
            if not v.wake:
                self.step(v)
        if seq < len(records):
            self.at(records[seq][0], self.ext_send, ext, seq)

    def send_data(self, v, ch: Chan, value, key, born: int, size: int) -> None:
        m = self.emit_record(v, ch, value, key, born, size)
        if ch.outbuf or ch.occupancy >= ch.capacity:
            ch.outbuf.append(m)
        else:
            self.transmit(m)

    def emit_record(self, v, ch: Chan, value, key, born: int, size: int) -> Msg:
        """A new data record of ``v`` on ``ch``, recorded as sent (``send``)."""
        seq, mid = self.next_mid(v, ch)
        m = Msg(mid, ch, seq, DATA, value, key, size, born, ch.epoch)
        self.log_send(v.pid, self.now, ch.id, mid, seq, size, key, value if self.values else None)
        mm = self.m
        mm["data_messages"] += 1
        mm["data_bytes"] += size
        return m

    @staticmethod
    def next_mid(node, ch: Chan) -> tuple[int, str]:
        """The next sequence number of ``ch`` and the message id of that message: ``ch:seq``,
        with ``@k`` after the sender's ``k``-th restore (the recorder's convention)."""
        ch.seq = seq = ch.seq + 1
        return seq, f"{ch.id}:{seq}" if not node.restores else f"{ch.id}:{seq}@{node.restores}"

    def transmit(self, m: Msg) -> None:
        ch = m.ch
        if m.kind == DATA:
            ch.occupancy += 1
        t = self.now + self.latency + int(self.net_random() * self.jitter)
        if ch.fifo:
            last = ch.last_arrival
            if t < last:
                t = last
            ch.last_arrival = t
        self.counter = n = self.counter + 1  # self.at(t, self.arrive, m), inlined: the hottest path
        self.pending += 1
        heappush(self.heap, (t, n, True, self.arrive, (m,)))

    def pump(self, ch: Chan) -> None:
        """Move output-buffered messages of ``ch`` into the network as credit allows."""
        q = ch.outbuf
        while q:
            m = q[0]
            if m.kind == DATA and ch.occupancy >= ch.capacity:
                break
            q.popleft()
            self.transmit(m)
        u = ch.src
        if u.waiting and not self.out_full(u):
            u.waiting = False
            self.at(self.now, self.wakeup, u, u.incarnation)

    def out_full(self, v) -> bool:
        cap = self.out_cap
        for c in v.outputs:
            if len(c.outbuf) >= cap:
                return True
        return False

    def arrive(self, m: Msg) -> None:
        ch = m.ch
        v = ch.dst
        if not v.alive:
            return
        now = self.now
        if m.epoch != ch.epoch and (self.dedup or m.kind != DATA):
            self.log.discard(v.pid, now, ch.id, m.mid, "stale epoch")
            self.m["discarded"] += 1
            self.situation("stale", v)
            return
        m.arr = now
        if m.kind == DATA:
            if self.observe_arrivals:
                self.log_arrive(v.pid, now, ch.id, m.mid)
                ch.inq.append(m)
                v.proto.on_arrival(ch, m)
            else:
                ch.inq.append(m)
        elif m.kind == BARRIER and self._overtakes(v, ch, m):
            self.barrier_received(v, ch, m)
            v.proto.on_barrier(ch, m, True)
        else:
            ch.inq.append(m)
        if not v.wake:
            self.step(v)

    @staticmethod
    def _overtakes(v, ch: Chan, m: Msg) -> bool:
        """Does barrier ``m``, arrived on ``ch``, overtake the records queued before it? Its
        protocol answers (``barrier_priority``), with a bool: any other answer is its error,
        not a truth value to guess from."""
        answer = v.proto.barrier_priority(ch, m)
        if type(answer) is not bool:
            raise ProtocolBroke(
                v,
                "barrier_priority",
                f"returns a bool (True: the barrier overtakes), not {type(answer).__name__} {answer!r}",
            )
        return answer

    def wakeup(self, v, inc: int) -> None:
        if inc != v.incarnation:
            return
        v.wake = False
        self.step(v)

    def next_input(self, v):
        """The unblocked input channel of an alive, idle task whose head message arrived
        first (ties: read order), or None. A busy task is woken when its work is done."""
        if not v.alive:
            return None
        bu = v.busy_until
        if bu > self.now:
            if not v.wake:
                v.wake = True
                self.at(bu, self.wakeup, v, v.incarnation)
            return None
        best = None
        best_arr = 0
        for ch in v.reads:
            q = ch.inq
            if q and not ch.blocked:
                arr = q[0].arr
                if best is None or arr < best_arr:
                    best = ch
                    best_arr = arr
        return best

    def step(self, v) -> None:
        """Let an idle task handle its next input (one record or barrier)."""
        best = self.next_input(v)
        if best is None:
            return
        now = self.now
        q = best.inq
        m = q[0]
        if m.kind == BARRIER:
            q.popleft()
            self.barrier_received(v, best, m)
            v.proto.on_barrier(best, m, False)
            cost = self.cfg.barrier_cost
        elif m.kind == CANCEL:
            q.popleft()
            self.log_recv(v.pid, now, best.id, m.mid)
            self.situation("cancel", v)
            v.proto.on_cancel(best, m)
            cost = self.cfg.barrier_cost
        else:
            cap = self.out_cap
            for c in v.outputs:
                if len(c.outbuf) >= cap:
                    v.waiting = True  # backpressure: resumed by pump()
                    return
            q.popleft()
            if m.epoch == best.epoch:
                best.occupancy -= 1
                if best.outbuf:
                    self.pump(best)
            self.consume(v, best, m, now)
            cost = v.cost
        bu = v.busy_until  # (the handlers may have added snapshot time)
        v.busy_until = bu = (bu if bu > now else now) + cost
        if self.pauses:
            self.pause(v)
            bu = v.busy_until
        # Wake up when done only if input is waiting; a later arrival wakes the task itself.
        for ch in v.reads:
            if ch.inq and not ch.blocked:
                v.wake = True
                self.at(bu, self.wakeup, v, v.incarnation)
                break

    def consume(self, v, ch: Chan, m: Msg, now: int) -> None:
        """``v`` processes the data record ``m`` of ``ch`` (``recv``): the operator state
        changes and its outputs are sent. ``on_process`` runs first, while the record is
        *about to be* processed: what it does (a checkpoint, a barrier sent) precedes the
        ``recv`` in the trace, as it precedes the record's effect on the state."""
        if self.observe_processing:
            v.proto.on_process(ch, m)
        self.log_recv(v.pid, now, ch.id, m.mid)
        self.progress += 1
        outs = v.op.process(ch.port, m.value)
        if outs:
            self.route(v, outs, m.born, m.size)
        if v.is_sink:
            self.latencies.append(now - m.born)
        if m.recovered:
            self.outstanding -= 1
            if not self.outstanding and self.recoveries:
                self.recoveries[-1].setdefault("caught_up", now)

    def route(self, v, outs: list, born: int, in_size: int) -> None:
        send = self.send_data
        part = self.partition
        for select, kind, keyf, chans, size in v.routes:
            size = size or in_size
            for val in outs:
                if select is not None:
                    val = select(val)
                    if val is None:
                        continue
                if kind == FORWARD:
                    send(v, chans[0], val, None, born, size)
                elif kind == HASH:
                    k = keyf(val)
                    send(v, chans[part(k, len(chans))], val, k, born, size)
                else:
                    for c in chans:
                        send(v, c, val, None, born, size)
