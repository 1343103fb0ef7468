"""Brute-force oracle for small failure-free traces, written independently of the
checker: its own interval indices (docs/theory.md, "Interval indices"), enumeration of
every global checkpoint (volatile states allowed), Z-paths by BFS over messages (the
definition of docs/theory.md, "Definition of a Z-path"), happened-before by explicit
closure, and the channel-state rules (docs/theory.md, "Violation kinds of a snapshot")
evaluated set by set."""

from __future__ import annotations

import itertools
from collections import deque


def effective_events(trace) -> list:
    """The effective history by *backward* removal (independent of the checker's forward
    stack): repeatedly take a process's last ``restore`` of checkpoint k and delete its
    events after C_k up to and including that restore; ``fail`` events are dropped."""
    keep = []
    for p in trace.processes:
        evs = [e for e in trace.events if e.proc == p.id and e.type != "fail"]
        while True:
            last = max((k for k, e in enumerate(evs) if e.type == "restore"), default=None)
            if last is None:
                break
            target = evs[last].ckpt
            start = (
                0
                if target == 0
                else next(k for k, e in enumerate(evs[:last]) if e.type == "checkpoint" and e.ckpt == target) + 1
            )
            if target == 0 and evs and evs[0].type == "checkpoint" and evs[0].ckpt == 0:
                start = 1
            del evs[start : last + 1]
        keep.extend(evs)
    return sorted(keep, key=lambda e: e.line)


