"""Shrink a failing *simulation* (a ``reference.SimConfig`` whose run the checker
rejects) before shrinking its trace.

The configuration's elements are its list-valued fields (``failures``, ``pauses``,
``stragglers``: ddmin over their entries, Zeller & Hildebrandt 2002) and its
size parameters (``parallelism``, ``records``: the smallest value, tried from
the lower bound upwards along halvings, that still fails). The seed and every
other field stay fixed: they are part of the failing input. The result is
1-minimal per element: dropping any remaining list entry, or lowering any size
parameter by one, makes the run pass (a configuration the simulator refuses, such as
a crash of a task that a smaller parallelism removes, counts as passing). Its trace
can then be shrunk with ``shrink.shrink_trace``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields

from snapcheck.debug.shrink import ddmin
from snapcheck.traces.errors import UsageError
from snapcheck.traces.model import Trace

LIST_FIELDS = ("failures", "stragglers", "pauses")
SIZE_FIELDS = {"parallelism": 1, "records": 1}  # field -> lower bound


def sim_config(config: dict):
    """The ``SimConfig`` a dict (its ``describe()`` form, or a trace header's
    ``simulator.config``) gives."""
    from snapcheck.reference import SimConfig

    cfg = dict(config)
    known = [f.name for f in fields(SimConfig)]
    unknown = sorted(set(cfg) - set(known))
    if unknown:
        raise UsageError(f"simulation configuration: unknown field(s) {', '.join(unknown)} (known: {', '.join(known)})")
    for key in LIST_FIELDS:
        if key in cfg:
            v = cfg[key]
            if not isinstance(v, (list, tuple)) or not all(isinstance(x, (list, tuple, str)) for x in v):
                raise UsageError(f"simulation configuration: {key} must be a list of entries (lists), not {v!r}")
            cfg[key] = tuple(x if isinstance(x, str) else tuple(x) for x in v)
    return SimConfig(**cfg)


def simulate_config(config: dict) -> Trace:
    """Run the reference simulator on a ``SimConfig`` given as a dict (its ``describe()`` form)."""
    from snapcheck.reference import simulate

    return simulate(sim_config(config)).trace()


@dataclass
class ConfigShrinkResult:
    config: dict
    trace: Trace
    runs: int


def shrink_config(
    config: dict, fails: Callable[[Trace], bool], run: Callable[[dict], Trace] = simulate_config
) -> ConfigShrinkResult:
    """The smallest configuration (as above) whose run still ``fails``."""
    runs = [0]
    cache: dict[str, bool] = {}

    def test(cfg: dict) -> bool:
        key = repr(sorted(cfg.items()))
        if key not in cache:
            runs[0] += 1
            try:
                cache[key] = fails(run(cfg))
            except ValueError:  # e.g. a failure or straggler names a task the smaller job lacks
                cache[key] = False
        return cache[key]

    if not test(config):
        raise ValueError("the configuration does not fail")
    cfg = dict(config)
    changed = True
    while changed:
        changed = False
        for key in LIST_FIELDS:
            items = list(cfg.get(key) or ())
            if items:
                kept = ddmin(
                    list(range(len(items))), lambda k, key=key, items=items: test({**cfg, key: [items[i] for i in k]})
                )
                if len(kept) < len(items):
                    cfg[key] = [items[i] for i in kept]
                    changed = True
        for key, low in SIZE_FIELDS.items():
            value = cfg.get(key)
            if value is None or value <= low:
                continue
            for cand in _descending(low, value):
                if test({**cfg, key: cand}):
                    if cand < value:
                        cfg[key] = cand
                        changed = True
                    break
    return ConfigShrinkResult(cfg, run(cfg), runs[0])


def _descending(low: int, value: int) -> list[int]:
    """Candidates below ``value``, smallest first: low, then halvings up to value - 1."""
    out, step = [], value - low
    while step > 1:
        out.append(value - step)
        step //= 2
    out.append(value - 1)
    return sorted(set(out))
