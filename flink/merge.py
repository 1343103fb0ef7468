"""Merge the per-subtask trace files of one traced Flink run into one v1 trace.

A run directory holds ``run.json`` (written by ``snapcheck.flink.Main``: job, mode,
configuration, topology, injected faults, final status) and one file per traced
operator subtask *attempt*, ``<op>-<subtask>-<attempt>.jsonl``: a header line, then
events ``{"g", "t", "e", ...}`` where ``g`` is a JVM-wide counter (a total order
consistent with real time; senders log a send before handing the record to Flink,
so a send always precedes its receive) and ``t`` is microseconds since the run
started. Event kinds: ``recv`` {from, src, att, n} (processing of the record with
that identity), ``send`` {n, to?, key?}, ``ckpt`` {id}, ``restore`` {id, state},
``notify`` {id}, ``abort`` {id}, ``fail`` {reason}, ``close``.

The mapping onto the trace format (docs/trace-format.md; docs/theory.md, "Conventions",
"Replayed messages keep their identity", "Inputs and outputs" and "Coordinated snapshots"):

* processes: ``op[i]`` per traced operator subtask, one process across all its
  attempts (attempt k+1 starts with ``restore``); ``op.input[i]`` (role
  ``external``) is split i of a replayable source; ``coordinator`` (role
  ``coordinator``) carries round completions and aborts.
* channels: ``op[i]>down[j]`` as the job's partitioner connects them (forward:
  i→i; keyed and rebalance: all pairs), ``op.input[i]>op[i]`` for source splits.
* identity: a record's envelope ``(op, src, att, n)`` names the send event that
  emitted it. Sequence numbers are per channel in the *effective history*: a
  restore of checkpoint k resets the sender's counters to their values at k, so a
  regenerated record reuses its ``(ch, seq)`` under a new mid (``ch:seq@epoch``).
  Rebalance targets are Flink's round robin from a random start per sender attempt;
  the start is inferred from where that attempt's records were processed.
* ``restore``: the checkpoint id Flink reports to the operator
  (``getRestoredCheckpointId``; 0 = restarted from scratch), ``recovery`` = Flink's
  attempt number. A subtask whose attempt ended without an injected ``fail`` was
  cancelled by the failover: it gets a ``fail`` (its volatile state is lost).
* source re-reads after a restore are ``replay`` events of the external split
  (``from: source``); the first read of an offset is the split's ``send``.
* channel state, observed by its effect: Flink restarts all subtasks of a failover
  region together (every job here is one region: its edges are pipelined), so a
  record that an attempt of the receiver processes but an *earlier* attempt of
  its sender emitted can only come from the recorded channel state of the
  restored (unaligned) checkpoint. It becomes a ``replay`` (``from:
  channel_state``) by the receiver, and the replayed records of each input channel
  are the ``record`` of the restored checkpoint (input part). The record is
  emitted only when the observation is complete: a record of the new generation
  was processed on that channel afterwards (FIFO: recovered data comes first) or
  the run ended quiescent. A channel of a checkpoint that was never restored has
  no ``record``: its channel state is unobservable (protocol param
  ``channel_state: observed-at-restore``).
* rounds: checkpoint id = ``round`` = ``ckpt`` (Flink's ids increase across
  restarts, so they are valid process-local numbers). The first
  ``notifyCheckpointComplete(n)`` is the coordinator's ``round_complete``, the first
  ``notifyCheckpointAborted(n)`` its ``round_abort``; when a run ends quiescent,
  rounds still pending were cut off by the final cancel and get ``round_abort``.

Anything Flink did that the model cannot express (a record routed elsewhere than
its partitioner says, a restore of a checkpoint the subtask never took, a
processed record whose send was never traced, ...) is an *anomaly*: listed in
``metadata.flink.anomalies`` and in ``MergeResult.anomalies``, and it makes the
run's verdict a violation.
"""

from __future__ import annotations

import bisect
import os
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import orjson

from snapcheck.flink.rescale import VirtualChannels, intersect, round_offsets
from snapcheck.traces.errors import TraceError, TraceErrors
from snapcheck.traces.lines import Unreadable, integer_problem, split_lines
from snapcheck.traces.writer import dumps_trace, write_trace

_FILE = re.compile(r"^(?:g(?P<gen>\d+)\.)?(?P<op>.+)-(?P<subtask>\d+)-(?P<attempt>\d+)\.jsonl$")
COORDINATOR = "coordinator"
INPUT = "@input"
SPLIT = "source split"
ALIGNED_MODES = ("aligned", "at-least-once")


@dataclass
class Attempt:
    op: str
    subtask: int
    attempt: int
    header: dict
    events: list[dict]
    path: str
    gen: int = 0

    @property
    def proc(self) -> str:
        return proc_id(self.op, self.subtask, self.gen)


@dataclass
class MergeResult:
    header: dict
    events: list[dict]
    anomalies: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def dumps(self) -> bytes:
        return dumps_trace(self.header, self.events)

    def write(self, path: str) -> None:
        """Write the merged trace to ``path`` atomically."""
        write_trace(path, self.header, self.events)


def proc_id(op: str, subtask: int, gen: int = 0) -> str:
    """The trace's process of a subtask: ``op[i]``, and ``g<gen>.op[i]`` in a later job generation
    (the job restored at another parallelism).

    >>> proc_id("agg", 1), proc_id("agg", 0, 1)
    ('agg[1]', 'g1.agg[0]')
    """
    return f"{op}[{subtask}]" if gen == 0 else f"g{gen}.{op}[{subtask}]"


