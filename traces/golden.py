"""The golden traces shipped with the kit (``traces/examples/``): small traces from the
papers' figures and docs/theory.md's worked examples, each stating in its header the
verdict the checker must give (``metadata.expected``). The main job checks them all;
docstring examples across the kit use them.

>>> sorted(golden_names())[:2]
['checkmate_fig2a_consistent', 'checkmate_fig2b_orphan']
>>> trace = golden("theory_a_zcycle")
>>> [p.id for p in trace.processes], len(trace.events)
(['P0', 'P1'], 7)
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from snapcheck.traces.jsonl import read_trace
from snapcheck.traces.model import Trace


def golden_dir() -> Path:
    """The directory of the golden traces."""
    return Path(str(resources.files("snapcheck.traces").joinpath("examples")))


def golden_names() -> list[str]:
    """The golden traces' names (file names without ``.jsonl``)."""
    return sorted(p.stem for p in golden_dir().glob("*.jsonl"))


def golden(name: str) -> Trace:
    """The golden trace ``name`` (e.g. ``theory_a_zcycle``, ``checkmate_fig2b_orphan``)."""
    return read_trace(str(golden_dir() / f"{name}.jsonl"))
