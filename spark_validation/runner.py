"""One validation run: simulate a configuration, check its trace, return one result row.

``run_one(seed, cfg)`` is the unit of work that Spark tasks (and the plain
Python engine) execute: it calls the reference simulator (``reference.simulate``)
and the checker (``checker.check_trace``) and, for runs with failures or
declined rounds, the end-to-end exactly-once oracle (``reference.oracle``:
final operator states and the sink's output multiset equal those of the
failure-free run with the same seed; not where the protocol says it does not
apply, ``Protocol.failure_free_oracle``: active replication). The row depends on nothing but ``seed``
and ``cfg`` — no clock, no randomness of its own — so a re-executed Spark task
produces identical rows.

A run *fails* when the checker reports a violation, the oracle finds a
difference, the dataflow deadlocks (a round never completes) or simulating or
checking raises an error. For a correct protocol a failing run is a bug; for a
mutant it means the mutant was *caught*. A run whose every final round was
aborted (declined snapshots, checkpoint timeouts: the simulator gives up after
ten; ``SimResult.gave_up``) has no committed end state to compare; with no checker
violation it is *inconclusive*, counted apart. So is a run whose failure-free twin
gave up that way (``reference.oracle.Inconclusive``): the oracle has nothing to
compare it with.
"""

from __future__ import annotations

import copy
import hashlib
import sys

import orjson

from snapcheck.reference.catalogue import resolve, spec_of
from snapcheck.reference.sim.exploration import format_fault
from snapcheck.spark_validation.configs import command, describe

# Result schema: (column, Arrow type, Spark type). One row per run.
COLUMNS = (
    ("run_id", "int64", "bigint"),
    ("seed", "int64", "bigint"),
    ("protocol", "string", "string"),
    ("mutant", "string", "string"),
    ("workload", "string", "string"),
    ("parallelism", "int64", "bigint"),
    ("failures", "string", "string"),
    ("config", "string", "string"),
    ("verdict", "string", "string"),  # clean | violation | error | inconclusive
    # sorted, comma-separated; or why a run stopped: stuck, every final round aborted
    ("violation_kinds", "string", "string"),
    ("violations", "int64", "bigint"),
    ("oracle", "string", "string"),  # ok | differs: … | inconclusive: … | skipped
    ("error", "string", "string"),
    # the run ended in the protocol's own error: the handler, the exception and where (a protocol-error)
    ("protocol_error", "string", "string"),
    ("tasks", "int64", "bigint"),
    ("events", "int64", "bigint"),
    ("messages", "int64", "bigint"),
    ("checkpoints", "int64", "bigint"),
    ("rounds_completed", "int64", "bigint"),
    ("useless", "int64", "bigint"),
    ("rollback_checkpoints", "int64", "bigint"),
    ("rollback_events", "int64", "bigint"),
    ("domino", "bool", "boolean"),
    ("replayed_messages", "int64", "bigint"),
    ("overhead_ratio", "double", "double"),
    ("sim_failures", "int64", "bigint"),
    ("faults_not_fired", "int64", "bigint"),  # requested crashes that crashed nothing (their moment never came)
    ("situations", "string", "string"),  # JSON {situation: occurrences} (reference.sim.exploration)
    # JSON {property: why not judged, or null}: each property the run could be judged for (``judgeable``)
    ("unjudged", "string", "string"),
    ("command", "string", "string"),
    # SHA-256 of the trace ``command`` writes, for runs with a violation (null otherwise): pasting
    # the command must give these very bytes (``sha256sum run-SEED.jsonl``)
    ("trace_sha256", "string", "string"),
    # TLA+ conformance (``--conform``; spark_validation.conformance): null for runs not chosen
    ("conform", "string", "string"),  # accept | reject | outside | no-spec | no-java | no-trace | error
    ("conform_spec", "string", "string"),  # the trace specification module
    ("conform_detail", "string", "string"),  # REJECT: run-SEED.jsonl:LINE: the first unmatched event; else why
    ("conform_outside", "string", "string"),  # outside: the first event the specification does not model
    ("disagreement", "string", "string"),  # the specification and the checker contradict each other: why
    ("trace", "string", "string"),  # JSONL, kept for disagreements and correct runs the specification rejects
)
COLUMN_NAMES = tuple(c for c, _, _ in COLUMNS)


