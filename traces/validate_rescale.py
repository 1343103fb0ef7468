"""Validation rules of rescaling and finished tasks (a mixin of ``TraceValidator``).

A job restored at another parallelism is a new set of processes: they are declared
in the header with ``appears: true`` and start with a ``restore`` that names its
``sources`` — the old processes and checkpoints it takes state from, with the key
groups or operator list-state partitions taken from each — and the ``channels``
mapping of old channels onto its new input channels, with the key-group filter
that decides which recovered in-flight records each new channel owns. The old
processes leave with ``retire`` (``ckpt``: the checkpoint whose state lives on);
a task that reached the end of its input records ``finish`` (FLIP-147).

Rejected here, each as ``FILE:LINE: reason`` (a trace that breaks them cannot be
judged):

* a source naming an unknown process, a coordinator or external input, or a
  checkpoint that process has not taken;
* overlapping sources: two sources of one restore sharing a key group or a
  partition, the same checkpoint named twice without a split, two mappings of one
  restore that give the same old channel's key group to the same new channel;
* a channel mapping whose ``new`` is not an input channel of the restoring
  process, or whose ``old`` is unknown;
* a key-group range ``[lo, hi]`` with ``lo > hi`` or outside ``max_parallelism``, and a
  send whose ``key_group`` is outside its receiver's ``max_parallelism`` (``validate``);
* an appearing process whose first event is not a restore naming its sources (possibly none:
  ``sources: []``, a new subtask that takes no state);
* any event of a process after its ``retire``; ``retire`` of a checkpoint not taken;
  an old process whose state a restore takes that fails and then neither restores
  nor retires (a task a rescale replaces leaves with ``retire``, also after a crash);
* key-group ranges of one source that overlap, a partition one source names twice;
* a replay on a channel other than its original's, unless a restore mapped the
  original's channel onto it.

What is *not* rejected, because it is for the checker to judge: key groups that no
restore takes or that two restores take, state taken from a process that did not
own it, in-flight records delivered to the wrong owner, lost or twice, and sources of
one restore from different rounds (or from another round than the restore's ``round``):
state that mixes two rounds is an engine's bug (``rescale-state``, ``recovery-lineage``).
"""

from __future__ import annotations

from collections.abc import Callable

NO_LATER_ROUND = (  # why a restore may not name an older round than the state it takes
    "a round restored gives each process its checkpoint of that round or, fallen back, of an older one, never "
    "of a later round"
)


def ranges_overlap(a: list, b: list) -> tuple[int, int] | None:
    """The first key group shared by two lists of inclusive ranges, as ``(lo, hi)`` of
    their intersection, or None.

    >>> ranges_overlap([[0, 9]], [[5, 20]])
    (5, 9)
    >>> ranges_overlap([[0, 4]], [[5, 9]]) is None
    True
    """
    for lo1, hi1 in a:
        for lo2, hi2 in b:
            lo, hi = max(lo1, lo2), min(hi1, hi2)
            if lo <= hi:
                return lo, hi
    return None