def recovery_id(gen: int, attempt: int) -> int:
    """The trace's ``recovery`` of Flink attempt ``attempt`` in job generation ``gen``."""
    return gen * 1000 + attempt


def input_id(op: str, split: int) -> str:
    return f"{op}.input[{split}]"


def protocol_name(mode: str) -> str:
    return f"flink-{mode}"


# -- loading ------------------------------------------------------------------------
def _ends_with_newline(f) -> bool:
    size = f.seek(0, os.SEEK_END)
    if size == 0:
        return False
    f.seek(size - 1)
    return f.read(1) == b"\n"


def _read_jsonl(path: str) -> list[tuple[int, dict]]:
    """The JSON objects of a per-subtask file (lines of bounded length, integers within
    64 bits); a malformed last line without its newline was cut off mid-write and is dropped."""
    rows = []
    broken: TraceError | None = None
    try:
        with open(path, "rb") as f:
            for n, raw in split_lines(f, path):
                if broken is not None:
                    raise TraceErrors([broken])
                if not raw.strip():
                    continue
                try:
                    obj = orjson.loads(raw)
                except orjson.JSONDecodeError as exc:
                    broken = TraceError(path, n, f"malformed JSON: {exc}")
                    continue
                problem = integer_problem(raw)
                if problem is not None:
                    raise TraceErrors([TraceError(path, n, problem)])
                if not isinstance(obj, dict):
                    raise TraceErrors([TraceError(path, n, "expected a JSON object")])
                rows.append((n, obj))
            if broken is not None and _ends_with_newline(f):
                raise TraceErrors([broken])
    except OSError as exc:
        raise TraceErrors([TraceError(path, 0, f"cannot read: {exc.strerror}")]) from None
    except Unreadable as exc:
        raise TraceErrors([TraceError(path, exc.line, exc.reason)]) from None
    return rows


def load_run(run_dir: str) -> tuple[dict, list[Attempt]]:
    """``run.json`` and every per-subtask attempt file of a run directory."""
    run_path = os.path.join(run_dir, "run.json")
    try:
        with open(run_path, "rb") as f:
            run = orjson.loads(f.read())
    except OSError as exc:
        raise TraceErrors(
            [TraceError(run_path, 0, f"cannot open: {exc.strerror} (did the Flink run finish?)")]
        ) from None
    except orjson.JSONDecodeError as exc:
        raise TraceErrors([TraceError(run_path, 1, f"malformed JSON: {exc}")]) from None
    for key in ("job", "mode", "topology", "status"):
        if key not in run:
            raise TraceErrors([TraceError(run_path, 1, f"missing field {key!r}")])
    attempts = []
    for name in sorted(os.listdir(run_dir)):
        m = _FILE.match(name)
        if not m:
            continue
        path = os.path.join(run_dir, name)
        rows = _read_jsonl(path)
        if not rows:
            continue
        line, header = rows[0]
        for key in ("op", "subtask", "attempt"):
            if key not in header:
                raise TraceErrors([TraceError(path, line, f"bad subtask header: missing {key!r}")])
        events = []
        for line, ev in rows[1:]:
            if "g" not in ev or "e" not in ev:
                raise TraceErrors([TraceError(path, line, "an event needs fields 'g' and 'e'")])
            ev["_line"] = line
            events.append(ev)
        attempts.append(
            Attempt(
                header["op"],
                int(header["subtask"]),
                int(header["attempt"]),
                header,
                events,
                path,
                int(header.get("gen", 0)),
            )
        )
    return run, attempts


# -- topology -----------------------------------------------------------------------
class Topology:
    """Processes and channels of the run, from ``run.json``'s topology of each job generation
    (``generations``; a run without a rescale has one). The processes of a later generation
    ``appear``; its source subtasks may read any split of the first generation (the splits are
    redistributed), so every split is connected to each of them."""

    def __init__(self, run: dict):
        gens = run.get("generations") or [{"gen": 0, "topology": run["topology"]}]
        self.by_gen: dict[int, dict[str, dict]] = {g["gen"]: {o["op"]: o for o in g["topology"]} for g in gens}
        self.ops = self.by_gen[0]
        self.processes: list[dict] = []
        self.channels: list[dict] = []
        for o in run["topology"]:
            if INPUT in o.get("inputs", ()):
                for i in range(o["parallelism"]):
                    self.processes.append(
                        {"id": input_id(o["op"], i), "role": "external", "operator": f"{o['op']}.input", "subtask": i}
                    )
        for gen, ops in self.by_gen.items():
            for o in ops.values():
                for i in range(o["parallelism"]):
                    self.processes.append(
                        {
                            "id": proc_id(o["op"], i, gen),
                            "role": o["role"],
                            "operator": o["op"],
                            "subtask": i,
                            "worker": "minicluster",
                            **({"appears": True} if gen else {}),
                        }
                    )
        self.processes.append({"id": COORDINATOR, "role": "coordinator"})
        self.dst: dict[str, str] = {}
        for gen, ops in self.by_gen.items():
            for o in ops.values():
                if INPUT in o.get("inputs", ()):
                    splits = self.ops[o["op"]]["parallelism"]
                    for i in range(o["parallelism"]):
                        for k in range(splits) if gen else [i]:
                            self._channel(input_id(o["op"], k), proc_id(o["op"], i, gen), SPLIT)
                out = o.get("out")
                if not out:
                    continue
                p, q = o["parallelism"], out["parallelism"]
                for i in range(p):
                    targets = [i] if out["mode"] == "forward" else range(q)
                    for j in targets:
                        self._channel(proc_id(o["op"], i, gen), proc_id(out["to"], j, gen), out["mode"])

    def _channel(self, src: str, dst: str, partitioner: str) -> None:
        cid = f"{src}>{dst}"
        self.channels.append({"id": cid, "src": src, "dst": dst, "attrs": {"partitioner": partitioner}})
        self.dst[cid] = dst

    def inputs_of(self, proc: str) -> list[str]:
        """The data channels into ``proc`` from other traced operators (not source splits)."""
        return [c["id"] for c in self.channels if c["dst"] == proc and c["attrs"]["partitioner"] != SPLIT]


