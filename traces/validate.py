"""Streaming validation of a v1 trace, one line at a time.

Each problem is reported as ``FILE:LINE: reason``: malformed JSON, unknown event
type, missing or mistyped field (JSON Schema), unknown process or channel, an
event on the wrong end of its channel, a receive of a message never sent, a
message received twice (processed, or discarded after being processed: each
message incarnation is delivered once; a redelivery is a ``replay`` with its own
mid), a duplicate message identity, an out-of-order per-process sequence, a
checkpoint number that goes backwards, a restore of a checkpoint never taken or
of a checkpoint of a later round than the restore's ``round``, and a causally impossible history (a cycle in happened-before); the rules of
rescaling and finished tasks are in ``validate_rescale``. Memory is
O(processes + messages): events are checked and passed on, never kept.

The ``mid`` of a valid receive (``recv``, ``arrive``, ``discard`` of a message sent
earlier in the file) is replaced in its parsed object by the equal string of the
message's send: the parser makes a new string for every value, and the events built
from the objects then share one string per message id (on a trace of millions of
messages the copies would cost hundreds of megabytes).
"""

from __future__ import annotations

from array import array
from typing import Any

import fastjsonschema

from snapcheck.traces.errors import TraceError, TraceErrors
from snapcheck.traces.model import EVENT_TYPES, MARKERS, Channel, Event, Header
from snapcheck.traces.schema import (
    describe_schema_error,
    event_validator,
    fast_event_check,
    header_stricter_than_schema,
    header_validator,
    keyed_event_check,
    stricter_than_schema,
)
from snapcheck.traces.validate_rescale import NO_LATER_ROUND, RescaleRules

DEFAULT_MAX_ERRORS = 20
MAX_ID = 200  # the longest id or mid (the schema's maxLength)

_RECEIVE_LIKE = ("recv", "arrive", "discard")
ONE_ROUND = (  # why a round may not start twice, nor a process take two checkpoints of it
    "a round number names one snapshot, of which each process takes one checkpoint; a round run again after "
    "a recovery (a micro-batch re-run) is a new round"
)


# A coordinator keeps no checkpoint of its own in the format, so a failover of it (a
# JobManager restart) cannot be judged; what it decides afterwards can.
_COORDINATOR_FAILOVER = (
    "{proc} is a coordinator and {what}: a coordinator failover (e.g. a JobManager restart) is not an event "
    "of the format; record what the coordinator decides after it (the rounds it starts, completes, aborts) "
    "and the tasks' own failures and restores"
)