def spark_schema() -> str:
    return ", ".join(f"{c} {t}" for c, _, t in COLUMNS)


def arrow_schema():
    import pyarrow as pa

    types = {"int64": pa.int64(), "string": pa.string(), "bool": pa.bool_(), "double": pa.float64()}
    return pa.schema([(c, types[t]) for c, t, _ in COLUMNS])


def _row(run_id: int, seed: int, cfg) -> dict:
    row = dict.fromkeys(COLUMN_NAMES)
    cls = resolve(cfg.protocol)
    row.update(
        run_id=run_id,
        seed=seed,
        protocol=cfg.protocol if isinstance(cfg.protocol, str) else spec_of(cls),
        mutant=cfg.mutant,
        workload="-"
        if cls.topologies == "own"
        else cfg.workload
        if isinstance(cfg.workload, str)
        else cfg.workload.name,
        parallelism=cfg.parallelism,
        failures=",".join(format_fault(f) for f in cfg.failures),
        config=orjson.dumps(describe(cfg), option=orjson.OPT_SORT_KEYS).decode(),
        command=command(cfg, f"run-{seed}.jsonl"),
    )
    return row


def _simulated(m: dict) -> dict:
    """The columns of a row that the simulation's metrics ``m`` give (also for a run whose
    trace could not be checked: what it reached is still counted)."""
    return dict(
        tasks=m["tasks"],
        events=m["events"],
        rounds_completed=m["rounds_completed"],
        replayed_messages=m["replayed_messages"],
        overhead_ratio=m.get("overhead_ratio"),
        sim_failures=m["failures"],
        faults_not_fired=m.get("faults_not_fired", 0),
        situations=orjson.dumps(m.get("situations", {}), option=orjson.OPT_SORT_KEYS).decode(),
    )


def judgeable(facts, rounds: bool) -> set[str]:
    """The properties a run could be judged for, which a campaign says no run was judged
    for when none was: for a protocol with ``facts`` (``DeclaredFacts`` of its traces'
    header), every property but those judged only when the trace uses their vocabulary
    (replicas, changelogs, rescales, …: ``checker.options.VOCABULARY``), the recovery
    line (judged for a failure set given on the command line), what a protocol may promise
    (Z-cycle freedom, RDT, its CIC rules) unless it promises it, and, in a run without
    snapshot ``rounds`` (an uncoordinated protocol's), the properties of rounds.

    >>> from snapcheck.traces.protocol_facts import DeclaredFacts
    >>> sorted(judgeable(DeclaredFacts.of({"name": "x", "params": {"guarantees": ["rdt"]}}), rounds=False))
    ['exactly-once', 'observed-recovery', 'rdt', 'z-cycles']
    """
    from snapcheck.checker.options import PROMISED, PROPERTIES, ROUND_PROPERTIES, VOCABULARY
    from snapcheck.traces.protocol_facts import PROMISABLE

    promised = {p for p in PROMISED if facts.promises(p) or (p not in PROMISABLE and facts.cic)}
    return {
        p
        for p in PROPERTIES
        if p not in VOCABULARY
        and p != "recovery-line"
        and (p not in PROMISED or p in promised)
        and (rounds or p not in ROUND_PROPERTIES)
    }


