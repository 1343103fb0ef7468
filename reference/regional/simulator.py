"""The simulator of regional checkpoints (FLIP-600, "Independent Checkpoint Based
On Pipeline Region") on embarrassingly parallel jobs.

``RegionalSimulator`` extends ``reference.commit.simulator.CommitSimulator``
(two-phase-commit sinks, notifications, reliable final commit and end of
stream); the data path and the barrier protocol (aligned or unaligned, the
protocol's task handler) are unchanged. What it adds:

* **The job and its regions** (``reference.regional.job``): parallel slices
  read *splits* from external split logs (process ``split[s]``, one logged
  channel to the owning reader, ``attrs {"split": s}``). Pipeline regions are
  the connected components of the data channels (``regions_by = "subtask"``:
  one region per subtask index, whatever the edges); the header gives each task
  its region (process ``attrs {"region": r}``).
* **The split enumerator** (``reference.regional.splits``): a reader asks for a
  split on its control channel (``["split-request"]``) when it has none left;
  the coordinator hands out its next owned split (``["assign", s]``, send
  ``attrs {"split": s}``) on the FIFO channel that carries the round triggers,
  and checkpoints its assignment at every trigger.
* **Declines** (``decline_prob``): a snapshot fails before it is taken (the
  engine's synchronous decline: no checkpoint, no barrier forwarded) or, with the
  same probability, its asynchronous part fails after it was taken (the
  checkpoint event and a sink's pre-commit exist, the barrier went on, the task
  declines).
* **Regional rounds.** A region is *healthy* in round ``n`` when all its tasks
  acknowledged it, *failed* when one declined, when the round timed out before
  all acknowledged, or when the region failed over while ``n`` was pending (an
  acknowledgement of an incarnation that has restarted since counts for
  nothing). When every region is decided: no failed region, a global
  completion; otherwise the round is aborted if the job is one region, if no
  region or more than ``max_failure_ratio`` of the regions failed, if a global checkpoint is
  due (after ``max_consecutive`` regional completions in a row, or once every
  source has finished: the forced round aborts and the count starts again,
  ``round_abort attrs {"forced_global": why}``), or if no checkpoint completed
  yet; else it completes *regionally*: every task of a failed region keeps its
  state of the latest completed checkpoint ``C`` (or, if it kept an older
  state in ``C``, that one: chains are resolved). ``round_complete attrs``:
  ``{"fallback": {task: round}, "assignment": {split: reader}}`` (and
  ``"timeout": true`` when the timeout failed the undecided regions); the
  fallback names the resolved round (reading ``region-restart``) or ``C``
  itself (reading ``region-continue``, as the PRs record ``refCheckpointId``).
* **Coordinator correction, then notification**: the enumerator's
  checkpointed assignment is corrected for the fallback readers, then healthy
  regions' sinks are notified (``["commit", n]``). Failed regions' tasks get
  nothing (``region-restart``) or ``["fallback", n, k]`` (``region-continue``:
  the PRs' ``notifyRegionalCheckpointFallback``, which commits nothing).
* **Region failover.** A crashed task's region stops after ``detect_delay`` and
  restores, after ``restart_delay``, from the latest completed checkpoint
  (each task the state that checkpoint names for it; ``restore attrs
  {"digest": d}`` hashes the state actually restored); its readers re-read
  their splits from the restored positions, the enumerator takes back what
  the checkpoint does not give them, its sinks commit what the restored state
  sealed. Reading ``region-restart`` (the FLIP's text) restarts every region
  that fell back in a regional completion the same way.
* **Rescaling** (``reference.regional.rescale``): ``--fail rescale@t`` stops the
  job and restores it with its list state redistributed.
* **Situations** (``reference.sim.exploration``) of its own: ``region-acknowledged``
  (every task of a region acknowledged a round still pending: the region counts
  as healthy in it; at the task whose acknowledgement completed the region) and
  ``regional-completion`` (a round completed with regions falling back).
* **Livelock guard**: a run still going after ``LIVELOCK_SPANS`` times its input
  span (plus an interval) stops, reported ``truncated`` (a split handed out again
  and again, a region restarted at every round).
* **Agreed state** (mutant jobs): readers with union state record it at every
  checkpoint (``attrs {"agreed": {key: value}}``) and restore the largest value
  of the union over the restored checkpoint.
"""

