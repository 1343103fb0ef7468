"""The recovery line of one failure set, with its explanation and metrics.

``analyse_failure_set`` computes the line with RL-FIX (primary), cross-checks it
against R-MARK and rollback propagation on the checkpoint graph (three
independent algorithms that must agree, docs/theory.md, "Recovery lines"), and adds:

* the "why did P roll back" chain of every process below its bound;
* the domino flag: some process ends at least two stable checkpoints behind its
  bound (``min(U_i, L_i) − g_i ≥ 2``), i.e. rollback propagated beyond the single
  checkpoint a failure costs by itself (the golden traces' definition);
* the rollback distance (checkpoints rolled back, events undone, messages to replay);
* the in-transit messages of the line that nothing can replay, and the *loss-free
  line*: RL-FIX with no-drop constraints ``(g_src ≥ s) ⇒ (g_dst ≥ r)`` for every
  delivered message that is never recoverable (not logged, not from an external
  input, not recorded in any channel state). Undelivered messages are taken to be
  still in their channel.
"""

from __future__ import annotations

import json

from snapcheck.checker.cuts import in_transit
from snapcheck.checker.intervals import EXTERNAL, History
from snapcheck.checker.notation import parse_failure_set
from snapcheck.checker.options import CheckerUsageError
from snapcheck.checker.recovery_line import bound, chain, distance, r_mark, rl_fix
from snapcheck.checker.rgraph import Graph
from snapcheck.checker.rollback_propagation import rollback_propagation
from snapcheck.traces.errors import UsageError

CROSSCHECK_RP_MAX_NODES = 4000


def _named_in(proc: str, text: str) -> bool:
    """Does the short form ``text`` of a failure set (ids joined by commas, ``all``,
    ``none``) spell out ``proc``, an id with a comma or one of those words, which it would
    read otherwise?

    >>> _named_in("a,b", "a,b,c"), _named_in("a,b", "xa,b"), _named_in("all", " ALL"), _named_in("P0", "P0")
    (True, False, True, False)
    """
    if proc.strip().lower() in ("all", "none"):
        return proc.strip().lower() == text.strip().lower()
    if "," not in proc:
        return False
    parts, items = [x.strip() for x in proc.split(",")], [x.strip() for x in text.split(",")]
    return any(items[i : i + len(parts)] == parts for i in range(len(items) - len(parts) + 1))


def parse_failures(h: History, failures) -> tuple[list[int], str]:
    """``(failed process indices, label)`` for a failure set given as ``None``, ``"all"``,
    ``"none"``, a list of process ids, ``"P0,P1"`` or a JSON list (``notation.parse_failure_set``). A process that is unknown or outside
    every global checkpoint (a coordinator, an external input) is a
    ``CheckerUsageError``.

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> h = History(golden("theory_c_domino"))
    >>> parse_failures(h, "P1,P0"), parse_failures(h, "all"), parse_failures(h, None)
    (([0, 1], 'P0,P1'), ([0, 1], 'all'), ([], 'none'))
    >>> parse_failures(h, '["P0"]')
    ([0], 'P0')
    >>> parse_failures(h, ["P9"])
    Traceback (most recent call last):
    snapcheck.checker.options.CheckerUsageError: unknown process 'P9' in the failure set (processes: P0, P1)
    """
    if failures is None:
        return [], "none"
    if isinstance(failures, str):
        text = failures
        try:
            failures = parse_failure_set(text)
        except UsageError as exc:
            raise CheckerUsageError(str(exc)) from None
        if not text.lstrip().startswith("["):  # "A,B" names A and B, "all" every process: not a process so named
            meant = [p for p in h.procs if _named_in(p, text)]
            if meant:
                raise CheckerUsageError(
                    f"failure set {text!r} is ambiguous: the trace has a process named {meant[0]!r}; give the "
                    f"set as JSON, e.g. {json.dumps([meant[0]])} for that process alone"
                )
        if failures == "all":
            return list(range(h.n)), "all"
        if failures == "none":
            return [], "none"
    out = []
    for p in failures:
        if p not in h.index:
            role = h.roles.get(p)
            if role is None:
                raise CheckerUsageError(f"unknown process {p!r} in the failure set (processes: {', '.join(h.procs)})")
            raise CheckerUsageError(
                f"process {p!r} is a {role} and is outside every global checkpoint: it cannot be in a failure set"
            )
        out.append(h.index[p])
    out = sorted(set(out))
    if not out:
        return [], "none"
    names = sorted(h.procs[i] for i in out)
    if any("," in p or p.strip().lower() in ("all", "none") for p in names):  # as it is given: JSON
        return out, json.dumps(names)
    return out, ",".join(names)


def parse_cut(h: History, cut: dict) -> list[int]:
    """The positions of an explicit cut ``{process: checkpoint number or "V"}`` (trace
    checkpoint numbers, as ``notation.parse_cut`` reads them); every participant must be
    given, and a checkpoint outside the effective history is a ``CheckerUsageError``.

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> parse_cut(History(golden("theory_c_domino")), {"P0": 1, "P1": "V"})
    [1, 3]
    """
    g = []
    unknown = [p for p in cut if p not in h.index]
    if unknown:
        raise CheckerUsageError(
            f"the cut names unknown or non-checkpointing process(es) {', '.join(map(repr, unknown))} "
            f"(processes: {', '.join(h.procs)})"
        )
    missing = [p for p in h.procs if p not in cut]
    if missing:
        raise CheckerUsageError(
            f"the cut does not give a checkpoint for {', '.join(missing)} "
            "(use a checkpoint number or V for every process)"
        )
    for i, p in enumerate(h.procs):
        v = cut[p]
        if isinstance(v, str) and v.upper() == "V":
            g.append(h.V(i))
            continue
        try:
            n = int(v)
        except (TypeError, ValueError):
            raise CheckerUsageError(f"cut: {p}={v!r} is neither a checkpoint number nor V") from None
        x = h.pos_of[i].get(n)
        if x is None:
            raise CheckerUsageError(
                f"cut: {p} has no checkpoint {n} in its effective history "
                f"(checkpoints: {', '.join(map(str, h.ckpt_num[i]))})"
            )
        g.append(x)
    return g


