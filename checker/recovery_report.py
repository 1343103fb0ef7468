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

from snapcheck.checker.cuts import in_transit
from snapcheck.checker.intervals import EXTERNAL
from snapcheck.checker.options import CheckerUsageError
from snapcheck.checker.recovery_line import bound, chain, distance, r_mark, rl_fix
from snapcheck.checker.rollback_propagation import rollback_propagation
from snapcheck.checker.rgraph import Graph

CROSSCHECK_RP_MAX_NODES = 4000


def parse_failures(h, failures) -> tuple[list[int], str]:
    """(failed process indices, label) for ``None`` / "all" / list / "P0,P1"."""
    if failures is None:
        return [], "none"
    if isinstance(failures, str):
        if failures.strip().lower() == "all":
            return list(range(h.n)), "all"
        if failures.strip().lower() == "none":
            return [], "none"
        failures = [f.strip() for f in failures.split(",") if f.strip()]
    out = []
    for p in failures:
        if p not in h.index:
            role = h.roles.get(p)
            if role is None:
                raise CheckerUsageError(f"unknown process {p!r} in the failure set (processes: {', '.join(h.procs)})")
            raise CheckerUsageError(f"process {p!r} is a {role} and is outside every global checkpoint: "
                                    "it cannot be in a failure set")
        out.append(h.index[p])
    out = sorted(set(out))
    if not out:
        return [], "none"
    return out, ",".join(sorted(h.procs[i] for i in out))


def parse_cut(h, cut: dict) -> list[int]:
    """Positions of an explicit cut {proc: ckpt number or "V"}; every participant must be given."""
    g = []
    unknown = [p for p in cut if p not in h.index]
    if unknown:
        raise CheckerUsageError(f"the cut names unknown or non-checkpointing process(es) {', '.join(map(repr, unknown))} "
                                f"(processes: {', '.join(h.procs)})")
    missing = [p for p in h.procs if p not in cut]
    if missing:
        raise CheckerUsageError(f"the cut does not give a checkpoint for {', '.join(missing)} "
                                "(use a checkpoint number or V for every process)")
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
            raise CheckerUsageError(f"cut: {p} has no checkpoint {n} in its effective history "
                                    f"(checkpoints: {', '.join(map(str, h.ckpt_num[i]))})")
        g.append(x)
    return g


def never_recoverable(h, dur) -> list:
    recorded = {h.resolve(mid) for mid in dur.ever_recorded()}
    return [m for m in h.msgs
            if m.r is not None and m.src != EXTERNAL and m.mid not in recorded and not dur.durable(m.mid)]


def unrecoverable_in_transit(h, dur, g: list[int], transit: list) -> list:
    recorded: set[str] = set()
    for i, p in enumerate(h.procs):
        if g[i] <= h.L[i]:
            for rec in dur.records.get((p, h.ckpt_num[i][g[i]]), ()):
                recorded.update(h.resolve(mid) for mid in rec.mids)
    return [m for m in transit if m.src != EXTERNAL and m.mid not in recorded and not dur.durable(m.mid)]


def analyse_failure_set(h, dur, failed: list[int], label: str, semantics: str, *,
                        graph: Graph | None = None, crosscheck: bool = True) -> dict:
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
                raise AssertionError(f"checker bug: RL-FIX {g} and rollback propagation {rp} disagree "
                                     f"for failures {label}")
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
