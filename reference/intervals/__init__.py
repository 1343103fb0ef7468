"""Checkpoint interval policies (issue 9): fixed, Young, Daly and Ca-Stream (eq. 11;
Algorithms 1, 2, 4), run in the reference simulator. See docs/results.md
("Checkpoint interval policies")."""

from snapcheck.reference.intervals.engine import IntervalABS, IntervalSimulator
from snapcheck.reference.intervals.policies import (
    CaStream,
    CaStreamOptimal,
    Daly,
    FaultAware,
    Fixed,
    Observation,
    ResourceAware,
    SlowTaskAware,
    Young,
)

__all__ = [
    "CaStream",
    "CaStreamOptimal",
    "Daly",
    "FaultAware",
    "Fixed",
    "IntervalABS",
    "IntervalSimulator",
    "Observation",
    "ResourceAware",
    "SlowTaskAware",
    "Young",
]
