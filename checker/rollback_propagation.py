"""Rollback propagation on the checkpoint graph (Wang et al. 1995; CheckMate,
"CheckMate: Evaluating Checkpointing Protocols for Streaming Dataflows", Algorithm 1;
docs/theory.md, "Rollback propagation").

Checkpoint-graph edges: successors ``(i,x) → (i,x+1)`` and, for every delivered
message, ``(src, s−1) → (dst, r)`` ("sent after C_{src,s−1}, processed before
C_{dst,r}"). The graph is a DAG. Starting from the roots ``U`` (``L_f`` for failed
processes, ``V_i`` for survivors under partial semantics; ``L_i`` for all under
CheckMate's restart-all semantics), every root member that is reachable by at
least one edge from a root member is replaced by its next older checkpoint, until
no root member is reachable. The result is the same maximum consistent line as
RL-FIX and R-MARK when started from the same bound; mixing the R-graph's and the
checkpoint graph's edge conventions gives wrong lines (docs/theory.md, "Mixing the two
edge conventions").

Each iteration is a graph search, so the cost is O(steps · (V+E)): this is a
cross-check, not the primary algorithm.
"""

from __future__ import annotations

from snapcheck.checker.rgraph import Graph


def rollback_propagation(h, U: list[int], graph: Graph | None = None) -> list[int]:
    """The recovery line below ``U`` by rollback propagation on the checkpoint graph
    (CheckMate, "CheckMate: Evaluating Checkpointing Protocols for Streaming Dataflows",
    2024, Algorithm 1): while a root member is reachable by at least one edge from a root
    member, replace it by its previous checkpoint. ``graph``: the checkpoint graph
    (``Graph(h, "ckpt")``) when the caller has it; an R-graph here would roll back too far.

    CheckMate's Figure 4 under its restart-all semantics (``U = L = (2, 2, 2)``):

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> rollback_propagation(History(golden("checkmate_fig4_rollback_propagation")), [2, 2, 2])
    [2, 1, 1]
    """
    graph = graph or Graph(h, "ckpt")
    root = list(U)
    while True:
        reach = graph.reach([graph.node(i, root[i]) for i in range(h.n)], min_len=1)
        moved = False
        for i in range(h.n):
            if reach[graph.node(i, root[i])]:
                root[i] -= 1
                if root[i] < 0:
                    raise AssertionError("rollback propagation ran out of checkpoints")
                moved = True
        if not moved:
            return root
