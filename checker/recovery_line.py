"""Recovery line after the failure of a set F (docs/theory.md, "Recovery lines").

The recovery line is the maximum consistent global checkpoint ``G ≤ U`` where
``U_f = L_f`` for failed processes (volatile state lost) and ``U_i = L_i + 1`` for
survivors under *partial* semantics (they may keep their current state), or
``U_i = L_i`` for everyone under *restart-all* semantics (CheckMate, "CheckMate:
Evaluating Checkpointing Protocols for Streaming Dataflows", 2024, restarts every
operator). It is unique by the lattice property (every constraint is an
implication between threshold atoms), so it simultaneously minimises every
monotone rollback cost.

Two independent algorithms live here (the third, rollback propagation on the
checkpoint graph, is in ``rollback_propagation.py``):

* **RL-FIX** (primary): greatest fixpoint over threshold constraints
  ``(g_x ≥ a) ⇒ (g_y ≥ b)``; each constraint is armed at most once, so the cost is
  O(M log M). Orphan-freedom of a delivered ``m`` is ``(g_dst ≥ r) ⇒ (g_src ≥ s)``;
  optional *no-drop* constraints for messages that nothing can replay are
  ``(g_src ≥ s) ⇒ (g_dst ≥ r)`` (``g_src ≤ s−1`` when undelivered). The ``steps``
  it records give the "why did P roll back" chain.
* **R-MARK** (Wang, "Consistent Global Checkpoints that Contain a Given Set of Local
  Checkpoints", 1997; the marking of Elnozahy, Alvisi, Wang and Johnson, "A Survey
  of Rollback-Recovery Protocols in Message-Passing Systems", 2002): mark everything
  the R-graph reaches from ``(i, U_i+1)`` for every bounded process; the line is the
  last unmarked node of each process.
"""

from __future__ import annotations

from snapcheck.checker.intervals import EXTERNAL, History
from snapcheck.checker.rgraph import Graph


def bound(h: History, failed: list[int], semantics: str) -> list[int]:
    """The bound ``U`` below which the recovery line of the failed processes ``failed``
    (indices) lies: ``U_f = L_f`` for a failed process (its volatile state is lost) and
    ``U_i = L_i + 1 = V_i`` for a survivor under ``partial`` semantics; ``U_i = L_i`` for
    every process under ``restart-all`` (CheckMate restarts every operator).

    In worked example C (``L = (3, 2)``) after the failure of ``P0``:

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> h = History(golden("theory_c_domino"))
    >>> bound(h, [0], "partial"), bound(h, [0], "restart-all")
    ([3, 3], [3, 2])
    """
    if semantics == "restart-all":
        return list(h.L)
    U = [L + 1 for L in h.L]
    for f in failed:
        U[f] = h.L[f]
    return U


def failure_label(h: History, failed: list[int] | None, all_: bool = False) -> str:
    """The label of a failure set in reports: ``all`` (restart-all), ``none``, or the
    failed process ids sorted and joined by commas.

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> h = History(golden("theory_c_domino"))
    >>> failure_label(h, [1, 0]), failure_label(h, []), failure_label(h, None, all_=True)
    ('P0,P1', 'none', 'all')
    """
    if all_:
        return "all"
    if not failed:
        return "none"
    return ",".join(sorted(h.procs[i] for i in failed))


class Step:
    """One lowering of ``g[proc]`` by RL-FIX, from ``old`` to ``new``, because of message
    ``msg`` (its index in ``History.msgs``) and process ``other`` at ``other_value``;
    ``kind`` is ``orphan``, ``no-drop`` or ``undelivered``, ``cause`` the index of the
    step that lowered ``other`` last (``-1``: ``other`` is at its bound).

    The first step of worked example C's cascade: ``P0`` drops from 3 to 2 because of the
    orphan ``d`` (message 4):

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> g, steps, last = rl_fix(History(golden("theory_c_domino")), [3, 2])
    >>> st = steps[0]
    >>> st.proc, st.old, st.new, st.kind, st.msg, st.other, st.cause
    (0, 3, 2, 'orphan', 4, 1, -1)
    """

    __slots__ = ("proc", "old", "new", "msg", "other", "other_value", "kind", "cause")

    def __init__(self, proc, old, new, msg, other, other_value, kind, cause):
        self.proc = proc
        self.old = old
        self.new = new
        self.msg = msg
        self.other = other
        self.other_value = other_value
        self.kind = kind  # "orphan" | "no-drop" | "undelivered"
        self.cause = cause  # index of the step that lowered `other` last, or -1 (its bound)


