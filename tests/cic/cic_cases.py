"""Shared helpers of the tests of the uncoordinated protocols (UNC, HMNR, BCS)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from snapcheck.checker import check_trace
from snapcheck.reference import PROTOCOLS, SimConfig, simulate
from snapcheck.reference.oracle import exactly_once
from snapcheck.reference.testing import sim_configs

NAMES = ("unc", "hmnr", "hmnr-clock", "bcs")
MODES = ("restart-all", "partial")
REACHABILITY_RECORDS = 5  # the cyclic query's path count grows fast with its input


def protocol(name: str, recovery: str = "restart-all", **kw):
    return PROTOCOLS[name](recovery=recovery, **kw)


def all_protocols(names=NAMES, modes=MODES) -> list:
    return [protocol(n, m) for n in names for m in modes]


@st.composite
def configs(draw, names=NAMES, modes=MODES, cyclic=None, with_failures=True) -> SimConfig:
    """Random topology, schedule and failure set for one of the given protocols."""
    cfg = draw(sim_configs(protocols=all_protocols(names, modes), cyclic=cyclic, with_failures=with_failures))
    if cfg.workload == "reachability":
        cfg = replace(cfg, records=min(cfg.records, REACHABILITY_RECORDS))
    return cfg


def run_and_check(cfg: SimConfig, oracle: bool = True):
    """Simulate, check the trace, cross-check every observed recovery against the
    checker's RL-FIX line and (``oracle``) compare with the failure-free run."""
    res = simulate(cfg)
    rep = check_trace(res.trace())
    problems = []
    if not rep.ok:
        problems.append(rep.render_text())
    for o in rep.observed:
        if o["restored_line"] != o["maximal_line"]:
            problems.append(f"{o['subject']}: restored {o['restored_line']} but RL-FIX gives {o['maximal_line']}")
    if res.metrics["unreplayable"]:
        problems.append(f"{res.metrics['unreplayable']} in-transit message(s) missing from the logs")
    if oracle:
        problems.extend(exactly_once(cfg, res))
    return res, rep, problems
