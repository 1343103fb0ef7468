"""z3 certificates for recovery lines (docs/theory.md, "z3 certificates").

Constraints (docs/theory.md, "The encoding"): per delivered message the orphan constraint
``(g_dst ≥ r) ⇒ (g_src ≥ s)`` over ``0 ≤ g_i ≤ U_i``. Per ordered process pair only
the Pareto front of the ``(r, s)`` thresholds matters.

* **Maximality certificate.** With ``G*`` the line found by RL-FIX, the query
  ``base ∧ ⋁_i g_i > G*_i`` must be **unsat**: no consistent line exceeds ``G*`` in
  any component, i.e. every consistent line is ``≤ G*``, so ``G*`` minimises every
  monotone rollback cost. The encoding is restricted to the processes the rollback
  touches (``G*_i < U_i``); the others are fixed at ``U_i = G*_i``. By the lattice
  property (docs/theory.md, "The lattice of consistent global checkpoints") this loses
  nothing: if some consistent ``G'`` exceeded ``G*``
  somewhere, ``max(G', G*)`` would too, and it agrees with ``G*`` on the untouched
  processes. Constraints are simplified against the constants and deduplicated
  (for each ``(dst, r, src)`` only the largest ``s`` matters).
* **Fewest messages to replay** (optional): among all consistent ``G ≤ U`` (every
  process a variable), minimise the number of in-transit messages. This objective
  is not monotone, so its optimum need not be the maximal line nor unique
  (docs/theory.md, "Fewest messages to replay").
"""

from __future__ import annotations

import time

from snapcheck.checker.cuts import in_transit, is_consistent
from snapcheck.checker.intervals import EXTERNAL, History


def _orphan_constraints(h: History, procs_var: set[int]) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """Orphan constraints ``(g_dst ≥ r) ⇒ (g_src ≥ s)`` per ordered pair (dst, src), reduced
    to their Pareto front: (r1, s1) makes (r2, s2) redundant when r1 ≤ r2 and s1 ≥ s2."""
    best: dict[tuple[int, int, int], int] = {}
    for m in h.msgs:
        if m.r is None or m.src == EXTERNAL or m.src == m.dst:
            continue
        if m.src not in procs_var and m.dst not in procs_var:
            continue
        key = (m.dst, m.src, m.r)
        if best.get(key, -1) < m.s:
            best[key] = m.s
    pairs: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for (dst, src, r), s in sorted(best.items()):
        front = pairs.setdefault((dst, src), [])
        if not front or s > front[-1][1]:
            front.append((r, s))
    return pairs


