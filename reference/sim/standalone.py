"""Run a model that records through ``traces.TraceRecorder`` under ``reference.simulate``.

The changelog (GIC) and active-replication models are small step-driven models of
their own rather than protocols of the dataflow engine (``reference.sim.engine``):
what they exercise — artifact lifecycles, replicas and merges — is not a barrier
protocol (so they have no simulator situations: their coverage is not tracked). ``StandaloneSimulator`` gives them the engine's simulator interface
(``Protocol.simulator``), so ``simulate(SimConfig(protocol=..., mutant=...))``, the
``snapcheck simulate`` command and the mutant registry treat them like every other
protocol. A subclass implements ``model(cfg) -> (TraceRecorder, metrics, final_states,
outputs)``; the config's ``workload`` is not used (each model has its own input).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from snapcheck.traces.model import Trace
from snapcheck.traces.recorder import TraceRecorder
from snapcheck.traces.writer import dumps_trace


def _not_fired(failures, events) -> int:
    """How many of the crashes asked for (``(task, time)``) never happened: a task's
    crashes beyond its ``fail`` events (one asked for after the model's run ended, say).

    >>> _not_fired([("U#0", 10), ("U#0", 99999)], [])
    2
    """
    asked: dict[str, int] = {}
    for task, _ in failures:
        asked[task] = asked.get(task, 0) + 1
    for e in events:
        if e.type == "fail" and e.proc in asked:
            asked[e.proc] -= 1
    return sum(max(0, n) for n in asked.values())


class RecordedLog:
    """The ``EventLog`` face of a finished ``TraceRecorder``."""

    def __init__(self, rec: TraceRecorder) -> None:
        self.rec = rec
        self._trace = rec.trace()
        self.events = self._trace.events
        self.header = rec.header

    def trace(self) -> Trace:
        return self._trace

    def dumps(self) -> bytes:
        return dumps_trace(self.header, self.events)  # (the header as completed after the run)


class StandaloneSimulator(ABC):
    def __init__(self, cfg, workload, protocol, log_class) -> None:
        if any(len(f) != 2 for f in cfg.failures):
            raise ValueError(
                f"{protocol.name} runs its own model: crashes are TASK@TIME only "
                "(situation faults and pauses need the dataflow simulator)"
            )
        if cfg.pauses:
            raise ValueError(f"{protocol.name} runs its own model: no schedule pauses")
        self.cfg = cfg
        self.protocol = protocol

    @abstractmethod
    def model(self, cfg):
        """Run the model for ``cfg``: ``(recorder, metrics, final_states, outputs)``."""

    def run(self) -> None:
        rec, self._metrics, self._final, self.outputs = self.model(self.cfg)
        # the configuration, as the dataflow simulator's header declares it: the crashes asked
        # for (which the checker counts as exercised or not), and what reproduces the run
        rec.header.metadata.setdefault("simulator", self.cfg.header_metadata())
        self.log = RecordedLog(rec)
        self.header = rec.header

    def metrics(self) -> dict:
        """The engine's summary figures counted from the trace (what ``snapcheck simulate``
        prints), updated with the model's own metrics."""
        count: dict[str, int] = {}
        for e in self.log.events:
            count[e.type] = count.get(e.type, 0) + 1
        out = {
            "protocol": self.protocol.header_name(),
            "workload": "-",
            "seed": self.cfg.seed,
            "events": len(self.log.events),
            "tasks": sum(1 for p in self.header.processes if p.role in (None, "task")),
            "rounds_started": count.get("round_start", 0),
            "rounds_completed": count.get("round_complete", 0),
            "checkpoints": count.get("checkpoint", 0),
            "failures": count.get("fail", 0),
            "replayed_messages": count.get("replay", 0),
            "outputs": len(self.outputs),
            "sim_time": 0,
            "stuck": False,
            "truncated": False,
            "faults_requested": len(self.cfg.failures),
            "faults_not_fired": _not_fired(self.cfg.failures, self.log.events),
            "situations": {},
        }
        out.update(self._metrics)
        return out

    def final_states(self) -> dict:
        return dict(self._final)
