"""``simulate(config)``: run one deterministic simulation and get its trace and metrics.

::

    from snapcheck.reference import SimConfig, simulate
    res = simulate(SimConfig(protocol="unaligned", workload="q3", parallelism=2, seed=7,
                             failures=(("join[0]", 1500),)))
    res.trace()      # traces.Trace, ready for checker.check_trace
    res.dumps()      # the JSONL bytes (byte-identical for the same config)
    res.metrics      # CheckMate §V metrics in simulated time (ticks)

Everything is determined by the config: one seed gives one byte-identical trace.
"""

from __future__ import annotations

import copy
import gc
import random
import sys
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Any

from snapcheck.reference.protocol import Protocol
from snapcheck.reference.sim.engine import Simulator
from snapcheck.reference.sim.recording import EventLog, NullLog
from snapcheck.reference.sim.rescale import check_key_groups, rescaling_class
from snapcheck.reference.topology import Workload
from snapcheck.traces.errors import UsageError
from snapcheck.traces.model import Header, Trace


@dataclass(frozen=True)
class SimConfig:
    """One simulation run. Times are in ticks (simulated microseconds).

    protocol / workload: a registered name (``reference.PROTOCOLS``,
    ``reference.WORKLOADS``) or an object (your own ``Protocol`` instance, a
    ``Workload``); the protocol by default: ``abs-aligned``, or the one ``mutant``
    mutates. ``records``: input records per source partition (None: the
    workload's default). ``failures``: crashes, ``(task id, time)`` or ``(task id,
    situation, k)`` — right after the k-th occurrence of a situation, see
    ``reference.sim.exploration``. ``pauses``: ``(k, ticks)`` schedule perturbations
    (the task of the k-th step is held back). ``mutant``: a name from
    ``reference.MUTANTS`` or a mutant class (it runs in place of the protocol it
    mutates, its ``mutant_of``, which is the protocol unless another is given: that is
    a ``UsageError`` at ``simulate``; it may adjust the config, see ``mutants.py``).

    ``simulate`` checks the fields first (``check_fields``): a value of another type, or
    below what the simulator takes, is a ``UsageError`` naming the field.

    >>> SimConfig().protocol, SimConfig(mutant="unaligned-late-snapshot").protocol
    ('abs-aligned', 'unaligned')
    """

    protocol: Any = None  # set by __post_init__: "abs-aligned", or the mutant's base protocol
    workload: Any = "q1"
    parallelism: int = 2
    seed: int = 0
    records: int | None = None
    gap: int | None = None  # mean time between input records of a partition
    hot_ratio: float = 0.0
    failures: tuple = ()
    mutant: str | None = None
    interval: int = 600  # checkpoint interval
    max_concurrent: int = 1  # rounds in progress at once
    checkpoint_timeout: int | None = None
    aligned_timeout: int = 300  # alignment timeout of "aligned-timeout"
    recovery: str = "restart-all"  # uncoordinated family (unc, hmnr, bcs): "restart-all" or "partial"
    latency: int = 40  # network delay: latency + U[0, jitter)
    jitter: int = 60
    fifo: bool = True
    buffer: int = 4  # input buffer capacity per channel (credits), records
    out_buffer: int = 2  # output buffer capacity per channel, records
    barrier_cost: int = 5
    snapshot_cost: int = 10
    control_latency: int = 20  # delay of control messages (triggers, acknowledgements, notifications, aborts)
    control_jitter: int = 0  # random extra delay of control messages, U[0, control_jitter); FIFO per control channel
    detect_delay: int = 100
    restart_delay: int = 200
    stragglers: tuple = ()  # (task id, cost factor)
    pauses: tuple = ()  # (step number, extra busy ticks): bounded schedule perturbation
    decline_prob: float = 0.0  # probability that a task's snapshot fails (round declined)
    digests: bool = True  # hash operator state into checkpoint events
    values: bool = True  # record values in send events
    max_time: int = 50_000_000
    rescale: tuple = ()  # ("savepoint" | "failure", time, new parallelism): restore at another parallelism
    max_parallelism: int = 16  # key groups of keyed operators (runs that rescale); at least their parallelism
    finish_sources: bool = False  # sources finish at the end of their input (FLIP-147); the rest goes on

    def __post_init__(self) -> None:
        if self.protocol is None:  # as snapcheck simulate without --protocol
            from snapcheck.reference.catalogue import base_of, mutant_class

            base = DEFAULT_PROTOCOL if self.mutant is None else base_of(mutant_class(self.mutant))
            object.__setattr__(self, "protocol", base)

    def describe(self) -> dict:
        """JSON-serialisable form for the trace header."""
        d = {
            name: getattr(self, name)
            for name in _FIELDS
            if name not in _EXTENSIONS or getattr(self, name) != _DEFAULTS[name]
        }
        if not isinstance(self.protocol, str):
            from snapcheck.reference.catalogue import resolve, spec_of

            d["protocol"] = spec_of(resolve(self.protocol))
        if isinstance(self.workload, Workload):
            d["workload"] = self.workload.name
        d["failures"] = [list(f) for f in self.failures]
        d["stragglers"] = [list(s) for s in self.stragglers]
        d["pauses"] = [list(p) for p in self.pauses]
        if self.rescale:
            d["rescale"] = [list(x) for x in self.rescale]
        return d

    def header_metadata(self, workload: str = "-", workload_params: dict | None = None) -> dict:
        """``metadata.simulator`` of the trace header: the workload run and this configuration
        (``describe``), which the checker reads the requested faults from and
        ``shrink --simulation`` reruns."""
        return {"workload": workload, "workload_params": workload_params or {}, "config": self.describe()}