def certify(h: History, U: list[int], g: list[int], min_replay: bool = False) -> dict:
    """Prove with z3 that no consistent ``G ≤ U`` exceeds the line ``g`` in any component,
    so that ``g`` is the maximum and minimises every monotone rollback cost (module
    docstring; docs/theory.md, "The maximality certificate"). ``g`` is first re-checked
    for consistency without a solver. A refutation is a checker bug (``AssertionError``).
    Returns the result (``maximality``: ``proved``), the encoding's size and its time;
    with ``min_replay`` also ``min_replay_line``.

    Order encoding of the integer orphan constraints (equivalent, and a pure
    propositional problem): a Boolean atom ``a(i,x) ≡ g_i ≥ x`` per threshold used,
    ``a(i,x') ⇒ a(i,x)`` for ``x < x'``, ``¬a(i,x)`` for ``x > U_i``, one clause
    ``a(dst,r) ⇒ a(src,s)`` per (reduced) orphan constraint, and the goal
    ``⋁_i a(i, g_i+1)``, which must be unsat.

    Worked example C: nothing above ``(1, 0)`` is consistent below ``U = (3, 2)``.

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> cert = certify(History(golden("theory_c_domino")), [3, 2], [1, 0])
    >>> cert["maximality"], cert["variables"], cert["constraints"]
    ('proved', 2, 4)
    """
    import z3

    t0 = time.perf_counter()
    if not is_consistent(h, g):
        raise AssertionError("checker bug: the recovery line to certify is inconsistent")
    touched = [i for i in range(h.n) if g[i] < U[i]]
    tset = set(touched)
    atoms: dict[tuple[int, int], str] = {}

    def atom(i: int, x: int):
        """``g_i ≥ x``: the name of its Boolean, or a Python bool when it is decided."""
        if x <= 0:
            return True
        if i not in tset:
            return U[i] >= x
        if x > U[i]:
            return False
        a = atoms.get((i, x))
        if a is None:
            a = atoms[(i, x)] = f"a{len(atoms)}"
        return a

    def lit(a) -> str:
        return ("true" if a else "false") if isinstance(a, bool) else a

    clauses: list[str] = []
    for (dst, src), front in _orphan_constraints(h, tset).items():
        for r, sv in front:
            lhs, rhs = atom(dst, r), atom(src, sv)
            if lhs is not False and rhs is not True:
                clauses.append(f"(assert (=> {lit(lhs)} {lit(rhs)}))")
    ncons = len(clauses)
    goal = [atom(i, g[i] + 1) for i in touched]
    by_proc: dict[int, list[int]] = {}
    for i, x in atoms:
        by_proc.setdefault(i, []).append(x)
    for i, xs in by_proc.items():
        xs.sort()
        for x1, x2 in zip(xs, xs[1:]):
            clauses.append(f"(assert (=> {atoms[(i, x2)]} {atoms[(i, x1)]}))")
    s = z3.Solver()
    if goal:
        clauses.append(f"(assert (or {' '.join(lit(a) for a in goal)} false))")
        decls = "".join(f"(declare-const {nm} Bool)" for nm in atoms.values())
        s.from_string(decls + "\n".join(clauses))
        res = s.check()
    else:
        res = z3.unsat  # nothing rolled back: nothing can exceed U
    out: dict[str, object] = {
        "maximality": "proved" if res == z3.unsat else "refuted",
        "encoding": "order",
        "variables": len(touched),
        "atoms": len(atoms),
        "constraints": ncons,
    }
    if res == z3.sat:
        model = s.model()
        true = {d.name() for d in model.decls() if z3.is_true(model[d])}
        out["counterexample"] = {
            h.procs[i]: h.label(i, max([x for x in by_proc.get(i, []) if atoms[(i, x)] in true], default=0))
            for i in touched
        }
    out["seconds"] = time.perf_counter() - t0
    if out["maximality"] != "proved":
        raise AssertionError(f"checker bug: z3 refutes the maximality of the recovery line: {out}")
    if min_replay:
        out["min_replay"] = min_replay_line(h, U)
    return out


def min_replay_line(h: History, U: list[int]) -> dict:
    """A consistent ``G ≤ U`` with the fewest messages in transit, the highest among those
    (z3's optimiser; docs/theory.md, "Fewest messages to replay"). The objective is not
    monotone in ``G``: the answer need not be the recovery line, nor unique. Returns its
    ``line``, the number of ``messages`` and the time taken.

    Worked example D under restart-all (``U = (1, 1)``): the recovery line ``(1, 1)``
    must replay ``m1``; rolling ``P0`` back to ``C_{0,0}`` replays nothing.

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> best = min_replay_line(History(golden("theory_d_dropped")), [1, 1])
    >>> best["line"], best["messages"]
    ({'P0': 0, 'P1': 1}, 0)
    """
    import z3

    t0 = time.perf_counter()
    var = [z3.Int(f"g_{p}") for p in h.procs]
    opt = z3.Optimize()
    for i in range(h.n):
        opt.add(var[i] >= 0, var[i] <= U[i])
    for (dst, src), front in _orphan_constraints(h, set(range(h.n))).items():
        for r, sv in front:
            opt.add(z3.Implies(var[dst] >= r, var[src] >= sv))
    weights: dict[tuple, int] = {}
    for m in h.msgs:
        key = (m.src, m.s, m.dst, m.r)
        weights[key] = weights.get(key, 0) + 1
    terms = []
    for (src, s, dst, r), w in weights.items():
        sent = True if src == EXTERNAL else var[src] >= s
        pending = True if r is None else var[dst] < r
        terms.append(z3.If(z3.And(sent, pending), w, 0))
    cost = z3.Sum(terms) if terms else z3.IntVal(0)
    opt.minimize(cost)
    # among the cheapest lines prefer the highest one (least rollback)
    opt.maximize(z3.Sum(var) if var else z3.IntVal(0))
    if opt.check() != z3.sat:
        raise AssertionError("checker bug: no consistent line below the bound")
    model = opt.model()
    g = [model.eval(v).as_long() for v in var]
    if not is_consistent(h, g):
        raise AssertionError("checker bug: z3's fewest-replay line is inconsistent")
    return {"line": h.line_to_dict(g), "messages": len(in_transit(h, g)), "seconds": time.perf_counter() - t0}
