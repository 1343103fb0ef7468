"""Rescaling a job restored from a (possibly regional) checkpoint, modelled inside the
regional family (``Rescale``, a mixin of ``RegionalSimulator``).

A rescale (``SimConfig.failures`` entry ``("rescale", t)``, on the command line
``--fail rescale@t``; or ``("rescale", situation, k)``, ``--fail rescale@SITUATION#K``:
right after the ``k``-th occurrence of a situation, e.g. ``regional-completion``)
stops the whole job at ``t`` and restores it, after
``restart_delay``, from the latest completed checkpoint ``C`` with its operator
list state *redistributed* as Flink does when the parallelism changes
(``RoundRobinOperatorStateRepartitioner``: the elements of every subtask's list,
concatenated in subtask order, dealt round robin to the new subtasks). The
elements are per split: a reader's read position of each split it holds, a
per-key count's entries of that split; a split's elements all go to the same new
slice, so that a slice's reader and counts stay consistent. Sinks commit what
their own restored state sealed (their pending transactions) before the
redistribution, so they start empty.

The model keeps the number of slices (the kit's trace format here has no
processes that appear or retire) and needs aligned checkpoints (an unaligned
one's channel state would have to be redistributed too): what a rescale does to a regional checkpoint —
elements taken from the checkpoints its metadata names, which differ per region,
combined into new subtasks — is the same at any new parallelism. Each restore of a
rescale records ``attrs {"elements": [[process, checkpoint], ...]}``, the
checkpoints whose elements it received. Until a global checkpoint completes after
the rescale, a failure restores the whole job from ``C`` the same way and no round
completes regionally (the regions' older rounds predate the new distribution).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from snapcheck.reference.operators import KeyedAggregate
from snapcheck.reference.sim.exploration import SELF, parse_fault

if TYPE_CHECKING:  # a mixin of RegionalSimulator, a CommitSimulator: checked as one
    from snapcheck.reference.commit.simulator import CommitProtocol
    from snapcheck.reference.commit.simulator import CommitSimulator as _Simulator
    from snapcheck.reference.regional.splits import SplitEnumerator
    from snapcheck.reference.sim.engine import Task

    class RegionalFacts(CommitProtocol):
        """The switches a regional protocol declares (``regional.protocol.RegionalCheckpoints``,
        which imports the simulator) that the simulator reads."""

        regions_by: str
        agreed: str | None
        forces_global: bool
        corrects_coordinator: bool
        live_correction: bool
        fallback_commit: bool
        fails_acked_regions: bool
        rescale_by_id: bool
else:
    _Simulator = object

RESCALE = "rescale"


def deal(elements: list, n: int) -> list[list]:
    """Round-robin redistribution of list-state elements over ``n`` subtasks.

    >>> deal(["a", "b", "c", "d", "e"], 2)
    [['a', 'c', 'e'], ['b', 'd']]
    """
    return [elements[i::n] for i in range(n)]


class Rescale(_Simulator):
    """Mixin of ``RegionalSimulator``: rescale events and the restore that redistributes
    list state (module docstring)."""

    extra_fault_targets = (RESCALE,)
    protocol: RegionalFacts
    # what it uses of RegionalSimulator (regional.simulator, which imports this module)
    rescale_base: int | None
    force_next: str | None
    may_rescale: bool
    rescales: tuple[int, ...]
    rescaling: bool
    readers: list[Task]
    logs: dict  # split -> regional.simulator.SplitLog
    enum: SplitEnumerator
    regions: list[int]
    refs: dict[int, dict[int, int]]
    rinfo: dict  # round -> its regional state (regional.simulator._Round)
    down: dict[int, dict]
    restored_from: dict[int, tuple[int, dict[int, int]]]

    if TYPE_CHECKING:

        def request_split(self, reader: Task) -> None: ...
        def read_split(self, reader: Task, log, start: int) -> None: ...
        def evaluate(self, r: int, why: str) -> None: ...

    def run(self) -> None:
        cfg = self.cfg
        if self.may_rescale and not self.protocol.aligned:
            raise ValueError(
                "rescaling from an unaligned checkpoint redistributes its channel state too, "
                "which the model does not do: rescale runs need aligned barriers"
            )
        for t in self.rescales:
            self.at(t, self.rescale)
        self.cfg = replace(cfg, failures=tuple(f for f in map(parse_fault, cfg.failures) if f[0] != RESCALE))
        self.timed_faults = [f for f in self.timed_faults if f[0] != RESCALE]  # not a crash of a task
        try:
            super().run()
        finally:
            self.cfg = cfg
        if self.may_rescale:
            self.header.metadata["faults"] = self.requested_faults()

    def fire_fault(self, task: str, v, reason: str) -> bool:
        """A rescale at a situation stops the job in this tick; other faults crash a task."""
        if task != RESCALE:
            return super().fire_fault(task, v, reason)
        self.at(self.now, self.rescale)
        return True

    def requested_faults(self) -> list[dict]:
        """The header's ``metadata.faults`` of a run with rescales (docs/trace-format.md,
        "Requested faults"): a rescale is no crash of a task named ``rescale``, so the run
        says whether it happened, as it does for a crash at a situation; a crash at a time
        is judged by the trace's ``fail`` events."""
        at_situations = sum(t[2] for ts in self.fault_triggers.values() for t in ts if t[0] == RESCALE)
        done = sum(1 for r in self.recoveries if r.get("cause") == RESCALE) - at_situations
        out = []
        for entry in map(parse_fault, self.cfg.failures):
            if entry[0] == RESCALE and len(entry) == 2:
                out.append({"fault": f"rescale at tick {entry[1]}", "proc": None, "fired": done > 0})
                done -= 1
            elif len(entry) == 2:
                out.append({"fault": f"crash of {entry[0]} at tick {entry[1]}", "proc": entry[0]})
            else:  # a crash at a situation: the simulator knows if it fired
                task, name, k = entry
                fired = any(t[2] for t in self.fault_triggers.get(name, ()) if t[0] == task and t[1] == k)
                what = f"rescale at {name}#{k}" if task == RESCALE else f"crash of {task} at {name}#{k}"
                out.append({"fault": what, "proc": None if task in (SELF, RESCALE) else task, "fired": fired})
        return out

    def rescale(self) -> None:
        """Stop the whole job; restore it redistributed after ``restart_delay``."""
        if self.rescaling:
            return
        self.rescaling = True
        rec = {"tasks": [], "failed": self.now, "cause": RESCALE, "detected": self.now}
        self.recoveries.append(rec)
        for reg in self.regions:
            self.down[reg] = rec
        for t in self.tasks:
            if t.alive:
                self.stop(t)
            self.enum.idle.discard(t.pid)
        for r in sorted(self.rounds):
            if r in self.rounds:
                for reg in self.regions:
                    self.rinfo[r].decided[reg] = False
                self.evaluate(r, "rescale")
        self.at(self.now + self.cfg.restart_delay, self.restore_rescaled)

    def rescaled_state(self, line: int) -> tuple[dict, dict, dict]:
        """The checkpoint each task restores, its redistributed state and the checkpoints its
        elements come from: ``(ckpt by pid, state by pid, sources by pid)``."""
        refs = self.refs[line]
        ckpt, stored = {}, {}
        for v in self.tasks:
            ref = refs.get(v.pid, line)
            if self.protocol.rescale_by_id and line in v.round_ckpt:
                ref = line  # the state handle looked up by the checkpoint id restored
            ckpt[v.pid] = v.round_ckpt[ref] if ref else 0
            assert v.initial is not None  # set by _start_tasks
            stored[v.pid] = self.store[(v.pid, ckpt[v.pid])] if ckpt[v.pid] else v.initial
        n = len(self.readers)
        elements = [(s, p, v) for v in self.readers for s, p in sorted(stored[v.pid].state[0].items())]
        owner: dict[int, Task] = {}  # split -> the reader it is dealt to
        state: dict[int, object] = {}  # pid -> its operator's redistributed snapshot
        sources: dict[int, list] = {}
        for j, share in enumerate(deal(elements, n)):
            reader = self.readers[j]
            owner.update((s, reader) for s, _, _ in share)
            state[reader.pid] = ({s: p for s, p, _ in share}, stored[reader.pid].state[1])
            sources[reader.pid] = sorted({(v.id, ckpt[v.pid]) for _, _, v in share})
        slice_of = {s: r.subtask for s, r in owner.items()}
        for v in self.tasks:
            if isinstance(v.op, KeyedAggregate):
                peers = [u for u in self.tasks if u.spec.name == v.spec.name]
                mine = [
                    (u, k, x)
                    for u in peers
                    for k, x in stored[u.pid].state.items()
                    if slice_of.get(k[0], u.subtask) == v.subtask
                ]
                state[v.pid] = {k: x for _, k, x in mine}
                sources[v.pid] = sorted({(u.id, ckpt[u.pid]) for u, _, _ in mine})
        return ckpt, state, sources

    def restore_rescaled(self) -> None:
        """Restore every task from the latest completed checkpoint, its list state
        redistributed; readers read their new splits on the channels from those logs."""
        now = self.now
        for rec in {id(r): r for r in self.down.values()}.values():
            rec["restored"] = now
            rec["line"] = self.last_completed
        self.down.clear()
        self.restored_from.clear()  # redistributed state: no region holds a checkpoint's state as it was
        self.rescaling = False
        self.n_recoveries += 1
        k = self.n_recoveries
        line = self.last_completed
        self.rescale_base = line
        self.force_next = RESCALE
        self.epoch += 1
        chans = list(self.chans) + [c for log in self.logs.values() for c in log.chans.values()]
        self.reset_channels(chans, self.epoch)
        ckpt, state, sources = self.rescaled_state(line)
        self.redistributed = {pid: (state[pid], sources[pid]) for pid in state}
        stored = [self.restore_task(v, ckpt[v.pid], k, line or None) for v in self.tasks]
        self.redistributed = {}
        for v in self.tasks:
            v.restart_epoch = self.epoch
        self.replay_channel_state(self.tasks, stored)
        self.enum.redistribute(
            {s: reader.pid for reader in self.readers for s in reader.op.pos},
            len(self.readers),
            [r.pid for r in self.readers],
        )
        for v in self.tasks:
            if v.is_sink:
                self._publish(v, v.op.commit(self.refs[line].get(v.pid, line), self.committed[v.pid]))
        for reader in self.readers:
            unfinished = [s for s, p in sorted(reader.op.pos.items()) if p < len(self.logs[s].records)]
            for s in unfinished:
                self.logs[s].reader = reader.pid
                self.read_split(reader, self.logs[s], reader.op.pos[s])
            if not unfinished:
                self.request_split(reader)
        for v in self.tasks:
            self.step(v)
