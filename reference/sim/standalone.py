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
        return self.rec.dumps()


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
            "faults_not_fired": 0,
            "situations": {},
        }
        out.update(self._metrics)
        return out

    def final_states(self) -> dict:
        return dict(self._final)