def run_one(run_id: int, seed: int, cfg, oracle: bool = True, conformer=None, users: UserState | None = None) -> dict:
    """Simulate and check one configuration; the result row (see ``COLUMNS``). ``oracle=False``
    skips the exactly-once oracle (about a quarter of the cost of a campaign). ``conformer``
    (``conformance.Conformer``): the run is also to be validated against its TLA+
    specification; it gets the finished row and the simulation result. ``users``: what the
    user's protocols of the campaign kept outside its runs, at its start and before this
    run (``UserState``, marked before drawing the configuration, whose dry runs run the
    protocol too: ``strategies.land``); by default taken here."""
    from snapcheck.checker import CheckOptions, check_trace
    from snapcheck.reference import simulate
    from snapcheck.reference.oracle import Inconclusive, exactly_once, not_judged
    from snapcheck.traces.protocol_facts import DeclaredFacts

    row = _row(run_id, seed, cfg)
    diffs = unjudged = None
    mine = user_specs(cfg.protocol, cfg.mutant)
    if users is None and mine:
        users = UserState(mine)
        users.mark()
    res = None
    try:
        res = simulate(cfg)
        report = check_trace(res.trace(), CheckOptions(crosscheck=False, max_witnesses=1, max_per_result=1))
        skip = not_judged(cfg) if oracle else "off (--no-oracle)"
        if skip is None:
            try:
                diffs = exactly_once(cfg, res)
            except Inconclusive as exc:  # the failure-free run has no end state to compare with
                unjudged = str(exc)
    except Exception as exc:  # a crash of the simulator or checker is a failing run, listed with its cause
        row.update(verdict="error", error=f"{type(exc).__name__}: {exc}"[:500], oracle="skipped")
        if res is not None:  # the run happened (its trace is what could not be checked): what it reached
            row.update(_simulated(res.metrics))
        if conformer is not None:
            conformer.add(row, None)
        return row
    m = res.metrics
    kinds = sorted(report.kinds)
    stuck = bool(m.get("stuck") or m.get("truncated"))
    gave_up = res.gave_up
    if gave_up:
        diffs = None  # (the oracle, when it applies, said why it judged nothing: ``unjudged``)
        kinds = [k for k in kinds if k not in GAVE_UP_CONSEQUENCES]
    rec_all = report.recovery.get("all", {})
    dist = rec_all.get("distance", {})
    verdict = (
        "violation" if kinds or diffs or (stuck and not gave_up) else "inconclusive" if gave_up or unjudged else "clean"
    )
    row.update(
        verdict=verdict,
        violation_kinds=",".join(kinds),
        violations=sum(
            len([v for v in r.violations if v.kind in kinds])
            + (r.omitted if any(v.kind in kinds for v in r.violations) else 0)
            for r in report.results
        ),
        oracle=("inconclusive: " + unjudged)[:300]
        if unjudged
        else f"skipped: {skip}"
        if diffs is None
        else ("ok" if not diffs else "differs: " + "; ".join(diffs)[:300]),
        **_simulated(m),
        messages=report.stats.get("messages", 0),
        checkpoints=report.stats.get("checkpoints", 0),
        useless=len(report.useless),
        rollback_checkpoints=dist.get("checkpoints_rolled_back", 0),
        rollback_events=dist.get("events_undone", 0),
        domino=bool(rec_all.get("domino", False)),
        protocol_error=m.get("protocol_error"),
        unjudged=orjson.dumps(
            {
                p: report.not_judged.get(p)  # null: judged
                for p in sorted(judgeable(DeclaredFacts.of(res.header.protocol), bool(report.rounds)))
            }
        ).decode(),
    )
    if diffs:  # the command shows what failed: the oracle's differences
        row["command"] += " --oracle"
    if stuck and not kinds:
        row["violation_kinds"] = "every final round aborted" if gave_up else "stuck"
    if (
        users is not None
        and mine
        and (users.changed() or (verdict == "violation" and not users.same_from_start(cfg, res)))
    ):
        row.update(
            verdict="violation", violation_kinds=",".join(filter(None, [row["violation_kinds"], NONDETERMINISTIC]))
        )
    if row["verdict"] == "violation":
        row["trace_sha256"] = hashlib.sha256(res.dumps()).hexdigest()
    if conformer is not None:
        conformer.add(row, res)
    return row


# A user's protocol that keeps state from one run to the next (in its classes or its
# module), or whose failing run, simulated again from the same configuration, gives another
# trace: its reproduction command would not reproduce what the campaign saw.
NONDETERMINISTIC = "nondeterministic-run"


def user_specs(*specs) -> list:
    """Those of ``specs`` (protocols and mutants, by name, spec or class; None skipped)
    that are a user's (the kit's own are deterministic, tested).

    >>> user_specs("abs-aligned", None)
    []
    """
    from snapcheck.reference.catalogue import is_builtin, resolve

    return [x for x in specs if x is not None and not is_builtin(resolve(x))]


