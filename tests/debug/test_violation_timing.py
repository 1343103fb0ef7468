"""Where a violation becomes visible: the replay position of a finding is the first one at
which every event its witness and its explanation cite has happened, and it stays visible
from there to the end (the stepper's panels, replay --json)."""

from __future__ import annotations

import glob
import json

import pytest
from rich.console import Console

from snapcheck.checker.report import cited_lines
from snapcheck.debug.findings import check_findings, check_options
from snapcheck.debug.stepper import Stepper
from snapcheck.reference import SimConfig, simulate
from snapcheck.traces import read_trace

GOLDEN = sorted(glob.glob("traces/examples/*.jsonl"))
MUTANTS = ["unaligned-late-snapshot", "chandy-lamport-no-channel-state", "abs-aligned-no-block", "unc-no-logging"]


def _demo(mutant: str) -> SimConfig:
    """The mutant's demonstration configuration (the one its catalogue entry declares)."""
    from snapcheck.reference.catalogue import resolve

    m = resolve(mutant, "mutant")
    return SimConfig(**{"protocol": m.mutant_of, "mutant": mutant, **m.demo})


def _traces():
    for path in GOLDEN:
        yield read_trace(path)
    for mutant in MUTANTS:
        yield simulate(_demo(mutant)).trace()


@pytest.mark.parametrize("trace", list(_traces()), ids=[*GOLDEN, *MUTANTS])
def test_position_is_where_the_last_cited_event_happens(trace):
    report, findings = check_findings(trace, check_options(trace))
    assert len(findings.items) == len(report.violations)
    if trace.path == "<simulation>":
        assert findings.items, "a mutant's demonstration shows its bug"
    lines = [e.line for e in trace.events]
    for f, v in zip(findings.items, report.violations):
        assert cited_lines(v.message) <= set(f.lines)  # every line the explanation cites is in the witness
        assert f.position == sum(1 for ln in lines if ln <= max(f.lines)) if f.lines else len(lines)
        if f.lines and max(f.lines) in lines:
            assert lines[f.position - 1] == max(f.lines)  # the event just applied completes the witness


def test_fig2b_orphan_appears_with_the_receivers_checkpoint_and_stays():
    trace = read_trace("traces/examples/checkmate_fig2b_orphan.jsonl")
    _, findings = check_findings(trace, check_options(trace))
    stepper = Stepper(trace, findings, console=Console(width=200, record=True))

    def panels_at(n):
        stepper.replay.goto(n)
        stepper.console.print(stepper.screen())
        return stepper.console.export_text()

    assert "#1 orphan" not in panels_at(6)  # O3 processed m2; its checkpoint 1 is not there yet
    text = panels_at(7)  # O3 takes checkpoint 1: the orphan of the cut exists
    assert "#1 orphan" in text and "line 8" in text


def test_a_violation_stays_visible_after_it_appears(tmp_path):
    """A mutant's first violation: absent before its position, a full panel at it, a
    one-line reminder at every later position (sampled) up to the end."""
    trace = simulate(_demo("chandy-lamport-no-channel-state")).trace()
    _, findings = check_findings(trace, check_options(trace))
    f = findings.items[0]
    n = len(trace.events)
    assert f.position < n
    stepper = Stepper(trace, findings, console=Console(width=250, record=True))
    for pos in sorted({f.position - 1, f.position, f.position + 1, (f.position + n) // 2, n}):
        stepper.replay.goto(pos)
        stepper.console.print(stepper.screen())
        text = stepper.console.export_text()
        title = f.title()
        if pos < f.position:
            assert title not in text
        elif pos == f.position:
            assert title in text
        else:
            assert f"{title}: since event {f.position}" in text
    out = tmp_path / "t.jsonl"
    out.write_bytes(simulate(_demo("chandy-lamport-no-channel-state")).dumps())
    from tests.hostile.commands import run

    code, text = run(["replay", str(out), "--until", str(n), "--json"])
    doc = json.loads(text)
    assert code == 0 and f.number in [v["number"] for v in doc["violations_visible"]]