def rl_fix(h: History, U: list[int], nodrop=()) -> tuple[list[int], list[Step], list[int]]:
    """RL-FIX: the maximum consistent global checkpoint ``G ≤ U`` (docs/theory.md,
    "RL-FIX"), and with ``nodrop`` (messages that nothing can replay) the maximal line
    that loses none of them.

    A greatest fixpoint over threshold constraints ``(g_x ≥ a) ⇒ (g_y ≥ b)``: orphan
    freedom of a delivered message is ``(g_dst ≥ r) ⇒ (g_src ≥ s)``, no-drop is
    ``(g_src ≥ s) ⇒ (g_dst ≥ r)`` (``g_src ≤ s−1`` when undelivered). Each constraint is
    armed at most once: O(M log M). The maximum is unique and minimises every monotone
    rollback cost, because the solutions are closed under componentwise maximum
    (docs/theory.md, "The lattice of consistent global checkpoints"); R-MARK (Wang,
    "Consistent Global Checkpoints that Contain a Given Set of Local Checkpoints", 1997)
    and CheckMate's rollback propagation compute the same line.

    Returns ``(g, steps, last_step)``: the line, every lowering (``Step``) and
    ``last_step[i]``, the index of the step that set ``g[i]`` (-1 if ``g[i] == U[i]``).

    Worked example C, both processes failed (``U = (3, 2)``): the rollback cascades
    ``(3,2) → (2,2) → (2,1) → (1,1) → (1,0)``.

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> g, steps, last = rl_fix(History(golden("theory_c_domino")), [3, 2])
    >>> g, [(st.proc, st.new) for st in steps], last
    ([1, 0], [(0, 2), (1, 1), (0, 1), (1, 0)], [2, 3])
    """
    n = h.n
    g = list(U)
    steps: list[Step] = []
    last = [-1] * n
    msgs = h.msgs
    # per process y, its constraints "lower a neighbour x to a - 1 once g_y < armed":
    # (armed, x, a, k, no-drop), grouped by threshold ``armed`` (the groups from the highest
    # down, each put in order when g_y falls below it: most constraints of a long trace never
    # fire); an orphan constraint is kept as its Msg (m.s, m.dst, m.r, m.k, 0), no tuple per
    # message of a long trace
    watch: list[dict[int, list]] = [{} for _ in range(n)]
    for m in msgs:
        if m.r is not None and m.src != EXTERNAL:
            _arm(watch[m.src], m.s, m)
    for m in nodrop:
        k = m.k
        if m.src == EXTERNAL:
            continue
        if m.r is None:
            if g[m.src] >= m.s:
                steps.append(Step(m.src, g[m.src], m.s - 1, k, m.dst, None, "undelivered", -1))
                last[m.src] = len(steps) - 1
                g[m.src] = m.s - 1
        else:
            _arm(watch[m.dst], m.r, (m.r, m.src, m.s, k, 1))
    levels = [sorted(w, reverse=True) for w in watch]
    ptr = [0] * n
    work = list(range(n))
    while work:
        y = work.pop()
        lv = levels[y]
        p = ptr[y]
        gy = g[y]
        while p < len(lv) and lv[p] > gy:
            for c in sorted(watch[y][lv[p]], key=_constraint, reverse=True):
                _, x, a, k, nd = _constraint(c)
                if g[x] >= a:
                    steps.append(Step(x, g[x], a - 1, k, y, gy, "no-drop" if nd else "orphan", last[y]))
                    last[x] = len(steps) - 1
                    g[x] = a - 1
                    if g[x] < 0:
                        raise AssertionError("no consistent line: missing initial checkpoint")
                    work.append(x)
            p += 1
        ptr[y] = p
    return g, steps, last


def _arm(watch: dict[int, list], armed: int, c) -> None:
    """Add constraint ``c`` to the group of its threshold ``armed`` in ``watch``."""
    group = watch.get(armed)
    if group is None:
        watch[armed] = [c]
    else:
        group.append(c)


def _constraint(c) -> tuple:
    """An RL-FIX constraint as ``(armed, x, a, k, no-drop)`` (a Msg stands for its orphan one)."""
    return c if c.__class__ is tuple else (c.s, c.dst, c.r, c.k, 0)


def r_mark(h: History, U: list[int], graph: Graph | None = None) -> list[int]:
    """R-MARK: the recovery line below ``U`` by marking the R-graph (Wang, "Consistent
    Global Checkpoints that Contain a Given Set of Local Checkpoints", 1997, and the
    marking procedure of Elnozahy, Alvisi, Wang and Johnson, "A Survey of
    Rollback-Recovery Protocols in Message-Passing Systems", 2002).

    Mark every node reachable from ``(i, U_i + 1)`` for every bounded process
    (``U_i ≤ L_i``); the line is each process's last unmarked node. It must equal
    RL-FIX's line (``check_trace`` asserts it). ``graph``: the R-graph of ``h`` when the
    caller has it.

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> h = History(golden("theory_c_domino"))
    >>> r_mark(h, [3, 2]) == rl_fix(h, [3, 2])[0] == [1, 0]
    True
    """
    graph = graph or Graph(h, "r")
    starts = [graph.node(i, U[i] + 1) for i in range(h.n) if U[i] <= h.L[i]]
    mark = graph.reach(starts)
    line = []
    for i in range(h.n):
        b = graph.base[i]
        x = U[i]
        while x >= 0 and mark[b + x]:
            x -= 1
        if x < 0:
            raise AssertionError("no consistent line: missing initial checkpoint")
        line.append(x)
    return line