from __future__ import annotations

import random

from snapcheck.reference.commit.simulator import CommitSimulator
from snapcheck.reference.regional.job import JobShape, build_workload, draw_splits
from snapcheck.reference.regional.rescale import RESCALE, Rescale
from snapcheck.reference.regional.splits import SplitEnumerator
from snapcheck.reference.sim.exploration import parse_fault
from snapcheck.reference.sim.messages import CONTROL, DATA, Chan, External, Msg
from snapcheck.traces.model import Channel, Process

CONFIG_EVERY = 2  # agreed = "config-epoch": a new epoch before every second round
LIVELOCK_SPANS = 100  # a run still busy after 100 input spans is given up (600 random runs: at most 17)


class SplitLog(External):
    """An external split log: never fails, every record durable. It has a channel to its
    reader (to every reader when the job may be rescaled: ``chans``), the records sent on
    each (``first_sends``), and ``reading`` numbers the readings started by assignments, so that
    a superseded one stops."""

    def __init__(self, pid: int, split) -> None:
        super().__init__(pid, f"split[{split.index}]", list(split.records))
        self.split = split.index
        self.reading = 0
        self.reader = -1  # the task pid reading it (its owner)
        self.chans: dict[int, Chan] = {}
        self.first_sends: dict[int, dict[int, Msg]] = {}  # reader pid -> record index -> its first send

    def channel(self) -> Chan:
        """The channel to the split's current reader."""
        return self.chans[self.reader]


class _Round:
    """A pending round's regional state: per region, healthy (True) or failed (False)."""

    __slots__ = ("decided", "acked", "timed_out")

    def __init__(self) -> None:
        self.decided: dict[int, bool] = {}
        self.acked: set[int] = set()
        self.timed_out = False