def _owned(specs) -> list[tuple]:
    """``(owner, name, value)`` of every data attribute that the user's protocols ``specs``
    keep outside a run: of their classes (and task classes) and of those classes' modules."""
    import inspect

    from snapcheck.reference.catalogue import resolve
    from snapcheck.reference.kept_state import data_attributes

    owners: list = []
    for spec in specs:
        cls = resolve(spec)
        for c in (*inspect.getmro(cls), *inspect.getmro(getattr(cls, "task_class", object))):
            if not c.__module__.startswith(("snapcheck.", "builtins")) and c not in owners:
                owners.append(c)
    owners += list(dict.fromkeys(m for c in list(owners) if (m := sys.modules.get(c.__module__)) is not None))
    return [(o, k, v) for o in owners for k, v in data_attributes(o)]


class UserState:
    """What the user's protocols ``specs`` keep outside a run (``_owned``), watched over the
    runs of one process: its values as the kit imported them, before anything ran
    (``reference.kept_state``; for a class the kit did not import, as this process first
    watched it; deep copies, those that cannot be copied left out) and its text before
    the current run (``mark``).

    A protocol that keeps state from one run to the next makes a reproduction command,
    which starts a fresh process, run from another start than the campaign's run did.
    A run that changes that state shows it (``changed``); one that only reads state an
    earlier run left (a cache filled by the runs before, or by the driver's first draw)
    shows it when simulated again from the values as imported (``same_from_start``).

    >>> UserState([]).changed()
    False
    """

    def __init__(self, specs: list):
        from snapcheck.reference.kept_state import first_value, remember_value

        self.specs = list(specs)
        self.start: dict = {}
        for o, k, v in _owned(self.specs):
            remember_value(o, k, v)  # kept already when the kit imported it, before anything ran
            known, first = first_value(o, k)
            if known:
                self.start[(o, k)] = first
        self.before = ""

    def text(self) -> str:
        """The state as text (``name.attribute=repr``)."""
        return "\n".join(f"{getattr(o, '__name__', o)}.{k}={v!r}" for o, k, v in _owned(self.specs))

    def mark(self) -> None:
        """Note the state before the next run (and before its configuration is drawn)."""
        self.before = self.text() if self.specs else ""

    def changed(self) -> bool:
        """Has the state changed since ``mark``?"""
        return bool(self.specs) and self.text() != self.before

    def same_from_start(self, cfg, res) -> bool:
        """Does ``cfg``, simulated again from the state as imported (the state then put back
        as it is now), give the trace of ``res``? Not when the protocol depends
        on anything but the seed: the clock, a generator of its own seeded from it,
        state kept from run to run. A run a stuck handler ended is taken as is."""
        from snapcheck.reference import simulate

        if "HandlerTimeout" in (res.metrics.get("protocol_error") or ""):  # stopped by the clock, where the
            return True  # watchdog looked: simulating it again would wait a budget again (75 s) to say so
        now = {(o, k): v for o, k, v in _owned(self.specs)}
        try:
            for o, k in now:
                if (o, k) not in self.start:
                    delattr(o, k)  # made by a run since: absent at the start
            for (o, k), v in self.start.items():
                setattr(o, k, copy.deepcopy(v))
            return simulate(cfg).dumps() == res.dumps()
        except Exception:  # noqa: BLE001 - the second run failed where the first did not: not the same run
            return False
        finally:
            for o, k in self.start:
                if (o, k) not in now and hasattr(o, k):
                    delattr(o, k)
            for (o, k), v in now.items():
                setattr(o, k, v)


# What a run that stopped because every final round aborted shows by construction: a
# finished task still waiting for a final checkpoint that no round could complete, and a
# sink transaction whose completion notification was lost (notifications are lossy in
# ``abs-aligned-2pc``) with no later round completing to subsume it, nor the orderly end
# of the run, which re-sends the last notification, ever coming.
GAVE_UP_CONSEQUENCES = frozenset({"final-checkpoint-missing", "uncommitted"})
