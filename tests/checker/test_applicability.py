"""Selecting a property (``--property``, ``CheckOptions.properties``) does not make it
apply: on a trace where a property does not apply, naming it gives no verdict on it
but the reason it has without the selection, never a passed result. Only the
protocol's promises (``options.PROMISED``) are judged when named where the protocol
does not promise them (docs/checker.md, "Properties")."""

from __future__ import annotations

import glob
import os
import xml.etree.ElementTree as ET

import pytest

from snapcheck.checker import PROPERTIES, CheckOptions, check_trace
from snapcheck.checker.options import PROMISED
from snapcheck.reference.catalogue import header_facts
from snapcheck.traces import TraceRecorder, read_trace

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLDEN = sorted(glob.glob(os.path.join(ROOT, "traces", "examples", "*.jsonl")))


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """The golden traces, and simulated ones with rounds, two-phase-commit outputs, a
    failure, recoveries and sender-log truncation (each applies some properties, not all)."""
    from snapcheck.reference import SimConfig, simulate

    d = tmp_path_factory.mktemp("sim")
    paths = list(GOLDEN)
    for name, cfg in {
        "rounds-2pc": SimConfig(protocol="abs-aligned", workload="q12", parallelism=3, records=10),
        "unc-fail": SimConfig(protocol="unc", workload="q3", records=40, failures=(("join[0]", 900),)),
    }.items():
        p = d / f"{name}.jsonl"
        p.write_bytes(simulate(cfg).dumps())
        paths.append(str(p))
    return paths


def test_a_property_named_where_it_does_not_apply_is_not_judged(traces):
    """Every property of the checker, named alone on every trace where it does not apply
    by default: not judged, with the same reason (a promise the protocol may make, Z-cycle
    freedom or RDT: judged; a CIC property, whose rules the protocol must declare: not judged
    either, where it declares none — a usage error before, which made a check of many
    traces exit 2 for one without CIC rules)."""
    seen = set()
    for path in traces:
        trace = read_trace(path)
        facts = header_facts(trace.header.protocol)
        default = check_trace(trace, CheckOptions(facts=facts))
        for prop in PROPERTIES:
            if prop in default.judged:
                continue
            seen.add(prop)
            alone = check_trace(trace, CheckOptions(properties={prop}, facts=facts))
            if prop in ("z-cycles", "rdt"):
                assert alone.judged == [prop], (path, prop)
            else:
                assert (alone.judged, alone.not_judged[prop]) == ([], default.not_judged[prop]), (path, prop)
    assert seen == set(PROPERTIES)  # each one was named somewhere it does not apply


@pytest.mark.parametrize("prop", [p for p in PROPERTIES if p not in PROMISED])
def test_the_command_never_reports_a_property_that_does_not_apply_as_passed(snapcheck_cli, prop, tmp_path):
    """``snapcheck check T --property P`` on a trace with no rounds, restores or vocabulary:
    P is under "Not judged" in the text with its own reason (not the summary line of the
    vocabularies the trace does not use, which stands for unnamed properties only), and a
    skipped JUnit case, never a passing one."""
    trace = os.path.join(ROOT, "traces", "examples", "theory_a_zcycle.jsonl")
    reason = check_trace(read_trace(trace)).not_judged[prop]
    junit = tmp_path / "x.xml"
    _, out = snapcheck_cli("check", trace, "--property", prop, "--junit", str(junit))
    assert "Passed" not in out and f"\n  - {prop}: {reason}\n" in out.split("Not judged")[1]
    cases = [c for c in ET.parse(junit).iter("testcase") if c.get("classname") == f"snapcheck.{prop}"]
    assert len(cases) == 1 and cases[0].get("name") == "not judged" and cases[0].find("skipped") is not None


def test_a_rescale_whose_round_is_unknown_is_not_listed_among_what_the_trace_lacks():
    """The short "Not judged" list groups the properties whose vocabulary the trace does not
    use; a rescale whose restored round is unknown is there, unjudged for that reason."""
    from snapcheck.checker.text import not_judged_lines

    rec = TraceRecorder([{"id": "A", "operator": "agg"}, {"id": "N", "operator": "agg", "appears": True}], [])
    rec.checkpoint("A")
    rec.retire("A", 1)
    rec.restore("N", 0, recovery=1, sources=[{"proc": "A", "ckpt": 1}])
    lines = not_judged_lines(check_trace(rec.trace()), verbose=False)
    assert "rescale" not in lines[0], lines[0]
    assert any(
        line.startswith("  - rescale-state, rescale-in-flight: no restore at another parallelism has a known restored")
        for line in lines
    ), lines
