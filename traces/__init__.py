"""snapcheck trace format v1: the contract between trace producers and consumers.

A trace is a JSON Lines file: one header line (processes, channels, protocol,
seed, metadata), then one event per line. Each event belongs to one process and
carries its per-process position ``idx``; messages are identified by a unique
``mid`` and a per-channel sequence number ``seq``. The specification is
``docs/trace-format.md``; the machine-readable form is the JSON Schema shipped
as ``traces/schema/trace-v1.schema.json``.

This package is the base of the dependency order: ``reference`` and
``checker`` use it, nothing here imports them.
"""

from snapcheck.traces.errors import RecorderError, TraceError, TraceErrors
from snapcheck.traces.jsonl import iter_events, read_header, read_trace, validate_file
from snapcheck.traces.model import EVENT_TYPES, Channel, Event, Header, Process, Trace
from snapcheck.traces.recorder import TraceRecorder
from snapcheck.traces.validate import TraceValidator
from snapcheck.traces.writer import TraceWriter, dumps_trace, write_trace

__all__ = [
    "Channel",
    "Event",
    "Header",
    "Process",
    "Trace",
    "EVENT_TYPES",
    "RecorderError",
    "TraceError",
    "TraceErrors",
    "TraceRecorder",
    "TraceValidator",
    "TraceWriter",
    "read_trace",
    "iter_events",
    "read_header",
    "write_trace",
    "dumps_trace",
    "validate_file",
]
