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

import inspect
import re
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


def generation_prefix(n: int) -> str:
    """The prefix of the ids the reference simulator gives the tasks of the ``n``-th
    generation a rescale starts (``g1.map[0]``); ``GENERATION`` matches it.

    >>> generation_prefix(2) + "map[0]", bool(GENERATION.match("g2.map[0]")), bool(GENERATION.match("map[0]"))
    ('g2.map[0]', True, False)
    """
    return f"g{n}."


GENERATION = re.compile(r"g[0-9]+\.")


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


# The fields most events of a trace carry: one slot each. The others are rare (a few event
# types set them): an event stores those it has in its instance dictionary, created only
# when it has one, and reads the class default None for the rest.
_SLOTTED = ("type", "proc", "idx", "line", "ch", "mid", "seq", "kind", "round", "ckpt", "size", "key", "value", "t")


class Event:
    """One trace event. Only the fields its ``type`` defines are set; the rest are None.
    Field order (``EVENT_FIELDS``) is the canonical key order of the JSONL form (``from``
    is ``source`` here). Compact: a trace of millions of events keeps one per line, so
    the fields few events carry take no room in the others (``_SLOTTED``).

    >>> e = Event("recv", "B", 0, 3, ch="ab", mid="ab:1")
    >>> e.mid, e.reason, e == Event("recv", "B", 0, 3, "ab", "ab:1"), e == Event("recv", "B", 0, 3, "ab", "ab:2")
    ('ab:1', None, True, False)
    """

    __slots__ = (*_SLOTTED, "__dict__")
    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    # defaults of the rare fields (an instance's own value, when it has one, is in its dict)
    part: str | None = None
    mids: list | None = None
    replay_of: str | None = None
    source: str | None = None
    logged: bool | None = None
    piggyback: dict | None = None
    vars: dict | None = None
    digest: str | None = None
    through_seq: int | None = None
    reason: str | None = None
    recovery: int | None = None
    attrs: dict | None = None
    key_group: int | None = None  # send: the key group of the record's key (keyed edges)
    sources: list | None = None  # restore: [{proc, ckpt, key_groups?, partitions?}]
    channels: list | None = None  # restore: [{old, new, key_groups?}] onto the restoring process's inputs

    type: str
    proc: str
    idx: int
    line: int
    ch: str | None
    mid: str | None
    seq: int | None
    kind: str | None
    round: int | None
    ckpt: int | None
    size: int | None
    key: Any
    value: Any
    t: float | None

    def __init__(
        self,
        type: str,
        proc: str,
        idx: int,
        line: int = 0,
        ch: str | None = None,
        mid: str | None = None,
        seq: int | None = None,
        kind: str | None = None,
        round: int | None = None,
        ckpt: int | None = None,
        part: str | None = None,
        mids: list | None = None,
        replay_of: str | None = None,
        source: str | None = None,
        logged: bool | None = None,
        size: int | None = None,
        key: Any = None,
        value: Any = None,
        piggyback: dict | None = None,
        vars: dict | None = None,
        digest: str | None = None,
        through_seq: int | None = None,
        reason: str | None = None,
        recovery: int | None = None,
        t: float | None = None,
        attrs: dict | None = None,
        key_group: int | None = None,
        sources: list | None = None,
        channels: list | None = None,
    ) -> None:
        self.type = type
        self.proc = proc
        self.idx = idx
        self.line = line
        self.ch = ch
        self.mid = mid
        self.seq = seq
        self.kind = kind
        self.round = round
        self.ckpt = ckpt
        self.size = size
        self.key = key
        self.value = value
        self.t = t
        if (
            part is not None
            or mids is not None
            or replay_of is not None
            or source is not None
            or logged is not None
            or piggyback is not None
            or vars is not None
            or digest is not None
            or through_seq is not None
            or reason is not None
            or recovery is not None
            or attrs is not None
            or key_group is not None
            or sources is not None
            or channels is not None
        ):
            rare = {
                "part": part,
                "mids": mids,
                "replay_of": replay_of,
                "source": source,
                "logged": logged,
                "piggyback": piggyback,
                "vars": vars,
                "digest": digest,
                "through_seq": through_seq,
                "reason": reason,
                "recovery": recovery,
                "attrs": attrs,
                "key_group": key_group,
                "sources": sources,
                "channels": channels,
            }
            self.__dict__.update((k, v) for k, v in rare.items() if v is not None)

    def _values(self) -> tuple:
        return tuple(getattr(self, f) for f in EVENT_FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __repr__(self) -> str:
        return f"Event({', '.join(f'{f}={getattr(self, f)!r}' for f in EVENT_FIELDS)})"

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
        return make(line, d)

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


# The fields of an ``Event`` in the canonical key order of the JSONL form (``from`` is
# ``source`` here): the positional order of ``Event(...)``.
EVENT_FIELDS = tuple(inspect.signature(Event).parameters)
_RARE = tuple(f for f in EVENT_FIELDS if f not in _SLOTTED)
_EVENT_OPTIONAL = tuple(f for f in EVENT_FIELDS if f not in ("type", "proc", "idx", "line"))
_FROM_KEYS: dict[tuple, Callable[..., Event]] = {}


def _from_keys(keys: tuple):
    """A constructor ``make(line, obj)`` of ``Event`` for JSON objects ``obj`` with exactly these
    keys in this order (an unknown or repeated key raises ``TypeError``, as a keyword would)."""
    make = _keyed_constructor(keys, False)
    if len(_FROM_KEYS) < 4096:
        _FROM_KEYS[keys] = make
    return make


def _keyed_constructor(keys: tuple, shared: bool):
    """``_from_keys``'s constructor; with ``shared``, a factory ``(names, times) -> make``
    of constructors that replace the event type, process and channel by the string of
    ``names`` equal to them and an integer time by the one of ``times`` (added when new)."""
    names = ["source" if k == "from" else k for k in keys]
    order = list(EVENT_FIELDS)
    if len(set(names)) != len(names) or not {"type", "proc", "idx"} <= set(names) <= set(order) or "line" in names:

        def make(line, obj):
            return Event(line=line, **dict(zip(names, obj.values())))

        return (lambda _names, _times: make) if shared else make
    params = [f"v{i}" for i in range(len(names))]
    arg = dict(zip(names, params)) | {"line": "line"}
    if shared:
        arg.update((n, f"N.get({arg[n]}, {arg[n]})") for n in ("type", "proc", "ch") if n in arg)
        if "t" in arg:  # integers only: 1.0 == 1, but a float time stays a float
            arg["t"] = f"(T.setdefault({arg['t']}, {arg['t']}) if {arg['t']}.__class__ is int else {arg['t']})"
    # the event is made without ``__init__`` (which would test every rare field): each slot
    # is set, and the rare fields present go to the instance dictionary
    body = [f"    e.{n} = {arg.get(n, 'None')}" for n in _SLOTTED]
    body += [f"    if {arg[n]} is not None: e.{n} = {arg[n]}" for n in _RARE if n in arg]
    # the values are unpacked from the object inside (cheaper than a call with ``*obj.values()``)
    head = ["def make(line, obj):", f"    {', '.join(params)}, = obj.values()", "    e = new(Event)"]
    code = "\n".join([*head, *body, "    return e"])
    if shared:
        code = "def factory(N, T):\n" + "\n".join("    " + x for x in code.splitlines()) + "\n    return make"
    scope = {"Event": Event, "new": object.__new__}
    exec(code, scope)
    return scope["factory" if shared else "make"]


class EventBuilder:
    """``Event.from_dict`` for the events of one trace, sharing strings: one string object
    per event type, process and channel (``names``: each maps to itself). The parser makes
    a new string for every value; on a trace of millions of events the copies would cost
    hundreds of megabytes. Integer times are shared within a batch (events close in the
    file often happen at the same time). Message ids are shared before: the validator
    gives a receive's object the string of its message's send (``traces.validate``).

    >>> b = EventBuilder(["ab"])
    >>> x, y = b.events([(2, {"type": "send", "proc": "A", "idx": 0, "ch": "ab", "mid": "m", "seq": 1, "t": 5}),
    ...                  (3, {"type": "recv", "proc": "B", "idx": 0, "ch": "ab", "mid": "m", "t": 5})])
    >>> (y.line, y.mid, x.seq), x.ch is y.ch, x.t is y.t
    ((3, 'm', 1), True, True)
    """

    def __init__(self, names) -> None:
        self.names: dict[str, str] = {t: t for t in EVENT_TYPES}
        self.names.update((n, n) for n in names)
        self.times: dict[int, int] = {}
        self.makers: dict[tuple, Callable[..., Event]] = {}

    def maker(self, keys: tuple) -> Callable[..., Event]:
        """The constructor ``make(line, obj)`` of the events whose JSON objects have these
        keys in this order (made once, then found in ``makers``)."""
        make = self.makers[keys] = _keyed_constructor(keys, True)(self.names, self.times)
        return make

    def batch_done(self) -> None:
        """Forget what is shared within a batch only (times)."""
        self.times.clear()

    def events(self, batch: list[tuple[int, dict]]) -> list[Event]:
        """The events of (line, JSON object) pairs (one batch)."""
        makers = self.makers
        out: list[Event] = []
        add = out.append
        for line, obj in batch:
            keys = tuple(obj)
            make = makers.get(keys)
            if make is None:
                make = self.maker(keys)
            add(make(line, obj))
        self.batch_done()
        return out


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
