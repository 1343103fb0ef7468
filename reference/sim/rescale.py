"""Rescaling and finished sources in the coordinated simulator (a mixin of ``Simulator``).

**Key groups** (Flink's ``KeyGroupRangeAssignment``): a key's group is
``partition(key, M)`` for the run's ``max_parallelism`` ``M``; subtask ``i`` of ``p``
owns the contiguous range ``[⌈i·M/p⌉, ⌈(i+1)·M/p⌉ − 1]``, so a keyed record goes to
``⌊g·p/M⌋``. Runs that rescale route hash edges this way and tag keyed sends with
their ``key_group``.

**Rescale** (``SimConfig.rescale``: ``("savepoint", t, p)`` or ``("failure", t, p)``):
stop-with-savepoint triggers a round at ``t`` and, when it completes, stops the job
(a savepoint round that is aborted is tried again; after ``SAVEPOINT_TRIES``
postponements or failures the stop-with-savepoint is given up and the job runs on);
a failure crashes a task at ``t`` and the recovery restores the last completed round.
Either way every old task retires at its checkpoint of the restored round ``r`` and
the job is rebuilt with every operator at parallelism ``p`` (new processes
``g<k>.op[i]``, declared ``appears``); each new task restores from the old
checkpoints of round ``r`` (its ``sources``) as Flink's state assignment does:

* keyed state (operators all of whose inputs are hash edges): by key-group range,
  from every old subtask whose range overlaps;
* operator list state: source splits (one per input log) round robin over the new
  subtasks, each taken from its old holder; sinks take the transactions of old sinks
  ``i ≡ j (mod p)``, after the old sinks' transactions of the restored round were
  committed (recover-and-commit);
* other state (broadcast inputs: a copy of old subtask ``j mod p_old``; forward or
  mixed inputs: old subtasks ``i ≡ j (mod p)``), whole.

Operators are multiset-functional (``reference.operators``), so a new task's state
is rebuilt by processing, in a fresh operator, the records its sources had processed
at their checkpoints (each task keeps that history while the run rescales).

Recovered in-flight records (the input and output parts recorded in round ``r``) of
an old channel ``a[i] -> b[q]`` go to the new channel ``g.a[i mod p] -> g.b[j]``
that owns them (Flink's ``SubtaskStateMapper``): on a hash edge ``j`` owns the
record's key group (the restore maps the old channel onto every new receiver whose
range overlaps, filtered by key group: ``RANGE``); on a forward edge ``j = q mod p``;
on a broadcast edge every ``j`` whose state is a copy of old ``q`` receives them, and
on a downscale the extra copies are discarded (a mapping with an empty key-group
filter). The new receiver re-injects them (``replay``) ahead of any live record.
The input logs re-read what the old sources had not processed, on their new channels.

**Finished sources** (``SimConfig.finish_sources``, FLIP-147): a source that has
read all of its input records ``finish``; it keeps taking checkpoints; the
coordinator notifies it (``attrs.notify``) of every completed round holding a
checkpoint it took after finishing, and on the notification it retires, once no
round is running: its output channels leave their receivers' inputs (Flink's
end-of-partition counts as aligned for every later checkpoint), and a task whose
inputs have all finished is triggered by the coordinator directly.

Where the model stops: acyclic dataflows only (Flink rescales no iterations);
every operator gets the same new parallelism; sources and sinks are rescaled like
the rest; savepoints use the protocol's own rounds
(an unaligned protocol's savepoint has channel state, like Flink's unaligned
checkpoints retained and restored with another parallelism; Flink's savepoints
proper are aligned); a run does not both rescale and finish its sources.
"""

from __future__ import annotations

import copy
import random
from dataclasses import replace
from typing import TYPE_CHECKING

from snapcheck.reference.operators import SplitSource
from snapcheck.reference.sim.engine import ProtocolBroke
from snapcheck.reference.sim.messages import CONTROL, CONTROL_SIZE, Chan, Msg, Stored
from snapcheck.reference.topology import expand, partition
from snapcheck.traces.errors import UsageError
from snapcheck.traces.model import Channel, generation_prefix

