"""Log retention: a sender-side log entry must not be truncated while a recovery
line may still need it (class P9 of docs/bug-zoo.md, "Property classes"; SPARK-6222,
where the write-ahead log was cleaned on a checkpoint that did not yet cover the data).

Definition. Let a ``log_truncate`` at line ``ℓ`` remove message ``m`` from its
channel's log, and let ``R`` be the recovery line if *every* process failed just
before ``ℓ`` (the maximum consistent global checkpoint of stable checkpoints of the
trace prefix, docs/theory.md, "Log retention", with ``U = L``). Every later recovery line lies at or
above ``R`` (a consistent line of stable checkpoints stays consistent as the
execution grows). Messages whose receipt the receiver's checkpoint on ``R``
reflects are therefore never needed again; truncating them is what a correct
protocol does. Any other message — ``r = ⊥ ∨ r > R_dst`` at ``ℓ`` — may be needed:
if ``s ≤ R_src`` it is in transit with respect to ``R`` and a failure of every
process at that moment must replay it; if ``s > R_src``, a later line whose sender
checkpoint reflects the send while the receiver's stays below ``r`` (the
receiver's later checkpoints being orphans through other channels) has it in
transit. Either way recovery would replay it from a log that no longer has it: a
``premature-truncation`` (property ``log-retention``). The second case needs
processes that checkpoint on their own (a ``basic`` or ``forced`` checkpoint in the
trace): when every checkpoint belongs to a round, recovery lines are rounds, whose
later checkpoints reflect a receipt that came before them (or record the message as
channel state), so only a message in transit with respect to ``R`` is needed.

The prefix line is computed with RL-FIX on the effective history of the trace
segment between two restores (within a segment the history of a prefix is the
segment's history cut at ``ℓ``), so one ``History`` is used per segment (the
``check_trace`` run's, shared with the analyses of rounds).
"""

from __future__ import annotations

from bisect import bisect_left

from snapcheck.checker.intervals import EXTERNAL
from snapcheck.checker.report import Violation
from snapcheck.traces.model import Trace


def premature_truncations(trace: Trace, ix, history, dur, max_witnesses: int) -> tuple[list[Violation], int]:
    """``premature-truncation`` violations (property ``log-retention``, module docstring):
    a ``log_truncate`` removes a message whose receipt the receiver's checkpoint on ``R``,
    the restart-all recovery line of the trace before the truncation, does not reflect.
    Returns the first ``max_witnesses`` violations and the number of further ones.

    ``ix``: the trace's ``TraceIndex``; ``history(limit)``: the effective history of the
    prefix before line ``limit`` (``None``: the whole trace); ``dur``: the ``Durability``
    of the whole trace.

    ``A`` sends ``m`` before its checkpoint and truncates its log while ``B`` has not yet
    checkpointed after processing ``m``: a failure of both needs ``m`` again.

    >>> from snapcheck.traces import TraceRecorder
    >>> from snapcheck.checker.durability import Durability
    >>> from snapcheck.checker.intervals import History
    >>> from snapcheck.checker.trace_index import TraceIndex
    >>> rec = TraceRecorder(["A", "B"], [{"id": "a2b", "src": "A", "dst": "B", "logged": True}])
    >>> m = rec.send("A", "a2b"); _ = rec.checkpoint("A"); rec.recv("B", m)
    >>> rec.log_truncate("A", "a2b", through_seq=1)
    >>> t = rec.trace()
    >>> vs, omitted = premature_truncations(t, TraceIndex(t), lambda limit: History(t, limit=limit),
    ...                                     Durability(History(t)), max_witnesses=20)
    >>> [(v.kind, v.subject, v.witness) for v in vs]
    [('premature-truncation', 'log_truncate at line 5', {'messages': ['a2b:1'], 'cut': {'A': 1, 'B': 0}})]
    """
    events = trace.events
    restores = [e.line for e in ix.of_type("restore")]
    independent = any(c.kind in ("basic", "forced") for c in ix.of_type("checkpoint"))
    removed: dict[int, list[str]] = {}  # truncation line -> mids it removed
    for mid, line in dur.end.items():
        removed.setdefault(line, []).append(mid)
    out: list[Violation] = []
    omitted = 0
    seg: PrefixLines | None = None
    seg_end: int | None = -1
    prev = None
    R: list[int] | None = None
    for e in events:
        if e.type != "log_truncate":
            prev = e
            continue
        line = e.line
        if prev is None or prev.type != "log_truncate":  # a new run of truncations
            k = bisect_left(restores, line)
            end = restores[k] if k < len(restores) else None
            if seg is None or end != seg_end:
                seg_end = end
                seg = PrefixLines(history(end))
            R = seg.line(line)
        prev = e
        assert seg is not None and R is not None  # set at the first truncation of the run
        h = seg.h
        for mid in removed.get(line, ()):
            m = h.by_mid.get(mid)
            if m is None or m.src == EXTERNAL or m.send_line >= line:
                continue
            r = m.r if m.recv_line is not None and m.recv_line < line else None
            if (r is None or r > R[m.dst]) and (independent or m.s <= R[m.src]):
                if len(out) >= max_witnesses:
                    omitted += 1
                    continue
                out.append(_violation(h, e, m, r, R))
    return out, omitted


