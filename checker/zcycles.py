"""Z-paths, Z-cycles and useless checkpoints (Netzer & Xu, "Necessary and Sufficient
Conditions for Consistent Global Snapshots", 1995; docs/theory.md, "Z-paths and Z-cycles" and
"Useless checkpoints in linear time").

* ``C_{i,x}`` is **useless** (on a Z-cycle, in no consistent global checkpoint) ⟺
  ``(i,x+1) ⇝ (i,x)`` in the R-graph ⟺ the two nodes share a strongly connected
  component. (Not "lies on some cycle": a request/response inside one interval is
  an R-graph cycle without any useless checkpoint — docs/theory.md, "Worked example B: an
  R-graph cycle that is not a Z-cycle".)
* ``C_{i,x}`` is **stably unusable** ⟺ useless, or some ``V_j`` reaches ``(i,x)``:
  it is in no consistent global checkpoint made of *stable* checkpoints only (it
  may become usable once the other processes checkpoint).
* Uselessness is monotone but not final on a truncated trace: the set reported is
  "useless so far". A continuation can make useless exactly the stably unusable
  checkpoints that are not useless yet: a new Z-cycle through an old checkpoint
  must use a new message received in some process's open interval and continue
  along existing edges out of ``V_k`` (so ``V_k`` reaches the checkpoint); conversely
  a future message from ``P_i`` received in ``P_k``'s open interval closes one.

A witness is a shortest Z-cycle (fewest messages, 0-1 BFS on the R-graph from
``(i,x+1)`` to ``(i,x)``), re-checked with ``is_zpath`` against the definition
(docs/theory.md, "Definition of a Z-path"), which does not use the graph.
"""

from __future__ import annotations

from snapcheck.checker.intervals import EXTERNAL, History, Msg
from snapcheck.checker.report import Violation
from snapcheck.checker.rgraph import Graph, scc_labels


def useless_positions(g: Graph, comp: list[int] | None = None) -> list[tuple[int, int]]:
    """The positions ``(i, x)``, ``x ≤ L_i``, of the useless checkpoints: those on a Z-cycle,
    which no consistent global checkpoint contains (Netzer and Xu, "Necessary and
    Sufficient Conditions for Consistent Global Snapshots", 1995).

    ``C_{i,x}`` is useless iff ``(i, x+1) ⇝ (i, x)`` in the R-graph ``g``, i.e. iff the two
    nodes share a strongly connected component (``comp``: the labels of ``scc_labels(g)``,
    computed when not given). The last stable checkpoint is compared with ``V_i``, so
    Z-cycles through the open interval count.

    Worked example A of docs/theory.md: ``C_{0,1}`` lies on the Z-cycle ``m1 m2``; the
    request and response of worked example B form an R-graph cycle but no Z-cycle.

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> useless_positions(Graph(History(golden("theory_a_zcycle"))))
    [(0, 1)]
    >>> useless_positions(Graph(History(golden("theory_b_request_response"))))
    []
    """
    if comp is None:
        comp = scc_labels(g)
    out = []
    for i, L in enumerate(g.h.L):
        b = g.base[i]
        for x in range(L + 1):
            if comp[b + x] == comp[b + x + 1]:
                out.append((i, x))
    return out