SAVEPOINT_TRIES = 50  # postponements and failed savepoint rounds before a stop-with-savepoint is given up


def key_group(key, max_parallelism: int) -> int:
    """The key group of a key (a deterministic hash, never Python's salted one).

    >>> key_group(5, 16), key_group(21, 16)
    (5, 5)
    """
    return partition(key, max_parallelism)


def kg_range(max_parallelism: int, p: int, i: int) -> tuple[int, int]:
    """The inclusive key-group range subtask ``i`` of ``p`` owns.

    >>> [kg_range(16, 3, i) for i in range(3)]
    [(0, 5), (6, 10), (11, 15)]
    """
    return (i * max_parallelism + p - 1) // p, ((i + 1) * max_parallelism - 1) // p


def kg_owner(max_parallelism: int, p: int, kg: int) -> int:
    """The subtask of ``p`` that owns key group ``kg``.

    >>> [kg_owner(16, 3, g) for g in (0, 5, 6, 10, 11, 15)]
    [0, 0, 1, 1, 2, 2]
    """
    return kg * p // max_parallelism


def keyed(workload, spec) -> bool:
    """Whether an operator of ``workload`` has keyed state (key groups): it is not a sink,
    it has inputs, and every one of them is a hash edge."""
    ins = [e for e in workload.edges if e.dst == spec.name]
    return bool(ins) and all(e.partitioning == "hash" for e in ins) and not spec.sink


def check_key_groups(workload, rescale, max_parallelism: int) -> None:
    """A ``UsageError`` when a run that rescales would give a keyed operator (``keyed``)
    more subtasks than ``max_parallelism`` key groups, at its initial parallelism or at a
    rescale's (every operator takes the rescale's parallelism): a subtask would own an
    empty key-group range, and Flink refuses a parallelism above the max parallelism.
    A run that does not rescale assigns no key groups and is never refused.

    >>> from snapcheck.reference.workloads import make_workload
    >>> check_key_groups(make_workload("q12", 2, 0), (("savepoint", 900, 5),), 3)
    Traceback (most recent call last):
    snapcheck.traces.errors.UsageError: keyed operator window_count at parallelism 5 (after the rescale at 900) exceeds the max parallelism 3 (its key groups): raise --max-parallelism to at least 5
    """
    if not rescale:
        return
    for op in workload.operators:
        if not keyed(workload, op):
            continue
        at = [(op.parallelism, "initial")] + [(p, f"after the rescale at {t}") for _, t, p in rescale]
        for p, when in at:
            if isinstance(p, int) and p > max_parallelism:
                raise UsageError(
                    f"keyed operator {op.name} at parallelism {p} ({when}) exceeds the max parallelism "
                    f"{max_parallelism} (its key groups): raise --max-parallelism to at least {p}"
                )


