"""The rollback-dependency graph (R-graph, Wang 1997 "Consistent Global Checkpoints
that Contain a Given Set of Local Checkpoints") and the checkpoint graph
(Wang et al. 1995, as used by CheckMate): docs/theory.md, "The R-graph and the checkpoint graph".

Nodes ``(i, x)`` for ``0 ≤ x ≤ L_i + 1`` (``V_i = (i, L_i+1)``) are numbered
``base[i] + x``. Edges:

* successor ``(i,x) → (i,x+1)`` for ``x ≤ L_i``;
* R-graph message edge ``(src, s) → (dst, r)`` for every *delivered* message
  (never for an undelivered one);
* checkpoint-graph message edge ``(src, s-1) → (dst, r)`` ("sent after
  ``C_{src,s-1}``, processed before ``C_{dst,r}``").

An R-graph edge ``u → v`` means "if u is discarded, v must be discarded". Messages
from external input logs are not edges (an external process never rolls back).
Adjacency is a list of target lists with a parallel list of message indices
(``-1`` for successor edges) so that paths can be turned into message chains.
"""

from __future__ import annotations

from collections import deque

from snapcheck.checker.intervals import EXTERNAL, History


class Graph:
    """The R-graph (``kind="r"``) or the checkpoint graph (``kind="ckpt"``) of the effective
    history ``h`` (a ``History``).

    R-graph: the rollback-dependency graph of Wang, "Consistent Global Checkpoints that
    Contain a Given Set of Local Checkpoints" (1997). A node ``(i, x)`` for every
    ``0 ≤ x ≤ L_i + 1`` (``V_i = (i, L_i+1)``), numbered ``base[i] + x``; successor edges
    ``(i, x) → (i, x+1)``; for every delivered message, not from an external input, the
    edge ``(src, s) → (dst, r)``: "if ``C_{src,s}`` is discarded, ``C_{dst,r}`` must be".
    A Z-path from ``C_{i,x}`` to ``C_{j,y}`` is exactly an R-path from ``(i, x+1)`` to
    ``(j, y)`` (docs/theory.md, "R-paths are Z-paths").

    Checkpoint graph (as CheckMate's rollback propagation uses it): the same nodes and
    successor edges, and the message edge ``(src, s−1) → (dst, r)`` ("sent after
    ``C_{src,s−1}``, processed before ``C_{dst,r}``"). It is acyclic and answers no
    Z-path question.

    ``adj[u]`` lists the targets of ``u`` and ``adjm[u]`` the parallel message indices into
    ``h.msgs`` (``-1`` for a successor edge), so that paths turn into message chains.

    Worked example B of docs/theory.md, a request ``q`` and its response ``a`` inside
    one interval: an R-graph cycle ``(P0,1) → (P1,1) → (P0,1)``, while the checkpoint
    graph's message edges leave the initial checkpoints.

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> h = History(golden("theory_b_request_response"))
    >>> def message_edges(g):
    ...     return [(g.split(u), g.split(v))
    ...             for u in range(g.nodes) for v, k in zip(g.adj[u], g.adjm[u]) if k >= 0]
    >>> message_edges(Graph(h, "r")), message_edges(Graph(h, "ckpt"))
    ([((0, 1), (1, 1)), ((1, 1), (0, 1))], [((0, 0), (1, 1)), ((1, 0), (0, 1))])
    """

    __slots__ = ("h", "base", "nodes", "adj", "adjm", "owner", "kind")

    def __init__(self, h: History, kind: str = "r"):
        """``kind`` is "r" (R-graph) or "ckpt" (checkpoint graph)."""
        self.h = h
        self.kind = kind
        base = []
        total = 0
        owner = []
        for i, L in enumerate(h.L):
            base.append(total)
            total += L + 2
            owner.extend([i] * (L + 2))
        self.base = base
        self.nodes = total
        self.owner = owner
        adj: list[list[int]] = [[] for _ in range(total)]
        adjm: list[list[int]] = [[] for _ in range(total)]
        for i, L in enumerate(h.L):
            b = base[i]
            for x in range(L + 1):
                adj[b + x].append(b + x + 1)
                adjm[b + x].append(-1)
        shift = 0 if kind == "r" else 1
        ids = list(range(total))  # one int object per node, shared by the edges into it
        for m in h.msgs:
            if m.r is None or m.src == EXTERNAL:
                continue
            u = base[m.src] + m.s - shift
            adj[u].append(ids[base[m.dst] + m.r])
            adjm[u].append(m.k)
        self.adj = adj
        self.adjm = adjm

    def node(self, i: int, x: int) -> int:
        """The number of node ``(i, x)``."""
        return self.base[i] + x

    def split(self, v: int) -> tuple[int, int]:
        """The ``(i, x)`` of node number ``v``."""
        i = self.owner[v]
        return i, v - self.base[i]

    # -- reachability ---------------------------------------------------------------
    def reach(self, starts, min_len: int = 0) -> bytearray:
        """Nodes reachable from ``starts`` by a path of length ≥ ``min_len`` (0 or 1)."""
        seen = bytearray(self.nodes)
        adj = self.adj
        if min_len == 0:
            stack = []
            for s in starts:
                if not seen[s]:
                    seen[s] = 1
                    stack.append(s)
        else:
            stack = []
            for s in starts:
                for v in adj[s]:
                    if not seen[v]:
                        seen[v] = 1
                        stack.append(v)
        while stack:
            u = stack.pop()
            for v in adj[u]:
                if not seen[v]:
                    seen[v] = 1
                    stack.append(v)
        return seen

    def reverse_reach(self, starts) -> bytearray:
        """Nodes with a path (length ≥ 0) to some node of ``starts`` (``Anc``)."""
        radj: list[list[int]] = [[] for _ in range(self.nodes)]
        for u, vs in enumerate(self.adj):
            for v in vs:
                radj[v].append(u)
        seen = bytearray(self.nodes)
        stack = []
        for s in starts:
            if not seen[s]:
                seen[s] = 1
                stack.append(s)
        while stack:
            u = stack.pop()
            for v in radj[u]:
                if not seen[v]:
                    seen[v] = 1
                    stack.append(v)
        return seen

    def fewest_messages_path(self, start: int, target: int) -> list[int] | None:
        """Message indices along a path start ⇝ target with the fewest message edges
        (0-1 BFS: successor edges weigh 0, message edges 1); None if unreachable."""
        INF = 1 << 60
        dist = [INF] * self.nodes
        parent = [-1] * self.nodes
        pmsg = [-1] * self.nodes
        dist[start] = 0
        dq = deque([start])
        adj, adjm = self.adj, self.adjm
        while dq:
            u = dq.popleft()
            du = dist[u]
            if u == target:
                break
            for v, k in zip(adj[u], adjm[u]):
                w = 0 if k < 0 else 1
                if du + w < dist[v]:
                    dist[v] = du + w
                    parent[v] = u
                    pmsg[v] = k
                    if w:
                        dq.append(v)
                    else:
                        dq.appendleft(v)
        if dist[target] == INF:
            return None
        out = []
        v = target
        while v != start:
            if pmsg[v] >= 0:
                out.append(pmsg[v])
            v = parent[v]
        out.reverse()
        return out