# -- merging ------------------------------------------------------------------------
class _Proc:
    """Per-process state of the merge pass (effective-history sequence counters)."""

    def __init__(self):
        self.epoch = 0
        self.counters: dict[str, int] = {}
        self.seq_at: dict[int, dict[str, int]] = {0: {}}
        self.last_ckpt = 0
        self.restore: _RestoreObs | None = None
        self.rescaled: dict | None = None  # the restore event of an appearing process (patched by splits)
        self.ckpt_g: dict[int, int] = {}  # checkpoint -> g of its event


class _RestoreObs:
    """What one restore of checkpoint ``ckpt`` replayed from channel state, per channel."""

    def __init__(self, proc: str, ckpt: int, key: tuple, last_attempt: bool):
        self.proc = proc
        self.ckpt = ckpt
        self.key = key
        self.last_attempt = last_attempt
        self.replayed: dict[str, list[str]] = defaultdict(list)
        self.new_data: set[str] = set()


def merge_run(run_dir: str) -> MergeResult:
    """Merge a run directory into a v1 trace (``MergeResult``; see the module docstring)."""
    run, attempts = load_run(run_dir)
    return merge(run, attempts)


def merge(run: dict, attempts: list[Attempt]) -> MergeResult:
    return _Merger(run, attempts).result()