DEFAULT_PROTOCOL = "abs-aligned"
_FIELDS = tuple(f.name for f in fields(SimConfig))
_DEFAULTS = {f.name: f.default for f in fields(SimConfig)}
_EXTENSIONS = ("rescale", "max_parallelism", "finish_sources")  # described only when set


@dataclass
class SimResult:
    config: SimConfig
    header: Header
    events: list
    metrics: dict
    final_states: dict
    outputs: list
    log: EventLog

    def trace(self) -> Trace:
        """The trace as a ``traces.Trace`` (no copy, no re-validation)."""
        return self.log.trace()

    def dumps(self) -> bytes:
        """The trace as JSONL bytes."""
        return self.log.dumps()

    def write(self, path: str) -> None:
        with open(path, "wb") as f:
            f.write(self.dumps())

    @property
    def gave_up(self) -> bool:
        """The run stopped because every round triggered at its end was aborted (declined
        snapshots, checkpoint timeouts: the coordinator gives up after ten), with no round
        left in progress: it has no committed end state. A deadlock (a round that never
        completes) or a run cut at ``max_time`` is not giving up."""
        m = self.metrics
        return (
            bool(m.get("stuck"))
            and not m.get("truncated")
            and "rounds_aborted" in m
            and m["rounds_started"] == m["rounds_completed"] + m["rounds_aborted"]
        )


# What each plain field of SimConfig holds: (type, minimum or None, None allowed); the
# minimums are those snapcheck simulate enforces. The protocol, workload, mutant and the
# entries of failures, stragglers, pauses and rescale are checked where they are read.
_I64 = 2**63  # integers of the trace format are signed 64-bit
_INT: tuple[type, ...] = (int,)
_NUMBER: tuple[type, ...] = (int, float)
_BOOL: tuple[type, ...] = (bool,)
_KINDS = {
    "seed": (_INT, None, False),
    "parallelism": (_INT, 1, False),
    "records": (_INT, 1, True),
    "gap": (_INT, 1, True),
    "hot_ratio": (_NUMBER, 0, False),
    "interval": (_INT, 1, False),
    "max_concurrent": (_INT, 1, False),
    "checkpoint_timeout": (_INT, 1, True),
    "aligned_timeout": (_INT, 0, False),
    "recovery": ((str,), None, False),
    "latency": (_INT, 0, False),
    "jitter": (_INT, 0, False),
    "fifo": (_BOOL, None, False),
    "buffer": (_INT, 1, False),
    "out_buffer": (_INT, 1, False),
    "barrier_cost": (_INT, 0, False),
    "snapshot_cost": (_INT, 0, False),
    "control_latency": (_INT, 0, False),
    "control_jitter": (_INT, 0, False),
    "detect_delay": (_INT, 0, False),
    "restart_delay": (_INT, 0, False),
    "decline_prob": (_NUMBER, 0, False),
    "digests": (_BOOL, None, False),
    "values": (_BOOL, None, False),
    "max_time": (_INT, 1, False),
    "max_parallelism": (_INT, 1, False),
    "finish_sources": (_BOOL, None, False),
}
_FRACTIONS = ("hot_ratio", "decline_prob")  # at most 1
# Upper bounds: an all-to-all edge has parallelism^2 channels, each simulated (q3 at
# parallelism 128 takes 10 s and 0.7 GB to set up, at 256 two minutes and 2.7 GB).
_MOST = {"parallelism": 256, "max_parallelism": 32768}  # and key groups: Flink's bound, 2^15
_ENTRIES = {  # tuple fields: the form of one entry
    "failures": "(task id, time) or (task id, situation, k), or 'TASK@TIME'",
    "stragglers": "(task id, cost factor)",
    "pauses": "(step, ticks)",
    "rescale": "(kind, time, parallelism)",
}


