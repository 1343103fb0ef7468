"""Shrink a failing trace to a 1-minimal one by delta debugging.

Zeller & Hildebrandt, "Simplifying and Isolating Failure-Inducing Input" (IEEE
TSE 28(2), 2002): ``ddmin`` finds a subset of the input's elements on which
the test still fails and from which no single element can be removed without
the failure disappearing (*1-minimal*).

The elements of a trace are the things whose removal leaves a *valid* trace:

* a **process** (with its channels and every message on them),
* a **channel** (with every message on it),
* a **message** (its send or replay with every arrival, processing, discard,
  recording and log entry of it, and its replays),
* the **processing** (``recv``), **arrival** or **discard** of a message alone
  (the message then stays in flight or unprocessed),
* a **checkpoint** ``C_{p,x}``, x ≥ 1 (with its ``record`` events and any
  failure that restores it or, in a rescale, takes list-state elements of it),
* a whole **record** event, or one message **entry** of a record,
* a **failure** (a ``fail`` with the ``restore`` that follows it, or a lone
  ``restore`` of a surviving process that rolls back; the restores of one
  ``recovery`` and their ``fail`` events go together: a recovery restores its
  processes as one),
* any other single event (``log``, ``log_truncate``, round events, ``output``).

Removing a set of elements removes their closure (above); the survivors are
renumbered the way ``TraceRecorder`` numbers them: ``idx`` per process,
checkpoint numbers ``1, 2, …`` per process (also where a rescale's ``restore``
names the checkpoints it takes state or elements of, and a ``retire`` the checkpoint
it hands over), data ``seq`` per channel (restored
to its value at the restored checkpoint after a ``restore``, so a regenerated
message keeps the number of the original), and message ids rebuilt from these
numbers when the trace uses the recorder's naming (``ch:seq``, ``ch:bR``,
``@epoch``, ``/rK``). Every candidate is validated (``traces``), so a shrunk
trace is always a valid trace.

The test ``snapcheck shrink`` runs is "the checker still reports a violation of
the same property and kind, with the witness of one of the original trace's
violations" (``CheckerPredicate`` with ``like``, ``witness_identity``). Checker
options that name processes or checkpoints (``cut``, ``failures``) are mapped
through the renumbering; checkpoints named by the ``cut`` are never removed.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace

from snapcheck.traces.errors import TraceErrors
from snapcheck.traces.jsonl import parse_trace
from snapcheck.traces.model import MARKERS, Channel, Event, Header, Process, Trace
from snapcheck.traces.writer import dumps_trace

Element = tuple[str, Hashable]
# What a candidate's names were in the trace being shrunk: a renamed message id -> its id
# there, and a checkpoint ``(process, number)`` -> ``(process, number there)``.
Names = dict[Hashable, Hashable]


# -- ddmin ---------------------------------------------------------------------
def ddmin(elements: Sequence, fails: Callable[[list], bool]) -> list:
    """Zeller's ddmin: a 1-minimal sublist of ``elements`` on which ``fails`` holds.

    ``fails(kept)`` must hold for ``elements`` itself. Results are cached, so the
    same subset is never tested twice.
    """
    cache: dict[frozenset, bool] = {}

    def test(kept: list) -> bool:
        key = frozenset(kept)
        if key not in cache:
            cache[key] = fails(kept)
        return cache[key]

    c, n = list(elements), 2
    while len(c) >= 2:
        chunks = _split(c, n)
        for chunk in chunks:
            if test(chunk):
                c, n = chunk, 2
                break
        else:
            for i in range(len(chunks)):
                comp = [x for j, ch in enumerate(chunks) if j != i for x in ch]
                if test(comp):
                    c, n = comp, max(n - 1, 2)
                    break
            else:
                if n >= len(c):
                    break
                n = min(len(c), 2 * n)
    if len(c) == 1 and test([]):
        c = []
    return c


def _split(c: list, n: int) -> list[list]:
    k, r = divmod(len(c), n)
    out, start = [], 0
    for i in range(n):
        end = start + k + (1 if i < r else 0)
        if end > start:
            out.append(c[start:end])
        start = end
    return out


# -- elements of a trace and their removal -------------------------------------
@dataclass
class Removal:
    """Elements to remove, and what they imply."""

    procs: set[str] = field(default_factory=set)
    channels: set[str] = field(default_factory=set)
    mids: set[str] = field(default_factory=set)
    events: set[int] = field(default_factory=set)  # indices into trace.events
    checkpoints: set[tuple[str, int]] = field(default_factory=set)
    entries: set[tuple[int, str]] = field(default_factory=set)  # (record event index, mid)


class TraceShrinker:
    """Builds candidate traces of ``trace`` with some elements removed; ``options``
    are the checker options of ``trace`` (the checkpoints of its ``cut`` are kept)."""

    def __init__(self, trace: Trace, options: dict | None = None):
        self.trace = trace
        self.events = trace.events
        self.options = dict(options or {})
        self.protected = {(p, int(c)) for p, c in (self.options.get("cut") or {}).items() if c != "V" and int(c) > 0}
        self.replays_of: dict[str, list[str]] = {}
        self.failures: list[tuple[int, ...]] = []
        open_fail: dict[str, int] = {}
        for i, e in enumerate(self.events):
            if e.type == "replay":
                self.replays_of.setdefault(e.replay_of, []).append(e.mid)
            elif e.type == "fail":
                open_fail[e.proc] = i
            elif e.type == "restore":
                f = open_fail.pop(e.proc, None)
                self.failures.append((f, i) if f is not None else (i,))
        self.failures.extend((i,) for i in open_fail.values())
        self.failures = self._by_recovery(self.failures)
        self.failure_of = {i: grp for grp in self.failures for i in grp}

    def _by_recovery(self, failures: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
        """The failures whose restores name the same ``recovery`` made one: a recovery
        restores its processes together (a job restarted whole, a region failed over),
        and keeping some of its restores would show a recovery the system never makes."""
        merged: dict[object, list[int]] = {}
        for grp in failures:
            rec = next((self.events[i].recovery for i in grp if self.events[i].type == "restore"), None)
            merged.setdefault(("recovery", rec) if rec is not None else ("alone", grp), []).extend(grp)
        return [tuple(sorted(g)) for g in merged.values()]

    def elements(self) -> list[Element]:
        """Every removable element, coarse ones first (processes, then messages, ...)."""
        out: list[Element] = [("process", p.id) for p in self.trace.processes]
        out += [("channel", c.id) for c in self.trace.channels]
        out += [("message", e.mid) for e in self.events if e.type in ("send", "replay")]
        out += [("failure", grp) for grp in self.failures]
        out += [
            ("checkpoint", (e.proc, e.ckpt))
            for e in self.events
            if e.type == "checkpoint" and e.ckpt > 0 and (e.proc, e.ckpt) not in self.protected
        ]
        for i, e in enumerate(self.events):
            if e.type in (
                "recv",
                "arrive",
                "discard",
                "log",
                "log_truncate",
                "round_start",
                "round_complete",
                "round_abort",
                "output",
            ):
                out.append(("event", i))
            elif e.type == "record":
                out.append(("event", i))
                out += [("entry", (i, m)) for m in e.mids]
        return out

    def removal(self, removed: Sequence[Element]) -> Removal:
        r = Removal()
        for kind, key in removed:
            if kind == "process":
                r.procs.add(key)
            elif kind == "channel":
                r.channels.add(key)
            elif kind == "message":
                r.mids.add(key)
            elif kind == "failure":
                r.events.update(key)
            elif kind == "checkpoint":
                r.checkpoints.add(key)
            elif kind == "event":
                r.events.add(key)
            elif kind == "entry":
                r.entries.add(key)
        r.channels |= {c.id for c in self.trace.channels if c.src in r.procs or c.dst in r.procs}
        for e in self.events:
            if e.type in ("send", "replay") and e.ch in r.channels:
                r.mids.add(e.mid)
        todo = list(r.mids)
        while todo:  # a replay dies with the message it replays
            for m in self.replays_of.get(todo.pop(), ()):
                if m not in r.mids:
                    r.mids.add(m)
                    todo.append(m)
        r.checkpoints |= {(p, c) for p, c in self._all_checkpoints() if p in r.procs}
        # a restore dies with a checkpoint it restores or takes state or elements of, and its recovery with it; a
        # removed process's own restore just goes with the process (its recovery goes on without it)
        for i, e in enumerate(self.events):
            if e.type != "restore" or e.proc in r.procs:
                continue
            if (e.proc, e.ckpt) in r.checkpoints or _taken(e) & r.checkpoints:
                r.events.update(self.failure_of[i])
        return r

    def _all_checkpoints(self):
        return [(e.proc, e.ckpt) for e in self.events if e.type == "checkpoint"]

    def candidate(self, removed: Sequence[Element]) -> tuple[Header, list[dict], dict, dict]:
        """The header, event dicts and checker options of the trace without ``removed``
        (renumbered, options mapped), and the renumbering (``_renumber``'s maps: the new
        id of each renamed message, the new number of each checkpoint kept)."""
        r = self.removal(removed)
        kept: list[dict] = []
        for i, e in enumerate(self.events):
            d = self._keep(i, e, r)
            if d is not None:
                kept.append(d)
        h = self.trace.header
        procs = [p for p in h.processes if p.id not in r.procs]
        chans = [c for c in h.channels if c.id not in r.channels]
        maps = _renumber(kept, chans)
        header = Header(
            processes=[Process(**_fields(p)) for p in procs],
            channels=[Channel(**_fields(c)) for c in chans],
            protocol=dict(h.protocol),
            seed=h.seed,
            metadata=dict(h.metadata),
        )
        return header, kept, map_options(self.options, maps, {p.id for p in procs}), maps

    def _keep(self, i: int, e: Event, r: Removal) -> dict | None:
        if e.proc in r.procs or i in r.events:
            return None
        t = e.type
        if t in ("send", "replay", "arrive", "recv", "discard") and e.mid in r.mids:
            return None
        if t in ("checkpoint", "retire") and (e.proc, e.ckpt) in r.checkpoints:  # a retire hands its over
            return None
        if t in ("record", "log", "log_truncate") and e.ch in r.channels:
            return None
        if t == "record" and (e.proc, e.ckpt) in r.checkpoints:
            return None
        d = e.to_dict()
        if t == "record":
            d["mids"] = [m for m in e.mids if m not in r.mids and (i, m) not in r.entries]
        elif t == "log":
            d["mids"] = [m for m in e.mids or () if m not in r.mids]
            if not d["mids"]:
                return None
        elif t == "output" and e.mid in r.mids:
            del d["mid"]
        return d


def _taken(e: Event) -> set[tuple[str, int]]:
    """The checkpoints of other processes a restore of a rescale takes state from (its
    ``sources``) or list-state elements of (``attrs.elements``: ``[[process, checkpoint],
    ...]``, docs/trace-format.md)."""
    return {(p, c) for p, c in (e.attrs or {}).get("elements") or ()} | {
        (s["proc"], s["ckpt"]) for s in e.sources or ()
    }


def _fields(obj) -> dict:
    return {k: getattr(obj, k) for k in obj.__slots__}


_DATA_MID = re.compile(r"^(?P<ch>.+):(?P<n>[bc]?\d+)(?:@(?P<epoch>\d+))?$")


def _renumber(events: list[dict], channels: list[Channel]) -> dict:
    """Renumber ``idx``, ``ckpt``, ``seq`` (and recorder-style mids) in place, as
    ``TraceRecorder`` would have numbered the same history. Returns the maps
    ``{"ckpt": {(proc, old): new}, "mid": {old: new}}``."""
    out_chans: dict[str, list[str]] = {}
    for c in channels:
        out_chans.setdefault(c.src, []).append(c.id)
    idx: dict[str, int] = {}
    ckpt_map: dict[tuple[str, int], int] = {}
    next_ckpt: dict[str, int] = {}
    for d in events:  # checkpoints first: records may precede them
        if d["type"] == "checkpoint" and d["ckpt"] > 0:
            n = next_ckpt.get(d["proc"], 0) + 1
            next_ckpt[d["proc"]] = n
            ckpt_map[(d["proc"], d["ckpt"])] = n
    seq: dict[str, int] = {}
    seq_at: dict[tuple[str, int], dict[str, int]] = {}
    epoch: dict[str, int] = {}
    seq_map: dict[tuple[str, int], int] = {}
    mid_map: dict[str, str] = {}
    conventional = True
    for d in events:
        p, t = d["proc"], d["type"]
        d["idx"] = idx.get(p, 0)
        idx[p] = d["idx"] + 1
        if t in ("checkpoint", "record", "restore") and d["ckpt"] > 0:
            d["ckpt"] = ckpt_map[(p, d["ckpt"])]
        if t == "retire" and d.get("ckpt"):
            d["ckpt"] = ckpt_map[(p, d["ckpt"])]
        if t == "restore" and d.get("sources"):  # a rescale's restore names the checkpoints it takes
            d["sources"] = [
                dict(s, ckpt=ckpt_map[(s["proc"], s["ckpt"])] if s["ckpt"] > 0 else 0) for s in d["sources"]
            ]
        if t == "restore" and (d.get("attrs") or {}).get("elements"):  # they name checkpoints by number too
            d["attrs"] = dict(d["attrs"])
            d["attrs"]["elements"] = [[q, ckpt_map[(q, c)] if c > 0 else c] for q, c in d["attrs"]["elements"]]
        if t == "checkpoint":
            seq_at[(p, d["ckpt"])] = {c: seq.get(c, 0) for c in out_chans.get(p, ())}
        elif t == "restore":
            epoch[p] = epoch.get(p, 0) + 1
            seq.update(seq_at.get((p, d["ckpt"]), {c: 0 for c in out_chans.get(p, ())}))
        elif t == "send":
            ch, e = d["ch"], epoch.get(p, 0)
            m = _DATA_MID.match(d["mid"])
            if d.get("kind") in MARKERS:  # a barrier ("b") or cancellation marker ("c") of a round
                n = f"{d['kind'][0]}{d['round']}"
                new = f"{ch}:{n}"
                conventional &= bool(m) and m["ch"] == ch and m["n"] == n
            else:
                seq[ch] = seq.get(ch, 0) + 1
                seq_map[(ch, d["seq"])] = seq[ch]
                conventional &= bool(m) and m["ch"] == ch and m["n"] == str(d["seq"])
                d["seq"] = seq[ch]
                new = f"{ch}:{d['seq']}"
            mid_map[d["mid"]] = new if e == 0 else f"{new}@{e}"
        elif t == "log_truncate":
            d["through_seq"] = max(
                (n for (c, o), n in seq_map.items() if c == d["ch"] and o <= d["through_seq"]), default=0
            )
    for d in events:  # replays: "<original>/rK"
        if d["type"] == "replay":
            of = d["replay_of"]
            suffix = d["mid"][len(of) :] if d["mid"].startswith(of + "/r") else None
            conventional &= suffix is not None
            if suffix is not None and of in mid_map:
                mid_map[d["mid"]] = mid_map[of] + suffix
    if not conventional or len(set(mid_map.values())) != len(mid_map):
        mid_map = {}
    for d in events:
        for key in ("mid", "replay_of"):
            if key in d and d[key] in mid_map:
                d[key] = mid_map[d[key]]
        if "mids" in d:
            d["mids"] = [mid_map.get(m, m) for m in d["mids"]]
    return {"ckpt": ckpt_map, "mid": mid_map}


def map_options(options: dict, maps: dict, procs: set[str]) -> dict:
    """Checker options (``cut``, ``failures``, ...) of the original trace, for a candidate."""
    out = dict(options)
    if out.get("cut"):
        out["cut"] = {
            p: (c if c == "V" or int(c) == 0 else maps["ckpt"][(p, int(c))])
            for p, c in out["cut"].items()
            if p in procs
        }
    if isinstance(out.get("failures"), list):
        out["failures"] = [p for p in out["failures"] if p in procs]
    return out


# -- the driver ----------------------------------------------------------------
@dataclass
class ShrinkResult:
    trace: Trace
    text: bytes  # the shrunk trace as JSONL
    options: dict  # checker options for it (mapped)
    kind: str
    property: str
    tests: int  # checker runs
    invalid: int  # candidates rejected by validation (expected 0)
    elements_before: int
    elements_after: int
    names: Names  # the result's message ids and checkpoints -> what they are in the trace shrunk


class ShrinkError(Exception):
    """The trace does not fail as required, so there is nothing to shrink."""


def shrink_trace(
    trace: Trace,
    violates: Callable[[Trace, dict, Names], bool],
    options: dict | None = None,
    kind: str = "",
    prop: str = "",
) -> ShrinkResult:
    """Shrink ``trace`` while ``violates(candidate, mapped_options, names)`` holds; ``names``
    maps the candidate's renamed message ids and renumbered checkpoints to what they are
    in ``trace`` (``Names``).

    After ddmin the result is re-split into its own elements and checked for
    1-minimality directly (each remaining element removed alone), repeating until
    no single removal keeps the failure.
    """
    stats = {"tests": 0, "invalid": 0}

    def build(sh: TraceShrinker, removed: Sequence[Element], names: Names):
        header, events, opts, renamed = sh.candidate(removed)
        if not header.processes:  # a trace has at least one process: nothing to test
            return None
        text = dumps_trace(header, events)
        try:
            cand = parse_trace(text.decode(), sh.trace.path)
        except TraceErrors:
            stats["invalid"] += 1
            return None
        return cand, text, opts, _compose(names, renamed)

    def without(sh: TraceShrinker, elems: list[Element], kept: list[Element]):
        keep = set(kept)
        return build(sh, [x for x in elems if x not in keep], {})

    def test(built) -> bool:
        if built is None:
            return False
        stats["tests"] += 1
        return violates(built[0], built[2], built[3])

    options = dict(options or {})
    sh = TraceShrinker(trace, options)
    if not violates(trace, options, {}):
        raise ShrinkError("the trace does not show the violation to shrink")
    elems = sh.elements()
    before = len(elems)
    built = without(sh, elems, ddmin(elems, lambda kept: test(without(sh, elems, kept))))
    if built is None:  # the kit's own bug, not the user's: an internal error
        raise RuntimeError("shrink: the shrunk candidate is not a valid trace")
    while True:  # 1-minimality on the shrunk trace's own elements
        sh = TraceShrinker(built[0], built[2])
        elems = sh.elements()
        smaller = (build(sh, [x], built[3]) for x in elems)
        found = next((b for b in smaller if test(b)), None)
        if found is None:
            break
        built = found
    cand, text, opts, names = built
    return ShrinkResult(cand, text, opts, kind, prop, stats["tests"], stats["invalid"], before, len(elems), names)


_LINES = re.compile(r"\blines? \d+(?:(?:, | and )\d+)*")
_CHECKPOINT = re.compile(r"(?<=checkpoint )(\S+):(\d+)\b")
_CUT = re.compile(r"\{[^{}]*\}")  # a cut, {P: 1, Q: 2}: the options map it, less the processes removed
# Kinds whose witness is a path in order (a Z-path or Z-cycle): the same messages in
# another order are another path.
PATH_KINDS = frozenset({"rdt", "useless-checkpoint", "timestamp-order"})


def _compose(names: Names, renamed: dict) -> Names:
    """``names`` of a candidate made from one whose names were ``names``, renumbered by
    ``renamed`` (``_renumber``'s maps, ``{old: new}``: an empty message map keeps the ids)."""
    mids, ckpts = renamed["mid"], renamed["ckpt"]
    out: Names = (
        {new: names.get(old, old) for old, new in mids.items()}
        if mids
        else {k: v for k, v in names.items() if isinstance(k, str)}
    )
    out.update({(p, new): names.get((p, old), (p, old)) for (p, old), new in ckpts.items()})
    return out


def _checkpoint(names: Names, proc, number):
    """What checkpoint ``number`` of ``proc`` was in the trace shrunk (``"V"`` and ``0`` stay)."""
    if isinstance(number, int) and number > 0:
        return names.get((proc, number), (proc, number))
    return proc, number


def _text(text: str, names: Names) -> str:
    """``text`` with its line numbers and cuts left out, and the message ids and
    checkpoints it names (``checkpoint P:N``) as they were in the trace shrunk."""
    text = _CUT.sub("{}", _LINES.sub(lambda m: m.group(0).split()[0], text))
    text = _CHECKPOINT.sub(lambda m: "{}:{}".format(*_checkpoint(names, m[1], int(m[2]))), text)
    return " ".join(str(names.get(w, w)) for w in text.split(" "))


def _messages(v) -> list:
    """The message ids a violation's witness names (none when it names none)."""
    msgs = (v.witness or {}).get("messages")
    return [m for m in msgs if isinstance(m, str)] if isinstance(msgs, list) else []


def _beside(made, kept) -> bool:
    """Does violation ``made`` stand at the place of ``kept``: the same subject (a round, a
    process, a split), or one of the messages its witness names?"""
    return made.subject == kept.subject or bool(set(_messages(made)) & set(_messages(kept)))


def witness_identity(v, names: Names | None = None) -> tuple:
    """What a shrunk trace must keep of a violation ``v``, so that what it shows is a
    violation the trace being shrunk shows, not one that removing events made: its kind,
    its subject and the messages and checkpoints its witness names, as they were in that
    trace (``names``), line numbers left out; a witness that names neither is known by its
    message. Of a round that never ends, the processes that hold it up: those that never
    take their checkpoint though no barrier is missing, and barriers sent but never
    received — not the processes downstream that only wait for a barrier nobody sent
    them.

    Removing events can forge a violation of almost any kind: the receipt that ended a
    round (a round that never ends), the processing of a message (a loss), a checkpoint
    between a receive and an earlier send (two intervals made one, so a Z-path, a Z-cycle
    or an untracked dependency appears), a message that carried a dependency (RDT), the
    receive that justified a forced checkpoint. Hence the identity, for every kind.

    >>> from snapcheck.checker.report import Violation
    >>> waits = ["B never takes its checkpoint of round 2 (no barrier is missing on its inputs)",
    ...          "C (no checkpoint of round 2) waits for the barrier on bc from B: B never sent it"]
    >>> v = Violation("incomplete-round", "termination", "round 2", "Round 2 ...", [7], {"round": 2, "waiting": waits})
    >>> witness_identity(v)[2:]
    (frozenset({'B never takes its checkpoint of round 2 (no barrier is missing on its inputs)'}), False)
    >>> witness_identity(Violation("uncommitted", "output-commit", "S", "txn 3 staged at line 12, never published", [12]))
    ('uncommitted', 'S', 'txn 3 staged at line, never published')
    >>> witness_identity(Violation("dropped", "channel-state", "round 1", "...", [2], {"messages": ["c:1"]}), {"c:1": "c:7"})
    ('dropped', 'round 1', frozenset({'c:7'}))
    >>> z = Violation("rdt", "rdt", "checkpoint Q:1", "...", [4], {"messages": ["a:2", "b:1"], "checkpoints": [["P", 0], ["Q", 1]]})
    >>> witness_identity(z, {"a:2": "a:3", ("Q", 1): ("Q", 2)})
    ('rdt', 'checkpoint Q:2', ('a:3', 'b:1'), (('P', 0), ('Q', 2)))
    """
    names = names or {}
    witness = v.witness or {}
    head: tuple = (v.kind, _text(v.subject, names))
    waiting = witness.get("waiting") if v.kind == "incomplete-round" else None
    if isinstance(waiting, list):  # and whether the round was declared complete (or never ends)
        held = frozenset(_text(w, names) for w in waiting if "never sent it" not in w or "never received" in w)
        return (*head, held, bool(witness.get("declared_complete")))
    parts: list = []
    if isinstance(witness.get("messages"), list):
        ids = [names.get(m, m) if isinstance(m, str) else repr(m) for m in witness["messages"]]
        parts.append(tuple(ids) if v.kind in PATH_KINDS else frozenset(ids))
        if "processed" in witness:  # a message in flight at a cut: processed after it, or never
            parts.append(witness["processed"])
    if isinstance(witness.get("differs"), dict):  # logged and re-simulated values: which way they differ
        parts.append(repr(sorted(witness["differs"].items())))
    if isinstance(witness.get("checkpoints"), list):
        parts.append(
            tuple(
                _checkpoint(names, *c) if isinstance(c, list) and len(c) == 2 else repr(c)
                for c in witness["checkpoints"]
            )
        )
    return (*head, *parts) if parts else (*head, _text(v.message, names))


class CheckerPredicate:
    """``violates(trace, options, names=None)``: the checker reports a ``kind`` violation of
    ``prop``. With ``like`` (the trace being shrunk and its options), one whose
    ``witness_identity`` (mapped through ``names``, as ``shrink_trace`` gives them) is that
    of a violation ``like`` shows, and beside which no violation of any property that
    ``like`` does not show has the same subject or names one of its messages: a violation
    the shrinker made at the same place (a piggyback that no longer matches its sender
    once the sender's checkpoints are gone; a round declared complete whose checkpoints
    were removed, beside a kept completion before its channel state) says that the kept
    one now rests on something else, and would stand in the witness beside it.

    >>> from snapcheck.checker import CheckOptions
    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["P", "Q"], [("c", "P", "Q")])
    >>> rec.recv("Q", rec.send("P", "c")); _ = rec.checkpoint("Q"); _ = rec.checkpoint("P")
    >>> CheckerPredicate("consistency", "orphan", lambda d: CheckOptions(**d))(rec.trace(), {})
    False
    """

    def __init__(
        self, prop: str, kind: str, base_options: Callable[[dict], object], like: tuple[Trace, dict] | None = None
    ):
        self.prop, self.kind, self.base_options = prop, kind, base_options
        self.same: set | None = None
        self.known: set = set()  # identities of every violation ``like`` shows, of every property
        if like is not None:
            report = self.check(*like)
            self.known = {witness_identity(v) for v in [*report.violations, *self.check_all(*like).violations]}
            self.same = {witness_identity(v) for v in self.matches(report)}

    def check(self, trace: Trace, options: dict):
        """The checker's report on ``trace`` with ``options``."""
        from snapcheck.checker import check_trace

        return check_trace(trace, self.base_options(options))

    def check_all(self, trace: Trace, options: dict, properties: set[str] | None = None):
        """The checker's report on ``trace`` with ``options`` for every property that
        applies to it (``prop`` may not: one the trace's protocol does not promise, such
        as Z-cycle freedom, is checked only when asked for), or for ``properties``, every
        violation listed."""
        from snapcheck.checker import check_trace

        opts = replace(self.base_options(options), properties=properties, max_per_result=sys.maxsize)
        return check_trace(trace, opts)

    def matches(self, report, names: Names | None = None) -> list:
        """The violations of ``report`` that count (``names`` as for ``__call__``), beside
        the violations of ``report`` the trace being shrunk does not show."""
        found = [
            v
            for v in report.violations
            if v.kind == self.kind
            and v.property == self.prop
            and (self.same is None or witness_identity(v, names) in self.same)
        ]
        if self.same is None or not found:
            return found
        made = [u for u in report.violations if witness_identity(u, names) not in self.known]
        return [v for v in found if not any(_beside(u, v) for u in made)]

    def made(self, report, names: Names | None = None) -> list:
        """The violations of ``report`` (``check_all`` of a candidate, ``names`` as for
        ``__call__``) that the trace being shrunk does not show: made by removing events."""
        return [u for u in report.violations if witness_identity(u, names) not in self.known]

    def __call__(self, trace: Trace, options: dict, names: Names | None = None) -> bool:
        found = self.matches(self.check(trace, options), names)
        if found and self.same is not None:  # and not beside another property's made violation
            made = self.made(self.check_all(trace, options), names)
            found = [v for v in found if not any(_beside(u, v) for u in made)]
        return bool(found)
