"""The state and services of ``Simulator`` that its mixins share, declared for the type checker.

``Simulator`` (``engine``) is assembled from mixins split by concern (``network``,
``coordinator``, ``recovery``, ``exploration``); each uses attributes that
``Simulator.__init__`` sets and methods another part defines. ``SimulatorBase`` names
them once, with their types, and every mixin derives from it, so each mixin is type
checked on its own. It holds annotations only (no values, no methods at run time): it
changes nothing in a run. The configuration (``simulation.SimConfig``) and the tasks
(``engine.Task``) are not named: this module may import neither (no import circles).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from snapcheck.reference.protocol import Protocol
    from snapcheck.reference.sim.messages import Chan, External, Msg, Node, Stored
    from snapcheck.reference.sim.recording import EventLog
    from snapcheck.reference.topology import Workload
    from snapcheck.traces.model import Header


class ProtocolBroke(Exception):
    """A protocol broke an invariant the simulator relies on (``Simulator.protocol_error``)."""

    def __init__(self, task, handler: str, reason: str) -> None:
        super().__init__(reason)
        self.task = task
        self.handler = handler
        self.reason = reason


class SimulatorBase:
    """What a mixin of ``Simulator`` may use of the whole simulator (see the module)."""

    # the run
    cfg: Any  # a simulation.SimConfig
    wl: Workload
    protocol: Protocol
    header: Header
    log: EventLog
    log_recv: Callable[..., None]
    log_send: Callable[..., None]
    log_arrive: Callable[..., None]
    now: int
    heap: list
    counter: int
    pending: int
    finished: bool
    failed_to_start: tuple | None
    # the dataflow
    tasks: list  # of engine.Task
    by_id: dict[str, Any]  # task id -> engine.Task
    chans: list[Chan]
    externals: list[External]
    coord: Node
    triggers: list[Chan]
    commits: list[Chan]
    notices: list[Chan]
    committed: dict[int, set]
    outputs: list
    # the network's settings
    dedup: bool
    observe_arrivals: bool
    observe_processing: bool
    values: bool
    txn_outputs: bool
    latency: int
    jitter: int
    out_cap: int
    net_random: Callable[[], float]
    control_rng: random.Random
    # rounds, checkpoints and recovery
    store: dict[tuple[int, int], Stored]
    rounds: dict[int, list]
    round_started: dict[int, int]
    next_round: int
    last_completed: int
    completed_rounds: set[int]
    epoch: int
    recovering: bool
    n_recoveries: int
    outstanding: int
    replays: dict[str, int]
    pauses: dict[int, int]
    # metrics
    m: dict[str, int]
    m_blocked: int
    progress: int
    crashes: int
    retired_at: dict[str, int]  # task id -> when it left the job
    latencies: list[int]
    round_durations: list[int]
    recoveries: list[dict]

    if TYPE_CHECKING:  # the services one part offers the others (defined by Simulator and its mixins)

        def at(self, t: int, fn: Callable[..., Any], *args: Any) -> None: ...
        def clock(self, t: int, fn: Callable[..., Any], *args: Any) -> None: ...
        def quiescent(self) -> bool: ...
        def barrier_received(self, v, ch: Chan, m: Msg) -> None: ...
        def step(self, v) -> None: ...
        def pump(self, ch: Chan) -> None: ...
        @staticmethod
        def next_mid(node, ch: Chan) -> tuple[int, str]: ...
        def situation(self, name: str, v=None) -> None: ...
        def left_job(self, v) -> None: ...
        def joined_job(self, v) -> None: ...
        def later_task_ids(self) -> frozenset[str]: ...
        def pause(self, v) -> None: ...
        def fail(self, v, reason: str = "injected crash") -> None: ...
        def abort(self, r: int, reason: str, notify: bool = False) -> None: ...
        def _publish(self, v, batches: list, of: str | None = None) -> None: ...
