"""Failures and recovery of the coordinated simulator.

``fail`` loses the task's volatile state and buffers; after ``detect_delay`` the
coordinator aborts the running rounds and after ``restart_delay`` every task
restores its checkpoint of the last completed round (``restore``, one
``recovery`` id). Then each task replays the input channel state recorded with
its checkpoint (``from: "channel_state"``, queued before anything else), each
sender replays recorded output parts ahead of new output, sources re-read from
their offsets, sinks commit what the restored checkpoint sealed. Messages of the
previous epoch still in flight are discarded on arrival (``discard``, reason
``stale epoch``): that is the deduplication of this protocol family.
"""

from __future__ import annotations

from snapcheck.reference.sim.base import SimulatorBase
from snapcheck.reference.sim.messages import DATA, Msg, Stored


class Recovery(SimulatorBase):
    """Mixin of ``Simulator``: crashes, global rollback and replay."""

    def fail(self, v, reason: str = "injected crash") -> None:
        """A requested crash of ``v`` (``SimConfig.failures``; counted in ``crashes``), if it
        is alive."""
        if v.alive:
            self.crashes += 1
            self.crash(v, reason)

    def fail_by_id(self, tid: str) -> None:
        """A requested crash of the task named ``tid`` (``fail``), if the job has it now (a
        task of a later generation joins at its rescale; one a rescale replaced is gone)."""
        v = self.by_id.get(tid)
        if v is not None:
            self.fail(v)

    def crash(self, v, reason: str, attrs: dict | None = None) -> None:
        """``v``, alive, crashes (``attrs``: of its ``fail`` event); the recovery follows."""
        now = self.now
        if self.recovering or self.outstanding:
            self.situation("crash-in-recovery", v)
        self.log.fail(v.pid, now, reason, attrs)
        self.stop(v)
        if self.recovering:
            self.recoveries[-1]["tasks"].append(v.id)
        else:
            self.recoveries.append({"tasks": [v.id], "failed": now})
            self.recovering = True
            self.at(now + self.cfg.detect_delay, self.detect)

    def stop(self, v) -> None:
        """``v`` stops (crashed or cancelled): its volatile state and buffers are lost."""
        v.alive = False
        v.incarnation += 1
        v.wake = False
        v.waiting = False
        for c in v.reads:
            c.inq.clear()
        for c in v.outputs:
            c.outbuf.clear()

    def detect(self) -> None:
        self.recoveries[-1]["detected"] = self.now
        self.situation("recovery")
        for r in list(self.rounds):
            self.abort(r, "failure")
        self.at(self.now + self.cfg.restart_delay, self.restore_all)

    def restore_all(self) -> None:
        """Global rollback to the last completed round, then replay (module docstring)."""
        now = self.now
        self.recovering = False
        self.n_recoveries += 1
        k = self.n_recoveries
        line = self.last_completed
        self.epoch += 1
        self.reset_channels(self.chans, self.epoch)
        for ext in self.externals:
            ext.channel().inq.clear()
        # checkpoint 0: the initial state, also of a task started after the round
        stored = [self.restore_task(v, v.round_ckpt.get(line, 0) if line else 0, k, line or None) for v in self.tasks]
        self.outstanding = 0
        self.replay_channel_state(self.tasks, stored)
        for ext in self.externals:  # sources re-read from their offsets
            ch = ext.channel()
            src = ch.dst
            for m in ext.sent[src.op.position(ch.port) :]:
                nm = self._replay(ext, m, "source", ch)
                nm.arr = now
                ch.inq.append(nm)
        rec = self.recoveries[-1]
        rec["restored"] = now
        rec["line"] = line
        if self.outstanding:
            self.situation("replay")
        else:
            rec["caught_up"] = now
        for v in self.tasks:  # recoverAndCommit
            if v.is_sink:
                self._publish(v, v.op.commit(line, self.committed[v.pid]))
        for v in self.tasks:
            self.step(v)

    def reset_channels(self, chans, epoch: int) -> None:
        """Empty ``chans`` (buffers, credits, blocking) and move them to ``epoch``: what is
        still in flight on them arrives stale and is discarded."""
        now = self.now
        for c in chans:
            if c.blocked:
                self.m_blocked += now - c.blocked_since
            c.inq.clear()
            c.outbuf.clear()
            c.occupancy = 0
            c.blocked = False
            c.last_arrival = now
            c.epoch = epoch

    def restore_task(self, v, ckpt: int, recovery: int, round) -> Stored:
        """Restore task ``v`` to its checkpoint ``ckpt`` (0: the initial state) as part of
        recovery ``recovery`` of ``round`` (None: the initial state, which the ``restore``
        event records without a round); a fresh protocol handler starts, and its
        ``on_restore`` gets round 0 for the initial state. Returns the stored checkpoint
        (its recorded channel state is replayed by the caller)."""
        now = self.now
        st = self.store[(v.pid, ckpt)] if ckpt else v.initial
        v.op.restore(st.state)
        self.restored(v, ckpt, recovery, round)
        for c, s in st.counts.sent.items():
            c.seq = s
        v.restores += 1
        v.alive = True
        v.incarnation += 1
        v.busy_until = now
        v.wake = False
        v.waiting = False
        v.first_barrier = {}
        v.proto = self.protocol.make(v)
        v.proto.on_restore(ckpt, round or 0)
        return st

    def restored(self, v, ckpt: int, recovery: int, round) -> None:
        """``v``'s operator state is restored from ``ckpt``: record the ``restore`` event (a
        protocol family may complete the restored state and the event here)."""
        self.log.restore(v.pid, self.now, ckpt, recovery, round)

    def replay_channel_state(self, tasks, stored: list[Stored]) -> None:
        """Replay the channel state recorded with the restored checkpoints ``stored`` of
        ``tasks``: input parts by the receiver (queued first), then output parts by the
        sender (ahead of new output)."""
        now = self.now
        for v, st in zip(tasks, stored):
            for ch, msgs in st.inputs.items():
                for m in msgs:
                    nm = self._replay(v, m, "channel_state")
                    nm.arr = now
                    ch.inq.append(nm)
                    ch.occupancy += 1
        for v, st in zip(tasks, stored):
            for ch, msgs in st.outputs.items():
                for m in msgs:
                    ch.outbuf.append(self._replay(v, m, "channel_state"))
                self.pump(ch)

    def _replay(self, node, m: Msg, source: str, ch=None) -> Msg:
        """A new incarnation of ``m`` on its channel, or on ``ch`` (the channel a restore
        at another parallelism mapped ``m``'s channel onto)."""
        k = self.replays.get(m.mid, 0) + 1
        self.replays[m.mid] = k
        mid = f"{m.mid}/r{k}"
        ch = ch or m.ch
        nm = Msg(mid, ch, m.seq, DATA, m.value, m.key, m.size, m.born, ch.epoch)
        nm.pb = m.pb
        nm.recovered = True
        self.log.replay(node.pid, self.now, ch.id, mid, m.mid, source)
        self.m["replayed_" + source] += 1
        self.outstanding += 1
        return nm
