"""Chandy–Lamport distributed snapshots (Chandy & Lamport, "Distributed Snapshots:
Determining Global States of Distributed Systems", 1985), as in docs/theory.md, "Chandy-Lamport".

Per task:

* on the first marker of round n (or the coordinator's trigger at a source):
  record the local state, send a marker on every output before any further
  message, start recording every *other* input channel;
* on a later marker of round n on channel c: stop recording c. The channel state
  CS(c) is the records *processed* on c after the local state was recorded and
  before c's marker.

No channel is ever blocked. Requires FIFO channels (markers must not be overtaken);
the ``chandy-lamport-non-fifo`` mutant shows what breaks without them. Works on
cyclic graphs. Rounds may overlap (``max_concurrent`` > 1): each round keeps its
own recording.
"""

from __future__ import annotations

from snapcheck.reference.coordinated.channel_recording import ChannelRecordingTask
from snapcheck.reference.protocol import Protocol
from snapcheck.traces.protocol_facts import TlaMapping


class ChandyLamportTask(ChannelRecordingTask):
    def start(self, r: int, first) -> None:
        """Record the local state, send a marker on every output, record every other input."""
        self.latest = r
        ckpt = self.ctx.checkpoint(r)
        if ckpt is None:  # declined: no markers for this round
            return
        self.ctx.send_barrier(r)
        pending: dict[object, list] = {c: [] for c in self.ctx.inputs if c is not first}  # channel -> records
        self.active[r] = (ckpt, pending)
        if not pending:
            self.done(r)

    def on_process(self, ch, msg) -> None:
        self.record_in_flight(ch, msg)


class ChandyLamport(Protocol):
    name = "chandy-lamport"
    situations = Protocol.situations + ("rounds-overlap",)
    family = "coordinated"
    tla = TlaMapping("ChandyLamportTrace")
    summary = "markers, no blocking; records channel state on processing (FIFO channels)"
    task_class = ChandyLamportTask
    observe_processing = True