class TraceValidator(RescaleRules):
    """Feed the header, then every event in file order; ``finish()`` runs the
    whole-trace checks and returns the errors (the first ``max_errors`` by line kept, all
    counted)."""

    def __init__(self, file: str = "<memory>", max_errors: int = DEFAULT_MAX_ERRORS, strict: bool = False):
        """``strict``: a rejected event changes nothing (for writers, which refuse it and
        go on); otherwise the reader resynchronises on it so one slip does not cascade."""
        self.file = file
        self.max_errors = max_errors
        self.strict = strict
        self.errors: list[TraceError] = []
        self.last_error: TraceError | None = None
        self.total_errors = 0
        self.header_obj: Header | None = None
        self._procs: dict[str, int] = {}
        self._roles: list[str] = []
        self._chans: dict[str, int] = {}
        self._ch_src: list[int] = []
        self._ch_dst: list[int] = []
        self._ch_ids: list[str] = []
        self._channels: list[Channel] = []  # the header's channels by number
        self._next_idx: list[int] = []
        self._alt_idx: dict[int, int] = {}
        self._last_ckpt: list[int] = []
        self._ckpts: list[set[int]] = []
        self._round_ckpt: dict[tuple[int, int], tuple[int, int]] = {}  # (process, round) -> (ckpt, line)
        self._round_started: dict[int, int] = {}  # round -> the line of its round_start
        self._failed: list[bool] = []
        self._ended = 0  # the line of a protocol_error: the run ended there, nothing follows it
        self._last_seq: list[int] = []  # per channel: last seq sent since its sender's last restore
        self._out_chans: list[list[int]] = []  # per process: the channels it sends on
        self._mid_num: dict[str, int] = {}
        self._mid_of: list[str] = []  # per message: its mid, the string of its send's line
        self._msg_ch = array("i")
        self._msg_line = array("q")
        self._used_line = array("q")  # per message: line of its recv (-line: discard; 0: none yet)
        self._early: dict[str, int] = {}  # mid -> its recv or discard line, when that comes before its send
        self._pending: list[tuple[str, int, int, str]] = []  # (mid, line, channel or -1, what)
        self._refused_sends: set[str] = set()  # mids of sends refused (their error said it)
        self._comm: list[array] = []  # per process: encoded comm events (see _hb_check)
        self._comm_line: list[array] = []
        self._hb = False  # recording comm events (from the first forward reference)
        self._hb_base = 0  # messages numbered when recording started
        self._late: dict[int, list[str]] = {}  # per process: mids of placeholders (-1) in _comm
        self.events_seen = 0

    # -- reporting --------------------------------------------------------------
    def error(self, line: int, reason: str) -> None:
        self.total_errors += 1
        self.last_error = TraceError(self.file, line, reason)
        if len(self.errors) < self.max_errors:
            self.errors.append(self.last_error)
            return
        # the first ``max_errors`` by line are kept, also when an earlier line's error is
        # found late (a reference resolved at the end of the file)
        last = max(range(len(self.errors)), key=lambda i: self.errors[i].line, default=None)
        if last is not None and line < self.errors[last].line:
            self.errors[last] = self.last_error

    @property
    def last_reason(self) -> str:
        """The reason of the last error recorded ("" when there is none)."""
        return self.last_error.reason if self.last_error else ""

    @property
    def ok(self) -> bool:
        return self.total_errors == 0

    def raise_if_errors(self) -> None:
        if self.total_errors:
            raise TraceErrors(self.errors, self.total_errors)

    # -- header -----------------------------------------------------------------
    def header(self, d: object, line: int = 1) -> Header | None:
        if not isinstance(d, dict):
            self.error(line, "the first line must be the trace header (a JSON object)")
            return None
        if d.get("format") != "snapcheck-trace":
            self.error(
                line,
                "the first line must be a snapcheck-trace header "
                f'("format": "snapcheck-trace"), found format {d.get("format")!r}',
            )
            return None
        if d.get("version") != 1:
            self.error(line, f"unsupported trace format version {d.get('version')!r} (this snapcheck reads version 1)")
            return None
        try:
            header_validator()(d)
        except fastjsonschema.JsonSchemaException as exc:
            self.error(line, f"bad header: {describe_schema_error(exc)}")
            return None
        stricter = header_stricter_than_schema(d)
        if stricter is not None:
            self.error(line, f"bad header: {stricter}")
            return None
        h = Header.from_dict(d)
        for p in h.processes:
            if p.id in self._procs:
                self.error(line, f"bad header: process {p.id!r} declared twice")
                continue
            self._procs[p.id] = len(self._roles)
            self._roles.append(p.role)
        for chan in h.channels:
            if chan.id in self._chans:
                self.error(line, f"bad header: channel {chan.id!r} declared twice")
                continue
            for end in (chan.src, chan.dst):
                if end not in self._procs:
                    self.error(line, f"bad header: channel {chan.id!r} names unknown process {end!r}")
            self._chans[chan.id] = len(self._ch_ids)
            self._ch_ids.append(chan.id)
            self._channels.append(chan)
            self._ch_src.append(self._procs.get(chan.src, -1))
            self._ch_dst.append(self._procs.get(chan.dst, -1))
        n = len(self._roles)
        self._next_idx = [0] * n
        self._last_ckpt = [0] * n
        self._ckpts = [{0} for _ in range(n)]
        self._failed = [False] * n
        self._last_seq = [0] * len(self._ch_ids)
        self._out_chans = [[] for _ in range(n)]
        for c, src in enumerate(self._ch_src):
            if src >= 0:
                self._out_chans[src].append(c)
        self._comm = [array("q") for _ in range(n)]
        self._comm_line = [array("q") for _ in range(n)]
        self.header_obj = h
        self._rescale_header(h)
        return h

    # -- events -----------------------------------------------------------------
    def event(self, d: Any, line: int) -> Event | None:
        """Check one event line (its parsed JSON object); the ``Event``, or None if it is
        invalid (the error is recorded)."""
        return Event.from_dict(d, line) if self.check_event(d, line) else None

    def check_event(self, d: Any, line: int) -> tuple | None:
        """Check one event line (its parsed JSON object) without building an ``Event``: its
        keys in order (``tuple(d)``, which a builder of events reuses), or None if it is
        invalid (the error is recorded)."""
        self.events_seen += 1
        if self._ended:
            self.error(line, f"nothing follows the protocol_error at line {self._ended}: the run ended there")
            self._count_rejected(d)
            return None
        try:
            etype = d["type"]
            checks, handler = _DISPATCH[etype]
        except (KeyError, TypeError, IndexError):
            self._bad_type(d, line)
            self._count_rejected(d)
            return None
        keys = tuple(d)
        check = checks.get(keys)
        if check is None:
            check = _keyed_check(etype, keys, checks)
        if not check(d) and self._schema_failed(d, line):
            self._count_rejected(d)
            return None
        proc = d["proc"]
        try:
            p = self._procs[proc]
        except (KeyError, TypeError):
            if not self._schema_failed(d, line):
                self.error(line, f"unknown process {proc!r}")
            return None
        idx = d["idx"]
        next_idx = self._next_idx
        want = next_idx[p]
        if idx != want:
            if idx != self._alt_idx.get(p):
                self.error(line, f"out-of-order per-process sequence: {proc} event idx {idx}, expected {want}")
                if self.strict:
                    self.events_seen -= 1
                    return None
                # Resynchronise on either reading (a typo'd idx or a missing line), and go on
                # checking the event so one slip does not cascade.
                self._alt_idx[p] = want + 1
            else:
                del self._alt_idx[p]
        elif self._alt_idx:
            self._alt_idx.pop(p, None)
        next_idx[p] = idx + 1
        if (p in self._started and not self._retired) or self._rescale_event(d, p, line):
            if self._failed[p] and etype not in ("restore", "retire"):
                self.error(line, f"{proc} has failed and records {etype!r} before a 'restore'")
            elif handler(self, d, p, line):
                return keys
        if self.strict:
            next_idx[p] = want
            self.events_seen -= 1
        elif etype == "send":  # refused: its receive is not reported again as one of a message never sent
            self._refused_sends.add(d["mid"])
        return None

    def refuse(self, line: int, reason: str, d: object = None) -> None:
        """Record the problem of an event line refused before it was checked (not JSON,
        an integer outside 64 bits, a key written twice, a Parquet row whose ``extra``
        is bad). ``d``: the object as far as it could be read (None when it could not
        be): its event keeps its place in its process's ``idx`` sequence and a send its
        ``mid``, as for an event refused for a field (``_count_rejected``), so one bad
        line is one problem."""
        self.error(line, reason)
        self._count_rejected(d)

    def _count_rejected(self, d: Any) -> None:
        """An event refused before its ``idx`` was checked (an unknown type, a field
        missing, mistyped or unknown) still takes its place in its process's sequence
        when it names a known process and the expected ``idx``, so the next event of
        that process is not reported out of order as well (the reader resynchronises;
        a writer, ``strict``, records nothing of it). A refused send's ``mid`` is noted, so
        a reference to it is not reported again as one to a message never sent, and a
        refused restore still starts its process (a process that appears later is not
        reported again for a first event other than a restore)."""
        if self.strict or type(d) is not dict:
            return
        if d.get("type") == "send" and type(d.get("mid")) is str:
            self._refused_sends.add(d["mid"])
        p = self._procs.get(d["proc"]) if type(d.get("proc")) is str else None
        if p is not None and d.get("type") == "restore":
            self._started.add(p)  # its first event was this restore: not "its first event is ..." again
        if p is not None and d.get("idx") == self._next_idx[p] and type(d["idx"]) is int:
            self._next_idx[p] += 1

    def _bad_type(self, d: Any, line: int) -> None:
        if type(d) is not dict:
            self.error(line, f"an event must be a JSON object, found {type(d).__name__}")
        elif "type" not in d and d.get("format") == "snapcheck-trace":
            self.error(
                line,
                "a second header (a trace has one, its first line): two traces written into one file? "
                "Each trace is a file of its own",
            )
        elif "type" not in d:
            self.error(line, "missing field 'type'")
        else:
            self.error(line, f"unknown event type {d['type']!r} (known: {', '.join(EVENT_TYPES)})")

    def _schema_failed(self, d: dict, line: int) -> bool:
        """Run the full schema validator on an event the generated check refused or whose
        trusted fields (``_TRUSTED``) did not pass the stateful checks; record its error if
        it has one (an integer written with a fraction, ``1.0``, is one)."""
        try:
            event_validator(d["type"])(d)
        except fastjsonschema.JsonSchemaException as exc:
            self.error(line, f"{d['type']}: {describe_schema_error(exc)}")
            return True
        stricter = stricter_than_schema(d["type"], d)
        if stricter is not None:
            self.error(line, f"{d['type']}: {stricter}")
            return True
        return False

    def _channel(self, d: dict, line: int) -> int | None:
        ch = d["ch"]
        c = self._chans.get(ch) if type(ch) is str else None
        if c is None and not self._schema_failed(d, line):
            self.error(line, f"unknown channel {ch!r}")
        return c

    def _new_mid(self, mid: str, c: int, line: int) -> bool:
        """Number a new message; False (an error recorded) if its mid was sent before."""
        n = len(self._msg_ch)
        first = self._mid_num.setdefault(mid, n)
        if first != n:
            self.error(
                line, f"duplicate message identity: mid {mid!r} was already sent at line {self._msg_line[first]}"
            )
            return False
        self._msg_ch.append(c)
        self._msg_line.append(line)
        self._mid_of.append(mid)
        self._used_line.append(self._early.pop(mid, 0) if self._early else 0)
        return True

    def _once(self, mid: str, n: int | None, line: int, what: str) -> bool:
        """A message is processed or discarded at most once, and arrives (``arrive``,
        buffered, not processed yet) only before that. Lines are stored negated for a
        discard, to name the first fate."""
        first = self._used_line[n] if n is not None else self._early.get(mid, 0)
        if what == "arrive":
            if first:
                self.error(
                    line,
                    f"{mid!r} arrives at line {line}, but it was already "
                    f"{'discarded' if first < 0 else 'processed'} at line {abs(first)}: an 'arrive' is a "
                    "message received and not processed yet, so it comes before its 'recv' or 'discard'",
                )
                return False
            return True
        if first:
            verb = "processed" if what == "recv" else "discarded"
            earlier = "discarded" if first < 0 else "processed"
            self.error(
                line,
                f"message received twice: {mid!r} {verb} at line {line}, but it was already {earlier} "
                f"at line {abs(first)} (a message is delivered once; a redelivery is a 'replay' with "
                f"its own mid)",
            )
            return False
        mark = -line if what == "discard" else line
        if n is not None:
            self._used_line[n] = mark
        else:
            self._early[mid] = mark
        return True

    def _ref_mid(self, mid: str, c: int, line: int, what: str, p: int) -> None:
        """A reference to a message that must be sent somewhere in the trace."""
        n = self._mid_num.get(mid)
        if n is None:
            self._pending.append((mid, line, c, what))
            if what in _RECEIVE_LIKE or what == "replay":
                if not self._hb:  # the first receive before its send (file order)
                    self._hb, self._hb_base = True, len(self._msg_ch)
                self._comm[p].append(-1)  # resolved in finish()
                self._comm_line[p].append(line)
                self._late.setdefault(p, []).append(mid)
            return
        self._check_ref_channel(mid, n, c, line, what)
        if self._hb and (what in _RECEIVE_LIKE or what == "replay"):
            self._comm[p].append(2 * n + 1)
            self._comm_line[p].append(line)

    def _check_ref_channel(self, mid: str, n: int, c: int, line: int, what: str) -> None:
        sent_on = self._msg_ch[n]
        if c >= 0 and sent_on != c and not (what == "replay" and self._replay_mapped(sent_on, c)):
            verb = {"record": "recorded", "replay": "replayed"}.get(what, "received")
            self.error(
                line,
                f"{what} on the wrong channel: {mid!r} {verb} on {self._ch_ids[c]!r} "
                f"but sent on {self._ch_ids[sent_on]!r} (line {self._msg_line[n]})"
                + (
                    f", and no restore maps {self._ch_ids[sent_on]!r} onto it (a restore's 'channels'): write the "
                    "mapping the engine made, or, if the engine replayed the record where no mapping sends it, "
                    "that is a misrouting this trace cannot show"
                    if what == "replay"
                    else ""
                ),
            )

    def _on_send(self, d: dict, p: int, line: int) -> bool:
        ch = d["ch"]
        try:
            c = self._chans[ch]
        except (KeyError, TypeError):
            return self._channel(d, line) is not None
        if self._ch_src[c] != p:
            self.error(
                line, f"send on the wrong channel: {d['proc']} sends on {ch!r}, whose source is {self._channels[c].src}"
            )
            return False
        seq = d.get("seq")
        kind = d.get("kind")
        if kind in MARKERS and d.get("round") is None:
            self.error(line, f"send: a {kind} marker needs field 'round'")
            return False
        if seq is None:
            if kind not in MARKERS:
                self.error(line, "send: a data message needs field 'seq' (per-channel sequence number)")
                return False
        elif seq <= self._last_seq[c]:
            self.error(
                line,
                f"duplicate message identity: seq {seq} on {ch!r} does not follow "
                f"seq {self._last_seq[c]} (sequence numbers increase per channel between restores)",
            )
            return False
        kg = d.get("key_group")
        if type(kg) is int and kg >= self._max_par.get(self._ch_dst[c], kg + 1):
            self.error(
                line,
                f"send: key_group {kg} is outside max_parallelism {self._max_par[self._ch_dst[c]]} of the receiver "
                f"{self._channels[c].dst} (key groups are 0 .. max_parallelism - 1)",
            )
            return False
        mid = d["mid"]
        if type(mid) is not str or not 0 < len(mid) <= MAX_ID:
            return not self._schema_failed(d, line)
        if not self._new_mid(mid, c, line):
            return False
        if seq is not None:
            self._last_seq[c] = seq
        if self._hb:
            self._comm[p].append(2 * len(self._msg_line) - 2)
            self._comm_line[p].append(line)
        return True

    def _on_receive(self, d: dict, p: int, line: int) -> bool:
        """A recv, discard or arrive of a message (only the first two are a message's fate)."""
        try:
            c = self._chans[d["ch"]]
        except (KeyError, TypeError):
            return self._channel(d, line) is not None
        if self._ch_dst[c] != p:
            self.error(
                line,
                f"{d['type']} on the wrong channel: {d['proc']} is not the destination of {d['ch']!r} "
                f"(destination {self._channels[c].dst})",
            )
            return False
        mid = d["mid"]
        try:
            n = self._mid_num[mid]
        except (KeyError, TypeError):
            n = None
        if n is None or self._msg_ch[n] != c:  # sent later in the file, or on another channel
            if type(mid) is not str or not 0 < len(mid) <= MAX_ID:
                return not self._schema_failed(d, line)
            if not self._once(mid, n, line, d["type"]):
                return False
            self._ref_mid(mid, c, line, d["type"], p)
            return True
        what = d["type"]
        fates = self._used_line
        if fates[n]:
            return self._once(mid, n, line, what)
        if what != "arrive":
            fates[n] = line if what == "recv" else -line
        d["mid"] = self._mid_of[n]  # one string per message id in the events built from the objects
        if self._hb:
            self._comm[p].append(2 * n + 1)
            self._comm_line[p].append(line)
        return True

    _on_recv = _on_arrive = _on_discard = _on_receive

    def _on_replay(self, d: dict, p: int, line: int) -> bool:
        c = self._channel(d, line)
        if c is None:
            return False
        if type(d["mid"]) is not str or not 0 < len(d["mid"]) <= MAX_ID:
            return not self._schema_failed(d, line)
        if p not in (self._ch_src[c], self._ch_dst[c]):
            self.error(line, f"replay on {d['ch']!r} by {d['proc']}, which is neither its source nor its destination")
            return False
        mid = d["mid"]
        if mid in self._mid_num:
            return self._new_mid(mid, c, line)  # records the duplicate identity
        self._ref_mid(d["replay_of"], c, line, "replay", p)
        self._new_mid(mid, c, line)
        if self._hb:
            self._comm[p].append(2 * self._mid_num[mid])
            self._comm_line[p].append(line)
        return True

    def _on_checkpoint(self, d: dict, p: int, line: int) -> bool:
        if self._roles[p] == "coordinator":
            self.error(line, f"{d['proc']} is a coordinator and takes no checkpoints")
            return False
        if d.get("kind") == "initial" and d["ckpt"] != 0:
            self.error(line, f"an initial checkpoint has ckpt 0, found {d['ckpt']}")
            return False
        if d["ckpt"] == 0:
            if d.get("kind") != "initial" or d["idx"] != 0:
                self.error(line, "ckpt 0 is the initial checkpoint: kind 'initial', the process's first event")
                return False
            return True
        if d["ckpt"] <= self._last_ckpt[p]:
            self.error(
                line, f"checkpoint numbers must increase: {d['proc']} ckpt {d['ckpt']} after ckpt {self._last_ckpt[p]}"
            )
            return False
        r = d.get("round")
        if r is not None and (p, r) in self._round_ckpt:
            ck, at = self._round_ckpt[(p, r)]
            self.error(
                line,
                f"{d['proc']} takes a second checkpoint of round {r} (ckpt {d['ckpt']}; ckpt {ck} at line {at} is "
                f"its checkpoint of round {r}): {ONE_ROUND}",
            )
            return False
        if r is not None:
            self._round_ckpt[(p, r)] = (d["ckpt"], line)
        self._last_ckpt[p] = d["ckpt"]
        self._ckpts[p].add(d["ckpt"])
        self._note_checkpoint(d, p)
        return True

    def _known_ckpt(self, d: dict, p: int, line: int) -> bool:
        if d["ckpt"] not in self._ckpts[p]:
            self.error(line, f"{d['type']} refers to checkpoint {d['ckpt']} of {d['proc']}, which it has not taken")
            return False
        return True

    def _on_record(self, d: dict, p: int, line: int) -> bool:
        c = self._channel(d, line)
        if c is None or not self._known_ckpt(d, p, line):
            return False
        part = d.get("part") or "input"
        end = self._ch_dst[c] if part == "input" else self._ch_src[c]
        if end != p:
            role = "destination" if part == "input" else "source"
            self.error(line, f"record: {d['proc']} records the {part} part of {d['ch']!r} but is not its {role}")
            return False
        for mid in d["mids"]:
            self._ref_mid(mid, -1, line, "record", p)
        return True

    def _on_log(self, d: dict, p: int, line: int) -> bool:
        c = self._channel(d, line)
        if c is None:
            return False
        if self._ch_src[c] != p:
            self.error(line, f"{d['type']}: {d['proc']} is not the sender on {d['ch']!r}")
            return False
        for mid in d.get("mids") or ():
            self._ref_mid(mid, c, line, "log", p)
        return True

    _on_log_truncate = _on_log

    def _on_fail(self, d: dict, p: int, line: int) -> bool:
        if self._roles[p] == "external":
            self.error(line, f"{d['proc']} is an external input log, which never fails (its role in the header)")
            return False
        if self._roles[p] == "coordinator":
            self.error(line, _COORDINATOR_FAILOVER.format(proc=d["proc"], what="fails"))
            return False
        self._failed[p] = True
        return True

    def _on_restore(self, d: dict, p: int, line: int) -> bool:
        if self._roles[p] == "external":
            self.error(line, f"{d['proc']} is an external input log, which never rolls back (its role in the header)")
            return False
        if self._roles[p] == "coordinator":
            self.error(line, _COORDINATOR_FAILOVER.format(proc=d["proc"], what="restores"))
            return False
        ok = self._restore_content(d, p, line)
        # a restore with a wrong field is still the process's restore: what follows is read as
        # coming after it (no error of the events after it repeats this one's)
        self._failed[p] = False
        for c in self._out_chans[p]:  # a new incarnation numbers its messages afresh
            self._last_seq[c] = 0
        return ok

    def _restore_content(self, d: dict, p: int, line: int) -> bool:
        """The checkpoint, round, sources and elements a task's restore names."""
        if not self._known_ckpt(d, p, line):
            return False
        held = self._ckpt_round.get((p, d["ckpt"]))  # None: checkpoint 0, or one of no round
        if d.get("round") is not None and held is not None and held > d["round"]:
            self.error(
                line,
                f"restore: {d['proc']} restores checkpoint {d['ckpt']}, of round {held}, as round {d['round']}: "
                f"{NO_LATER_ROUND}",
            )
            return False
        if (d.get("sources") or d.get("channels")) and not self._restore_sources(d, p, line):
            return False
        return self._restore_elements(d, line)

    def _restore_elements(self, d: dict, line: int) -> bool:
        """A rescale's restore names the checkpoints it took list-state elements of
        (``attrs.elements``: ``[process, checkpoint]``, 0 the initial state): each a
        checkpoint its process has taken."""
        for q, c in (d.get("attrs") or {}).get("elements") or ():
            k = self._procs.get(q)
            if k is None or c not in self._ckpts[k]:
                self.error(
                    line,
                    f"restore: {d['proc']} takes list-state elements of checkpoint {c} of {q!r}, "
                    + ("which is no process of the header" if k is None else "which it has not taken"),
                )
                return False
        return True

    def _on_round(self, d: dict, p: int, line: int) -> bool:
        return True

    def _on_round_start(self, d: dict, p: int, line: int) -> bool:
        r = d.get("round")
        if isinstance(r, int) and r in self._round_started:
            self.error(
                line,
                f"round {r} starts again (it started at line {self._round_started[r]}): {ONE_ROUND}",
            )
            return False
        if isinstance(r, int):
            self._round_started[r] = line
        return True

    _on_round_complete = _on_round_abort = _on_round

    def _on_protocol_error(self, d: dict, p: int, line: int) -> bool:
        self._ended = line
        return True

    def _on_output(self, d: dict, p: int, line: int) -> bool:
        """An output that names the message that produced it names one sent in the trace."""
        mid = d.get("mid")
        if isinstance(mid, str):
            self._ref_mid(mid, -1, line, "output", p)
        return True

    # -- whole-trace checks -----------------------------------------------------
    def finish(self) -> list[TraceError]:
        """Resolve references to messages sent later in the file and check happened-before."""
        self._rescale_finish()
        unresolved = 0
        for mid, line, c, what in self._pending:
            n = self._mid_num.get(mid)
            if n is None:
                unresolved += 1
                if mid in self._refused_sends:  # its send's own error said what was wrong
                    continue
                noun = {"record": "recording", "replay": "replay", "log": "log entry"}.get(what, what)
                self.error(line, f"{noun} of a message never sent: {mid!r}")
            else:
                self._check_ref_channel(mid, n, c, line, what)
        if unresolved == 0:
            self._hb_check()
        self.errors.sort(key=lambda e: e.line)  # references resolved here were found last
        return self.errors

    def _hb_check(self) -> None:
        """Cursor simulation: a process advances past a receive only once the message
        was sent. If every cursor is stuck, happened-before has a cycle.

        Only the events from the first receive that precedes its send in file order on
        are recorded (``_hb``): before it, file order is a linear extension of
        happened-before, and a cycle, which needs an edge back in file order, can only
        use edges that land at or after that receive. Messages sent before it count as
        sent; a trace without such a receive has no cycle."""
        if not self._hb:
            return
        comm = []
        for p, seq in enumerate(self._comm):
            if p in self._late:  # fill in references resolved at finish()
                late = iter(self._late[p])
                seq = array("q", (2 * self._mid_num[next(late)] + 1 if code == -1 else code for code in seq))
            comm.append(seq)
        n_msgs = len(self._msg_ch)
        sent = bytearray(n_msgs)
        sent[: self._hb_base] = b"\x01" * self._hb_base
        waiting: dict[int, list[int]] = {}
        pos = [0] * len(comm)
        work = list(range(len(comm)))
        while work:
            p = work.pop()
            seq, i = comm[p], pos[p]
            while i < len(seq):
                code = seq[i]
                m = code >> 1
                if code & 1:
                    if not sent[m]:
                        waiting.setdefault(m, []).append(p)
                        break
                else:
                    sent[m] = 1
                    if m in waiting:
                        work.extend(waiting.pop(m))
                i += 1
            pos[p] = i
        stuck = [(self._comm_line[p][pos[p]], p) for p in range(len(comm)) if pos[p] < len(comm[p])]
        if stuck:
            stuck.sort()
            names = list(self._procs)
            where = ", ".join(f"{names[p]} at line {ln}" for ln, p in stuck[:6])
            self.error(
                stuck[0][0],
                "causally impossible history: happened-before has a cycle "
                f"(each of these receives waits for a send that comes after it: {where})",
            )


# Fields the handlers check themselves (an id found among the header's ids is valid; a new
# mid is checked where it is numbered); the generated schema check skips them.
_TRUSTED = {
    t: frozenset({"proc", "ch", "mid"} if t in ("send", "arrive", "recv", "discard", "replay") else {"proc"})
    for t in EVENT_TYPES
}
# Per event type: the generated checks by key order (``keyed_event_check``) and the handler.
_DISPATCH: dict[str, tuple[dict, Any]] = {t: ({}, getattr(TraceValidator, "_on_" + t)) for t in EVENT_TYPES}
_MAX_KEY_ORDERS = 256  # per event type; beyond, events go to the check of any key order


def _keyed_check(etype: str, keys: tuple, checks: dict):
    """The generated check of events of type ``etype`` with these keys, made and kept in
    ``checks`` (a table of at most ``_MAX_KEY_ORDERS``; then ``fast_event_check``)."""
    if len(checks) >= _MAX_KEY_ORDERS:
        return fast_event_check(etype, _TRUSTED[etype])
    check = checks[keys] = keyed_event_check(etype, keys, _TRUSTED[etype])
    return check