class Recorded:
    """An operator that remembers the records it processed, ``(gate, port, value)``, in
    its snapshots, so its state can be split by key group or merged on a rescale."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.history: list = []
        self.gate = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def process(self, port, value):
        self.history.append((self.gate, port, value))
        return self.inner.process(port, value)

    def snapshot(self):
        return self.inner.snapshot(), tuple(self.history)

    def restore(self, snap):
        self.inner.restore(snap[0])
        self.history = list(snap[1])

    def canonical(self):
        return self.inner.canonical()


if TYPE_CHECKING:  # a mixin of a Simulator class (``rescaling_class``), checked as one
    from snapcheck.reference.sim.engine import Simulator as _Simulator
else:
    _Simulator = object


class Rescaling(_Simulator):
    """Mixin of ``Simulator`` (module docstring); ``rescaling_class`` composes it."""

    # -- construction --------------------------------------------------------------------
    def _build(self, log_class) -> None:
        super()._build(log_class)
        cfg = self.cfg
        self.max_par = cfg.max_parallelism
        self.generation = 0
        self.retired: list = []  # tasks of earlier generations
        self.ext_chans: dict = {ext: [ext.chan] for ext in self.externals}
        self.partition_of = {}  # external -> (source operator, partition index)
        for ext in self.externals:
            self.partition_of[ext] = (ext.channel().dst.spec.name, ext.channel().dst.subtask)
        if cfg.rescale:
            for t in self.tasks:
                t.op = Recorded(t.op)
            self._set_key_groups(self.header.processes, self.tasks)
        self.notify_chans: dict = {}
        self.waiting_final: dict = {}  # finished task -> its last checkpoint before finishing
        self.retired_states: dict = {}  # retired finished task's id -> its state when it retired
        if cfg.finish_sources:
            self._notify_channels(self.tasks)
        self._savepoint_round: tuple[int, int] | None = None  # (round, parallelism) of a stop-with-savepoint
        self._savepoint_tries = 0
        self._pending_rescale: int | None = None  # the parallelism of the restart after a failure
        self.late: dict = {}  # channel -> recovered records delivered late
        for t in self.tasks:
            assert t.initial is not None  # set by _start_tasks
            t.initial = Stored(0, "initial", None, t.op.snapshot(), None, t.initial.counts)

    def _set_key_groups(self, procs, tasks) -> None:
        """Each keyed task's key-group range (``kg_range``; never empty: ``check_key_groups``),
        each source task's input partitions."""
        for i, (proc, t) in enumerate(zip(procs, tasks)):
            if keyed(self.wl, t.spec):
                lo, hi = kg_range(self.max_par, t.spec.parallelism, t.subtask)
                procs[i] = replace(proc, key_groups=[[lo, hi]], max_parallelism=self.max_par)
            elif t.is_source:
                procs[i] = replace(proc, partitions=[e.id for e in self.externals if e.channel().dst is t])

    def _notify_channels(self, tasks) -> None:
        chans = []
        for t in tasks:
            if t.is_source:
                c = Chan(f"coordinator->{t.id}:notify", self.coord, t)
                c.handler = self.on_notify
                self.notify_chans[t] = c
                chans.append(Channel(c.id, self.coord.id, t.id, kind="control"))
        self.log.add_processes([], chans)

    # -- routing ---------------------------------------------------------------------------
    def partition(self, key, n: int) -> int:
        if not self.cfg.rescale:
            return partition(key, n)
        return kg_owner(self.max_par, n, key_group(key, self.max_par))

    def emit_record(self, v, ch, value, key, born, size) -> Msg:
        m = super().emit_record(v, ch, value, key, born, size)
        if key is not None and self.cfg.rescale:
            self.log.key_group(key_group(key, self.max_par))
        return m

    def consume(self, v, ch, m, now) -> None:
        if self.cfg.rescale:
            v.op.gate = ch.gate
            if self.late and not m.recovered and ch in self.late:
                self._drop_late(v, ch)
        super().consume(v, ch, m, now)
        if self.cfg.finish_sources and v.is_source and v not in self.waiting_final and self._exhausted(v):
            self.log.finish(v.pid, now, "end of input")
            self.waiting_final[v] = v.ckpt_no  # its checkpoints after this one are final

    def _exhausted(self, v) -> bool:
        return all(
            ext.channel().dst is not v or v.op.position(ext.channel().port) >= len(ext.records)
            for ext in self.externals
        )

    # -- the schedule ----------------------------------------------------------------------
    def run(self) -> None:
        for kind, when, p in self.cfg.rescale:
            if kind == "savepoint":
                self.at(when, self._savepoint, p)
            elif kind == "failure":
                self.at(when, self._fail_and_rescale, p)
            else:
                raise UsageError(f"rescale kind must be 'savepoint' or 'failure', not {kind!r}")
        super().run()

    def _savepoint(self, p: int) -> None:
        """Stop-with-savepoint: a round now; when it completes, restore at parallelism ``p``."""
        if self.recovering or self.rounds or self._pending_rescale is not None:
            self._retry_savepoint(p)
            return
        self._savepoint_round = (self.next_round, p)
        self.trigger()

    def _retry_savepoint(self, p: int) -> None:
        """Try the stop-with-savepoint again a little later, unless it was postponed or its
        savepoint failed ``SAVEPOINT_TRIES`` times: then it is given up and the job goes on
        at its parallelism, as a Flink job does when its stop-with-savepoint fails."""
        self._savepoint_tries += 1
        if self._savepoint_tries < SAVEPOINT_TRIES:
            self.at(self.now + max(1, self.cfg.interval // 4), self._savepoint, p)

    def _fail_and_rescale(self, p: int) -> None:
        if self._pending_rescale is not None or self.recovering:
            return
        alive = [t for t in self.tasks if t.alive]
        rng = random.Random(f"{self.cfg.seed}/rescale/{self.now}")
        self._pending_rescale = p
        # the rescale's own crash, no requested fault: its fail event says so
        self.crash(alive[int(rng.random() * len(alive))], "injected crash", {"rescale": p})

    def complete_round(self, r: int) -> None:
        super().complete_round(r)
        if self._savepoint_round and self._savepoint_round[0] == r:
            p = self._savepoint_round[1]
            self._savepoint_round = None
            self._rescale(p, r, "stop-with-savepoint")
            return
        if self.waiting_final:
            self._notify_finished(r)

    def abort(self, r: int, reason: str, notify: bool = False) -> None:
        super().abort(r, reason, notify)
        if self._savepoint_round and self._savepoint_round[0] == r:
            p = self._savepoint_round[1]
            self._savepoint_round = None
            self._retry_savepoint(p)

    def restore_all(self) -> None:
        if self._pending_rescale is None:
            line = self.last_completed
            for v, before in list(self.waiting_final.items()):  # restored to before it finished
                if (v.round_ckpt.get(line, 0) if line else 0) <= before:
                    del self.waiting_final[v]
            super().restore_all()
            if line and self.waiting_final:  # restored finished: the restored round is final for it
                self._notify_finished(line)
            return
        p = self._pending_rescale
        self.recovering = False
        self._rescale(p, self.last_completed, "failure")

    def later_task_ids(self) -> frozenset[str]:
        """``gN.op[i]``: the tasks the N-th rescale may start, at any parallelism a
        rescale of this run names (a rescale that does not happen starts none)."""
        out: set[str] = set()
        for p in {p for _, _, p in self.cfg.rescale}:
            graph = expand(replace(self.wl, operators=[replace(op, parallelism=p) for op in self.wl.operators]))
            out.update(
                generation_prefix(n) + tid for n in range(1, len(self.cfg.rescale) + 1) for tid, _, _ in graph.tasks
            )
        return frozenset(out)

    # -- the rescale -----------------------------------------------------------------------
    def _rescale(self, p: int, r: int, why: str) -> None:
        now = self.now
        log = self.log
        self._pending_rescale = None
        for rr in list(self.rounds):
            self.abort(rr, "rescale")
        old = list(self.tasks)
        old_ckpt = {v: (v.round_ckpt.get(r, 0) if r else 0) for v in old}
        snaps = {v: (self.store[(v.pid, old_ckpt[v])] if old_ckpt[v] else v.initial) for v in old}
        for v in old:  # the old job stops
            v.alive = False
            v.incarnation += 1
            v.wake = v.waiting = False
            for c in v.reads:
                c.inq.clear()
            for c in v.outputs:
                c.outbuf.clear()
            log.retire(
                v.pid, now, old_ckpt[v], "rescaled" if why != "failure" else "failed over at another parallelism"
            )
            self.left_job(v)
        self.retired.extend(old)
        self.generation += 1
        self.epoch += 1
        self.n_recoveries += 1
        wl = self.wl
        new_wl = replace(wl, operators=[replace(op, parallelism=p) for op in wl.operators])
        self.wl = new_wl
        graph = expand(new_wl)
        prefix = generation_prefix(self.generation)
        procs, tasks = self._make_tasks(graph, prefix, len(log.names))
        procs = [replace(x, appears=True) for x in procs]
        by_id = {t.id: t for t in tasks}
        self.by_id.update(by_id)
        chans, channels = self._make_data_channels(graph, by_id, prefix)
        channels += self._make_control_channels(tasks)
        self.tasks, self.chans = tasks, chans
        for t in tasks:
            self.joined_job(t)
        by_old: dict[str, list] = {}
        for v in old:
            by_old.setdefault(v.spec.name, []).append(v)
        new_of: dict[str, list] = {}
        for t in tasks:
            new_of.setdefault(t.spec.name, []).append(t)
        # input logs: split i of a source operator goes to new subtask i mod p
        ext_new = {}
        for ext in self.externals:
            op, i = self.partition_of[ext]
            t = new_of[op][i % p]
            c = Chan(f"{ext.id}->{t.id}", ext, t, port=i)
            ext_new[ext] = c
            channels.append(Channel(c.id, ext.id, t.id, logged=True))
        self._set_key_groups(procs, tasks)
        for proc, t in zip(list(procs), tasks):
            if t.is_source:
                k = procs.index(proc)
                procs[k] = replace(proc, partitions=[e.id for e, c in ext_new.items() if c.dst is t])
        log.add_processes(procs, channels)
        if self.cfg.finish_sources:
            self._notify_channels(tasks)
        plan = _Plan(self, r, old, snaps, old_ckpt, by_old, new_of, ext_new, p)
        for t in tasks:
            t.op = Recorded(t.op)
            plan.restore_state(t)
        self._start_tasks(tasks)
        if self.failed_to_start:
            raise ProtocolBroke(*self.failed_to_start)
        k = self.n_recoveries
        for t in tasks:
            log.restore_from(t.pid, now, k, r or None, plan.sources[t], plan.mappings.get(t))
        for ext, c in ext_new.items():
            c.dst.reads.insert(0, c)
            ext.channel().inq.clear()
            ext.chan = c
            self.ext_chans[ext].append(c)
        for t in tasks:  # recovered in-flight records first
            for ch, groups in plan.recovered.get(t, {}).items():
                first, late = self.protocol.rescale_deliver(groups, p)
                for m in first:
                    self._recover(t, ch, m)
                if late:
                    self.late[ch] = late
        for ext, c in ext_new.items():  # the input logs re-read what was not read
            src = c.dst
            for m in ext.sent[src.op.position(c.port) :]:
                nm = self._replay(ext, m, "source", c)
                nm.arr = now
                c.inq.append(nm)
        for t in tasks:  # recover-and-commit of the old sinks
            for old, vals in plan.commits.get(t, ()):
                self._publish(t, vals, old)
        if why == "failure":  # the recovery of the crash that failed the job over (a stop-with-savepoint is none)
            self.recoveries[-1].update(restored=now, line=r, rescale=p)
        for t in tasks:
            assert t.proto is not None  # set by _start_tasks
            t.proto.on_restore(0, r)
        for t in tasks:
            self.step(t)

    def _recover(self, t, ch, m) -> None:
        """Re-inject a recovered record ahead of live data (it is also part of the new
        task's initial checkpoint: a failure before its first checkpoint replays it again)."""
        nm = self._replay(t, m, "channel_state", ch)
        nm.arr = self.now
        ch.inq.append(nm)
        ch.occupancy += 1
        t.initial.inputs.setdefault(ch, []).append(nm)

    def _drop_late(self, t, ch) -> None:
        """Recovered buffers still pending when live data of their channel is processed are
        dropped (the ``rescale-race`` mutant: recovery of the channel was taken as done)."""
        for m in self.late.pop(ch):
            nm = self._replay(t, m, "channel_state", ch)
            self.log.discard(t.pid, self.now, ch.id, nm.mid, "late recovered buffer")
            self.outstanding -= 1

    # -- finished sources ------------------------------------------------------------------
    def _notify_finished(self, r: int) -> None:
        """Notify every finished task of round ``r`` if it holds a checkpoint the task took
        after finishing (each later notification subsumes the earlier ones)."""
        for v, before in list(self.waiting_final.items()):
            ck = v.round_ckpt.get(r)
            if ck is None or ck <= before or not v.alive:
                continue
            what = self.protocol.final_notification(v, r)
            if what == "skip":
                continue
            c = self.notify_chans[v]
            seq, mid = self.next_mid(self.coord, c)
            m = Msg(mid, c, seq, CONTROL, ["notify", r], None, CONTROL_SIZE, self.now, self.epoch)
            self.log.send_attrs(
                self.coord.pid, self.now, c.id, mid, seq, CONTROL_SIZE, None, ["notify", r], {"notify": r}
            )
            if what == "deliver":
                self._deliver_control(m)

    def on_notify(self, m: Msg) -> None:
        v = m.ch.dst
        if self._stale_control(v, m):
            return
        self.log_recv(v.pid, self.now, m.ch.id, m.mid)
        self._try_retire(v, v.incarnation)

    def _try_retire(self, v, inc: int) -> None:
        """Retire a notified finished task once no round is running, its output channels
        are drained (nothing buffered, travelling or queued: its receivers processed
        everything up to its end of partition) and no receiver holds an input blocked (aligning a round that was aborted: a newer
        barrier, possibly its own, must still reach it)."""
        if v not in self.waiting_final or inc != v.incarnation or not v.alive or self.finished:
            return
        # (a receiver may still be aligning an aborted round)
        busy = any(c.outbuf or c.inq or c.occupancy or any(i.blocked for i in c.dst.inputs) for c in v.outputs)
        if self.recovering or self.rounds or busy or self._on_the_wire(v.outputs):
            self.clock(self.now + max(1, self.cfg.interval // 4), self._try_retire, v, inc)  # keeps no run alive
            return
        if not self._recorded_on(v, self.last_completed):
            self._retire_finished(v)

    def _on_the_wire(self, chans: list) -> bool:
        """Is a message of one of ``chans`` still travelling (``occupancy`` counts the data
        records only; a barrier of an aborted round may be on its way, and its receiver's
        handler will name the channel)?"""
        arrive, wanted = self.arrive, set(map(id, chans))
        return any(fn == arrive and id(args[0].ch) in wanted for _, _, _, fn, args in self.heap)

    def _recorded_on(self, v, r: int) -> bool:
        """Whether round ``r`` holds recorded channel state of ``v``'s output channels (a
        restore of ``r`` would replay it, so ``v`` stays until a later round; its
        notification then retires it)."""
        store = self.store
        for c in v.outputs:
            for end, part in ((c.dst, "inputs"), (v, "outputs")):
                ck = end.round_ckpt.get(r)
                st = store.get((end.pid, ck)) if ck else None
                if st is not None and getattr(st, part).get(c):
                    return True
        return False

    def _retire_finished(self, v) -> None:
        del self.waiting_final[v]
        self.retired_states[v.id] = v.op.canonical()
        self.log.retire(v.pid, self.now, None, "finished")
        self.left_job(v)
        v.alive = False
        v.incarnation += 1
        self.tasks.remove(v)
        self.triggers = [c for c in self.triggers if c.dst is not v]
        self.notices = [c for c in self.notices if c.dst is not v]
        for c in v.outputs:
            d = c.dst
            if c in d.inputs:
                d.inputs.remove(c)
            if c in d.reads:
                d.reads.remove(c)
            if not d.inputs and d.alive and not any(t.dst is d for t in self.triggers):
                self._trigger_directly(d)
            self.step(d)

    def final_states(self) -> dict:
        """Every task's state at the end of the run, a retired finished task's included:
        retiring a task that finished its input changes no result, so a run whose finished
        source retired and one where it was still waiting for its final round (a later
        round it needed was never triggered) have the same final states."""
        return {**self.retired_states, **super().final_states()}

    def _trigger_directly(self, d) -> None:
        """A task whose inputs all finished is triggered by the coordinator, like a source."""
        c = Chan(f"coordinator->{d.id}", self.coord, d)
        c.handler = self.on_trigger
        self.triggers.append(c)
        self.log.add_processes([], [Channel(c.id, self.coord.id, d.id, kind="control")])


class _Plan:
    """How the state and in-flight records of round ``r`` are redistributed."""

    def __init__(self, sim, r, old, snaps, old_ckpt, by_old, new_of, ext_new, p):
        self.sim = sim
        self.r = r
        self.snaps = snaps
        self.old_ckpt = old_ckpt
        self.by_old = by_old
        self.new_of = new_of
        self.p = p
        self.M = sim.max_par
        self.sources: dict = {}
        self.mappings: dict = {}
        self.recovered: dict = {}
        self.commits: dict = {}
        self.ext_new = ext_new
        self._channels()

    def _olds(self, op: str) -> list:
        return sorted(self.by_old.get(op, []), key=lambda v: v.subtask)

    def _src(self, v, **split) -> dict:
        return {"proc": v.id, "ckpt": self.old_ckpt[v], **split}

    def restore_state(self, t) -> None:
        """Build ``t``'s state from its sources (module docstring)."""
        sim, spec, j = self.sim, t.spec, t.subtask
        olds = self._olds(spec.name)
        p_old = len(olds)
        if spec.source:
            offsets: dict[int, int] = {}
            held: list[tuple] = []  # (the old task holding a partition, the partition)
            for ext, c in self.ext_new.items():
                if c.dst is not t:
                    continue
                holder = next(v for v in olds if ext.channel().dst is v)
                offsets[c.port] = _restored(holder, self.snaps[holder]).position(ext.channel().port)
                held.append((holder, ext.id))
            t.op = Recorded(SplitSource(offsets))
            by_holder: dict = {}
            for holder, part in held:
                by_holder.setdefault(holder, []).append(part)
            self.sources[t] = [self._src(v, partitions=parts) for v, parts in by_holder.items()] or [
                self._src(olds[j % p_old], partitions=[])
            ]
            return
        if spec.sink:
            group = [v for v in olds if v.subtask % self.p == j]
            commits = []
            pending: list = []
            staged: dict[int, tuple] = {}
            for v in group:
                scratch = _restored(v, self.snaps[v])
                commits.append((v.id, scratch.commit(self.r, sim.committed[v.pid])))
                pend, stg = scratch.snapshot()
                pending.extend(pend)
                for rr, batch in stg.items():
                    staged[rr] = staged.get(rr, ()) + batch
            t.op.inner.restore((tuple(pending), staged))
            self.commits[t] = commits
            self.sources[t] = [self._src(v) for v in group] or [self._src(olds[j % p_old], partitions=[])]
            return
        edges = [e for e in sim.wl.edges if e.dst == spec.name]
        inner = t.op.inner
        history = t.op.history
        if keyed(sim.wl, spec):
            lo, hi = kg_range(self.M, self.p, j)
            srcs = []
            for v in olds:
                olo, ohi = kg_range(self.M, p_old, v.subtask)
                a, b = max(lo, olo), min(hi, ohi)
                if a > b:
                    continue
                srcs.append(self._src(v, key_groups=[[a, b]]))
                for gate, port, value in self.snaps[v].state[1]:
                    if lo <= key_group(edges[gate].key(value), self.M) <= hi:
                        inner.process(port, value)
                        history.append((gate, port, value))
            self.sources[t] = srcs
            return
        if edges and all(e.partitioning == "broadcast" for e in edges):
            group = [olds[j % p_old]]
        else:
            group = [v for v in olds if v.subtask % self.p == j]
        for v in group:
            for gate, port, value in self.snaps[v].state[1]:
                inner.process(port, value)
                history.append((gate, port, value))
        self.sources[t] = [self._src(v) for v in group] or [self._src(olds[j % p_old], partitions=[])]

    def _channels(self) -> None:
        """Mappings of old channels onto new ones, and the recovered records of each."""
        sim = self.sim
        new_by_id = {t.id: t for ts in self.new_of.values() for t in ts}
        prefix = generation_prefix(sim.generation)
        chan_of = {c.id: c for c in sim.chans}
        for e in sim.wl.edges:
            olds_a, olds_b = self._olds(e.src), self._olds(e.dst)
            p_old = len(olds_b)
            spec = sim.wl.operator(e.dst)
            skip = not sim.protocol.rescale_channel_state(self._stateful(spec))
            for a in olds_a:
                ia = a.subtask % self.p
                for b in olds_b:
                    c = next((c for c in a.outputs if c.dst is b), None)
                    if c is None:
                        continue
                    recorded = list(self.snaps[b].inputs.get(c, ())) + list(self.snaps[a].outputs.get(c, ()))
                    if skip:
                        continue
                    if e.partitioning == "hash":
                        olo, ohi = kg_range(self.M, p_old, b.subtask)
                        for j in range(self.p):
                            lo, hi = kg_range(self.M, self.p, j)
                            x, y = max(lo, olo), min(hi, ohi)
                            if x > y:
                                continue
                            nb = new_by_id[f"{prefix}{e.dst}[{j}]"]
                            nc = chan_of[f"{prefix}{e.src}[{ia}]->{nb.id}"]
                            self.mappings.setdefault(nb, []).append({"old": c.id, "new": nc.id, "key_groups": [[x, y]]})
                            mine = [m for m in recorded if x <= key_group(m.key, self.M) <= y]
                            if mine:
                                self.recovered.setdefault(nb, {}).setdefault(nc, []).append((c, mine))
                        continue
                    if e.partitioning == "forward":
                        targets = [b.subtask % self.p]
                    else:
                        targets = [j for j in range(self.p) if j % p_old == b.subtask]
                    for j in targets:
                        nb = new_by_id[f"{prefix}{e.dst}[{j}]"]
                        src_i = j if e.partitioning == "forward" else ia
                        nc = chan_of[f"{prefix}{e.src}[{src_i}]->{nb.id}"]
                        self.mappings.setdefault(nb, []).append({"old": c.id, "new": nc.id})
                        if recorded:
                            self.recovered.setdefault(nb, {}).setdefault(nc, []).append((c, recorded))
                    if not targets:  # a downscale discards the extra broadcast copies
                        nb = new_by_id[f"{prefix}{e.dst}[{b.subtask % self.p}]"]
                        nc = chan_of[f"{prefix}{e.src}[{ia}]->{nb.id}"]
                        self.mappings.setdefault(nb, []).append({"old": c.id, "new": nc.id, "key_groups": []})
        for ext, c in self.ext_new.items():
            self.mappings.setdefault(c.dst, []).extend({"old": o.id, "new": c.id} for o in sim.ext_chans[ext])

    @staticmethod
    def _stateful(spec) -> bool:
        """Whether an operator has state of its own (maps and filters have none)."""
        return spec.source or spec.sink or spec.make(0).snapshot() is not None


def _restored(v, stored):
    """A copy of ``v``'s operator restored to a checkpoint's state."""
    op = copy.copy(v.op.inner)
    op.restore(stored.state[0])
    return op


def rescaling_class(base: type) -> type:
    """``base`` (a ``Simulator`` class) with rescaling and finished sources."""
    return type(f"Rescaling{base.__name__}", (Rescaling, base), {})