def one_step(h: History, U: list[int]) -> list[int]:
    """The bound after a single round of propagation from ``U``: every receiver of an
    orphan of ``U`` drops below that receive, nothing more (orphans with respect to
    ``U`` only, not a recovery line).

    In worked example C only the orphan ``d`` of ``U = (3, 2)`` moves ``P0``:

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> one_step(History(golden("theory_c_domino")), [3, 2])
    [2, 2]
    """
    g = list(U)
    for m in h.msgs:
        if m.r is not None and m.src != EXTERNAL and m.s > U[m.src] and m.r <= g[m.dst]:
            g[m.dst] = m.r - 1
    return g


def chain(h: History, steps: list[Step], last: list[int], proc: int, limit: int = 20) -> list[str]:
    """The "why did P roll back" explanation: the cascade of RL-FIX steps that ends at the
    last lowering of ``proc``, starting from a process at its bound (docs/theory.md,
    "RL-FIX"), one sentence per step (``explain_step``). Long (domino) cascades keep their
    first and last ``limit // 2`` steps.

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> h = History(golden("theory_c_domino"))
    >>> g, steps, last = rl_fix(h, [3, 2])
    >>> [sentence.split(" because")[0] for sentence in chain(h, steps, last, 1)]
    ['P0: 3 -> 2', 'P1: 2 -> 1', 'P0: 2 -> 1', 'P1: 1 -> 0']
    """
    idx: list[int] = []
    k = last[proc]
    while k >= 0 and len(idx) <= len(steps):
        idx.append(k)
        k = steps[k].cause
    idx.reverse()
    if len(idx) <= limit:
        return [explain_step(h, steps[k]) for k in idx]
    half = limit // 2
    return (
        [explain_step(h, steps[k]) for k in idx[:half]]
        + [f"... {len(idx) - 2 * half} more rollback step(s) ..."]
        + [explain_step(h, steps[k]) for k in idx[-half:]]
    )


def explain_step(h: History, st: Step) -> str:
    """One RL-FIX step as a sentence, with trace line and checkpoint numbers.

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> h = History(golden("theory_c_domino"))
    >>> print(explain_step(h, rl_fix(h, [3, 2])[1][-1]))
    P1: 1 -> 0 because it processed P0>P1:1 at line 4 in interval 1 (before P1:1)
    but P0 rolled back to 1 < interval 2 of the send (line 3)
    """
    m = h.msgs[st.msg]
    p, q = h.procs[st.proc], h.procs[st.other]
    old = h.label(st.proc, st.old)
    new = h.label(st.proc, st.new)
    if st.kind == "orphan":
        where = f"before {p}:{h.label(st.proc, m.r)}" if m.r <= h.L[st.proc] else "after its last checkpoint"
        return (
            f"{p}: {old} -> {new} because it processed {m.mid} at line {m.recv_line} in interval {m.r} "
            f"({where}) but {q} rolled back to {h.label(st.other, st.other_value)} "
            f"< interval {m.s} of the send (line {m.send_line})"
        )
    if st.kind == "no-drop":
        return (
            f"{p}: {old} -> {new} because it sent {m.mid} at line {m.send_line} in interval {m.s} and nothing "
            f"can replay it, but {q} rolled back to {h.label(st.other, st.other_value)} < interval {m.r} "
            f"of its processing (line {m.recv_line})"
        )
    return (
        f"{p}: {old} -> {new} because it sent {m.mid} at line {m.send_line}, which is never processed "
        f"and nothing can replay it"
    )


def distance(h: History, U: list[int], g: list[int], in_transit: int) -> dict:
    """The rollback distance of line ``g`` from bound ``U``, per process and in total:
    stable checkpoints rolled back (``min(U_i, L_i) − g_i``), effective events undone,
    and ``in_transit``, the number of messages to replay (given by the caller).

    >>> from snapcheck.traces.golden import golden
    >>> from snapcheck.checker.intervals import History
    >>> d = distance(History(golden("theory_c_domino")), [3, 2], [1, 0], in_transit=0)
    >>> d["checkpoints_rolled_back"], d["events_undone"], d["per_process"]["P0"]
    (4, 14, {'checkpoints_rolled_back': 2, 'events_undone': 7})
    """
    per = {}
    total_ck = total_ev = 0
    for i, p in enumerate(h.procs):
        ck = max(0, min(U[i], h.L[i]) - g[i])
        ev = h.events_after(i, g[i])
        per[p] = {"checkpoints_rolled_back": ck, "events_undone": ev}
        total_ck += ck
        total_ev += ev
    return {
        "checkpoints_rolled_back": total_ck,
        "events_undone": total_ev,
        "messages_to_replay": in_transit,
        "per_process": per,
    }