class RescaleRules:
    """Mixin of ``TraceValidator`` (see the module docstring). Uses the validator's
    ``_procs``, ``_roles``, ``_chans``, ``_ch_dst``, ``_ckpts``, ``_failed`` and ``error``."""

    _procs: dict[str, int]
    _roles: list[str]
    _chans: dict[str, int]
    _ch_dst: list[int]
    _ckpts: list[set[int]]
    _failed: list[bool]
    error: Callable[[int, str], None]

    def _rescale_header(self, header) -> None:
        self._appears: set[int] = set()
        self._max_par: dict[int, int] = {}
        self._ckpt_round: dict[tuple[int, int], int | None] = {}
        self._retired: dict[int, int] = {}
        self._started: set[int] = set()
        self._mapped: set[tuple[int, int]] = set()  # (old channel, new channel) pairs of restores
        self._taken: dict[int, tuple[int, str]] = {}  # process -> (line, source) of the first restore taking its state
        for p in header.processes:
            i = self._procs.get(p.id)
            if i is None:
                continue
            if p.appears:
                self._appears.add(i)
            if p.max_parallelism is not None:
                self._max_par[i] = p.max_parallelism
            if p.key_groups is not None:
                self._check_ranges(p.key_groups, p.max_parallelism, 1, f"bad header: process {p.id!r}")

    def _check_ranges(self, ranges: list, max_par: int | None, line: int, what: str) -> bool:
        for lo, hi in ranges:
            if lo > hi:
                self.error(line, f"{what}: key-group range [{lo}, {hi}] is empty (lo > hi)")
                return False
            if max_par is not None and hi >= max_par:
                self.error(line, f"{what}: key group {hi} is outside max_parallelism {max_par}")
                return False
        return True

    def _rescale_event(self, d: dict, p: int, line: int) -> bool:
        """Before an event of process ``p`` is handled: retired processes record nothing,
        an appearing process starts with a restore naming its sources."""
        gone = self._retired.get(p)
        if gone is not None:
            self.error(line, f"{d['proc']} retired at line {gone} and records {d['type']!r} afterwards")
            return False
        if p in self._started:
            return True
        self._started.add(p)
        if p in self._appears and not (d["type"] == "restore" and d.get("sources") is not None):
            what = "a restore without sources" if d["type"] == "restore" else repr(d["type"])
            self.error(
                line,
                f"{d['proc']} appears later (header 'appears') but its first event is "
                f"{what}, not a restore naming its sources",
            )
            return False
        return True

    def _note_checkpoint(self, d: dict, p: int) -> None:
        self._ckpt_round[(p, d["ckpt"])] = d.get("round")

    def _restore_sources(self, d: dict, p: int, line: int) -> bool:
        """The ``sources`` and ``channels`` of a restore event ``d`` (module docstring)."""
        ok = True
        seen_kg: list[tuple[str, list]] = []
        seen_part: dict[str, str] = {}
        whole: dict[tuple[int, int], str] = {}
        for s in d.get("sources") or ():
            name = f"source {s['proc']}:{s['ckpt']}"
            q = self._procs.get(s["proc"])
            if q is None:
                self.error(line, f"restore: {name} names an unknown process {s['proc']!r}")
                ok = False
                continue
            if self._roles[q] in ("coordinator", "external"):
                self.error(line, f"restore: {name} names a {self._roles[q]}, which has no state to restore")
                ok = False
                continue
            if s["ckpt"] not in self._ckpts[q]:
                self.error(line, f"restore: {name} names checkpoint {s['ckpt']} of {s['proc']}, which it has not taken")
                ok = False
                continue
            held = self._ckpt_round.get((q, s["ckpt"]))
            if d.get("round") is not None and held is not None and held > d["round"]:
                self.error(
                    line,
                    f"restore: {d['proc']} restores {name}, of round {held}, as round {d['round']}: {NO_LATER_ROUND}",
                )
                ok = False
                continue
            self._taken.setdefault(q, (line, name))
            kgs, parts = s.get("key_groups"), s.get("partitions")
            if kgs is not None:
                if not self._check_ranges(kgs, self._max_par.get(q), line, f"restore: {name}"):
                    ok = False
                    continue
                twice = next(
                    (b for i, a in enumerate(kgs) for c in kgs[i + 1 :] if (b := ranges_overlap([a], [c]))), None
                )
                if twice:
                    self.error(
                        line, f"restore: {name} gives key groups {twice[0]}..{twice[1]} twice (overlapping ranges)"
                    )
                    ok = False
                    continue
                for other, their in seen_kg:
                    both = ranges_overlap(kgs, their)
                    if both:
                        self.error(
                            line, f"restore: {name} and {other} overlap: both give key groups {both[0]}..{both[1]}"
                        )
                        ok = False
                seen_kg.append((name, kgs))
            if parts is not None and len(set(parts)) < len(parts):
                self.error(line, f"restore: {name} names a partition twice")
                ok = False
            for part in parts or ():
                if part in seen_part:
                    self.error(line, f"restore: {name} and {seen_part[part]} overlap: both give partition {part!r}")
                    ok = False
                seen_part[part] = name
            if kgs is None and parts is None:
                key = (q, s["ckpt"])
                if key in whole:
                    self.error(line, f"restore: {name} is named twice (overlapping sources)")
                    ok = False
                whole[key] = name
        return self._restore_channels(d, p, line) and ok

    def _restore_channels(self, d: dict, p: int, line: int) -> bool:
        ok = True
        given: dict[tuple[int, int], list | None] = {}  # None: every key group
        for m in d.get("channels") or ():
            old, new = self._chans.get(m["old"]), self._chans.get(m["new"])
            if old is None or new is None:
                which = m["old"] if old is None else m["new"]
                self.error(
                    line, f"restore: channel mapping {m['old']} -> {m['new']} names an unknown channel {which!r}"
                )
                ok = False
                continue
            if self._ch_dst[new] != p:
                self.error(
                    line,
                    f"restore: channel mapping {m['old']} -> {m['new']}: {d['proc']} is not the "
                    f"destination of {m['new']!r} (a restore maps old channels onto its own inputs)",
                )
                ok = False
                continue
            kgs = m.get("key_groups")
            if kgs is not None and not self._check_ranges(
                kgs, self._max_par.get(p), line, f"restore: channel mapping {m['old']} -> {m['new']}"
            ):
                ok = False
                continue
            if (old, new) in given:
                prev = given[(old, new)]
                if prev is None or kgs is None or ranges_overlap(prev, kgs):
                    self.error(
                        line,
                        f"restore: channel mapping {m['old']} -> {m['new']} is given twice with overlapping key groups",
                    )
                    ok = False
                    continue
                given[(old, new)] = prev + kgs
            else:
                given[(old, new)] = kgs
            self._mapped.add((old, new))
        return ok

    def _rescale_finish(self) -> None:
        """At the end of the trace: an old process whose state a rescale took leaves the job
        with ``retire``, also after a crash. One that failed and never restores or retires
        would keep, to the checker, what it did after the checkpoint taken."""
        names = list(self._procs)
        for q, (line, name) in self._taken.items():
            if self._failed[q] and q not in self._retired:
                self.error(
                    line,
                    f"restore: {name} takes the state of {names[q]}, which failed and neither restores nor "
                    "retires afterwards: a task that a rescale replaces leaves the job with 'retire' (naming the "
                    "checkpoint whose state lives on), also after a crash, so that its events after that "
                    "checkpoint are undone",
                )

    def _replay_mapped(self, sent_on: int, c: int) -> bool:
        """Whether a restore mapped channel ``sent_on`` onto channel ``c``."""
        return (sent_on, c) in self._mapped

    def _on_finish(self, d: dict, p: int, line: int) -> bool:
        return True

    def _on_retire(self, d: dict, p: int, line: int) -> bool:
        ckpt = d.get("ckpt")
        if ckpt is not None and ckpt not in self._ckpts[p]:
            self.error(line, f"retire refers to checkpoint {ckpt} of {d['proc']}, which it has not taken")
            return False
        self._retired[p] = line
        self._failed[p] = False
        return True
