"""Rollback-dependency trackability (Wang, "Consistent Global Checkpoints that Contain
a Given Set of Local Checkpoints", 1997; docs/theory.md, "Rollback-dependency trackability").

TDV (transitive dependency vector), computed by replaying the effective history
in a causal order: ``D_i = 0⃗`` then ``D_i[i] := 1``; ``TDV(C_{i,0}) = 0⃗``; on
checkpoint ``C_{i,x}``: ``TDV(C_{i,x}) := D_i`` (``D_i[i] = x``), then ``D_i[i] += 1``;
a send piggybacks ``D_i``; a receive sets ``D_i := max(D_i, m.D)``.

RDT: every rollback dependency is causally tracked,
``(j,y) ⇝ (i,x)`` in the R-graph ⟹ ``TDV(C_{i,x})[j] ≥ y``. Efficient check:
``Rmax[v][j] = max{y : (j,y) ⇝ v}`` by dynamic programming over the SCC
condensation in topological order; RDT holds ⟺ ``max(Rmax, 0) == TDV`` on every
stable checkpoint (``Rmax ≥ TDV`` always: causal paths are R-paths). A violation's
witness is a Z-path from ``C_{j,y−1}`` to ``C_{i,x}`` that no causal path doubles.
"""

from __future__ import annotations

from snapcheck.checker.intervals import EXTERNAL, History
from snapcheck.checker.report import Violation
from snapcheck.checker.rgraph import Graph, scc_labels


def tdv(h: History) -> list[list[list[int]]]:
    """The transitive dependency vector of every stable checkpoint: ``out[i][x]`` is
    ``TDV(C_{i,x})`` for ``x = 0..L_i`` (Wang, "Consistent Global Checkpoints that Contain a
    Given Set of Local Checkpoints", 1997).

    Computed by replaying the effective history ``h`` in a causal order (a receive after
    its send): ``D_i = 0⃗`` then ``D_i[i] := 1``; ``TDV(C_{i,0}) = 0⃗``; at checkpoint
    ``C_{i,x}``, ``TDV(C_{i,x}) := D_i`` (``D_i[i] = x``), then ``D_i[i] += 1``; a send
    piggybacks ``D_i``; a receive sets ``D_i := max(D_i, m.D)``. ``TDV(C_{i,x})[j]`` is the
    largest interval of ``P_j`` with an event that causally precedes ``C_{i,x}``.

    Worked example A: ``C_{0,2}`` depends causally on ``P1``'s interval 1 (through ``m2``),
    and so does ``C_{1,1}`` on ``P0``'s interval 2 (through ``m1``).

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> tdv(History(golden("theory_a_zcycle")))
    [[[0, 0], [1, 1], [2, 1]], [[0, 0], [2, 1]]]
    """
    n = h.n
    out = [[[0] * n] for _ in range(n)]
    D = []
    for i in range(n):
        d = [0] * n
        d[i] = 1
        D.append(d)
    pig: dict[str, list[int]] = {}
    pos = [0] * n
    waiting: dict[str, list[int]] = {}
    work = list(range(n))
    by_mid = h.by_mid
    resolve = h.resolve
    while work:
        i = work.pop()
        eff = h.eff[i]
        k = pos[i]
        d = D[i]
        while k < len(eff):
            e = eff[k]
            t = e.type
            if t == "checkpoint":
                if e.ckpt:
                    out[i].append(list(d))
                    d[i] += 1
            elif t == "send":
                assert e.mid is not None  # required of a message event
                m = by_mid.get(e.mid)
                if m is not None:
                    pig[e.mid] = list(d)
                    if e.mid in waiting:
                        work.extend(waiting.pop(e.mid))
            elif t == "recv":
                assert e.mid is not None
                o = resolve(e.mid)
                m = by_mid.get(o)
                if m is not None and m.src != EXTERNAL:
                    v = pig.get(o)
                    if v is None:
                        waiting.setdefault(o, []).append(i)
                        break
                    for j in range(n):
                        if v[j] > d[j]:
                            d[j] = v[j]
            k += 1
        pos[i] = k
    if any(pos[i] < len(h.eff[i]) for i in range(n)):
        raise AssertionError("checker bug: causal replay for the TDV got stuck")
    return out