class _Merger:
    """One pass over all events in ``g`` order; output events carry sort keys ``(g, sub, n)``
    (sub -1: synthesized just before the event at g, 0: the event, 1: a synthesized failure,
    2: a ``record`` after a restore, 9: end of the run)."""

    def __init__(self, run: dict, attempts: list[Attempt]):
        self.run = run
        self.topo = Topology(run)
        self.anomalies: list[str] = []
        self.notes: list[str] = []
        self.by_proc: dict[str, list[Attempt]] = defaultdict(list)
        for a in attempts:
            if a.op not in self.topo.by_gen.get(a.gen, {}):
                raise TraceErrors(
                    [TraceError(a.path, 1, f"operator {a.op!r} of generation {a.gen} is not in run.json's topology")]
                )
            self.by_proc[a.proc].append(a)
        for lst in self.by_proc.values():
            lst.sort(key=lambda a: a.attempt)
        self.stream = self._stream()
        self._generations()
        self.rebalance_start = _rebalance_starts(self.topo, self.stream, self.anomalies)
        self.out: list[tuple[tuple, dict]] = []
        self._lifecycle()
        self.procs = {p: _Proc() for p in self.by_proc}
        self.msgs: dict[tuple, tuple[str, str]] = {}  # envelope identity -> (mid, channel)
        self.ext_sent: dict[str, dict[int, str]] = defaultdict(dict)
        self.ext_last: dict[str, int] = defaultdict(int)
        self.replays: Counter = Counter()
        self.observations: list[_RestoreObs] = []
        self.completed: dict[int, int] = {}
        self.aborted: dict[int, int] = {}
        self.round_first: dict[int, int] = {}
        self.fail_gs: list[int] = []
        self.unknown_start: set = set()
        self.holder: dict[str, str] = {}  # state partition / split -> process holding it
        for proc, lst in self.by_proc.items():
            a = lst[0]
            if a.gen == 0 and a.header.get("keeps_state", True):
                self.holder[f"{proc}.state"] = proc
            if a.gen == 0 and INPUT in self.topo.ops[a.op].get("inputs", ()):
                self.holder[input_id(a.op, a.subtask)] = proc
        self.carried: dict[str, list[tuple[int, str]]] = defaultdict(list)  # old channel -> (seq, mid) replayed
        handlers = {
            "restore": self._restore,
            "ckpt": self._ckpt,
            "send": self._send,
            "recv": self._recv,
            "notify": self._notify,
            "abort": self._abort,
            "fail": self._fail,
            "splits": self._splits,
        }
        for g, proc, k, a, ev in self.stream:
            kind = ev["e"]
            t = ev.get("t")
            self.base = {"t": round(t / 1000.0, 3)} if t is not None else {}
            self.where = f"{a.path} line {ev['_line']}"
            if a.gen > 0 and k == 0 and ev is a.events[0] and kind != "restore" and a.gen in self.rescaled_from:
                # Flink gave this new subtask no state at all, so it reports no restore; it was
                # deployed as part of the restore all the same.
                self._rescale_restore(g, proc, a, self.rescaled_from[a.gen], [], inferred=True)
            h = handlers.get(kind)
            if h is not None:
                h(g, proc, k, a, ev)
            elif kind != "close":
                self.anomalies.append(f"unknown event kind {kind!r} ({self.where})")

    def _stream(self) -> list[tuple]:
        """Every event with its process and attempt position, in ``g`` order; events an attempt
        logged after its injected failure are dropped (the process is failed by then)."""
        stream = []
        for proc, lst in self.by_proc.items():
            for k, a in enumerate(lst):
                evs = a.events
                cut = next((j for j, ev in enumerate(evs) if ev["e"] == "fail"), None)
                if cut is not None:
                    late = [e for e in evs[cut + 1 :] if e["e"] != "close"]
                    if late:
                        self.notes.append(
                            f"{proc} attempt {a.attempt}: {len(late)} event(s) after its injected "
                            f"failure dropped ({a.path} line {late[0]['_line']})"
                        )
                    evs = evs[: cut + 1]
                stream.extend((ev["g"], proc, k, a, ev) for ev in evs)
        stream.sort(key=lambda x: x[0])
        dup = [g for g, c in Counter(x[0] for x in stream).items() if c > 1]
        if dup:
            raise TraceErrors(
                [
                    TraceError(
                        "run",
                        0,
                        f"event order counter g repeats ({dup[:3]}): the per-subtask files do not come from one run",
                    )
                ]
            )
        return stream

    def _generations(self) -> None:
        """Rounds per job generation (``round_offsets``), the checkpoint each later generation was
        restored from, where it starts, and the virtual channels of the rescale."""
        max_id: dict[int, int] = defaultdict(int)
        self.rescaled_from: dict[int, int] = {}
        self.gen_start: dict[int, int] = {}
        for g, _proc, _, a, ev in self.stream:
            self.gen_start.setdefault(a.gen, g)
            if ev["e"] in ("ckpt", "notify", "abort"):
                max_id[a.gen] = max(max_id[a.gen], int(ev["id"]))
            elif ev["e"] == "restore" and a.gen > 0 and a.attempt == 0:
                self.rescaled_from.setdefault(a.gen, int(ev.get("id", 0)))
        self.offset = round_offsets(dict(max_id), self.rescaled_from)
        self.vchannels = VirtualChannels(self.run.get("rescale"))
        self.rescale_note = None

    def _round(self, gen: int, ckpt: int) -> int:
        return ckpt + self.offset.get(gen, 0)

    def _lifecycle(self) -> None:
        """``fail`` / ``restore`` events that no subtask logged, implied by Flink's failover:

        * an attempt that ended without an injected failure and was followed by another attempt
          was cancelled by the failover: ``fail``, placed at the failover (the first injected
          failure at or after the attempt's start) or after its last event, whichever is later;
        * an attempt that Flink deployed but that never reached ``initializeState`` (a second
          failure during the recovery) leaves a gap in the subtask's attempt numbers. Flink
          restores every task of a global failover from one checkpoint, so the gap becomes a
          ``restore`` of the checkpoint the other subtasks of that recovery restored (marked
          ``attrs.inferred``) and the ``fail`` of the next failover. Without it the subtask would
          look like a survivor that kept its pre-failure state during that recovery."""
        fails = sorted(g for g, _, _, _, ev in self.stream if ev["e"] == "fail")
        restored: dict[int, set[int]] = defaultdict(set)
        first_restore: dict[int, int] = {}
        taken: dict[str, set[int]] = defaultdict(lambda: {0})
        for g, proc, _, a, ev in self.stream:
            if ev["e"] == "restore":
                restored[(a.gen, a.attempt)].add(int(ev.get("id", -1)))
                first_restore.setdefault((a.gen, a.attempt), g)
            elif ev["e"] == "ckpt":
                taken[proc].add(int(ev["id"]))

        def failover(after: int, before: float) -> int | None:
            i = bisect.bisect_left(fails, after)
            return fails[i] if i < len(fails) and fails[i] < before else None

        for proc, lst in self.by_proc.items():
            for k, a in enumerate(lst[:-1]):
                if not a.events:
                    continue
                nxt = lst[k + 1]
                next_g = nxt.events[0]["g"] if nxt.events else float("inf")
                own = next((e["g"] for e in a.events if e["e"] == "fail"), None)
                if own is None:
                    f = failover(a.events[0]["g"], next_g)
                    own = max(f if f is not None else 0, a.events[-1]["g"])
                    self.out.append(
                        (
                            (own, 1, proc, 0),
                            {
                                "type": "fail",
                                "proc": proc,
                                "reason": (f"cancelled by the failover (attempt {a.attempt} ended)"),
                            },
                        )
                    )
                for r in range(a.attempt + 1, nxt.attempt):
                    ids = restored.get((a.gen, r), set())
                    g_r = max(first_restore.get((a.gen, r), 0), own)
                    if len(ids) != 1 or next(iter(ids)) not in taken[proc] or g_r >= next_g:
                        self.notes.append(
                            f"{proc}: attempt {r} never reached initializeState and the checkpoint "
                            f"it was restored from is unknown"
                        )
                        continue
                    ckpt = next(iter(ids))
                    e = {
                        "type": "restore",
                        "proc": proc,
                        "ckpt": ckpt,
                        "recovery": recovery_id(a.gen, r),
                        "attrs": {
                            "inferred": f"attempt {r} was cancelled before initializeState; Flink "
                            f"restores every task of a failover from checkpoint {ckpt}"
                        },
                    }
                    if ckpt > 0:
                        e["round"] = self._round(a.gen, ckpt)
                    self.out.append(((g_r, 1, proc, 1), e))
                    f = failover(g_r, next_g)
                    own = max(f if f is not None else 0, g_r)
                    self.out.append(
                        (
                            (own, 1, proc, 2),
                            {
                                "type": "fail",
                                "proc": proc,
                                "reason": (f"cancelled by the failover (attempt {r} ended before initializeState)"),
                            },
                        )
                    )

    def _retire_rescaled(self, quiescent: bool) -> None:
        """Each process of a generation that a later one was restored from retires at the restored
        checkpoint, just before the later generation starts; in unaligned modes, once the run ended
        quiescent, each of its input channels first gets the ``record`` of that checkpoint: the
        records of the old channel that the new generation processed, in send order."""
        unaligned = self.run.get("mode") not in ALIGNED_MODES
        for gen, ckpt in sorted(self.rescaled_from.items()):
            start = self.gen_start[gen]
            n = 0
            for proc, lst in sorted(self.by_proc.items()):
                if lst[0].gen != gen - 1:
                    continue
                at = self.procs[proc].ckpt_g.get(ckpt)
                if unaligned and quiescent and at is not None:
                    for ch in self.topo.inputs_of(proc):
                        n += 1
                        mids = [m for _, m in sorted(self.carried.get(ch, ()))]
                        self.out.append(
                            (
                                (at, 0, 1 + n),
                                {"type": "record", "proc": proc, "ckpt": ckpt, "ch": ch, "part": "input", "mids": mids},
                            )
                        )
                n += 1
                e = {
                    "type": "retire",
                    "proc": proc,
                    "reason": f"rescaled: generation {gen} restores checkpoint "
                    f"{ckpt} at parallelism "
                    f"{max(o['parallelism'] for o in self.topo.by_gen[gen].values())}",
                }
                if ckpt in self.procs[proc].seq_at:
                    e["ckpt"] = ckpt
                else:
                    self.anomalies.append(f"{proc} never took checkpoint {ckpt}, which generation {gen} restores")
                self.out.append(((start, -2, n), e))
            if unaligned and not quiescent:
                self.notes.append(
                    f"the run did not end quiescent: the channel state of checkpoint {ckpt} restored by "
                    f"generation {gen} is not recorded (not judged)"
                )

    def _emit(self, key: tuple, ev: dict) -> None:
        self.out.append((key, {**ev, **self.base}))

    # -- handlers ------------------------------------------------------------------------
    def _restore(self, g, proc, k, a, ev) -> None:
        st = self.procs[proc]
        ckpt = int(ev.get("id", -1))
        parts = ev.get("parts")
        kept = {int(x[2]) for x in parts} if parts is not None else {int(ev.get("state", ckpt))}
        if ckpt < 0:
            self.anomalies.append(f"{proc} attempt {a.attempt} was restored without a checkpoint id ({self.where})")
            ckpt = max(kept, default=0)
        elif (a.attempt > 0 or a.gen > 0) and kept - {ckpt}:
            self.anomalies.append(
                f"{proc} attempt {a.attempt}: Flink reports restored checkpoint {ckpt} but the "
                f"operator state restored is that of checkpoint {', '.join(map(str, sorted(kept)))} "
                f"({self.where})"
            )
        if a.gen > 0 and ckpt == self.rescaled_from.get(a.gen) and ckpt not in st.seq_at:
            self._rescale_restore(g, proc, a, ckpt, parts or [])
            return
        if ckpt not in st.seq_at:
            self.anomalies.append(
                f"{proc} attempt {a.attempt} restores checkpoint {ckpt}, which it never took ({self.where})"
            )
        e = {"type": "restore", "proc": proc, "ckpt": ckpt, "recovery": recovery_id(a.gen, a.attempt)}
        if ckpt > 0:
            e["round"] = self._round(a.gen, ckpt)
        self._emit((g, 0, 0), e)
        st.epoch += 1
        st.counters = dict(st.seq_at.get(ckpt, {}))
        st.restore = _RestoreObs(proc, ckpt, (g, 2), k == len(self.by_proc[proc]) - 1)
        self.observations.append(st.restore)

    def _rescale_restore(self, g, proc, a, ckpt: int, parts: list, inferred: bool = False) -> None:
        """The restore of a process of a later generation from checkpoint ``ckpt`` of the previous
        one, with its sources (key groups, state partitions; splits follow in ``_splits``) and
        the old channels whose recovered records it receives (see ``snapcheck.flink.rescale``)."""
        prev = a.gen - 1
        sources: dict[str, dict] = {}

        def source(old: str) -> dict:
            return sources.setdefault(old, {"proc": old, "ckpt": ckpt})

        own = a.header.get("key_groups")
        if own:
            for old, lst in self.by_proc.items():
                o = lst[0]
                if o.gen == prev and o.op == a.op and o.header.get("key_groups"):
                    r = intersect(own, o.header["key_groups"])
                    if r:
                        source(old).setdefault("key_groups", []).append(r)
        for pg, ps, _ in parts:
            name = f"{proc_id(a.op, int(ps), int(pg))}.state"
            old = self.holder.get(name)
            if old is None:
                self.anomalies.append(f"{proc} restored state partition {name}, which no process held ({self.where})")
                continue
            source(old).setdefault("partitions", []).append(name)
            self.holder[name] = proc
        channels = []
        mine = a.header.get("key_groups")
        for frm, u, i, u2, mode in self.vchannels.into(a.op, a.subtask):
            c = {"old": f"{proc_id(frm, u, prev)}>{proc_id(a.op, i, prev)}", "new": f"{proc_id(frm, u2, a.gen)}>{proc}"}
            if mode == "keyed" and mine:
                c["key_groups"] = [mine]
            channels.append(c)
        e = {
            "type": "restore",
            "proc": proc,
            "ckpt": 0,
            "round": self._round(prev, ckpt),
            "recovery": recovery_id(a.gen, 0),
            "sources": list(sources.values()),
            "channels": channels,
        }
        if inferred:
            e["attrs"] = {"inferred": "Flink assigned this subtask no state, so it reports no restore"}
        self._emit((g, -2 if inferred else 0, 0), e)
        st = self.procs[proc]
        st.epoch += 1
        st.counters = {}
        st.rescaled = e

    def _splits(self, g, proc, k, a, ev) -> None:
        """A reader's split assignment: for an appearing process, the input logs it took over."""
        e = self.procs[proc].rescaled
        if e is None or k > 0:
            return
        for split, _offset in ev.get("splits", ()):
            name = input_id(a.op, int(split))
            old = self.holder.get(name)
            if old is None:
                self.anomalies.append(f"{proc} was given split {split}, which no process held ({self.where})")
                continue
            src = next((s for s in e["sources"] if s["proc"] == old), None)
            if src is None:
                src = {"proc": old, "ckpt": e["sources"][0]["ckpt"] if e["sources"] else self.rescaled_from[a.gen]}
                e["sources"].append(src)
            src.setdefault("partitions", []).append(name)
            e["channels"].append({"old": f"{name}>{old}", "new": f"{name}>{proc}"})
            self.holder[name] = proc

    def _ckpt(self, g, proc, k, a, ev) -> None:
        st = self.procs[proc]
        ckpt = int(ev["id"])
        if ckpt <= st.last_ckpt:
            self.anomalies.append(f"{proc} snapshots checkpoint {ckpt} after checkpoint {st.last_ckpt} ({self.where})")
            return
        st.last_ckpt = ckpt
        st.seq_at[ckpt] = dict(st.counters)
        st.ckpt_g[ckpt] = g
        rnd = self._round(a.gen, ckpt)
        self.round_first.setdefault(rnd, g)
        self._emit((g, 0, 0), {"type": "checkpoint", "proc": proc, "ckpt": ckpt, "kind": "coordinated", "round": rnd})

    def _send(self, g, proc, k, a, ev) -> None:
        st = self.procs[proc]
        spec = self.topo.by_gen[a.gen][a.op].get("out")
        if not spec:
            self.anomalies.append(f"{proc} sends although {a.op} has no traced downstream ({self.where})")
            return
        n = int(ev["n"])
        to = ev.get("to")
        e: dict = {}
        if to is None:
            start = self.rebalance_start.get((a.gen, a.op, a.subtask, a.attempt))
            if start is None:
                start = 0
                self.unknown_start.add((a.gen, a.op, a.subtask, a.attempt))
                e["attrs"] = {"target": "unknown: no record of this sender attempt was processed; assumed"}
            to = (start + n) % spec["parallelism"]
        ch = f"{proc}>{proc_id(spec['to'], int(to), a.gen)}"
        if ch not in self.topo.dst:
            self.anomalies.append(
                f"{proc} sends to subtask {to} of {spec['to']}, which its {spec['mode']} "
                f"partitioning cannot reach ({self.where})"
            )
            return
        seq = st.counters.get(ch, 0) + 1
        st.counters[ch] = seq
        mid = f"{ch}:{seq}" if st.epoch == 0 else f"{ch}:{seq}@{st.epoch}"
        self.msgs[(a.gen, a.op, a.subtask, a.attempt, n)] = (mid, ch)
        if "key" in ev:
            e["key"] = ev["key"]
        if "kg" in ev:
            e["key_group"] = int(ev["kg"])
        self._emit((g, 0, 0), {"type": "send", "proc": proc, "ch": ch, "mid": mid, "seq": seq, **e})

    def _recv(self, g, proc, k, a, ev) -> None:
        frm, src, n = ev.get("from"), int(ev.get("src", -1)), int(ev.get("n", -1))
        got = self._recv_input(g, proc, a, src, n) if frm == INPUT else self._recv_record(g, proc, a, ev, frm, src, n)
        if got is not None:
            ch, mid = got
            self._emit((g, 0, 0), {"type": "recv", "proc": proc, "ch": ch, "mid": mid})

    def _recv_input(self, g, proc, a, split, n):
        """A source read of offset n: the split's send the first time, its replay afterwards."""
        ext = input_id(a.op, split)
        ch = f"{ext}>{proc}"
        if ch not in self.topo.dst:
            self.anomalies.append(f"{proc} reads split {split}, which is not its own ({self.where})")
            return None
        sent = self.ext_sent[ext]
        if n in sent:
            mid = self._replay(g, ext, ch, sent[n], "source")
        else:
            seq = n + 1
            if seq <= self.ext_last[ext]:
                self.anomalies.append(
                    f"{proc} reads offset {n} of split {split} for the first time after offset "
                    f"{self.ext_last[ext] - 1} ({self.where})"
                )
                return None
            self.ext_last[ext] = seq
            mid = sent[n] = f"{ch}:{seq}"
            self._emit((g, -1, 0), {"type": "send", "proc": ext, "ch": ch, "mid": mid, "seq": seq})
        return ch, mid

    def _recv_record(self, g, proc, a, ev, frm, src, n):
        """A record of a traced sender; one of an earlier sender attempt comes from channel state."""
        att = int(ev.get("att", -1))
        gen = int(ev.get("gen", 0))
        found = self.msgs.get((gen, frm, src, att, n))
        if found is None:
            self.anomalies.append(
                f"{proc} processes a record {proc_id(frm, src, gen)} attempt {att} #{n} whose send "
                f"was never traced ({self.where})"
            )
            return None
        orig, ch = found
        if gen < a.gen:
            return self._recv_rescaled(g, proc, a, frm, src, orig, ch)
        if self.topo.dst[ch] != proc:
            self.anomalies.append(
                f"{proc} processes {orig}, which the {self.topo.by_gen[a.gen][frm]['out']['mode']} "
                f"partitioner model routes to {self.topo.dst[ch]} ({self.where})"
            )
            return None
        obs = self.procs[proc].restore
        if att >= a.attempt:
            if obs is not None:
                obs.new_data.add(ch)
            return ch, orig
        if obs is None:
            self.anomalies.append(
                f"{proc} attempt {a.attempt} processes {orig} of an earlier attempt without having "
                f"been restored ({self.where})"
            )
            return None
        obs.replayed[ch].append(orig)
        return ch, self._replay(g, proc, ch, orig, "channel_state")

    def _recv_rescaled(self, g, proc, a, frm, src, orig, ch):
        """A record of the previous generation, recovered from the restored checkpoint's channel
        state after the rescale: a replay on the new channel its old channel is mapped onto."""
        old_i = int(self.topo.dst[ch].rsplit("[", 1)[1][:-1])
        u2 = self.vchannels.new_upstream(frm, src, a.op, old_i, a.subtask)
        if u2 is None:
            self.anomalies.append(
                f"{proc} processes {orig} of old channel {ch}, which no virtual channel of the "
                f"rescale maps onto {proc} ({self.where})"
            )
            return None
        new = f"{proc_id(frm, u2, a.gen)}>{proc}"
        self.carried[ch].append((int(orig.split(":")[-1].split("@")[0]), orig))
        return new, self._replay(g, proc, new, orig, "channel_state")

    def _replay(self, g, proc: str, ch: str, orig: str, source: str) -> str:
        self.replays[orig] += 1
        mid = f"{orig}/r{self.replays[orig]}"
        self._emit(
            (g, -1, 0), {"type": "replay", "proc": proc, "ch": ch, "mid": mid, "replay_of": orig, "from": source}
        )
        return mid

    def _notify(self, g, proc, k, a, ev) -> None:
        rnd = self._round(a.gen, int(ev["id"]))
        if rnd not in self.completed:
            self.completed[rnd] = g
            self._emit((g, 0, 0), {"type": "round_complete", "proc": COORDINATOR, "round": rnd})

    def _abort(self, g, proc, k, a, ev) -> None:
        rnd = self._round(a.gen, int(ev["id"]))
        if rnd not in self.completed and rnd not in self.aborted:
            self.aborted[rnd] = g
            self._emit(
                (g, 0, 0),
                {"type": "round_abort", "proc": COORDINATOR, "round": rnd, "reason": "notifyCheckpointAborted"},
            )

    def _fail(self, g, proc, k, a, ev) -> None:
        self.fail_gs.append(g)
        self._emit((g, 0, 0), {"type": "fail", "proc": proc, "reason": ev.get("reason", "failure")})

    # -- the result ----------------------------------------------------------------------
    def result(self) -> MergeResult:
        for gen, op, sub, att in sorted(self.unknown_start):
            self.notes.append(
                f"{proc_id(op, sub, gen)} attempt {att}: no rebalanced record of it was processed, so "
                "the round-robin start is unknown (its sends are attributed from subtask 0)"
            )
        quiescent = self.run.get("status") == "completed"
        self._retire_rescaled(quiescent)
        observed = _records(self.topo, self.observations, quiescent, self.out, self.anomalies)
        if quiescent:
            end_g = (self.stream[-1][0] + 1) if self.stream else 0
            for rnd, g0 in sorted(self.round_first.items()):
                if rnd in self.completed or rnd in self.aborted or any(fg > g0 for fg in self.fail_gs):
                    continue
                self.out.append(
                    (
                        (end_g, 9, rnd),
                        {
                            "type": "round_abort",
                            "proc": COORDINATOR,
                            "round": rnd,
                            "reason": "pending when the run ended (the driver cancelled the job)",
                        },
                    )
                )
        self.out.sort(key=lambda x: x[0])
        idx: Counter = Counter()
        events = []
        for _, e in self.out:
            e["idx"] = idx[e["proc"]]
            idx[e["proc"]] += 1
            events.append(_ordered(e))
        header = _header(self.run, self.topo, self.anomalies, self.notes, observed)
        self._ownership(header["processes"])
        if self.run.get("rescale"):
            header["metadata"]["flink"]["rescale"] = {
                **self.run["rescale"],
                "exchanges": len(self.run["rescale"].get("exchanges") or ()),
                "restored_checkpoint": self.rescaled_from.get(1),
                "generations": [
                    {k: g.get(k) for k in ("gen", "parallelism", "status", "restore_path")}
                    for g in self.run.get("generations", ())
                ],
            }
        return MergeResult(header, events, self.anomalies, self.notes)

    def _ownership(self, processes: list[dict]) -> None:
        """Key groups (from the subtasks' headers) and, for the first generation, the state
        partitions and source splits each process holds from its start."""
        for pr in processes:
            lst = self.by_proc.get(pr["id"])
            if not lst:
                continue
            h = lst[0].header
            if h.get("key_groups"):
                pr["key_groups"] = [h["key_groups"]]
                pr["max_parallelism"] = h["max_parallelism"]
            if not self.rescaled_from or lst[0].gen > 0:
                continue
            parts = [f"{pr['id']}.state"] if h.get("keeps_state", True) else []
            if INPUT in self.topo.ops[lst[0].op].get("inputs", ()):
                parts.append(input_id(lst[0].op, lst[0].subtask))
            if parts:
                pr["partitions"] = parts


