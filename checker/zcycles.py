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

from snapcheck.checker.intervals import EXTERNAL
from snapcheck.checker.report import Violation
from snapcheck.checker.rgraph import Graph, scc_labels


def useless_positions(g: Graph, comp: list[int] | None = None) -> list[tuple[int, int]]:
    """(i, x) positions of useless checkpoints, x ≤ L_i, by SCC."""
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
    """Netzer–Xu Z-path from C_{a} to C_{b} along ``msgs`` (docs/theory.md, "Definition of a
    Z-path"), checked literally: first sent after C_a, each next sent by the previous receiver in the
    same or a later interval, last received before C_b. All must be delivered."""
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
    """Messages of a shortest Z-cycle through C_{i,x} (fewest messages), verified."""
    path = g.fewest_messages_path(g.node(i, x + 1), g.node(i, x))
    if path is None:
        raise AssertionError(f"checker bug: no R-path closes the Z-cycle of ({i},{x})")
    msgs = [g.h.msgs[k] for k in path]
    if not is_zpath(msgs, (i, x), (i, x)):
        raise AssertionError(f"checker bug: witness for ({i},{x}) is not a Z-cycle")
    return msgs


def explain_zcycle(h, i: int, x: int, msgs: list) -> str:
    """Elle-style explanation of a Z-cycle (docs/theory.md, "Worked example A: a Z-cycle
    without a causal cycle")."""
    name = h.ckpt_name(i, x)
    line = h.ckpt_line(i, x)
    at = f" (line {line})" if line else " (initial)"
    out = [f"Checkpoint {name}{at} is useless: it lies on a Z-cycle of {len(msgs)} message(s).",
           "Let"]
    prev = None
    for k, m in enumerate(msgs):
        src, dst = h.procs[m.src], h.procs[m.dst]
        if k == 0:
            sent = f"{src} sends it at line {m.send_line}, after {name}"
        else:
            sent = (f"{src} sends it at line {m.send_line} in interval {m.s} (>= interval {prev.r} where it "
                    f"processed {prev.mid}" + ("; before that receipt" if m.send_line < prev.recv_line else "")
                    + ")")
        bound = h.ckpt_name(m.dst, m.r) if m.r <= h.L[m.dst] else f"{dst}:V"
        out.append(f"  {m.mid}: {sent}; {dst} processes it at line {m.recv_line}, in interval {m.r}, "
                   f"i.e. before {bound}")
        prev = m
    out.append(f"Then the last message is processed by {h.procs[i]} before {name}, which Z-precedes itself: "
               f"no consistent global checkpoint contains {name} — a contradiction with its use in any recovery.")
    return "\n".join(out)


def useless_violations(h, g: Graph, useless: list[tuple[int, int]], max_witnesses: int) -> list[Violation]:
    out = []
    for i, x in useless[:max_witnesses]:
        msgs = zcycle_witness(g, i, x)
        lines = sorted({ln for m in msgs for ln in (m.send_line, m.recv_line)}
                       | ({h.ckpt_line(i, x)} if h.ckpt_line(i, x) else set()))
        out.append(Violation(
            "useless-checkpoint", "z-cycles", f"checkpoint {h.ckpt_name(i, x)}",
            explain_zcycle(h, i, x, msgs), lines,
            {"messages": [m.mid for m in msgs], "checkpoints": [[h.procs[i], h.label(i, x)]]}))
    return out