def check_fields(cfg: SimConfig) -> None:
    """A ``UsageError`` naming the first field of ``cfg`` whose value is not of the type
    (or outside the range: a minimum; a fraction at most 1) the simulator takes, and what
    it takes.

    >>> check_fields(SimConfig(parallelism="2"))
    Traceback (most recent call last):
    snapcheck.traces.errors.UsageError: SimConfig.parallelism: expected an integer >= 1 and <= 256, not '2' (str)
    >>> check_fields(SimConfig(decline_prob=1.5))
    Traceback (most recent call last):
    snapcheck.traces.errors.UsageError: SimConfig.decline_prob: expected a number >= 0 and <= 1, not 1.5 (float)
    >>> check_fields(SimConfig(parallelism=100_000))
    Traceback (most recent call last):
    snapcheck.traces.errors.UsageError: SimConfig.parallelism: expected an integer >= 1 and <= 256, not 100000 (int)
    >>> check_fields(SimConfig(decline_prob=float("nan")))
    Traceback (most recent call last):
    snapcheck.traces.errors.UsageError: SimConfig.decline_prob: expected a number >= 0 and <= 1, not nan (float)
    >>> check_fields(SimConfig(failures=("map[0]",)))
    Traceback (most recent call last):
    snapcheck.traces.errors.UsageError: SimConfig.failures: fault 'map[0]': expected TASK@TIME or TASK@SITUATION#K, e.g. join[0]@1500
    """
    from snapcheck.reference.sim.exploration import parse_fault

    for name, (types, least, optional) in _KINDS.items():
        v = getattr(cfg, name)
        if v is None and optional:
            continue
        fits = isinstance(v, types) and (types == _BOOL or not isinstance(v, bool))
        fits = fits and (v == v and abs(v) != float("inf") if isinstance(v, float) else True)  # not NaN, finite
        fits = fits and (-_I64 <= v < _I64 if isinstance(v, int) else True)  # the trace format's integers
        most = 1 if name in _FRACTIONS else _MOST.get(name)
        if not fits or (least is not None and v < least) or (most is not None and v > most):
            what = {_INT: "an integer", _NUMBER: "a number", _BOOL: "True or False"}.get(types, "a string")
            what += f" >= {least}" if least is not None else ""
            what += f" and <= {most}" if most is not None else ""
            what += " of at most 64 bits (signed)" if isinstance(v, int) and not -_I64 <= v < _I64 else ""
            raise UsageError(
                f"SimConfig.{name}: expected {what}{' or None' if optional else ''}, not {v!r} ({type(v).__name__})"
            )
    for name, form in _ENTRIES.items():
        v = getattr(cfg, name)
        entries = v if isinstance(v, (tuple, list)) else None
        bad = [
            e
            for e in entries or ()
            if not (isinstance(e, (tuple, list)) or (name == "failures" and isinstance(e, str)))
        ]
        if entries is None or bad:
            raise UsageError(f"SimConfig.{name}: expected a tuple of {form} entries, not {v!r}")
    try:
        faults = [parse_fault(f) for f in cfg.failures]
    except ValueError as exc:
        raise UsageError(f"SimConfig.failures: {exc}") from None
    for f in faults:
        if not (
            isinstance(f[0], str)
            and (len(f) == 2 and _integer(f[1]) or len(f) == 3 and isinstance(f[1], str) and _integer(f[2]))
        ):
            raise UsageError(f"SimConfig.failures: {f!r} is not {_ENTRIES['failures']}")