_KEY_ORDER = (
    "type",
    "proc",
    "idx",
    "ch",
    "mid",
    "seq",
    "kind",
    "round",
    "ckpt",
    "part",
    "mids",
    "replay_of",
    "from",
    "key",
    "key_group",
    "reason",
    "recovery",
    "sources",
    "channels",
    "t",
    "attrs",
)


def _ordered(e: dict) -> dict:
    return {k: e[k] for k in _KEY_ORDER if k in e}


def _rebalance_starts(topo: Topology, stream, anomalies: list[str]) -> dict:
    """(op, subtask, attempt) -> round-robin start of that rebalancing sender attempt, inferred
    from the subtasks that processed its records: target(n) = (start + n) mod parallelism."""
    seen: dict[tuple, Counter] = defaultdict(Counter)
    for _, _proc, _, a, ev in stream:
        if ev["e"] != "recv" or ev.get("from") == INPUT or int(ev.get("gen", 0)) != a.gen:
            continue
        spec = topo.by_gen[a.gen].get(ev.get("from"), {}).get("out")
        if not spec or spec["mode"] != "rebalance":
            continue
        q = spec["parallelism"]
        seen[(a.gen, ev["from"], int(ev["src"]), int(ev["att"]))][(a.subtask - int(ev["n"])) % q] += 1
    starts = {}
    for key, counts in seen.items():
        start, _ = counts.most_common(1)[0]
        if len(counts) > 1:
            anomalies.append(
                f"the records of {proc_id(key[1], key[2], key[0])} attempt {key[3]} were not distributed "
                f"round robin: starts {dict(counts)} (RebalancePartitioner model violated)"
            )
        starts[key] = start
    return starts


