"""``TraceRecorder``: instrument a system (or a simulator) to write v1 traces.

A few lines suffice::

    rec = TraceRecorder(["A", "B"], [("a2b", "A", "B")], protocol="my-protocol", seed=7)
    m = rec.send("A", "a2b", value=42)      # assigns seq and a unique mid
    rec.checkpoint("B", kind="basic")
    rec.recv("B", m)
    rec.write("run.jsonl")

The recorder numbers per-process events (``idx``), per-channel sequence numbers
and checkpoints, names message incarnations uniquely (a restored sender
regenerates ``(ch, seq)`` under a new ``mid``), and streams to a file when
given ``out=`` (written line by line, unbuffered, so nothing recorded is lost if
the process dies); ``write`` writes a file atomically.

It checks every call as it is made (through the checked ``traces.writer.TraceWriter``):
an unknown process, channel, message or checkpoint, a send on a channel the
process is not the source of, a receive by a process that is not the
destination or of a message already received, an unknown checkpoint kind, a
value that is not JSON or an integer outside 64 bits raise ``RecorderError`` at
that call, naming the problem, and record nothing:

>>> rec = TraceRecorder(["A", "B"], [("a2b", "A", "B")])
>>> m = rec.send("A", "a2b")
>>> rec.recv("B", m)
>>> rec.recv("B", m)
Traceback (most recent call last):
...
snapcheck.traces.errors.RecorderError: message received twice: 'a2b:1' processed at line 4, but it was already processed at line 3 (a message is delivered once; a redelivery is a 'replay' with its own mid)
>>> rec.send("B", "a2b")
Traceback (most recent call last):
...
snapcheck.traces.errors.RecorderError: send on the wrong channel: B sends on 'a2b', whose source is A
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from snapcheck.traces.errors import RecorderError, UsageError
from snapcheck.traces.model import Channel, Event, Header, Process, Trace
from snapcheck.traces.writer import TraceWriter


def _process(p) -> Process:
    if isinstance(p, Process):
        return p
    if isinstance(p, str):
        return Process(p)
    return Process(**p)


def _channel(c) -> Channel:
    if isinstance(c, Channel):
        return c
    if isinstance(c, (tuple, list)):
        return Channel(*c)
    return Channel(**c)


class TraceRecorder:
    def __init__(
        self,
        processes: Iterable,
        channels: Iterable,
        protocol: str = "unknown",
        params: dict | None = None,
        seed: int | None = None,
        metadata: dict | None = None,
        out: str | os.PathLike | None = None,
    ):
        for what, given in (("processes", processes), ("channels", channels)):
            if isinstance(given, (str, bytes)):  # a string is iterable: "src" made processes s, r and c
                raise RecorderError(f"{what}: expected a list, not the string {given!r}")
        if params is not None and not isinstance(params, dict):
            raise RecorderError(f"params: expected a dict of protocol parameters, not {params!r}")
        try:
            self.header = Header(
                processes=[_process(p) for p in processes],
                channels=[_channel(c) for c in channels],
                protocol={"name": protocol, "params": dict(params or {})},
                seed=seed,
                metadata=dict(metadata or {}),
            )
        except TypeError as exc:
            raise RecorderError(f"bad process or channel description: {exc}") from None
        self._chan = {c.id: c for c in self.header.channels}
        self._out_chans: dict[str, list[str]] = {p.id: [] for p in self.header.processes}
        for c in self.header.channels:
            self._out_chans.setdefault(c.src, []).append(c.id)
        self._idx = {p.id: 0 for p in self.header.processes}
        self._epoch = {p.id: 0 for p in self.header.processes}
        self._seq = {c.id: 0 for c in self.header.channels}
        self._ckpt = {p.id: 0 for p in self.header.processes}
        self._seq_at: dict[tuple[str, int], dict[str, int]] = {}
        self._mid_ch: dict[str, str] = {}
        self._replays: dict[str, int] = {}
        self.events: list[dict] = []
        self._closed = False
        try:
            self._file = open(out, "wb", buffering=0) if out is not None else None
        except OSError as exc:  # as write() says it
            raise UsageError(f"cannot write {out}: {exc.strerror}") from None
        try:
            self._writer = TraceWriter(self.header, stream=self._file)
        except RecorderError:
            self.close()
            raise
        for p in self.header.processes:
            self._seq_at[(p.id, 0)] = {c: 0 for c in self._out_chans[p.id]}

    # -- plumbing ---------------------------------------------------------------
    def _proc(self, proc: str) -> str:
        if proc not in self._idx:
            raise RecorderError(f"unknown process {proc!r} (the header declares {', '.join(self._idx)})")
        return proc

    def _channel_of(self, ch: str) -> str:
        if ch not in self._chan:
            raise RecorderError(f"unknown channel {ch!r} (the header declares {', '.join(self._chan) or 'none'})")
        return ch

    def _message(self, mid: str) -> str:
        ch = self._mid_ch.get(mid) if isinstance(mid, str) else None
        if ch is None:
            raise RecorderError(f"unknown message id {mid!r}: no send or replay of this recorder returned it")
        return ch

    def _emit(self, etype: str, proc: str, fields: dict) -> dict:
        """Check and write one event; nothing changes if the writer refuses it."""
        if self._closed:
            raise RecorderError("the recorder is closed: its file is complete (record before close())")
        self._proc(proc)
        d = {"type": etype, "proc": proc, "idx": self._idx[proc]}
        d.update({k: v for k, v in fields.items() if v is not None})
        self._writer.event(d)
        self._idx[proc] += 1
        if self._file is None:
            self.events.append(d)
        return d

    def _mid(self, base: str, proc: str) -> str:
        e = self._epoch[proc]
        return base if e == 0 else f"{base}@{e}"

    # -- messages ---------------------------------------------------------------
    def send(
        self,
        proc: str,
        ch: str,
        *,
        value: Any = None,
        key: Any = None,
        size: int | None = None,
        logged: bool | None = None,
        piggyback: dict | None = None,
        t: float | None = None,
        attrs: dict | None = None,
        key_group: int | None = None,
    ) -> str:
        """Record a data message sent by ``proc`` on ``ch``; returns its mid."""
        seq = self._seq[self._channel_of(ch)] + 1
        mid = self._mid(f"{ch}:{seq}", self._proc(proc))
        self._emit(
            "send",
            proc,
            {
                "ch": ch,
                "mid": mid,
                "seq": seq,
                "logged": logged,
                "size": size,
                "key": key,
                "value": value,
                "piggyback": piggyback,
                "t": t,
                "attrs": attrs,
                "key_group": key_group,
            },
        )
        self._seq[ch] = seq
        self._mid_ch[mid] = ch
        return mid

    def barrier(self, proc: str, ch: str, round: int, t: float | None = None) -> str:
        """Record a barrier / marker of snapshot ``round`` sent on ``ch``; returns its mid."""
        mid = self._mid(f"{self._channel_of(ch)}:b{round}", self._proc(proc))
        self._emit("send", proc, {"ch": ch, "mid": mid, "kind": "barrier", "round": round, "t": t})
        self._mid_ch[mid] = ch
        return mid

    def cancel(self, proc: str, ch: str, round: int, t: float | None = None) -> str:
        """Record a cancellation marker of ``round`` sent on ``ch`` (``proc`` declined or
        gave up the round; Flink's ``CancelCheckpointMarker``); returns its mid.

        >>> rec = TraceRecorder(["a", "b"], [("a>b", "a", "b")], protocol="abs-aligned")
        >>> rec.cancel("a", "a>b", 1)
        'a>b:c1'
        """
        mid = self._mid(f"{self._channel_of(ch)}:c{round}", self._proc(proc))
        self._emit("send", proc, {"ch": ch, "mid": mid, "kind": "cancel", "round": round, "t": t})
        self._mid_ch[mid] = ch
        return mid

    def arrive(self, proc: str, mid: str, t: float | None = None) -> None:
        """Record that ``mid`` arrived in ``proc``'s input buffer (not processed yet)."""
        self._emit("arrive", proc, {"ch": self._message(mid), "mid": mid, "t": t})

    def recv(self, proc: str, mid: str, vars: dict | None = None, t: float | None = None) -> None:
        """Record the *processing* of ``mid`` by ``proc`` (where its state changes)."""
        self._emit("recv", proc, {"ch": self._message(mid), "mid": mid, "vars": vars, "t": t})

    def discard(self, proc: str, mid: str, reason: str = "duplicate", t: float | None = None) -> None:
        """Record that ``proc`` dropped ``mid`` unprocessed (e.g. a duplicate)."""
        self._emit("discard", proc, {"ch": self._message(mid), "mid": mid, "reason": reason, "t": t})

    def replay(self, proc: str, of: str, source: str = "log", t: float | None = None, ch: str | None = None) -> str:
        """Record that ``proc`` re-injects message ``of`` (from a log or recorded channel
        state); returns the new incarnation's mid. ``ch``: the new channel a restore
        at another parallelism mapped the original's channel onto (default: the original's)."""
        original = self._message(of)
        ch = ch or original
        k = self._replays.get(of, 0) + 1
        mid = f"{of}/r{k}"
        self._emit("replay", proc, {"ch": ch, "mid": mid, "replay_of": of, "from": source, "t": t})
        self._replays[of] = k
        self._mid_ch[mid] = ch
        return mid

    # -- checkpoints and logs ---------------------------------------------------
    def checkpoint(
        self,
        proc: str,
        kind: str = "basic",
        round: int | None = None,
        vars: dict | None = None,
        digest: str | None = None,
        size: int | None = None,
        t: float | None = None,
        attrs: dict | None = None,
    ) -> int:
        """Record a local checkpoint; returns its number ``ckpt`` (1, 2, ...; ``kind="initial"``:
        the process's explicit initial checkpoint, number 0, as its first event). ``attrs``:
        e.g. ``{"agreed": {key: value}}``, values every subtask of its operator must agree on."""
        n = 0 if kind == "initial" else self._ckpt[self._proc(proc)] + 1
        self._emit(
            "checkpoint",
            proc,
            {
                "kind": kind,
                "round": round,
                "ckpt": n,
                "size": size,
                "vars": vars,
                "digest": digest,
                "t": t,
                "attrs": attrs,
            },
        )
        self._ckpt[proc] = n
        self._seq_at[(proc, n)] = {c: self._seq[c] for c in self._out_chans[proc]}
        return n

    def record(
        self, proc: str, ckpt: int, ch: str, mids: list[str], part: str = "input", t: float | None = None
    ) -> None:
        """Record the channel state of ``ch`` persisted with checkpoint ``ckpt`` of ``proc``."""
        for m in mids:
            self._message(m)
        self._emit("record", proc, {"ch": ch, "ckpt": ckpt, "part": part, "mids": list(mids), "t": t})

    def log(self, proc: str, ch: str, mids: list[str], t: float | None = None) -> None:
        """Record that ``proc`` wrote ``mids`` (sent on ``ch``) to its durable sender log."""
        for m in mids:
            self._message(m)
        self._emit("log", proc, {"ch": ch, "mids": list(mids), "t": t})

    def log_truncate(self, proc: str, ch: str, through_seq: int, t: float | None = None) -> None:
        """Record that ``proc`` dropped its log of ``ch`` up to sequence number ``through_seq``."""
        self._emit("log_truncate", proc, {"ch": ch, "through_seq": through_seq, "t": t})

    # -- failures and recovery --------------------------------------------------
    def fail(self, proc: str, reason: str | None = None, t: float | None = None) -> None:
        """Record that ``proc`` crashed (its volatile state is lost until a ``restore``)."""
        self._emit("fail", proc, {"reason": reason, "t": t})

    def restore(
        self,
        proc: str,
        ckpt: int,
        recovery: int | None = None,
        round: int | None = None,
        t: float | None = None,
        sources: list | None = None,
        channels: list | None = None,
        attrs: dict | None = None,
    ) -> None:
        """Record that ``proc`` resumed from its checkpoint ``ckpt``; its output sequence
        numbers return to their values at that checkpoint. A process restored at another
        parallelism names its ``sources`` and ``channels`` (docs/trace-format.md)."""
        self._emit(
            "restore",
            proc,
            {
                "round": round,
                "ckpt": ckpt,
                "recovery": recovery,
                "t": t,
                "sources": sources,
                "channels": channels,
                "attrs": attrs,
            },
        )
        self._epoch[proc] += 1
        for c, s in self._seq_at[(proc, ckpt)].items():
            self._seq[c] = s

    def finish(self, proc: str, reason: str | None = None, t: float | None = None) -> None:
        """Record that ``proc`` reached the end of its input: it sends no more data."""
        self._emit("finish", proc, {"reason": reason, "t": t})

    def retire(self, proc: str, ckpt: int | None = None, reason: str | None = None, t: float | None = None) -> None:
        """Record that ``proc`` leaves the job (``ckpt``: the checkpoint whose state lives on)."""
        self._emit("retire", proc, {"ckpt": ckpt, "reason": reason, "t": t})

    def protocol_error(self, proc: str, reason: str, t: float | None = None, attrs: dict | None = None) -> None:
        """Record that the protocol broke on ``proc`` (``reason``; ``attrs.handler``: where):
        the run ends here, nothing follows."""
        self._emit("protocol_error", proc, {"reason": reason, "t": t, "attrs": attrs})

    # -- coordination and output ------------------------------------------------
    def round_start(self, proc: str, round: int, t: float | None = None) -> None:
        """Record that ``proc`` (usually the coordinator) started snapshot ``round``."""
        self._emit("round_start", proc, {"round": round, "t": t})

    def round_complete(self, proc: str, round: int, t: float | None = None, attrs: dict | None = None) -> None:
        """Record that snapshot ``round`` completed (every checkpoint of it is durable, or, with
        ``attrs {"fallback": {proc: k}}``, a regional completion: docs/trace-format.md)."""
        self._emit("round_complete", proc, {"round": round, "t": t, "attrs": attrs})

    def round_abort(
        self, proc: str, round: int, reason: str | None = None, t: float | None = None, attrs: dict | None = None
    ) -> None:
        """Record that snapshot ``round`` was aborted (it will never complete)."""
        self._emit("round_abort", proc, {"round": round, "reason": reason, "t": t, "attrs": attrs})

    def output(
        self,
        proc: str,
        value: Any,
        key: Any = None,
        mid: str | None = None,
        t: float | None = None,
        attrs: dict | None = None,
    ) -> None:
        """Record an output ``proc`` made visible outside the system (e.g. a sink's publish);
        ``mid``, if given, is a message this recorder's send or replay returned."""
        if mid is not None:
            self._message(mid)
        self._emit("output", proc, {"mid": mid, "key": key, "value": value, "t": t, "attrs": attrs})

    # -- results ----------------------------------------------------------------
    def dumps(self) -> bytes:
        """The trace as JSONL bytes (in-memory recorders only)."""
        return self._writer.dumps()

    def write(self, path: str | os.PathLike) -> None:
        """Write the trace to ``path`` atomically (in-memory recorders only)."""
        self._writer.write(path)

    def trace(self) -> Trace:
        """The recorded trace as a ``Trace`` (in-memory recorders only; not re-validated)."""
        return Trace(self.header, [Event.from_dict(d, n) for n, d in enumerate(self.events, 2)])

    def close(self) -> None:
        """Close the file the recorder streams to (``out``); nothing can be recorded after."""
        if self._file is not None:
            self._file.close()
            self._file = None
            self._closed = True

    def __enter__(self) -> TraceRecorder:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