class RegionalSimulator(Rescale, CommitSimulator):
    def __init__(self, cfg, workload, protocol, log_class):
        self.shape = JobShape.draw(cfg.seed)
        faults = [parse_fault(f) for f in cfg.failures]
        self.rescales = tuple(f[1] for f in faults if f[0] == RESCALE and len(f) == 2)
        self.may_rescale = any(f[0] == RESCALE for f in faults)  # at a time or at a situation
        self.rescale_base: int | None = None  # the checkpoint a rescale restored, until a global one
        self.rescaling = False  # a rescale is under way (the job is stopped)
        self.redistributed: dict[int, tuple] = {}
        workload = build_workload(self.shape, cfg.parallelism, protocol.cross_edge, protocol.agreed)
        super().__init__(cfg, workload, protocol, log_class)
        params = protocol.params
        self.max_consecutive = int(params["max_consecutive"])
        self.max_failure_ratio = float(params["max_failure_ratio"])
        self.keep_failed = params["reading"] == "region-continue"
        self.resolve_refs = params["refs"] == "resolved"
        self.consecutive = 0
        self.force_next: str | None = None
        self.refs: dict[int, dict[int, int]] = {0: {}}  # completed round -> {task pid: round of its state}
        self.rinfo: dict[int, _Round] = {}
        self.down: dict[int, dict] = {}  # region -> its recovery record while it restarts
        # region -> (recovery epoch, the checkpoint each of its tasks restored) of its last restore
        self.restored_from: dict[int, tuple[int, dict[int, int]]] = {}
        self.trigger_epoch: dict[int, int] = {}  # round -> the recovery epoch when it was triggered
        self.async_rng = random.Random(f"{cfg.seed}/async-decline")
        self.async_failed: set[tuple[int, int]] = set()
        self.m.update(regional_completions=0, fallback_restarts=0, forced_aborts=0, splits_given_back=0)
        span = max((log.records[-1][0] for log in self.logs.values() if log.records), default=0)
        self.horizon = min(cfg.max_time, LIVELOCK_SPANS * (span + cfg.interval))
        for reader in self.readers:
            self.at(0, self.request_split, reader)

    # -- construction: regions, split logs -------------------------------------------------
    def _build(self, log_class) -> None:
        super()._build(log_class)
        cfg, h = self.cfg, self.header
        inputs = {e.id for e in self.externals}  # the engine's per-source logs: splits replace them
        for t in self.tasks:
            t.reads = [c for c in t.reads if c.src.id not in inputs]
        self.externals = []
        self.region_of = self._regions()
        self.regions = sorted(set(self.region_of.values()))
        self.members = {r: [t for t in self.tasks if self.region_of[t.pid] == r] for r in self.regions}
        procs = [
            Process(p.id, p.role, p.operator, p.subtask, p.worker, {"region": self.region_of[t.pid]})
            for p, t in zip(h.processes, self.tasks)
        ]
        channels = [c for c in h.channels if c.src not in inputs]
        self.readers = [t for t in self.tasks if t.is_source]
        self.logs: dict[int, SplitLog] = {}
        for sp in draw_splits(
            cfg.seed, cfg.parallelism, self.shape.splits_per_reader, cfg.records or 6, cfg.gap or 150
        ):
            log = SplitLog(len(procs), sp)
            log.reader = self.readers[sp.owner].pid
            procs.append(Process(log.id, "external", "splits", attrs={"split": sp.index, "records": len(sp.records)}))
            for reader in self.readers if self.may_rescale else [self.readers[sp.owner]]:
                c = log.chans[reader.pid] = Chan(f"{log.id}->{reader.id}", log, reader, port=sp.index)
                log.first_sends[reader.pid] = {}
                reader.reads.append(c)
                channels.append(Channel(c.id, log.id, reader.id, logged=True, attrs={"split": sp.index}))
            self.logs[sp.index] = log
        self.coord.pid = len(procs)
        procs.append(Process(self.coord.id, "coordinator"))
        h.processes[:] = procs
        h.channels[:] = channels
        self.log = log_class(h)
        self.enum = SplitEnumerator(
            {s: self.readers[log.split % len(self.readers)].pid for s, log in self.logs.items()}
        )
        self.trigger_chan = {c.dst.pid: c for c in self.triggers}

    def _regions(self) -> dict[int, int]:
        """Task pid -> region: connected components of the data channels (FLIP-600's
        pipeline regions), numbered in task order; or the subtask index (``regions_by``)."""
        if self.protocol.regions_by == "subtask":
            return {t.pid: t.subtask for t in self.tasks}
        parent = {t.pid: t.pid for t in self.tasks}

        def root(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for c in self.chans:
            a, b = root(c.src.pid), root(c.dst.pid)
            if a != b:
                parent[max(a, b)] = min(a, b)
        number: dict[int, int] = {}
        return {t.pid: number.setdefault(root(t.pid), len(number)) for t in self.tasks}

    # -- splits --------------------------------------------------------------------------------
    def control_attrs(self, value) -> dict | None:
        what = value[0]
        if what == "assign":
            return {"split": value[1]}
        if what == "fallback":
            return {"fallback_notify": value[1], "ref": value[2]}
        if what == "config":
            return {"config": value[1]}
        return super().control_attrs(value)

    def request_split(self, reader) -> None:
        if reader.alive:
            self.send_control(reader, reader.ack, ["split-request"])

    def read_split(self, reader, log: SplitLog, start: int) -> None:
        """``reader`` reads ``log`` from record ``start`` on (a new reading supersedes the last)."""
        log.reader = reader.pid
        log.reading += 1
        self._read_from(log, start, log.reading, reader.incarnation)

    def _read_from(self, log: SplitLog, j: int, reading: int, inc: int) -> None:
        reader = log.channel().dst
        if reading != log.reading or inc != reader.incarnation or not reader.alive:
            return
        n = len(log.records)
        while j < n and log.records[j][0] <= self.now:
            self._emit(log, j)
            j += 1
        if j < n:
            self.at(log.records[j][0], self._read_from, log, j, reading, inc)
        if not reader.wake:
            self.step(reader)

    def _emit(self, log: SplitLog, j: int) -> None:
        """Record ``j`` of a split enters its reader's input: sent the first time, replayed
        (from the durable log) when read again."""
        ch = log.channel()
        sent = log.first_sends[log.reader]
        if j in sent:
            m = self._replay(log, sent[j], "source")
        else:
            _, value, size = log.records[j]
            m = sent[j] = Msg(f"{ch.id}:{j + 1}", ch, j + 1, DATA, value, None, size, self.now, ch.epoch)
            self.log_send(log.pid, self.now, ch.id, m.mid, j + 1, size, None, value if self.values else None)
        m.arr = self.now
        ch.inq.append(m)

    def consume(self, v, ch, m, now) -> None:
        super().consume(v, ch, m, now)
        if v.is_source and v.op.pos.get(ch.port) == len(self.logs[ch.port].records):
            self.request_split(v)

    def on_trigger(self, m: Msg) -> None:
        if m.kind != CONTROL:
            super().on_trigger(m)
            return
        v = m.ch.dst
        if self._stale_control(v, m):
            return
        self.log_recv(v.pid, self.now, m.ch.id, m.mid)
        what = m.value[0]
        if what == "assign":
            s = m.value[1]
            v.op.assign(s)
            self.read_split(v, self.logs[s], 0)
        elif what == "config":
            v.op.agreed = m.value[1]

    def _stale_control(self, v, m: Msg) -> bool:
        """A control message sent to an incarnation that has restarted since is stale."""
        if not v.alive:
            return True
        if m.epoch < getattr(v, "restart_epoch", 0):
            self.log.discard(v.pid, self.now, m.ch.id, m.mid, "stale epoch")
            self.m["discarded"] += 1
            return True
        return False

    # -- rounds --------------------------------------------------------------------------------
    def trigger(self) -> None:
        r = self.next_round
        if self.protocol.agreed == "config-epoch" and r % CONFIG_EVERY == 0:
            for ch in self.triggers:
                self.send_control(self.coord, ch, ["config", r])
        self.enum.snapshot(r)
        if self.force_next is None and not self.down and self.enum.exhausted([t.pid for t in self.readers]):
            self.force_next = "finished"  # finished sources: the final checkpoint must be global
        self.trigger_epoch[r] = self.epoch  # (a restore in the same tick, after it, is a later one)
        super().trigger()
        info = self.rinfo[r] = _Round()
        for reg, rec in self.down.items():
            if "detected" in rec:  # a crash not yet detected is unknown to the coordinator: its
                info.decided[reg] = False  # detection fails the round (region_detected)
        if len(info.decided) == len(self.regions):
            self.evaluate(r, "every region is failing over")

    def take_checkpoint(self, v, round: int):
        agreed = self.protocol.agreed
        if agreed == "checkpoint-id" and v.is_source:
            v.op.agreed = round  # snapshotState writes the checkpoint id into the state
        n = super().take_checkpoint(v, round)
        if n is None:
            return None
        if agreed and v.is_source:
            self.log.annotate(v.pid, "checkpoint", {"agreed": {agreed: v.op.agreed}})
        if self.cfg.decline_prob and self.async_rng.random() < self.cfg.decline_prob:
            self.async_failed.add((v.pid, round))  # the asynchronous part fails: declined after the snapshot
        return n

    def acknowledge(self, v, round: int, what: str) -> None:
        if what == "ack" and (v.pid, round) in self.async_failed:
            what = "decline"
            self.m["declines"] += 1
        super().acknowledge(v, round, what)

    def on_ack(self, m: Msg) -> None:
        what = m.value[0]
        v = m.ch.src
        if what == "split-request":
            self.log_recv(self.coord.pid, self.now, m.ch.id, m.mid)
            s = self.enum.next_for(v.pid)
            if s is not None:
                self.send_control(self.coord, self.trigger_chan[v.pid], ["assign", s])
            return
        if what not in ("ack", "decline"):
            super().on_ack(m)
            return
        self.log_recv(self.coord.pid, self.now, m.ch.id, m.mid)
        r = m.value[1]
        info = self.rinfo.get(r)
        reg = self.region_of[v.pid]
        if r not in self.rounds or info is None or reg in info.decided:
            return
        if what == "decline":
            info.decided[reg] = False
        else:
            info.acked.add(v.pid)
            if all(t.pid in info.acked for t in self.members[reg]):
                info.decided[reg] = True
        if len(info.decided) == len(self.regions):
            self.evaluate(r, f"declined by {v.id}" if what == "decline" else "")
        elif what == "ack":
            self.situation("acknowledged", v)
            if info.decided.get(reg):
                self.situation("region-acknowledged", v)

    def round_timeout(self, r: int) -> None:
        if r in self.rounds:
            info = self.rinfo[r]
            info.timed_out = True
            for reg in self.regions:
                info.decided.setdefault(reg, False)
            self.evaluate(r, "timeout")

    def evaluate(self, r: int, why: str) -> None:
        """Every region of round ``r`` is decided: complete it (globally or regionally) or abort."""
        failed = [reg for reg, ok in sorted(self.rinfo[r].decided.items()) if not ok]
        if not failed:
            self.complete_round(r)
            return
        cause = why or "regions failed"
        if len(self.regions) < 2:
            self.abort(r, f"{cause}: the job is a single pipeline region")
        elif len(failed) == len(self.regions):
            self.abort(r, f"{cause}: no region completed it")
        elif len(failed) > self.max_failure_ratio * len(self.regions):
            self.abort(
                r,
                f"{cause}: {len(failed)} of {len(self.regions)} regions failed (more than {self.max_failure_ratio:g})",
            )
        elif self.force_next is not None or self.rescale_base is not None:
            forced = self.force_next or RESCALE
            self.force_next = None
            self.consecutive = 0
            self.m["forced_aborts"] += 1
            self.abort(r, f"{cause}: the forced global checkpoint failed")
            self.log.annotate(self.coord.pid, "round_abort", {"forced_global": forced})
        elif not self.last_completed:
            self.abort(r, f"{cause}: no completed checkpoint to fall back to")
        else:
            last = self.last_completed
            self.refs[r] = {t.pid: self.refs[last].get(t.pid, last) for reg in failed for t in self.members[reg]}
            self.complete_round(r)

    def complete_round(self, r: int) -> None:
        before = self.last_completed
        fallback = self.refs.setdefault(r, {})
        readers = {pid: k for pid, k in fallback.items() if pid in self.trigger_chan}
        assignment = self.enum.complete(r, readers, correct=self.protocol.corrects_coordinator)
        keep = self.last_completed_progress
        super().complete_round(r)  # log, subsume older rounds, notify (notify_completion)
        attrs: dict[str, object] = {"assignment": {str(s): self.tasks[pid].id for s, pid in assignment.items()}}
        if fallback:
            attrs["fallback"] = {self.tasks[pid].id: k if self.resolve_refs else before for pid, k in fallback.items()}
        if self.rinfo[r].timed_out:
            attrs["timeout"] = True
        self.log.annotate(self.coord.pid, "round_complete", attrs)
        if not fallback:
            self.consecutive = 0
            self.force_next = None
            self.rescale_base = None
            return
        self.last_completed_progress = keep  # the failed regions' progress is not covered
        self.m["regional_completions"] += 1
        self.situation("regional-completion")
        if any(pid in self.rinfo[r].acked for pid in fallback):  # a task whose region fell back holds a newer state
            self.situation("acknowledged-fallback")
        self.consecutive += 1
        if self.consecutive >= self.max_consecutive and self.protocol.forces_global and self.force_next is None:
            self.force_next = "consecutive"
        if self.protocol.live_correction:  # the enumerator takes the splits back at once
            for pid in readers:
                back = [s for s in self.enum.handed_out_since(r, readers) if self.enum.assigned[s] == pid]
                self.enum.give_back(pid, back)
                self.m["splits_given_back"] += len(back)
        if not self.keep_failed:
            for reg in sorted({self.region_of[pid] for pid in fallback}):
                if not self._restored_as(reg, r, fallback):
                    self.region_down(reg, "fallback")

    def _restored_as(self, reg: int, r: int, fallback: dict[int, int]) -> bool:
        """Has region ``reg`` restored, since round ``r`` was triggered (after it in the run's
        order, also in the same tick: recovery epochs order them), exactly the state
        ``r`` falls back to for it? Then it failed ``r`` only because it was failing over
        (its new incarnation never got the trigger) and restarting it again restores the
        same checkpoints: reading ``region-restart`` it runs on (a restart would only undo
        its progress; after a checkpoint timeout, a region whose replay outlasts the
        timeout would be restarted at every round, a livelock)."""
        at = self.restored_from.get(reg)
        if at is None or at[0] <= self.trigger_epoch[r]:  # restored before the trigger (epochs order ties)
            return False
        return all(
            at[1].get(t.pid) == (t.round_ckpt[fallback[t.pid]] if fallback.get(t.pid) else 0) for t in self.members[reg]
        )

    def notify_completion(self, r: int) -> None:
        fallback = self.refs.get(r, {})
        for ch in self.commits:
            k = fallback.get(ch.dst.pid)
            if k is None or (self.protocol.fallback_commit and not self.keep_failed):
                self.send_control(self.coord, ch, ["commit", r])
            elif self.keep_failed:
                self.send_control(self.coord, ch, ["fallback", r, k])

    def on_commit(self, m: Msg) -> None:
        if m.value[0] != "fallback":
            super().on_commit(m)
            return
        v = m.ch.dst
        if self._stale_control(v, m):
            return
        self.log_recv(v.pid, self.now, m.ch.id, m.mid)
        if self.protocol.fallback_commit:  # the sink takes the fallback for a completion
            self._publish(v, v.op.commit(m.value[1], self.committed[v.pid]))

    # -- region failover -------------------------------------------------------------------------
    def fail(self, v, reason: str = "injected crash") -> None:
        if not v.alive:
            return
        self.crashes += 1
        if self.down:
            self.situation("crash-in-recovery", v)
        self.log.fail(v.pid, self.now, reason)
        self.stop(v)
        self.region_down(self.region_of[v.pid], "failure", v)

    def region_down(self, reg: int, cause: str, task=None) -> None:
        """Region ``reg`` fails over: a crash of ``task`` (detected after ``detect_delay``)
        or, reading ``region-restart``, a fallback (at once)."""
        rec = self.down.get(reg)
        if rec is not None:
            if task is not None:
                rec["tasks"].append(task.id)
            elif "detected" not in rec:  # a fallback restart while a crash of the region is not yet
                self.m["fallback_restarts"] += 1  # detected: the coordinator, which cannot know of the
                self.region_detected(reg, rec)  # crash, restarts the region now; this takes it over
            return
        rec = self.down[reg] = {"tasks": [task.id] if task else [], "failed": self.now, "region": reg, "cause": cause}
        self.recoveries.append(rec)
        if task is None:
            self.m["fallback_restarts"] += 1
            self.region_detected(reg, rec)  # the coordinator itself restarts it: no detection delay
        else:
            self.at(self.now + self.cfg.detect_delay, self.region_detected, reg, rec)

    def region_detected(self, reg: int, rec: dict) -> None:
        """The failover ``rec`` of region ``reg`` is detected: the region stops, its pending
        rounds fail, its restore is scheduled — unless a rescale took the failover over
        (the whole job stopped and restores; a later failure of the region is another one)."""
        if self.down.get(reg) is not rec or "detected" in rec:  # (a fallback restart took it over)
            return
        rec["detected"] = self.now
        self.situation("recovery")
        for t in self.members[reg]:
            if t.alive:
                self.stop(t)  # the rest of the region is cancelled
            self.enum.idle.discard(t.pid)  # a restarting reader has not finished
        for r in sorted(self.rounds):  # its acknowledgements count for nothing now
            info = self.rinfo[r]
            if self.protocol.fails_acked_regions or not info.decided.get(reg):
                info.decided[reg] = False
        for r in sorted(self.rounds):
            if r in self.rounds and len(self.rinfo[r].decided) == len(self.regions):
                self.evaluate(r, f"region {reg} failed over")
        if self.rescale_base is not None:
            self.rescale()  # before a global checkpoint after a rescale: all again
        else:
            self.at(self.now + self.cfg.restart_delay, self.restore_region, reg, rec)

    def restore_region(self, reg: int, rec: dict) -> None:
        """Restore every task of ``reg`` (failover ``rec``) from the latest completed
        checkpoint, then replay."""
        if self.rescaling or self.down.get(reg) is not rec:
            return  # a rescale took over: the whole job restores
        del self.down[reg]
        now = self.now
        self.n_recoveries += 1
        k = self.n_recoveries
        line = self.last_completed
        refs = self.refs[line]
        self.epoch += 1
        tasks = self.members[reg]
        pids = {t.pid for t in tasks}
        chans = [c for c in self.chans if c.src.pid in pids or c.dst.pid in pids]
        chans += [c for log in self.logs.values() for pid, c in log.chans.items() if pid in pids]
        self.reset_channels(chans, self.epoch)
        stored = []
        restored = {}
        for v in tasks:
            ref = refs.get(v.pid, line)
            restored[v.pid] = v.round_ckpt[ref] if ref else 0
            stored.append(self.restore_task(v, restored[v.pid], k, line or None))
            v.restart_epoch = self.epoch
        self.restored_from[reg] = (self.epoch, restored)
        self.replay_channel_state(tasks, stored)
        for v in tasks:
            if v.is_source:
                self.enum.reset(v.pid, line)
                unfinished = [s for s, p in sorted(v.op.pos.items()) if p < len(self.logs[s].records)]
                for s in unfinished:
                    self.read_split(v, self.logs[s], v.op.pos[s])
                if self.protocol.agreed == "config-epoch" and self.next_round > CONFIG_EVERY:
                    epoch = (self.next_round - 1) // CONFIG_EVERY * CONFIG_EVERY
                    self.send_control(self.coord, self.trigger_chan[v.pid], ["config", epoch])
                if not unfinished:
                    self.request_split(v)
            elif v.is_sink:  # recoverAndCommit
                self._publish(v, v.op.commit(refs.get(v.pid, line), self.committed[v.pid]))
        rec["restored"] = now
        rec["line"] = line
        for v in tasks:
            self.step(v)

    def restored(self, v, ckpt: int, recovery: int, round) -> None:
        """Complete the restored state (redistributed list state of a rescale; union state:
        the largest value of the union) and record the restore with the digest of the state
        actually restored, or with the checkpoints its redistributed elements come from."""
        redistributed = self.redistributed.get(v.pid)
        if redistributed is not None:
            v.op.restore(redistributed[0])
            attrs = {"elements": [list(x) for x in redistributed[1]]}
            if v.is_source:
                attrs["splits"] = sorted(v.op.pos)
            self.log.restore(v.pid, self.now, ckpt, recovery, round, attrs)
            return
        if self.protocol.agreed and v.is_source:
            v.op.agreed = max(self._agreed_in(u, round or 0) for u in self.readers)
        digest, _ = self.state_digest(v.op)
        self.log.restore(v.pid, self.now, ckpt, recovery, round, {"digest": digest} if digest is not None else None)

    def _agreed_in(self, reader, line: int):
        """The agreed value in ``reader``'s state of completed checkpoint ``line``."""
        ref = self.refs[line].get(reader.pid, line)
        ckpt = reader.round_ckpt[ref] if ref else 0
        return (self.store[(reader.pid, ckpt)] if ckpt else reader.initial).state[1]

    # -- the end of the run ------------------------------------------------------------------------
    def tick(self) -> None:
        if not self.finished and self.now > self.horizon:
            self.truncated = True  # a livelock: give up (reported as truncated)
            self.heap.clear()
            return
        super().tick()

    def _input_done(self) -> bool:
        return self.enum.exhausted([t.pid for t in self.readers])

    def final_states(self) -> dict:
        """Per operator, the union of its subtasks' states: a rescale moves a split's state to
        another slice, so only the job's state, not a slice's, is comparable across runs."""
        out: dict = {}
        for t in self.tasks:
            out.setdefault(t.spec.name, []).append(t.op.canonical())
        return {name: _union(states) for name, states in out.items()}

    def metrics(self) -> dict:
        out = super().metrics()
        out["input_records"] = sum(len(log.records) for log in self.logs.values())
        out["regions"] = len(self.regions)
        out["splits"] = len(self.logs)
        return out


def _union(states: list):
    """The union of canonical states: lists concatenated (in a canonical order), dicts
    merged key by key, scalars collected.

    >>> _union([{"splits": [[1, 2]]}, {"splits": [[0, 4]]}])
    {'splits': [[0, 4], [1, 2]]}
    """
    if all(isinstance(x, dict) for x in states):
        keys = sorted({k for x in states for k in x})
        return {k: _union([x[k] for x in states if k in x]) for k in keys}
    if all(isinstance(x, list) for x in states):
        return sorted((y for x in states for y in x), key=repr)
    return sorted(states, key=repr)