def _records(
    topo: Topology, observations: list[_RestoreObs], quiescent_end: bool, out: list, anomalies: list[str]
) -> dict:
    """``record`` events (input part) of restored checkpoints, from complete observations.

    Returns {round: [channels whose channel state was observed]}."""
    by_key: dict[tuple, list[tuple[_RestoreObs, list[str]]]] = defaultdict(list)
    for ob in observations:
        for ch in topo.inputs_of(ob.proc):
            complete = ch in ob.new_data or (ob.last_attempt and quiescent_end)
            if complete:
                by_key[(ob.proc, ob.ckpt, ch)].append((ob, ob.replayed.get(ch, [])))
    observed: dict[int, list[str]] = defaultdict(list)
    n = 0
    for (proc, ckpt, ch), obs in sorted(by_key.items()):
        lists = {tuple(m) for _, m in obs}
        if len(lists) > 1:
            anomalies.append(
                f"restores of checkpoint {ckpt} replayed different channel state on {ch}: "
                + " vs ".join(str(list(x)) for x in sorted(lists))
            )
        mids = max(lists, key=len)
        if ckpt == 0 and not mids:
            continue
        first = min(obs, key=lambda x: x[0].key)[0]
        n += 1
        out.append(
            (
                (first.key[0], 2, n),
                {"type": "record", "proc": proc, "ckpt": ckpt, "ch": ch, "part": "input", "mids": list(mids)},
            )
        )
        observed[ckpt].append(ch)
    return {str(k): sorted(v) for k, v in sorted(observed.items())}


