"""The shared vocabulary of trace validation (``checker.tla.conform`` and the
per-family mappings ``checker.tla.map_unc`` and ``checker.tla.map_replication``):
a trace specification family, a trace mapped to spec events, the error for
traces outside the specifications, and the causal order of a trace's events
(a receive after its send, per-process order kept), and
Python values written as TLA+ expressions."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from snapcheck.traces.model import Event, Trace
from snapcheck.traces.protocol_facts import TlaMapping


class Function(dict):
    """A TLA+ function (``a :> x @@ b :> y``), as opposed to a record (``dict``)."""


class OutOfScope(Exception):
    """The trace cannot be mapped to the specification (an ERROR verdict). ``line``: the
    event it names (0: none); ``category``: what the specification does not model, in
    words that name no process, split or recovery of this trace, so that the traces
    outside it for the same reason count together (``conform.outside_reason``)."""

    def __init__(self, message: str, line: int = 0, category: str = ""):
        super().__init__(message)
        self.line = line
        self.category = category


@dataclass
class Prepared:
    """A trace mapped to spec events, with the definitions its trace module needs."""

    path: str
    protocol: str
    family: TlaMapping
    topology: tuple  # everything that must be equal to share one TLC run
    consts: list  # (name, TLA+ expression): the topology definitions of TraceLog
    bounds: dict  # TLA+ constant -> the value this trace needs (a batch takes the max)
    events: list[dict]
    lines: list[int]  # file line of each spec event (0 for "end")
    descr: list[str]  # a readable description of each spec event
    ignored: Counter
    notes: list[str]
    names: dict = field(default_factory=dict)  # a process's or channel's name in the spec -> in the trace
    start: dict | None = None  # snapshot family: the state a trace starts from (None: the initial state)
    cut: dict | None = None  # snapshot family: the state a segment ends in (its "cut" event)
    # invariant -> why the specification keeps it only for topologies this trace's is not:
    # a violation of one is the trace's (a REJECT), not the specification's error
    unproven: dict = field(default_factory=dict)


@dataclass
class SpecEvents:
    """Spec events under construction: each with its file line and a description."""

    events: list = field(default_factory=list)
    lines: list = field(default_factory=list)
    descr: list = field(default_factory=list)
    ignored: Counter = field(default_factory=Counter)

    def add(self, line: int, text: str, **fields) -> None:
        self.events.append(fields)
        self.lines.append(line)
        self.descr.append(text)


def causal_order(trace: Trace) -> list[Event]:
    """Events in file order, except that an event waits for the sends of the
    messages it receives or records (per-process order kept)."""
    sent: set[str] = set()
    waiting: dict[str, list[str]] = defaultdict(list)  # mid -> processes blocked on it
    backlog: dict[str, list[Event]] = defaultdict(list)
    out: list[Event] = []

    def needs(e: Event) -> list[str]:
        if e.type in ("recv", "arrive", "discard"):
            assert e.mid is not None  # required of a message event
            return [e.mid]
        if e.type == "record":
            return list(e.mids or ())
        return []

    def try_emit(proc: str) -> None:
        queue = backlog[proc]
        while queue:
            e = queue[0]
            missing = [m for m in needs(e) if m not in sent]
            if missing:
                waiting[missing[0]].append(proc)
                return
            queue.pop(0)
            emit(e)

    def emit(e: Event) -> None:
        out.append(e)
        if e.type in ("send", "replay"):
            assert e.mid is not None
            sent.add(e.mid)
            for proc in waiting.pop(e.mid, []):
                try_emit(proc)

    for e in trace.events:
        backlog[e.proc].append(e)
        if len(backlog[e.proc]) == 1:
            try_emit(e.proc)
    leftover = [e for q in backlog.values() for e in q]
    if leftover:  # the validator rejects causal cycles, so this cannot happen
        raise OutOfScope("causally impossible history", leftover[0].line)
    return out


def task_topology(trace: Trace) -> tuple[dict, list[str], list[str]]:
    """Roles of all processes; the processes the specifications model (tasks,
    sources, sinks); the data channels between them."""
    roles = {p.id: p.role for p in trace.header.processes}
    procs = sorted(p for p, r in roles.items() if r in ("task", "source", "sink"))
    data = sorted(c.id for c in trace.header.channels if c.kind == "data" and c.src in procs and c.dst in procs)
    return roles, procs, data


def short_names(procs, chans) -> tuple[dict, dict]:
    """Names for the specification: ``p1, p2, ...`` for the processes and ``c1, c2,
    ...`` for the channels, in the given order. TLC fingerprints every state
    character by character and compares function arguments as strings, so short
    names make each step cheaper (measured: identifiers like
    ``bids[0]->map[0]`` cost a tenth of TLC's time); traces whose topologies
    differ only in their names then also share TLC runs.

    >>> short_names(["src", "map"], ["src>map"])
    ({'src': 'p1', 'map': 'p2'}, {'src>map': 'c1'})
    """
    return ({p: f"p{n}" for n, p in enumerate(procs, 1)}, {c: f"c{n}" for n, c in enumerate(chans, 1)})


def tla(value) -> str:
    """A Python value as a TLA+ expression: str, int, bool, list/tuple (sequence),
    set/frozenset, dict with identifier keys (record), ``Function``.

    >>> tla({"op": "send", "s": [1, 2]}), tla(Function({"a>b": 0}))
    ('[op |-> "send", s |-> <<1, 2>>]', '("a>b" :> 0)')
    """
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple)):
        return "<<" + ", ".join(tla(v) for v in value) + ">>"
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(tla(v) for v in value)) + "}"
    if isinstance(value, Function):
        return tla_function(value)
    if isinstance(value, dict):
        return "[" + ", ".join(f"{k} |-> {tla(v)}" for k, v in value.items()) + "]"
    raise TypeError(f"cannot write {value!r} as TLA+")


def tla_function(mapping: dict) -> str:
    if not mapping:
        return "<<>>"
    return " @@ ".join(f"({tla(k)} :> {tla(v)})" for k, v in mapping.items())
