"""In-memory model of a v1 trace: header (processes, channels, protocol) and events.

Conventions (docs/theory.md, "Conventions"): ``recv`` is *processing* (the point where the
operator's state changes), ``arrive`` only buffering. Checkpoint ``ckpt`` is the
process-local checkpoint number: 0 is the initial checkpoint ``C_{i,0}``, which
is implied when the trace does not record it; later checkpoints are numbered
upward and never reused, also across failures. After a ``restore`` a process
starts a new *epoch*; a message's identity is its ``mid`` (unique per
incarnation), while ``(ch, seq)`` repeats when a restored sender regenerates it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any

EVENT_TYPES = (
    "send",
    "arrive",
    "recv",
    "discard",
    "replay",
    "checkpoint",
    "record",
    "log",
    "log_truncate",
    "fail",
    "restore",
    "round_start",
    "round_complete",
    "round_abort",
    "output",
    "protocol_error",
    "finish",
    "retire",
)
CHECKPOINT_KINDS = ("initial", "basic", "forced", "coordinated")
ROLES = ("task", "source", "sink", "external", "coordinator")


# Message kinds that are protocol markers, not data: a barrier of round n, and a
# cancellation marker of round n (a task that declined or abandoned round n tells its
# downstream, like Flink's CancelCheckpointMarker). Both need field ``round``.
MARKERS = frozenset(("barrier", "cancel"))


@dataclass(frozen=True, slots=True)
class Process:
    id: str
    role: str = "task"
    operator: str | None = None
    subtask: int | None = None
    worker: str | None = None
    attrs: dict | None = None
    appears: bool = False  # joins later: its first event is a restore naming its sources
    key_groups: list | None = None  # the key groups of its operator it owns: [[lo, hi], ...]
    max_parallelism: int | None = None  # the number of key groups of its operator
    partitions: list | None = None  # operator list-state partitions it holds at its start

    @property
    def checkpoints(self) -> bool:
        """Whether this process belongs to global checkpoints (coordinators do not)."""
        return self.role != "coordinator"


@dataclass(frozen=True, slots=True)
class Channel:
    id: str
    src: str
    dst: str
    fifo: bool = True
    kind: str = "data"
    back_edge: bool = False
    logged: bool = False
    attrs: dict | None = None


@dataclass(slots=True)
class Header:
    processes: list[Process]
    channels: list[Channel]
    protocol: dict = field(default_factory=lambda: {"name": "unknown"})
    seed: int | None = None
    metadata: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict) -> Header:
        return cls(
            processes=[Process(**p) for p in d["processes"]],
            channels=[Channel(**c) for c in d["channels"]],
            protocol=dict(d.get("protocol") or {"name": "unknown"}),
            seed=d.get("seed"),
            metadata=dict(d.get("metadata") or {}),
        )

    def to_dict(self) -> dict:
        return {
            "format": "snapcheck-trace",
            "version": 1,
            "processes": [_compact(p, Process) for p in self.processes],
            "channels": [_compact(c, Channel) for c in self.channels],
            "protocol": self.protocol,
            "seed": self.seed,
            "metadata": self.metadata,
        }

    @property
    def expected(self) -> dict | None:
        return self.metadata.get("expected")


def _compact(obj, cls) -> dict:
    out = {}
    for f in fields(cls):
        v = getattr(obj, f.name)
        if v is not None and v != f.default:
            out[f.name] = v
    return out


@dataclass(slots=True)
class Event:
    """One trace event. Only the fields its ``type`` defines are set; the rest are None.
    Field order is the canonical key order of the JSONL form (``from`` is ``source`` here)."""

    type: str
    proc: str
    idx: int
    line: int = 0
    ch: str | None = None
    mid: str | None = None
    seq: int | None = None
    kind: str | None = None
    round: int | None = None
    ckpt: int | None = None
    part: str | None = None
    mids: list | None = None
    replay_of: str | None = None
    source: str | None = None
    logged: bool | None = None
    size: int | None = None
    key: Any = None
    value: Any = None
    piggyback: dict | None = None
    vars: dict | None = None
    digest: str | None = None
    through_seq: int | None = None
    reason: str | None = None
    recovery: int | None = None
    t: float | None = None
    attrs: dict | None = None
    key_group: int | None = None  # send: the key group of the record's key (keyed edges)
    sources: list | None = None  # restore: [{proc, ckpt, key_groups?, partitions?}]
    channels: list | None = None  # restore: [{old, new, key_groups?}] onto the restoring process's inputs

    @classmethod
    def from_dict(cls, d: dict, line: int = 0) -> Event:
        """The event of a JSON object of the trace format (``from`` is ``source`` here).

        Objects with the same keys in the same order (most of a trace's events) are built
        by one positional constructor generated for that key order.

        >>> e = Event.from_dict({"type": "recv", "proc": "B", "idx": 0, "ch": "ab", "mid": "m"}, 3)
        >>> e.type, e.proc, e.mid, e.line, e.seq
        ('recv', 'B', 'm', 3, None)
        """
        keys = tuple(d)
        make = _FROM_KEYS.get(keys)
        if make is None:
            make = _from_keys(keys)
        return make(line, *d.values())

    def to_dict(self) -> dict:
        out: dict = {"type": self.type, "proc": self.proc, "idx": self.idx}
        for name in _EVENT_OPTIONAL:
            v = getattr(self, name)
            if v is not None:
                out["from" if name == "source" else name] = v
        return out

    @property
    def is_marker(self) -> bool:
        """A protocol marker (a barrier or a cancellation marker), not a data message."""
        return self.kind in MARKERS


_EVENT_OPTIONAL = tuple(f.name for f in fields(Event) if f.name not in ("type", "proc", "idx", "line"))
_FROM_KEYS: dict[tuple, Callable[..., Event]] = {}


def _from_keys(keys: tuple):
    """A constructor ``make(line, *values)`` of ``Event`` for JSON objects with exactly these
    keys in this order (an unknown or repeated key raises ``TypeError``, as a keyword would)."""
    names = ["source" if k == "from" else k for k in keys]
    order = [f.name for f in fields(Event)]
    if len(set(names)) != len(names) or not {"type", "proc", "idx"} <= set(names) <= set(order) or "line" in names:

        def make(line, *values):
            return Event(line=line, **dict(zip(names, values)))
    else:
        params = [f"v{i}" for i in range(len(names))]
        arg = dict(zip(names, params)) | {"line": "line"}
        last = max(order.index(n) for n in arg)
        call = ", ".join(arg.get(n, "None") for n in order[: last + 1])
        make = eval(f"lambda line, {', '.join(params)}: Event({call})", {"Event": Event})
    if len(_FROM_KEYS) < 4096:
        _FROM_KEYS[keys] = make
    return make


@dataclass(slots=True)
class Trace:
    """A whole trace in memory. ``path`` names where it came from, for error messages."""

    header: Header
    events: list[Event]
    path: str = "<memory>"

    @property
    def processes(self) -> list[Process]:
        return self.header.processes

    @property
    def channels(self) -> list[Channel]:
        return self.header.channels

    def channel(self, ch_id: str) -> Channel:
        return self.channel_map()[ch_id]

    def channel_map(self) -> dict[str, Channel]:
        return {c.id: c for c in self.header.channels}

    def process_map(self) -> dict[str, Process]:
        return {p.id: p for p in self.header.processes}

    def by_process(self) -> dict[str, list[Event]]:
        """Events of each process in per-process order (processes in header order)."""
        out: dict[str, list[Event]] = {p.id: [] for p in self.header.processes}
        for e in self.events:
            out[e.proc].append(e)
        return out

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)