def stably_unusable_positions(g: Graph, useless: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The positions of the stably unusable checkpoints: in no consistent global checkpoint
    made of *stable* checkpoints only (every ``V_j`` forbidden), sorted.

    They are the ``useless`` ones plus every ``(i, x)``, ``x ≤ L_i``, that some ``V_j``
    reaches in the R-graph ``g`` (equivalently: a Z-path leads to ``C_{i,x}`` from some
    process's last stable checkpoint). Those not useless yet are exactly the checkpoints
    a continuation of the trace can still make useless (docs/theory.md, "Useless, stably
    unusable and not yet usable checkpoints").

    Golden trace ``theory_stably_unusable``: ``P0`` checkpoints after receiving ``m1``,
    which ``P1`` sent after its only stable checkpoint ``C_{1,0}``; ``C_{0,1}`` is usable
    only together with ``V_1``.

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> g = Graph(History(golden("theory_stably_unusable")))
    >>> useless_positions(g), stably_unusable_positions(g, useless_positions(g))
    ([], [(0, 1)])
    """
    h = g.h
    seen = g.reach([g.node(i, h.L[i] + 1) for i in range(h.n)])
    out = set(useless)
    for i, L in enumerate(h.L):
        b = g.base[i]
        for x in range(L + 1):
            if seen[b + x]:
                out.add((i, x))
    return sorted(out)


def is_zpath(msgs: list, a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Is ``msgs`` a Z-path from checkpoint ``a = (i, x)`` to ``b = (j, y)`` (Netzer and
    Xu, "Necessary and Sufficient Conditions for Consistent Global Snapshots", 1995)?

    The definition checked literally, without any graph (docs/theory.md, "Definition of a
    Z-path"): the first message is sent by ``P_i`` after ``C_{i,x}`` (``s ≥ x+1``); each
    next one is sent by the previous receiver in the same or a later interval
    (``s ≥ r`` of the previous, possibly *before* that receipt: a zigzag); the last is
    received by ``P_j`` before ``C_{j,y}`` (``r ≤ y``). Every message must be delivered.
    The checker re-checks every witness its graph searches produce with it.

    Worked example A: ``m1 = (P0, 2, P1, 1)`` then ``m2 = (P1, 1, P0, 1)`` is a Z-cycle
    through ``C_{0,1}`` although ``P1`` sends ``m2`` before it receives ``m1``; the reverse
    order is not a Z-path.

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> m1, m2 = History(golden("theory_a_zcycle")).msgs
    >>> is_zpath([m1, m2], (0, 1), (0, 1)), is_zpath([m2, m1], (1, 1), (1, 1))
    (True, False)
    """
    if not msgs:
        return False
    i, x = a
    j, y = b
    first, last = msgs[0], msgs[-1]
    if first.src == EXTERNAL or first.src != i or first.s < x + 1:
        return False
    for m, nxt in zip(msgs, msgs[1:]):
        if m.r is None or nxt.src != m.dst or nxt.s < m.r:
            return False
    return last.r is not None and last.dst == j and last.r <= y


def zcycle_witness(g: Graph, i: int, x: int) -> list:
    """The messages of a shortest Z-cycle through ``C_{i,x}`` (fewest messages): a 0-1 BFS
    in the R-graph ``g`` from ``(i, x+1)`` to ``(i, x)`` (``Graph.fewest_messages_path``),
    re-checked with ``is_zpath``. ``C_{i,x}`` must be useless; an ``AssertionError`` (a
    checker bug) otherwise.

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> zcycle_witness(Graph(History(golden("theory_a_zcycle"))), 0, 1)
    [Msg(P0>P1:1: 0,2 -> 1,1), Msg(P1>P0:1: 1,1 -> 0,1)]
    """
    path = g.fewest_messages_path(g.node(i, x + 1), g.node(i, x))
    if path is None:
        raise AssertionError(f"checker bug: no R-path closes the Z-cycle of ({i},{x})")
    msgs = [g.h.msgs[k] for k in path]
    if not is_zpath(msgs, (i, x), (i, x)):
        raise AssertionError(f"checker bug: witness for ({i},{x}) is not a Z-cycle")
    return msgs


def explain_zcycle(h: History, i: int, x: int, msgs: list) -> str:
    """Why ``C_{i,x}`` is useless, told message by message along the Z-cycle ``msgs`` in the
    style of Elle ("Let … Then … : a contradiction"; Kingsbury and Alvaro, "Elle: Inferring
    Isolation Anomalies from Experimental Observations", 2020). Trace line numbers and
    checkpoint numbers are the trace's.

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> h = History(golden("theory_a_zcycle"))
    >>> print(explain_zcycle(h, 0, 1, zcycle_witness(Graph(h), 0, 1)))
    Checkpoint P0:1 (line 4) is useless: it lies on a Z-cycle of 2 message(s).
    Let
      P0>P1:1: P0 sends it at line 5, after P0:1; P1 processes it at line 6, in interval 1,
        i.e. before P1:1
      P1>P0:1: P1 sends it at line 2 in interval 1 (>= interval 1 where it processed P0>P1:1;
        before that receipt); P0 processes it at line 3, in interval 1, i.e. before P0:1
    Then the last message is processed by P0 before P0:1, which Z-precedes itself: no consistent
    global checkpoint contains P0:1 — a contradiction with its use in any recovery.
    """
    name = h.ckpt_name(i, x)
    line = h.ckpt_line(i, x)
    at = f" (line {line})" if line else " (initial)"
    out = [f"Checkpoint {name}{at} is useless: it lies on a Z-cycle of {len(msgs)} message(s).", "Let"]
    prev: Msg | None = None
    for k, m in enumerate(msgs):
        src, dst = h.procs[m.src], h.procs[m.dst]
        if k == 0:
            sent = f"{src} sends it at line {m.send_line}, after {name}"
        else:
            assert prev is not None  # the message before it on the cycle
            sent = (
                f"{src} sends it at line {m.send_line} in interval {m.s} (>= interval {prev.r} where it "
                f"processed {prev.mid}" + ("; before that receipt" if m.send_line < prev.recv_line else "") + ")"
            )
        bound = h.ckpt_name(m.dst, m.r) if m.r <= h.L[m.dst] else f"{dst}:V"
        out.append(
            f"  {m.mid}: {sent}; {dst} processes it at line {m.recv_line}, in interval {m.r}, i.e. before {bound}"
        )
        prev = m
    out.append(
        f"Then the last message is processed by {h.procs[i]} before {name}, which Z-precedes itself: "
        f"no consistent global checkpoint contains {name} — a contradiction with its use in any recovery."
    )
    return "\n".join(out)


def useless_violations(h: History, g: Graph, useless: list[tuple[int, int]], max_witnesses: int) -> list[Violation]:
    """``useless-checkpoint`` violations (property ``z-cycles``) for the first
    ``max_witnesses`` positions of ``useless``, each with its shortest Z-cycle
    (``zcycle_witness``) and explanation (``explain_zcycle``). ``check_trace`` reports them
    where the protocol promises Z-cycle freedom (ZCF or RDT), and otherwise only lists the
    useless checkpoints in ``Report.useless``.

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> h = History(golden("theory_a_zcycle")); g = Graph(h)
    >>> [(v.kind, v.subject, v.witness["messages"]) for v in useless_violations(h, g, useless_positions(g), 20)]
    [('useless-checkpoint', 'checkpoint P0:1', ['P0>P1:1', 'P1>P0:1'])]
    """
    out = []
    for i, x in useless[:max_witnesses]:
        msgs = zcycle_witness(g, i, x)
        lines = sorted(
            {ln for m in msgs for ln in (m.send_line, m.recv_line) if ln is not None}  # (all received)
            | {ln for ln in (h.ckpt_line(i, x),) if ln}
        )
        out.append(
            Violation(
                "useless-checkpoint",
                "z-cycles",
                f"checkpoint {h.ckpt_name(i, x)}",
                explain_zcycle(h, i, x, msgs),
                lines,
                {"messages": [m.mid for m in msgs], "checkpoints": [[h.procs[i], h.label(i, x)]]},
            )
        )
    return out