def rmax(g: Graph) -> list[list[int]]:
    """``Rmax[v][j] = max{y : (j, y) ⇝ v}`` in the R-graph ``g`` for every node ``v`` (``-1``
    when no node of ``P_j`` reaches ``v``): the rollback dependencies of ``v``, causal or
    not. One dynamic program over the SCC condensation in topological order, cost
    O((V+E)·n). Since causal paths are R-paths, ``Rmax ≥ TDV`` on every stable checkpoint.

    In worked example A, ``C_{0,1}`` (node ``(0, 1)``) depends on ``(P0, 2)`` through the
    Z-cycle, while its TDV shows only ``P0``'s interval 1 (``tdv``):

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> g = Graph(History(golden("theory_a_zcycle")))
    >>> rmax(g)[g.node(0, 1)]
    [2, 1]
    """
    h = g.h
    n = h.n
    comp = scc_labels(g)
    ncomp = max(comp) + 1 if comp else 0
    vec = [[-1] * n for _ in range(ncomp)]
    owner = g.owner
    base = g.base
    members: list[list[int]] = [[] for _ in range(ncomp)]
    for v in range(g.nodes):
        c = comp[v]
        members[c].append(v)
        i = owner[v]
        x = v - base[i]
        if x > vec[c][i]:
            vec[c][i] = x
    # Tarjan numbers SCCs in reverse topological order: highest id first is a source order.
    for c in range(ncomp - 1, -1, -1):
        src = vec[c]
        targets = set()
        for u in members[c]:
            for v in g.adj[u]:
                cv = comp[v]
                if cv != c:
                    targets.add(cv)
        for cv in targets:
            dst = vec[cv]
            vec[cv] = [a if a > b else b for a, b in zip(dst, src)]
    return [vec[comp[v]] for v in range(g.nodes)]


def rdt_violations(h: History, g: Graph, max_witnesses: int) -> tuple[list[Violation], int]:
    """``rdt`` violations: stable checkpoints with a rollback dependency that is not
    causally tracked (Wang, "Consistent Global Checkpoints that Contain a Given Set of
    Local Checkpoints", 1997).

    RDT holds iff ``(j, y) ⇝ (i, x)`` in the R-graph implies ``TDV(C_{i,x})[j] ≥ y``, i.e.
    iff ``max(Rmax, 0) = TDV`` on every stable checkpoint (``rmax``, ``tdv``). Returns the
    violations of the first ``max_witnesses`` untracked checkpoints, each with a Z-path
    that no causal path doubles, and the number of further ones.

    RDT implies Z-cycle freedom, so the useless ``C_{0,1}`` of worked example A breaks it:

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> h = History(golden("theory_a_zcycle"))
    >>> vs, omitted = rdt_violations(h, Graph(h), max_witnesses=20)
    >>> [(v.kind, v.subject, v.witness["messages"]) for v in vs], omitted
    ([('rdt', 'checkpoint P0:1', ['P0>P1:1', 'P1>P0:1'])], 0)
    """
    T = tdv(h)
    R = rmax(g)
    out: list[Violation] = []
    omitted = 0
    for i in range(h.n):
        for x in range(h.L[i] + 1):
            rv = R[g.node(i, x)]
            tv = T[i][x]
            for j in range(h.n):
                y = max(rv[j], 0)
                if y == max(tv[j], 0):
                    continue
                if y < tv[j]:
                    raise AssertionError("checker bug: TDV exceeds the R-graph dependency")
                if len(out) >= max_witnesses:
                    omitted += 1
                else:
                    out.append(_violation(h, g, i, x, j, y, tv[j]))
                break
    return out, omitted


def _violation(h: History, g: Graph, i, x, j, y, t) -> Violation:
    path = g.fewest_messages_path(g.node(j, y), g.node(i, x))
    msgs = [h.msgs[k] for k in path] if path else []
    name = h.ckpt_name(i, x)
    src = h.ckpt_name(j, y - 1)
    chain = ", ".join(
        f"{m.mid} ({h.procs[m.src]} line {m.send_line} -> {h.procs[m.dst]} line {m.recv_line})" for m in msgs
    )
    text = (
        f"Let C = {name}. The R-graph has a path from ({h.procs[j]},{y}) to C, i.e. a Z-path from {src} to C "
        f"through {chain or 'successor edges only'}. Then RDT requires TDV(C)[{h.procs[j]}] >= {y}, but "
        f"TDV(C)[{h.procs[j]}] = {t}: the dependency of C on {src} is not causally tracked — a contradiction "
        f"with rollback-dependency trackability."
    )
    lines = sorted(
        {ln for m in msgs for ln in (m.send_line, m.recv_line) if ln is not None}  # (all received)
        | {ln for ln in (h.ckpt_line(i, x),) if ln}
    )
    return Violation(
        "rdt",
        "rdt",
        f"checkpoint {name}",
        text,
        lines,
        {
            "messages": [m.mid for m in msgs],
            "checkpoints": [[h.procs[j], h.label(j, y - 1)], [h.procs[i], h.label(i, x)]],
        },
    )