def _header(run: dict, topo: Topology, anomalies: list[str], notes: list[str], observed: dict) -> dict:
    mode = run["mode"]
    conf = run.get("config", {})
    params = {
        "aligned": mode in ALIGNED_MODES,
        "channel_state": "none" if mode in ALIGNED_MODES else "observed-at-restore",
        "checkpointing_mode": "AT_LEAST_ONCE" if mode == "at-least-once" else "EXACTLY_ONCE",
        "interval_ms": run.get("interval_ms"),
        "flink_version": run.get("flink_version"),
    }
    if mode in ("unaligned", "timeout"):
        params["aligned_checkpoint_timeout"] = conf.get("execution.checkpointing.aligned-checkpoint-timeout", "0")
    flink = {
        k: run.get(k)
        for k in (
            "job",
            "mode",
            "parallelism",
            "records",
            "rate",
            "seed",
            "faults",
            "fired",
            "status",
            "ended_us",
            "config",
        )
    }
    flink.update({"anomalies": anomalies, "notes": notes, "channel_state_observed": observed})
    if run.get("error"):
        flink["error"] = run["error"]
    return {
        "format": "snapcheck-trace",
        "version": 1,
        "processes": topo.processes,
        "channels": topo.channels,
        "protocol": {"name": protocol_name(mode), "params": params},
        "seed": run.get("seed"),
        "metadata": {
            "source": "snapcheck flink run (Apache Flink MiniCluster, traced operators)",
            "faults": requested_faults(run),
            "flink": flink,
        },
    }


def requested_faults(run: dict) -> list[dict]:
    """The injected faults of a run in the trace format's ``metadata.faults`` form: each
    ``--fail OP:SUBTASK:WHEN`` with the subtask's process and whether it fired."""
    fired = run.get("fired") if isinstance(run.get("fired"), dict) else {}
    out = []
    for spec in run.get("faults") or ():
        op, _, rest = str(spec).partition(":")
        subtask = rest.partition(":")[0]
        out.append(
            {
                "fault": f"Flink --fail {spec}",
                "proc": proc_id(op, int(subtask)) if subtask.isdigit() else None,
                "fired": spec in fired,
            }
        )
    return out
