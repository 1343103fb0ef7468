"""A large trace is read and mapped in a child process (``checker.tla.apart``): the
verdicts are those of mapping it here, whatever the trace, and the child's work really
happens in another process."""

import os
import pickle
from dataclasses import replace

import pytest

from snapcheck.checker.tla import apart
from snapcheck.checker.tla import conform as conformance
from snapcheck.reference.catalogue import tla_mappings
from snapcheck.reference.simulation import SimConfig, simulate


def test_the_work_runs_in_a_child():
    assert apart.call(os.getpid) != os.getpid()


def test_an_exception_is_the_one_raised_here():
    with pytest.raises(ValueError, match="invalid literal"):
        apart.call(int, "x")


def test_a_result_that_cannot_be_pickled_is_computed_here():
    made = apart.call(lambda: lambda: 7)  # a lambda: not picklable, so the child delivers nothing
    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(made)
    assert made() == 7


def test_a_child_that_dies_is_replaced_by_the_work_done_here():
    here = os.getpid()

    def dies_in_a_child():
        if os.getpid() != here:
            os._exit(9)
        return "here"

    assert apart.call(dies_in_a_child) == "here"


def _traces(tmp_path) -> list[str]:
    """Traces of several specifications, accepted and rejected, and two without a
    verdict (not valid; outside every specification)."""
    runs = {
        "abs-aligned": SimConfig(protocol="abs-aligned", workload="q3", records=6, failures=()),
        "unaligned-obsolete-barrier": SimConfig(
            protocol="unaligned-obsolete-barrier", workload="q8", records=8, decline_prob=0.2, seed=3
        ),
        "unc": SimConfig(protocol="unc", workload="q3", records=6, failures=(("join[0]", 900),)),
        "liverobin": SimConfig(protocol="liverobin", records=6),
        "chandy-lamport-non-fifo": SimConfig(protocol="chandy-lamport-non-fifo", workload="q3", records=8, seed=1),
    }
    paths = []
    for name, cfg in runs.items():
        path = tmp_path / f"{name}.jsonl"
        simulate(replace(cfg, seed=cfg.seed or 7)).write(str(path))
        paths.append(str(path))
    invalid = tmp_path / "invalid.jsonl"
    invalid.write_text('{"format": "snapcheck-trace"}\nnot json\n')
    paths.append(str(invalid))
    return paths


@pytest.mark.tlc
def test_verdicts_are_those_of_mapping_here(tmp_path, monkeypatch):
    paths = _traces(tmp_path)
    here = conformance.conform(paths, tla_mappings(), parallel=2)
    forked, call = [], apart.call
    monkeypatch.setattr(apart, "call", lambda fn, *a: forked.append(a[0]) or call(fn, *a))
    monkeypatch.setattr(conformance, "APART_BYTES", 0)
    apart_verdicts = conformance.conform(paths, tla_mappings(), parallel=2)
    assert forked == paths
    assert apart_verdicts == here
    assert {v.verdict for v in here} == {"ACCEPT", "REJECT", "ERROR"}
