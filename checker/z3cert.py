"""z3 certificates for recovery lines (theory.md §5).

Integer encoding: one ``Int g_i`` per process with ``0 ≤ g_i ≤ U_i``; per delivered
message the orphan constraint ``Implies(g_dst ≥ r, g_src ≥ s)``.

* **Maximality certificate.** With ``G*`` the line found by RL-FIX, the query
  ``base ∧ ⋁_i g_i > G*_i`` must be **unsat**: no consistent line exceeds ``G*`` in
  any component, i.e. every consistent line is ``≤ G*``, so ``G*`` minimises every
  monotone rollback cost. The encoding is restricted to the processes the rollback
  touches (``G*_i < U_i``); the others are fixed at ``U_i = G*_i``. By the lattice
  property (§1.5) this loses nothing: if some consistent ``G'`` exceeded ``G*``
  somewhere, ``max(G', G*)`` would too, and it agrees with ``G*`` on the untouched
  processes. Constraints are simplified against the constants and deduplicated
  (for each ``(dst, r, src)`` only the largest ``s`` matters).
* **Fewest messages to replay** (optional): among all consistent ``G ≤ U`` (every
  process a variable), minimise the number of in-transit messages. This objective
  is not monotone, so its optimum need not be the maximal line nor unique (§1.5.4).
"""

from __future__ import annotations

import time

from checker.cuts import in_transit, is_consistent
from checker.intervals import EXTERNAL


def _orphan_constraints(h, procs_var: set[int]):
    """Deduplicated orphan constraints (dst, r, src, s) among delivered messages."""
    best: dict[tuple[int, int, int], int] = {}
    for m in h.msgs:
        if m.r is None or m.src == EXTERNAL or m.src == m.dst:
            continue
        if m.src not in procs_var and m.dst not in procs_var:
            continue
        key = (m.dst, m.r, m.src)
        if best.get(key, -1) < m.s:
            best[key] = m.s
    return best


def certify(h, U: list[int], g: list[int], min_replay: bool = False) -> dict:
    import z3

    t0 = time.perf_counter()
    if not is_consistent(h, g):
        raise AssertionError("checker bug: the recovery line to certify is inconsistent")
    touched = [i for i in range(h.n) if g[i] < U[i]]
    tset = set(touched)
    var = {i: z3.Int(f"g_{h.procs[i]}") for i in touched}

    def val(i):
        return var[i] if i in tset else U[i]

    s = z3.Solver()
    for i in touched:
        s.add(var[i] >= 0, var[i] <= U[i])
    ncons = 0
    for (dst, r, src), sv in _orphan_constraints(h, tset).items():
        d, c = val(dst), val(src)
        if dst not in tset:
            if d >= r:
                s.add(c >= sv)
                ncons += 1
        elif src not in tset:
            if c < sv:
                s.add(d < r)
                ncons += 1
        else:
            s.add(z3.Implies(d >= r, c >= sv))
            ncons += 1
    if touched:
        s.add(z3.Or([var[i] > g[i] for i in touched]))
        res = s.check()
    else:
        res = z3.unsat                   # nothing rolled back: nothing can exceed U
    out = {"maximality": "proved" if res == z3.unsat else "refuted",
           "variables": len(touched), "constraints": ncons}
    if res == z3.sat:
        model = s.model()
        out["counterexample"] = {h.procs[i]: h.label(i, model.eval(var[i]).as_long()) for i in touched}
    out["seconds"] = time.perf_counter() - t0
    if out["maximality"] != "proved":
        raise AssertionError(f"checker bug: z3 refutes the maximality of the recovery line: {out}")
    if min_replay:
        out["min_replay"] = min_replay_line(h, U)
    return out


def min_replay_line(h, U: list[int]) -> dict:
    """z3 Optimize: a consistent G ≤ U with the fewest in-transit messages."""
    import z3

    t0 = time.perf_counter()
    var = [z3.Int(f"g_{p}") for p in h.procs]
    opt = z3.Optimize()
    for i in range(h.n):
        opt.add(var[i] >= 0, var[i] <= U[i])
    for (dst, r, src), sv in _orphan_constraints(h, set(range(h.n))).items():
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
    return {"line": h.line_to_dict(g), "messages": len(in_transit(h, g)),
            "seconds": time.perf_counter() - t0}