def never_recoverable(h: History, dur) -> list:
    """The delivered messages that nothing can replay after any recovery: not from an
    external input, never recorded in any channel state, not in a durable log at the end
    of the trace (``dur``: a ``Durability``). Their no-drop constraints give the
    loss-free line (``rl_fix`` with ``nodrop``).

    Worked example D: ``P1`` records ``m1`` with its checkpoint, ``m2`` nowhere.

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> from snapcheck.checker.durability import Durability
    >>> h = History(golden("theory_d_recorded"))
    >>> [m.mid for m in never_recoverable(h, Durability(h))]
    ['P0>P1:2']
    """
    recorded = {h.resolve(mid) for mid in dur.ever_recorded()}
    return [
        m for m in h.msgs if m.r is not None and m.src != EXTERNAL and m.mid not in recorded and not dur.durable(m.mid)
    ]


def unrecoverable_in_transit(h: History, dur, g: list[int], transit: list) -> list:
    """The messages of ``transit`` (in transit with respect to line ``g``) that recovery to
    ``g`` cannot replay: not from an external input, not in the channel state recorded
    with ``g``'s checkpoints, not in a durable log at the end of the trace.

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> from snapcheck.checker.durability import Durability
    >>> for name in ("theory_d_dropped", "theory_d_recorded"):
    ...     h = History(golden(name))
    ...     lost = unrecoverable_in_transit(h, Durability(h), [1, 1], in_transit(h, [1, 1]))
    ...     print(name, [m.mid for m in lost])
    theory_d_dropped ['P0>P1:1']
    theory_d_recorded []
    """
    recorded: set[str] = set()
    for i, p in enumerate(h.procs):
        if g[i] <= h.L[i]:
            for rec in dur.records.get((p, h.ckpt_num[i][g[i]]), ()):
                recorded.update(h.resolve(mid) for mid in rec.mids)
    return [m for m in transit if m.src != EXTERNAL and m.mid not in recorded and not dur.durable(m.mid)]


def analyse_failure_set(
    h, dur, failed: list[int], label: str, semantics: str, *, graph: Graph | None = None, crosscheck: bool = True
) -> dict:
    """The recovery line of the failed processes ``failed`` (indices; ``label`` names the
    set) under ``semantics``, with its explanation and metrics (module docstring).

    RL-FIX computes the line; with ``crosscheck``, R-MARK and (up to
    ``CROSSCHECK_RP_MAX_NODES`` graph nodes) CheckMate's rollback propagation must agree
    (an ``AssertionError``, a checker bug, otherwise). When every process failed the
    bound is the restart-all one under either semantics, and the set labelled ``all``
    reports ``restart-all``. Returns a dict with the ``bound``, the ``line``,
    each algorithm's line, the ``chain`` of every process that rolled back, the
    ``domino`` flag, the ``distance``, the messages ``in_transit`` and those
    ``unrecoverable_in_transit`` (then also the ``loss_free_line``); the keys ``_g`` and
    ``_U`` hold the line and the bound as positions.

    Worked example C after the failure of both processes:

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> from snapcheck.checker.durability import Durability
    >>> h = History(golden("theory_c_domino"))
    >>> d = analyse_failure_set(h, Durability(h), [0, 1], "all", "partial")
    >>> d["bound"], d["line"], d["domino"], sorted(d["algorithms"])
    ({'P0': 3, 'P1': 2}, {'P0': 1, 'P1': 0}, True, ['r-mark', 'rl-fix', 'rollback-propagation'])
    """
    U = bound(h, failed, semantics)
    g, steps, last = rl_fix(h, U)
    algos = {"rl-fix": h.line_to_dict(g)}
    if crosscheck:
        rm = r_mark(h, U, graph)
        algos["r-mark"] = h.line_to_dict(rm)
        if rm != g:
            raise AssertionError(f"checker bug: RL-FIX {g} and R-MARK {rm} disagree for failures {label}")
        if sum(L + 2 for L in h.L) <= CROSSCHECK_RP_MAX_NODES:
            rp = rollback_propagation(h, U)
            algos["rollback-propagation"] = h.line_to_dict(rp)
            if rp != g:
                raise AssertionError(
                    f"checker bug: RL-FIX {g} and rollback propagation {rp} disagree for failures {label}"
                )
    transit = in_transit(h, g)
    lost = unrecoverable_in_transit(h, dur, g, transit)
    details = {
        "failed": [h.procs[i] for i in failed],
        "semantics": "restart-all" if label == "all" else semantics,
        "bound": h.line_to_dict(U),
        "line": h.line_to_dict(g),
        "algorithms": algos,
        "chain": {h.procs[i]: chain(h, steps, last, i) for i in range(h.n) if last[i] >= 0},
        "domino": any(min(U[i], h.L[i]) - g[i] >= 2 for i in range(h.n)),
        "distance": distance(h, U, g, len(transit)),
        "in_transit": [m.mid for m in transit],
        "unrecoverable_in_transit": [m.mid for m in lost],
        "_g": g,
        "_U": U,
    }
    if lost:
        nodrop = never_recoverable(h, dur)
        gl, _, _ = rl_fix(h, U, nodrop)
        details["loss_free_line"] = h.line_to_dict(gl)
    return details
