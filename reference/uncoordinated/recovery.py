"""Recovery lines of uncoordinated checkpointing, computed by the runtime itself.

This is the coordinator's side of CheckMate's recovery ("CheckMate: Evaluating
Checkpointing Protocols for Streaming Dataflows", §III-B, Algorithm 1): every local
checkpoint carries, per channel, how many messages the task had *sent* on each
output and *processed* from each input (CheckMate stores the ids of the last sent
and last processed message, ``last_messages_sent`` / ``last_messages_processed``).
With FIFO channels these counters decide consistency exactly (docs/theory.md,
"Consistency by counters"): a global checkpoint ``G`` is consistent iff for every channel
``c = (u→v)``::

    processed_v(c) at g_v  ≤  sent_u(c) at g_u

``recovery_line`` is rollback propagation in that counter form: start from the
bound ``U`` and, while some channel has an orphan (the receiver's checkpoint reflects
more messages than the sender's), move the receiver back one checkpoint at a time.
Positions only move backwards and a receiver is moved only when its current
checkpoint can never be part of the answer (every older checkpoint of the sender
sent even fewer messages), so the fixpoint is the *maximum* consistent line below
``U`` (docs/theory.md, "Rollback propagation": the same line as RL-FIX, R-MARK and rollback propagation
on the checkpoint graph; the tests cross-check it against the checker's RL-FIX).

Positions: ``0..L_i`` are the stable checkpoints of task ``i`` in its effective
history (0 = the initial checkpoint, the state before the first event), ``L_i + 1``
is its current state ``V_i`` (only a survivor under partial recovery may keep it).

Defects observed in a published testbed's recovery code are available as switches
(the mutants in ``reference.uncoordinated.mutants`` use them): ignoring channels
between tasks on the same worker, and ignoring messages sent after the sender's
last stable checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LineDefects:
    """Switches reproducing recovery-graph defects (all False: the correct algorithm)."""

    no_propagation: bool = False  # restore the bound itself (latest checkpoints)
    skip_colocated: bool = False  # ignore channels between tasks on the same worker
    skip_open_interval: bool = False  # ignore messages sent after the sender's last stable checkpoint


def recovery_line(
    channels: list, stable: list, current: list | None, U: list[int], defects: LineDefects = LineDefects()
) -> list[int]:
    """The maximum consistent line ``G ≤ U`` (counter-form rollback propagation).

    ``channels``: ``(key, u, v, colocated)`` for every channel between two tasks
    (``key`` indexes the counters); ``stable[i]``: the ``Counts`` of task ``i``'s
    stable checkpoints, positions ``0..L_i``; ``current[i]``: its current counters
    (position ``L_i + 1``; ``current`` may be None when ``U ≤ L``, which never
    reaches them); ``U``: the bound."""
    g = list(U)
    if defects.no_propagation:
        return g
    skip_colocated = defects.skip_colocated
    # The defect counts only orphans whose send a later stable checkpoint covers.
    skip_open = defects.skip_open_interval
    out: list[list] = [[] for _ in U]
    for key, u, v, colocated in channels:
        if skip_colocated and colocated:
            continue
        out[u].append((key, v))
    work = list(range(len(U)))
    queued = [True] * len(U)
    while work:
        u = work.pop()
        queued[u] = False
        su = stable[u]
        x = g[u]
        sent = (su[x] if x < len(su) else _current(current, u)).sent
        last = su[-1].sent
        for key, v in out[u]:
            limit = sent.get(key, 0)
            cap = last.get(key, 0) if skip_open else None
            y = gv = g[v]
            sv = stable[v]
            while True:
                p = (sv[y] if y < len(sv) else _current(current, v)).processed.get(key, 0)
                if cap is not None and p > cap:
                    p = cap
                if p <= limit:
                    break
                y -= 1
            if y < gv:
                g[v] = y
                if not queued[v]:
                    queued[v] = True
                    work.append(v)
    return g


def _current(current: list | None, i: int):
    """Task ``i``'s current counters, which ``recovery_line`` reads only above its stable
    checkpoints (where ``current`` is given)."""
    assert current is not None, "a bound above the stable checkpoints needs the current counters"
    return current[i]


def rollback_steps(stable: list, U: list[int], g: list[int]) -> int:
    """CheckMate's "invalid checkpoints" of one recovery: the stable checkpoints skipped
    below the bound (one per rollback step of Algorithm 1; docs/theory.md, "Invalid
    checkpoints are not useless checkpoints")."""
    return sum(max(0, min(u, len(s) - 1) - x) for s, u, x in zip(stable, U, g))


def depth(stable: list, U: list[int], g: list[int]) -> int:
    """The largest number of stable checkpoints one task rolls back below its bound."""
    return max((max(0, min(u, len(s) - 1) - x) for s, u, x in zip(stable, U, g)), default=0)