def scc_labels(g: Graph) -> list[int]:
    """The strongly connected component id of every node of ``g`` (Tarjan's algorithm,
    iterative, O(V+E)). Components are numbered in reverse topological order of the
    condensation: an edge between two components goes from a higher id to a lower one.

    ``C_{i,x}`` is useless iff ``(i, x)`` and ``(i, x+1)`` share a component
    (``zcycles.useless_positions``). In worked example A the Z-cycle through ``C_{0,1}``
    makes one component of ``(P0,1)``, ``(P0,2)`` and ``(P1,1)``, nodes 1, 2 and 5:

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> g = Graph(History(golden("theory_a_zcycle")))
    >>> comp = scc_labels(g)
    >>> [v for v in range(g.nodes) if comp[v] == comp[g.node(0, 1)]], [g.split(v) for v in (1, 2, 5)]
    ([1, 2, 5], [(0, 1), (0, 2), (1, 1)])
    """
    n = g.nodes
    adj = g.adj
    index = [-1] * n
    low = [0] * n
    comp = [-1] * n
    ptr = [0] * n
    onstack = bytearray(n)
    stack: list[int] = []
    counter = 0
    ncomp = 0
    for root in range(n):
        if index[root] != -1:
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        onstack[root] = 1
        call = [root]
        while call:
            u = call[-1]
            nbrs = adj[u]
            k = ptr[u]
            if k < len(nbrs):
                v = nbrs[k]
                ptr[u] = k + 1
                if index[v] == -1:
                    index[v] = low[v] = counter
                    counter += 1
                    stack.append(v)
                    onstack[v] = 1
                    call.append(v)
                elif onstack[v] and index[v] < low[u]:
                    low[u] = index[v]
                continue
            call.pop()
            if call:
                p = call[-1]
                if low[u] < low[p]:
                    low[p] = low[u]
            if low[u] == index[u]:
                while True:
                    w = stack.pop()
                    onstack[w] = 0
                    comp[w] = ncomp
                    if w == u:
                        break
                ncomp += 1
    return comp


def scc_labels_networkx(g: Graph) -> list[int]:
    """The strongly connected components of ``g`` computed with networkx, an implementation
    independent of ``scc_labels`` that the tests use as its oracle. The ids differ; the
    partition into components is the same.

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> g = Graph(History(golden("theory_c_domino")))
    >>> def partition(comp):
    ...     return sorted(sorted(v for v in range(g.nodes) if comp[v] == c) for c in set(comp))
    >>> partition(scc_labels_networkx(g)) == partition(scc_labels(g))
    True
    """
    import networkx as nx

    G = nx.DiGraph()
    G.add_nodes_from(range(g.nodes))
    G.add_edges_from((u, v) for u, vs in enumerate(g.adj) for v in vs)
    comp = [-1] * g.nodes
    for c, members in enumerate(nx.strongly_connected_components(G)):
        for v in members:
            comp[v] = c
    return comp
