"""The simulator's record types: messages, channels, persisted checkpoints and the
processes that are not tasks. One definition each, shared by every simulator.

* ``Msg``: one incarnation of a message in flight (``mid`` is its trace identity;
  ``epoch`` the channel epoch it was sent in; ``pb`` the protocol data it carries).
* ``Chan``: a channel at run time: the sender's output buffer, the receiver's input
  queue, credits (``capacity``/``occupancy``), its FIFO clock and its epoch (bumped
  when a recovery discards what is in flight on it).
* ``Stored``: a persisted local checkpoint: number, kind, the coordinated round it
  belongs to, operator state, protocol variables, per-channel counters of messages
  sent and processed (``Counts``), and recorded channel state (input and output parts).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

DATA, BARRIER, CONTROL, CANCEL = 0, 1, 2, 3  # CANCEL: a cancellation marker of a round
FORWARD, HASH, BROADCAST = 0, 1, 2
BARRIER_SIZE = 16
CONTROL_SIZE = 16
UNBOUNDED = 1 << 60


class Msg:
    """A message in flight (one incarnation; ``mid`` is its trace identity)."""

    __slots__ = (
        "mid",
        "ch",
        "seq",
        "kind",
        "value",
        "key",
        "size",
        "born",
        "epoch",
        "arr",
        "round",
        "started",
        "unaligned",
        "recovered",
        "pb",
    )

    def __init__(self, mid, ch, seq, kind, value, key, size, born, epoch):
        self.mid = mid
        self.ch = ch
        self.seq = seq
        self.kind = kind
        self.value = value
        self.key = key
        self.size = size
        self.born = born
        self.epoch = epoch
        self.arr = 0
        self.round = None
        self.started = None
        self.unaligned = False
        self.recovered = False
        self.pb = None

    def __repr__(self) -> str:
        return f"Msg({self.mid})"


class Chan:
    """A channel at run time: the sender's output buffer, the receiver's input queue."""

    __slots__ = (
        "id",
        "src",
        "dst",
        "gate",
        "index",
        "port",
        "back_edge",
        "fifo",
        "inq",
        "outbuf",
        "occupancy",
        "capacity",
        "last_arrival",
        "seq",
        "blocked",
        "blocked_since",
        "handler",
        "epoch",
    )

    def __init__(self, cid, src, dst, gate=0, index=0, port=0, back_edge=False, fifo=True, capacity=UNBOUNDED):
        self.id = cid
        self.src = src
        self.dst = dst
        self.gate = gate
        self.index = index
        self.port = port
        self.back_edge = back_edge
        self.fifo = fifo
        self.inq: deque = deque()
        self.outbuf: deque = deque()
        self.occupancy = 0
        self.capacity = capacity
        self.last_arrival = 0
        self.seq = 0
        self.blocked = False
        self.blocked_since = 0
        self.handler = None
        self.epoch = 0

    def __repr__(self) -> str:
        return f"Chan({self.id})"


@dataclass
class Counts:
    """Per-channel counters of one checkpoint (or of the current state)."""

    sent: dict = field(default_factory=dict)  # output channel -> messages sent before it
    processed: dict = field(default_factory=dict)  # input channel -> messages processed before it


class Stored:
    """A persisted local checkpoint (see the module docstring)."""

    __slots__ = ("number", "kind", "round", "state", "vars", "counts", "inputs", "outputs")

    def __init__(self, number: int, kind: str, round, state, vars, counts: Counts):
        self.number = number
        self.kind = kind
        self.round = round
        self.state = state
        self.vars = vars
        self.counts = counts
        self.inputs: dict = {}
        self.outputs: dict = {}


class Node:
    """A process that is not a task (external input log, coordinator)."""

    def __init__(self, pid: int, ident: str):
        self.pid = pid
        self.id = ident
        self.alive = True
        self.restores = 0


class External(Node):
    def __init__(self, pid, ident, records):
        super().__init__(pid, ident)
        self.records = records
        self.sent: list[Msg] = []
        self.chan: Chan | None = None  # to the task reading this log (set when the dataflow is built)

    def channel(self) -> Chan:
        """The channel to the task reading this log."""
        assert self.chan is not None, f"{self.id} has no channel yet"
        return self.chan