def _integer(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def resolve(cfg: SimConfig) -> tuple[SimConfig, Workload, Protocol]:
    """Apply the mutant and build the workload and protocol objects of a config.

    ``cfg.protocol`` and ``cfg.mutant`` are catalogue names, ``MODULE:CLASS``
    references, ``Protocol`` subclasses or (protocol only) instances; a mutant must
    declare ``mutant_of`` naming ``cfg.protocol``. Unknown names are a ``UsageError``.
    An instance is copied (``copy.deepcopy``; one that cannot be is a ``UsageError``):
    each run starts from the instance as it was given, never from what an earlier run
    left on it."""
    from snapcheck.reference.catalogue import base_of, mutant_class, user_hook
    from snapcheck.reference.catalogue import resolve as lookup
    from snapcheck.reference.workloads import make_workload

    check_fields(cfg)
    protocol = cfg.protocol
    if cfg.mutant is not None:
        mut = mutant_class(cfg.mutant)
        if lookup(protocol) is not lookup(base_of(mut)):
            raise UsageError(f"mutant {mut.name!r} mutates protocol {base_of(mut)!r}, not {protocol!r}")
        cfg = adjusted(mut, cfg)
        _recovery_mode(mut, cfg)
        with user_hook(mut, "its constructor"):
            protocol = mut.from_config(cfg)
    elif isinstance(protocol, Protocol):
        if cfg.recovery != "restart-all":
            raise UsageError(
                "recovery applies to a protocol given by name or class; pass it to your Protocol's constructor"
            )
        try:  # each run its own instance: nothing it keeps leaks into the next run
            protocol = copy.deepcopy(protocol)
        except Exception as exc:  # e.g. a lock or an open file kept on the instance
            raise UsageError(
                f"{type(protocol).name}: the protocol instance cannot be copied for the run ({exc}); "
                "pass its class instead, or keep what cannot be copied out of the instance"
            ) from None
    else:
        cls = lookup(protocol)
        _recovery_mode(cls, cfg)
        with user_hook(cls, "its constructor"):
            protocol = cls.from_config(cfg)
    limit = protocol.max_rounds_in_flight
    if limit is not None and cfg.max_concurrent > limit:
        raise UsageError(
            f"max_concurrent {cfg.max_concurrent}: {protocol.name} runs at most {limit} round(s) at once "
            "(its max_rounds_in_flight)"
        )
    workload = cfg.workload
    if isinstance(workload, str):
        try:
            workload = make_workload(workload, cfg.parallelism, cfg.seed, cfg.records, cfg.gap, cfg.hot_ratio)
        except KeyError:
            from snapcheck.reference.workloads import RANDOM_WORKLOADS, WORKLOADS

            known = ", ".join(list(WORKLOADS) + list(RANDOM_WORKLOADS))
            raise UsageError(f"unknown workload {workload!r} (known: {known})") from None
    return cfg, workload, protocol


def _recovery_mode(cls: type[Protocol], cfg: SimConfig) -> None:
    """A recovery mode the protocol does not declare (``recovery_modes``) is the
    configuration's mistake, said as such (not as its constructor raising) — for a
    protocol that reads its configuration as ``Protocol.from_config`` does (one that
    overrides it, say to map the default mode onto its own, decides itself)."""
    own = "from_config" in {k for c in cls.__mro__ if c is not Protocol for k in vars(c)}
    if not own and cfg.recovery not in cls.recovery_modes:
        raise UsageError(
            f"recovery {cfg.recovery!r}: {cls.name} implements {', '.join(cls.recovery_modes)} (its recovery_modes)"
        )


def is_cyclic(workload: Workload) -> bool:
    """Has ``workload`` a cycle (its back-edges marked on the way)?"""
    from snapcheck.reference.topology import find_back_edges

    find_back_edges(workload.operators, workload.edges)
    return workload.cyclic


def adjusted(mutant: type[Protocol], cfg: SimConfig) -> SimConfig:
    """``cfg`` as the ``mutant`` class's ``adjust`` changes it; an ``adjust`` that raises or
    returns something other than a ``SimConfig`` is the user's mistake (``UsageError``).

    >>> from snapcheck.reference.catalogue import mutant_class
    >>> adjusted(mutant_class("unc-no-logging"), SimConfig(mutant="unc-no-logging")).protocol
    'unc'
    """
    from snapcheck.reference.catalogue import user_hook

    with user_hook(mutant, "adjust"):
        out = mutant.adjust(cfg)
    if not isinstance(out, SimConfig):
        raise UsageError(
            f"mutant {mutant.name!r}: adjust(cfg) returned {out!r:.80}, not a SimConfig: it returns the "
            "configuration to run (e.g. dataclasses.replace(cfg, ...), or cfg itself)"
        )
    return out


_TYPES = {"int": (int,), "float": (int, float), "bool": (bool,), "str": (str,), "tuple": (tuple, list), "None": ()}


def demo_problems(demo: object) -> list[str]:
    """What is wrong with a protocol's ``demo`` (the ``SimConfig`` fields of its
    demonstration configuration) as a user would fix it: not a dict, a key that is no
    field of ``SimConfig``, a value of another type than the field's (empty when
    nothing is).

    >>> demo_problems({"records": 5, "fail": "src[0]@900"})
    ["demo: 'fail' is not a SimConfig field (did you mean 'failures'?)"]
    >>> demo_problems({"records": "5"}), demo_problems(["records"])
    (["demo['records'] = '5': expected int | None"], ["demo = ['records']: expected a dict of SimConfig fields"])
    """
    import difflib

    if not isinstance(demo, dict):
        return [f"demo = {demo!r:.80}: expected a dict of SimConfig fields"]
    known = {f.name: f.type for f in fields(SimConfig)}
    out = []
    for key, value in demo.items():
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            out.append(f"demo: {key!r} is not a SimConfig field" + (f" (did you mean {close[0]!r}?)" if close else ""))
            continue
        names = [t.strip() for t in str(known[key]).split("|")]
        if any(t not in _TYPES for t in names):  # Any, Workload, …: not checked here
            continue
        fits = (value is None and "None" in names) or any(
            isinstance(value, _TYPES[t]) and not (isinstance(value, bool) and t != "bool") for t in names
        )
        if not fits:
            out.append(f"demo[{key!r}] = {value!r:.80}: expected {known[key]}")
    return out


def simulate(cfg: SimConfig, record: bool = True) -> SimResult:
    """Run one simulation. ``record=False`` skips building the trace (to time the
    simulation alone); metrics, final states and outputs are the same.

    The cyclic garbage collector is paused during the run: a run frees its garbage
    by reference counting (it creates no garbage cycles; the simulator's own object
    graph becomes one after the run), so collecting while it allocates its many
    small objects would only cost time (about a quarter of the CPU time). The
    collector is simply re-enabled afterwards, not paused as ``traces.gc_pause`` does
    (moving what was made to the oldest generation): a campaign drops each run's
    trace soon after, and counting those objects towards full collections made 600
    campaign runs about 10 % slower in CPU time.

    Python's global ``random`` (and NumPy's, when loaded) is seeded from ``cfg.seed``
    for the run and restored after it (``seeded_global_random``): a protocol drawing
    from it runs alike from the same command."""
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        with seeded_global_random(cfg.seed):
            return _simulate(cfg, record)
    finally:
        if gc_was_enabled:
            gc.enable()


@contextmanager
def seeded_global_random(seed: int):
    """Python's global ``random`` (and NumPy's, when loaded) seeded from ``seed`` inside
    the block, as it was after it. The kit draws from random generators of its own; a
    protocol that calls ``random.random()`` or ``numpy.random.rand()`` draws from
    these, so the same seed gives it the same draws, run after run and process after
    process.

    >>> import random
    >>> with seeded_global_random(7):
    ...     a = random.random()
    >>> with seeded_global_random(7):
    ...     a == random.random()
    True
    """
    if type(seed) is not int:  # (a configuration that is refused: it says why)
        yield
        return
    state = random.getstate()
    np = sys.modules.get("numpy")
    np_state = np.random.get_state() if np is not None else None
    random.seed(seed)
    if np is not None:
        np.random.seed(seed % 2**32)
    try:
        yield
    finally:
        random.setstate(state)
        if np is not None:
            np.random.set_state(np_state)


def _simulate(cfg: SimConfig, record: bool) -> SimResult:
    """``simulate``'s run, with the collector paused and the global generators seeded."""
    cfg, workload, protocol = resolve(cfg)
    sim_class = protocol.simulator or Simulator
    if (cfg.rescale or cfg.finish_sources) and is_cyclic(workload):
        raise UsageError("rescaling and finished sources are modelled for acyclic dataflows only")
    if cfg.rescale and not protocol.rescalable:
        own = ", ".join(f"--fail {f}@TIME" for f in protocol.job_faults)
        raise UsageError(
            f"{type(protocol).name} cannot run with a rescale: it does not restore at another "
            "parallelism by --rescale (protocol fact rescalable = False"
            f"{': its own simulator does not model it' if protocol.simulator is not None else ''})"
            + (f"; faults of the whole job its simulator injects itself: {own}" if own else "")
        )
    if cfg.finish_sources and not protocol.finished_inputs:
        raise UsageError(
            f"{type(protocol).name} cannot run with finishing sources (protocol fact finished_inputs = False: "
            + (
                "its own simulator does not model them)"
                if protocol.simulator is not None
                else "its tasks fix their inputs when they start)"
            )
        )
    if cfg.rescale or cfg.finish_sources:  # (a protocol with its own simulator was refused above)
        check_key_groups(workload, cfg.rescale, cfg.max_parallelism)
        sim_class = rescaling_class(sim_class)
    sim = sim_class(cfg, workload, protocol, EventLog if record else NullLog)
    sim.run()
    return SimResult(cfg, sim.header, sim.log.events, sim.metrics(), sim.final_states(), sim.outputs, sim.log)