class Oracle:
    def __init__(self, trace, events=None):
        """``events``: the events to analyse in file order (default: the whole trace,
        which must then be failure-free; use ``effective_events`` otherwise)."""
        self.trace = trace
        events = trace.events if events is None else events
        roles = {p.id: p.role for p in trace.processes}
        self.procs = [p.id for p in trace.processes if p.role not in ("external", "coordinator")]
        idx = {p: i for i, p in enumerate(self.procs)}
        self.idx = idx
        chans = {c.id: c for c in trace.channels}
        self.chans = chans
        n = len(self.procs)
        counter = [1] * n
        self.ckpt_numbers = [[0] for _ in range(n)]
        send, recv = {}, {}
        self.seq = {}
        self.ch = {}
        self.events = [[] for _ in range(n)]  # (kind, mid) per process, for happened-before
        orig = {e.mid: e.replay_of for e in trace.events if e.type == "replay"}

        def resolve(mid):
            while mid in orig:
                mid = orig[mid]
            return mid

        for e in events:
            if roles[e.proc] == "external":
                if e.type == "send":
                    send[e.mid] = (None, 0)
                    self.seq[e.mid] = e.seq
                    self.ch[e.mid] = e.ch
                continue
            i = idx[e.proc]
            if e.type == "checkpoint" and e.ckpt:
                counter[i] += 1
                self.ckpt_numbers[i].append(e.ckpt)
                self.events[i].append(("ckpt", None))
            elif e.type == "send" and e.kind != "barrier":
                send[e.mid] = (i, counter[i])
                self.seq[e.mid] = e.seq
                self.ch[e.mid] = e.ch
                self.events[i].append(("send", e.mid))
            elif e.type == "recv":
                o = resolve(e.mid)
                recv.setdefault(o, (i, counter[i]))
                self.events[i].append(("recv", o))
        self.L = [c - 1 for c in counter]
        self.msgs = []
        for mid, (src, s) in send.items():
            if chans[self.ch[mid]].dst not in idx:
                continue
            dst, r = recv.get(mid, (idx[chans[self.ch[mid]].dst], None))
            self.msgs.append((mid, src, s, dst, r))
        self.n = n

    # -- global checkpoints ---------------------------------------------------------
    def all_cuts(self, U=None, stable=False):
        top = U if U is not None else [L + (0 if stable else 1) for L in self.L]
        return itertools.product(*[range(t + 1) for t in top])

    def orphans(self, G):
        return [m for m in self.msgs if m[4] is not None and m[1] is not None and m[4] <= G[m[3]] and m[2] > G[m[1]]]

    def in_transit(self, G):
        return [m for m in self.msgs if (m[1] is None or m[2] <= G[m[1]]) and (m[4] is None or m[4] > G[m[3]])]

    def consistent(self, G):
        return not self.orphans(G)

    def useless(self):
        usable = set()
        for G in self.all_cuts():
            if self.consistent(G):
                usable.update((i, x) for i, x in enumerate(G))
        return {(i, x) for i in range(self.n) for x in range(self.L[i] + 1) if (i, x) not in usable}

    def stably_unusable(self):
        usable = set()
        for G in self.all_cuts(stable=True):
            if self.consistent(G):
                usable.update((i, x) for i, x in enumerate(G))
        return {(i, x) for i in range(self.n) for x in range(self.L[i] + 1) if (i, x) not in usable}

    def recovery_line(self, U, nodrop=()):
        nodrop = set(nodrop)
        best = None
        feasible = []
        for G in self.all_cuts(U):
            if not self.consistent(G):
                continue
            if any(m[0] in nodrop for m in self.in_transit(G) if m[4] is not None):
                continue
            feasible.append(G)
            best = G if best is None else tuple(max(a, b) for a, b in zip(best, G))
        assert best in feasible, "lattice property violated"
        return list(best)

    def min_replay(self, U):
        return min(len(self.in_transit(G)) for G in self.all_cuts(U) if self.consistent(G))

    # -- Z-paths --------------------------------------------------------------------
    def zpath_len(self, a, b):
        """Fewest messages of a Z-path from C_a to C_b (by its definition), or None."""
        (i, x), (j, y) = a, b
        delivered = [m for m in self.msgs if m[4] is not None and m[1] is not None]
        start = [m for m in delivered if m[1] == i and m[2] >= x + 1]
        dist = {m[0]: 1 for m in start}
        q = deque(start)
        while q:
            m = q.popleft()
            if m[3] == j and m[4] <= y:
                return dist[m[0]]
            for m2 in delivered:
                if m2[1] == m[3] and m2[2] >= m[4] and m2[0] not in dist:
                    dist[m2[0]] = dist[m[0]] + 1
                    q.append(m2)
        return None

    # -- happened-before between checkpoints -----------------------------------------
    def causal_precedes(self):
        """hb[(j,y)] = set of (i,x): some event of P_j after C_{j,y} happens before C_{i,x}."""
        nodes = []
        pos = {}
        for i, evs in enumerate(self.events):
            for k, ev in enumerate(evs):
                pos[(i, k)] = len(nodes)
                nodes.append((i, k, ev))
        succ = {v: set() for v in range(len(nodes))}
        sender = {}
        for v, (i, k, ev) in enumerate(nodes):
            if k + 1 < len(self.events[i]):
                succ[v].add(pos[(i, k + 1)])
            if ev[0] == "send":
                sender[ev[1]] = v
        for v, (_i, _k, ev) in enumerate(nodes):
            if ev[0] == "recv" and ev[1] in sender:
                succ[sender[ev[1]]].add(v)
        reach = {}
        for v in range(len(nodes)):
            seen, st = set(), [v]
            while st:
                u = st.pop()
                for w in succ[u]:
                    if w not in seen:
                        seen.add(w)
                        st.append(w)
            reach[v] = seen
        ckpt_node = {}
        for v, (i, k, ev) in enumerate(nodes):
            if ev[0] == "ckpt":
                ckpt_node[(i, sum(1 for e in self.events[i][: k + 1] if e[0] == "ckpt"))] = v
        out = {}
        for j, y in [(jj, yy) for jj in range(self.n) for yy in range(self.L[jj] + 1)]:
            after = [v for v, (i, k, ev) in enumerate(nodes) if i == j and self._interval(i, k) >= y + 1]
            tgt = set()
            for (i, x), cv in ckpt_node.items():
                if any(cv in reach[a] or cv == a for a in after):
                    tgt.add((i, x))
            out[(j, y)] = tgt
        return out

    def _interval(self, i, k):
        return 1 + sum(1 for e in self.events[i][:k] if e[0] == "ckpt")

    def rdt_holds(self):
        """Every Z-path between checkpoints is causally doubled (Wang 1997)."""
        hb = self.causal_precedes()
        for j in range(self.n):
            for y in range(self.L[j] + 1):
                for i in range(self.n):
                    for x in range(1, self.L[i] + 1):
                        if self.zpath_len((j, y), (i, x)) is None:
                            continue
                        doubled = y < x if i == j else (i, x) in hb[(j, y)]
                        if not doubled:
                            return False
        return True

    # -- channel state (docs/theory.md, "Complete snapshots: channel state and logs") --
    def cut_kinds(self, G, aligned=False):
        """Violation kinds expected for cut G (positions)."""
        kinds = set()
        if self.orphans(G):
            kinds.add("orphan")
        transit = {m[0] for m in self.in_transit(G)}
        durable = self.durable_at_end()
        ckpt_of = {self.procs[i]: self.ckpt_numbers[i][G[i]] for i in range(self.n) if G[i] <= self.L[i]}
        recs = {}
        for e in self.trace.events:
            if e.type == "record" and ckpt_of.get(e.proc) == e.ckpt:
                recs.setdefault(e.ch, {"input": [], "output": []})[e.part or "input"].extend(e.mids)
        seen = set()
        ok_recorded = set()
        for ch, parts in recs.items():
            seqs = []
            for mid in parts["input"] + parts["output"]:
                aligned_ch = aligned and not self.chans[ch].back_edge
                if mid in self.ch and self.ch[mid] != ch and not aligned_ch:
                    kinds.add("wrong-channel")  # never the message's record: its own channel's is
                    continue
                if mid in seen:
                    kinds.add("duplicate-recorded")
                    continue
                seen.add(mid)
                if aligned_ch:
                    kinds.add("aligned-in-flight")
                    continue
                if self.ch.get(mid) != ch:
                    kinds.add("wrong-channel")
                    continue
                if mid not in transit:
                    kinds.add("phantom")
                    continue
                ok_recorded.add(mid)
                seqs.append(self.seq[mid])
            if self.chans[ch].fifo and seqs != sorted(seqs):
                kinds.add("order")
        for m in self.in_transit(G):
            mid = m[0]
            if mid in ok_recorded or m[1] is None:
                continue
            if aligned and not self.chans[self.ch[mid]].back_edge:
                kinds.add("aligned-in-flight")
                continue
            if mid not in durable:
                kinds.add("dropped")
        return kinds

    def durable_at_end(self):
        logged = {}
        for e in self.trace.events:
            if e.type == "send" and e.kind != "barrier":
                if e.logged or self.chans[e.ch].logged:
                    logged.setdefault(e.ch, set()).add(e.mid)
            elif e.type == "log":
                logged.setdefault(e.ch, set()).update(e.mids)
            elif e.type == "log_truncate":
                logged[e.ch] = {m for m in logged.get(e.ch, set()) if self.seq[m] > e.through_seq}
        return set().union(*logged.values()) if logged else set()