class PrefixLines:
    """Recovery lines for "every process fails before line ℓ" on the prefixes of one
    trace segment without restores (``h`` is the segment's history).

    RL-FIX (docs/theory.md, "RL-FIX") with the bound ``U = L(ℓ)`` (stable checkpoints before
    ℓ) and the orphan constraints of the messages processed before ℓ. The
    constraints of a sender are kept sorted once; a query starts each sender's scan
    at the messages that can have been sent before ℓ (``s ≤ L(ℓ)+1``), so it visits only
    the constraints armed below that bound — each at most once — instead of
    re-sorting the whole history per query.

    >>> from snapcheck.traces import TraceRecorder
    >>> from snapcheck.checker.intervals import History
    >>> rec = TraceRecorder(["A", "B"], [("a2b", "A", "B")])
    >>> m = rec.send("A", "a2b"); _ = rec.checkpoint("A"); rec.recv("B", m); _ = rec.checkpoint("B")
    >>> lines = PrefixLines(History(rec.trace()))
    >>> lines.line(4), lines.line(6)      # before B's checkpoint (line 5), and after it
    ([1, 0], [1, 1])
    """

    def __init__(self, h):
        self.h = h
        self.ck_lines = [[ev.line for ev in h.ckpt_ev[i][1:]] for i in range(h.n)]
        watch: list[list] = [[] for _ in range(h.n)]
        for m in h.msgs:
            if m.src != EXTERNAL and m.r is not None:
                watch[m.src].append((m.s, m.dst, m.r, m.recv_line, m.send_line))
        for w in watch:
            w.sort(key=lambda c: -c[0])
        self.watch = watch
        self.neg_s = [[-c[0] for c in w] for w in watch]

    def line(self, ell: int) -> list[int]:
        """The restart-all recovery line (positions) of the trace before line ``ell``."""
        watch = self.watch
        g = [bisect_left(cl, ell) for cl in self.ck_lines]
        ptr = [bisect_left(self.neg_s[y], -(g[y] + 1)) for y in range(len(g))]
        work = list(range(len(g)))
        while work:
            y = work.pop()
            w = watch[y]
            p = ptr[y]
            while p < len(w) and w[p][0] > g[y]:
                _, x, r, recv_line, send_line = w[p]
                p += 1
                if recv_line >= ell or send_line >= ell:
                    continue
                if g[x] >= r:
                    g[x] = r - 1
                    work.append(x)
            ptr[y] = p
        return g


def _violation(h, e, m, r, R) -> Violation:
    src, dst = h.procs[m.src], h.procs[m.dst]
    line = {p: h.ckpt_num[i][R[i]] for i, p in enumerate(h.procs)}
    rline = ", ".join(f"{p}: {c}" for p, c in line.items())
    recv = (
        f"processed by {dst} at line {m.recv_line}, after its checkpoint on R"
        if r is not None
        else f"not yet processed by {dst}"
    )
    if m.s <= R[m.src]:
        sent = f"before {src}'s checkpoint on R"
        needed = "it is in transit w.r.t. R, so recovery from R must replay it"
    else:
        sent = f"after {src}'s checkpoint on R"
        needed = (
            f"a later recovery line with a checkpoint of {src} after the send and {dst}'s checkpoint still the "
            "one on R has it in transit, and recovery from that line must replay it"
        )
    return Violation(
        "premature-truncation",
        "log-retention",
        f"log_truncate at line {e.line}",
        f"Let R = {{{rline}}} be the recovery line if every process failed just before line {e.line}. {e.proc} "
        f"truncates its log of {e.ch} through seq {e.through_seq} at line {e.line}, removing {m.mid} (seq {m.seq}, "
        f"sent at line {m.send_line}, {sent}) — but {m.mid} is {recv}: {needed} from the log, which no longer "
        f"has it. A log entry may be dropped only once the receiver's checkpoint on the recovery line reflects "
        f"its processing.",
        [e.line, m.send_line] + ([m.recv_line] if r is not None else []),
        {"messages": [m.mid], "cut": line},
    )


def check_log_retention(run) -> None:
    """Add the ``log-retention`` result to a ``check_trace`` run (``premature_truncations``):
    for every trace that truncates sender logs (``log_truncate`` events), when selected
    (the default: all); otherwise the report lists it as not judged.

    Truncating once the receiver's checkpoint reflects the message is safe:

    >>> from snapcheck.checker import check_trace
    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["A", "B"], [{"id": "a2b", "src": "A", "dst": "B", "logged": True}])
    >>> m = rec.send("A", "a2b"); _ = rec.checkpoint("A"); rec.recv("B", m); _ = rec.checkpoint("B")
    >>> rec.log_truncate("A", "a2b", through_seq=1)
    >>> [(r.property, r.ok) for r in check_trace(rec.trace()).results]
    [('log-retention', True)]
    """
    if not (run.ix.has("log_truncate") and run.want("log-retention")):
        return
    vs, omitted = premature_truncations(run.trace, run.ix, run.history, run.dur, run.opts.max_per_result)
    run.add("log-retention", "trace", vs, omitted)
