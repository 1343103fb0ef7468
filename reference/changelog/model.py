"""Generic log-based incremental checkpoints (GIC, Flink's changelog state backend).

After "Generic Log-based Incremental Checkpoint" (Apache Flink blog): every state
update is written twice (*dual write*), into the state backend and appended to a
changelog (the DSTL) that is uploaded *continuously*; the backend is *materialized*
(snapshotted and uploaded) on its own, much longer interval; a checkpoint flushes
only the not-yet-uploaded changelog tail, and its handle is "materialized snapshot
+ changelog range"; changelog segments are truncated once a materialization covers
them and no retained checkpoint references them any more (subsumption).

The model: ``parallelism`` keyed counting tasks ``task[i]`` read ``records``
records each from ``source`` (one record per task per step; the key of record
``seq`` is a pure function of the seed, so a restored source regenerates the same
input). Change number ``sqn`` (0, 1, ...) is the position of a change in the task's
effective history. Coordinated aligned rounds every ``checkpoint_every`` steps;
materialization of task ``i`` every ``materialize_every`` steps (offset per task, as
the post's Figure 4 randomizes them), taking ``materialize_time`` steps; changelog
upload every ``upload_every`` steps. The checkpoint store retains the latest
``retained`` completed rounds; the shared-state registry counts references of
retained checkpoints to artifacts and deletes an artifact (after ``gc_delay``
steps, asynchronously) when its count drops to 0. A failure stops the job; after
``restart_delay`` steps every process restores the latest completed round; the
registry is rebuilt from the retained checkpoints.

Trace vocabulary (v1 events, docs/checker.md "Changelog checkpoints"):

* artifact creation: ``output`` of the task, ``attrs {"artifact": id, "op": "create",
  "type": "materialization" | "changelog", "from": lo, "to": hi}``, value = bytes;
  the artifact holds changes ``lo ≤ sqn < hi`` (a materialization: ``lo = 0``);
* artifact deletion: ``output`` of the coordinator (value = the id), ``attrs {"artifact": id,
  "op": "delete"}``;
* checkpoint handle: the task's ``checkpoint`` ``vars {"materialization": id | null,
  "upto": u, "changelog": [[segment id, from, to], ...], "sqn": n}`` — restore
  applies the snapshot, then each listed range; ``size`` = bytes uploaded by the
  checkpoint itself (the flushed tail).

Mechanisms a mutant overrides: ``tail_start`` (the materialization boundary,
FLINK-25492) and ``discard`` (subsumed-checkpoint cleanup, FLINK-7268).
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from snapcheck.traces.recorder import TraceRecorder

ENTRY = 16  # bytes per changelog entry and per materialized state entry

DEFAULTS = {
    "checkpoint_every": 10,
    "materialize_every": 40,
    "materialize_time": 3,
    "upload_every": 3,
    "retained": 1,
    "gc_delay": 6,
    "restart_delay": 2,
    "keys": 64,
}


@dataclass
class Artifact:
    id: str
    kind: str  # "materialization" | "changelog"
    lo: int
    hi: int
    size: int
    state: dict | None = None  # materialization: the snapshot
    changes: list = field(default_factory=list)  # changelog: (key, delta) for sqn lo..hi-1


class GicTask:
    def __init__(self, name: str) -> None:
        self.name = name
        self.state: dict[int, int] = {}
        self.sqn = 0  # changes applied (effective)
        self.log: list = []  # the changelog of this epoch: (sqn, key, delta), not yet truncated
        self.uploaded = 0  # changes < uploaded are in segments
        self.segments: list[Artifact] = []
        self.mat: Artifact | None = None
        self.pending: tuple | None = None  # (upto, snapshot, finishes at step)
        self.dirty: set[int] = set()  # keys changed since the last checkpoint (baseline metric)


class GicModel:
    """One run of the GIC model; ``run()`` returns the recorder."""

    name = "gic-changelog"

    def __init__(self, params: dict, parallelism: int, records: int, seed: int, failures=()) -> None:
        self.p = {**DEFAULTS, **params}
        self.n = parallelism
        self.records = records
        self.seed = seed
        self.failures = sorted((int(t), str(task)) for task, t in failures)
        self.tasks = [GicTask(f"task[{i}]") for i in range(parallelism)]
        unknown = sorted({who for _, who in self.failures} - {t.name for t in self.tasks})
        if unknown:
            raise ValueError(
                f"failure names no task: {', '.join(unknown)} (tasks: {', '.join(t.name for t in self.tasks)})"
            )
        procs = (
            [{"id": "source", "role": "source"}]
            + [{"id": t.name} for t in self.tasks]
            + [{"id": "coordinator", "role": "coordinator"}]
        )
        chans = [(self.ch(i), "source", t.name) for i, t in enumerate(self.tasks)]
        self.rec = TraceRecorder(procs, chans, protocol="gic-changelog", params=self.header_params(), seed=seed)
        self.artifacts: dict[str, Artifact] = {}
        self.counter = 0
        self.refs: dict[str, int] = {}
        self.retained: deque = deque()  # (round, {task: handle})
        self.gc_queue: list = []  # (step, action, payload)
        self.round = 0
        self.last_complete: tuple | None = None  # (round, {proc: ckpt}, {task: handle}, offsets)
        self.offsets = [0] * parallelism  # records sent per task (the source's position)
        self.down_until: int | None = None
        self.recoveries = 0
        self.m: dict[str, Any] = {  # a count, or a list of samples
            "checkpoint_bytes": [],
            "incremental_bytes": [],
            "full_bytes": [],
            "background_bytes": 0,
            "materialization_bytes": 0,
            "materializations": 0,
            "deleted": 0,
            "missing_at_restore": 0,
            "restores": 0,
        }
        self.steps = 0

    def header_params(self) -> dict:
        return dict(self.p)

    @staticmethod
    def ch(i: int) -> str:
        return f"source->task[{i}]"

    def phase(self, i: int) -> int:
        """Materializations of the tasks are spread over the interval (the post's Figure 4)."""
        return (7 + i * 13) % self.p["materialize_every"]

    def key(self, i: int, seq: int) -> int:
        return random.Random(f"{self.seed}/{i}/{seq}").randrange(self.p["keys"])

    # -- mechanisms (mutants override) -------------------------------------------------
    def tail_start(self, upto: int) -> int:
        """First change of the changelog tail after a materialization up to ``upto``:
        ``Materialization.upTo`` is an exclusive boundary (the snapshot holds sqn < upto)."""
        return upto

    def discard(self, step: int, handles: dict) -> None:
        """Subsumption of a retained checkpoint: release its references now; deleting
        what nobody references is the asynchronous part."""
        for aid in self.referenced(handles):
            self.refs[aid] -= 1
            if self.refs[aid] == 0:
                self.gc_queue.append((step + self.p["gc_delay"], "delete", aid))

    # -- artifacts -----------------------------------------------------------------------
    def create(self, task: GicTask, kind: str, lo: int, hi: int, size: int, **kw) -> Artifact:
        self.counter += 1
        a = Artifact(f"{task.name}/{kind[0]}{self.counter}", kind, lo, hi, size, **kw)
        self.artifacts[a.id] = a
        self.rec.output(task.name, size, attrs={"artifact": a.id, "op": "create", "type": kind, "from": lo, "to": hi})
        return a

    def delete(self, aid: str) -> None:
        if aid in self.artifacts:
            del self.artifacts[aid]
            self.refs.pop(aid, None)
            self.m["deleted"] += 1
            self.rec.output("coordinator", aid, attrs={"artifact": aid, "op": "delete"})

    @staticmethod
    def referenced(handles: dict) -> list[str]:
        out = []
        for h in handles.values():
            if h["materialization"]:
                out.append(h["materialization"])
            out.extend(s for s, _, _ in h["changelog"])
        return out

    # -- the task ------------------------------------------------------------------------
    def process(self, i: int, t: GicTask) -> None:
        seq = self.offsets[i] + 1
        k = self.key(i, seq)
        mid = self.rec.send("source", self.ch(i), key=k, value=1)
        self.offsets[i] = seq
        self.rec.recv(t.name, mid)
        t.state[k] = t.state.get(k, 0) + 1  # dual write: the backend ...
        t.log.append((t.sqn, k, 1))  # ... and the changelog
        t.sqn += 1
        t.dirty.add(k)

    def upload(self, t: GicTask) -> int:
        """Upload the changelog not yet uploaded as one segment; returns its bytes."""
        if t.uploaded >= t.sqn:
            return 0
        changes = [(k, d) for s, k, d in t.log if s >= t.uploaded]
        a = self.create(t, "changelog", t.uploaded, t.sqn, len(changes) * ENTRY, changes=changes)
        t.segments.append(a)
        t.uploaded = t.sqn
        return a.size

    def materialize(self, t: GicTask, step: int) -> None:
        if t.pending is None:
            t.pending = (t.sqn, dict(t.state), step + self.p["materialize_time"])
        elif step >= t.pending[2]:
            upto, snap, _ = t.pending
            t.pending = None
            t.mat = self.create(t, "materialization", 0, upto, len(snap) * ENTRY, state=snap)
            self.m["materializations"] += 1
            self.m["materialization_bytes"] += t.mat.size
            start = self.tail_start(upto)
            t.log = [c for c in t.log if c[0] >= start]  # truncation of the local log
            t.segments = [s for s in t.segments if s.hi > start]  # no longer needed by new checkpoints

    def handle(self, t: GicTask) -> dict:
        start = self.tail_start(t.mat.hi) if t.mat else 0
        ranges = [[s.id, max(s.lo, start), s.hi] for s in t.segments if s.hi > start]
        return {
            "materialization": t.mat.id if t.mat else None,
            "upto": t.mat.hi if t.mat else 0,
            "changelog": ranges,
            "sqn": t.sqn,
        }

    # -- coordination ----------------------------------------------------------------------
    def checkpoint_round(self, step: int) -> None:
        self.round += 1
        r = self.round
        rec = self.rec
        rec.round_start("coordinator", r)
        ckpts = {"source": rec.checkpoint("source", "coordinated", round=r, vars={"offsets": list(self.offsets)})}
        handles = {}
        for i, t in enumerate(self.tasks):
            b = rec.barrier("source", self.ch(i), r)
            rec.recv(t.name, b)
            flushed = self.upload(t)
            h = handles[t.name] = self.handle(t)
            ckpts[t.name] = rec.checkpoint(t.name, "coordinated", round=r, vars=h, size=flushed)
            self.m["checkpoint_bytes"].append(flushed)
            self.m["incremental_bytes"].append(len(t.dirty) * ENTRY)
            self.m["full_bytes"].append(len(t.state) * ENTRY)
            t.dirty = set()
        rec.round_complete("coordinator", r)
        self.last_complete = (r, ckpts, handles, list(self.offsets))
        for aid in self.referenced(handles):
            self.refs[aid] = self.refs.get(aid, 0) + 1
        self.retained.append((r, handles))
        while len(self.retained) > self.p["retained"]:
            self.discard(step, self.retained.popleft()[1])

    def run_gc(self, step: int) -> None:
        due = [g for g in self.gc_queue if g[0] <= step]
        self.gc_queue = [g for g in self.gc_queue if g[0] > step]
        for _, action, payload in due:
            if action == "delete":
                if self.refs.get(payload, 0) == 0:
                    self.delete(payload)
            else:  # a deferred discard (see the FLINK-7268 mutant)
                for aid in self.referenced(payload):
                    if aid in self.refs:
                        self.refs[aid] -= 1
                        if self.refs[aid] <= 0:
                            self.delete(aid)

    def recover(self) -> None:
        self.recoveries += 1
        rec = self.rec
        r, ckpts, handles, offsets = self.last_complete or (None, {}, {}, [0] * self.n)
        self.refs = {}
        for _, hs in self.retained:  # the registry, rebuilt from the store
            for aid in self.referenced(hs):
                self.refs[aid] = self.refs.get(aid, 0) + 1
        rec.restore("source", ckpts.get("source", 0), recovery=self.recoveries, round=r)
        self.offsets = list(offsets)
        for t in self.tasks:
            rec.restore(t.name, ckpts.get(t.name, 0), recovery=self.recoveries, round=r)
        for t in self.tasks:
            self.restore_task(t, handles.get(t.name))

    def restore_task(self, t: GicTask, h: dict | None) -> None:
        """Rebuild the backend from the handle: the snapshot, then the changelog ranges."""
        self.m["restores"] += 1
        t.state, t.sqn, t.log, t.segments, t.mat, t.pending, t.dirty = {}, 0, [], [], None, None, set()
        if h is None:
            t.uploaded = 0
            return
        mat = self.artifacts.get(h["materialization"]) if h["materialization"] else None
        if h["materialization"] and mat is None:
            self.m["missing_at_restore"] += 1
        if mat is not None:
            assert mat.state is not None  # a materialization holds its snapshot
            t.state = dict(mat.state)
            t.mat = mat
        for sid, lo, hi in h["changelog"]:
            seg = self.artifacts.get(sid)
            if seg is None:
                self.m["missing_at_restore"] += 1
                continue
            t.segments.append(seg)
            for k, d in seg.changes[lo - seg.lo : hi - seg.lo]:
                t.state[k] = t.state.get(k, 0) + d
        t.sqn = t.uploaded = h["sqn"]

    def run(self) -> TraceRecorder:
        p = self.p
        step = 0
        fails = list(self.failures)
        while any(o < self.records for o in self.offsets) or self.down_until is not None:
            step += 1
            self.run_gc(step)
            if self.down_until is not None:
                if step >= self.down_until:
                    self.down_until = None
                    self.recover()
                continue
            if fails and fails[0][0] <= step:
                _, who = fails.pop(0)
                self.rec.fail(who, reason="injected")
                self.down_until = step + p["restart_delay"]
                continue
            for i, t in enumerate(self.tasks):
                if self.offsets[i] < self.records:
                    self.process(i, t)
                if (step + self.phase(i)) % p["materialize_every"] == 0 or t.pending is not None:
                    self.materialize(t, step)
                if step % p["upload_every"] == 0:
                    self.m["background_bytes"] += self.upload(t)
            if step % p["checkpoint_every"] == 0:
                self.checkpoint_round(step)
        self.checkpoint_round(step + 1)  # the final checkpoint
        self.steps = step + 1
        for s in range(step + 1, step + 2 + p["gc_delay"]):
            self.run_gc(s)
        return self.rec

    def metrics(self) -> dict:
        def mean(xs):
            return round(sum(xs) / len(xs), 1) if xs else 0.0

        m = self.m
        return {
            "protocol": self.name,
            "sim_time": self.steps,
            "recoveries": self.recoveries,
            "checkpoint_bytes_mean": mean(m["checkpoint_bytes"]),
            "checkpoint_bytes_max": max(m["checkpoint_bytes"], default=0),
            "incremental_bytes_mean": mean(m["incremental_bytes"]),
            "incremental_bytes_max": max(m["incremental_bytes"], default=0),
            "full_bytes_mean": mean(m["full_bytes"]),
            "background_bytes": m["background_bytes"],
            "materialization_bytes": m["materialization_bytes"],
            "materializations": m["materializations"],
            "artifacts_deleted": m["deleted"],
            "artifacts_live": len(self.artifacts),
            "missing_at_restore": m["missing_at_restore"],
        }

    def final_states(self) -> dict:
        return {t.name: dict(sorted(t.state.items())) for t in self.tasks}


class InclusiveBoundaryModel(GicModel):
    """FLINK-25492 (apache/flink#18555): the in-memory changelog writer treats
    ``Materialization.upTo`` as *inclusive*: the tail starts after change ``upto``,
    which the snapshot does not hold — a gap at the materialization boundary."""

    def tail_start(self, upto: int) -> int:
        return upto + 1 if upto else 0


class GcRaceModel(GicModel):
    """FLINK-7268 (apache/flink#4410): the subsumed checkpoint is discarded
    asynchronously, references included; a discard pending across a restart
    decrements the registry that recovery re-created, so shared artifacts the
    restored checkpoint references are deleted."""

    def discard(self, step: int, handles: dict) -> None:
        self.gc_queue.append((step + self.p["gc_delay"], "discard", handles))
