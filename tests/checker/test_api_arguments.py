"""What ``check_trace`` and ``CheckOptions`` do with arguments of the wrong type: a
``TypeError`` or ``CheckerUsageError`` that says what to pass, never an
``AttributeError`` from the checker's internals; strings written as on the command line
are read as the command line reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from snapcheck.checker import CheckerUsageError, CheckOptions, check_trace
from snapcheck.reference import SimConfig, simulate
from snapcheck.traces.golden import golden


@pytest.mark.parametrize(
    ("trace", "hint"),
    [
        ("run.jsonl", "read_trace(path)"),
        (Path("run.jsonl"), "read_trace(path)"),
        (simulate(SimConfig(workload="q3", parallelism=1, records=2)), "res.trace()"),
        (None, "read_trace(path)"),
    ],
)
def test_check_trace_refuses_what_is_not_a_trace_and_says_what_to_pass(trace, hint):
    with pytest.raises(TypeError, match=r"check_trace\(trace\): expected a snapcheck.traces.Trace") as exc:
        check_trace(trace)
    assert hint in str(exc.value)


def test_check_trace_refuses_options_that_are_not_check_options():
    with pytest.raises(TypeError, match=r"expected a CheckOptions, not dict; e.g. CheckOptions\(\*\*opts\)"):
        check_trace(golden("theory_c_domino"), {"failures": "all"})


def test_a_string_names_properties_with_commas():
    trace = golden("checkmate_fig2b_orphan")
    assert CheckOptions(properties="consistency, termination").properties == {"consistency", "termination"}
    one = check_trace(trace, CheckOptions(properties="consistency", cut="O1=1,O2=1,O3=1"))
    assert one.judged == ["consistency"] and one.kinds == {"orphan"}
    with pytest.raises(CheckerUsageError, match="unknown property consistncy"):
        check_trace(trace, CheckOptions(properties="consistncy"))


def test_a_string_cut_is_read_as_the_command_line_reads_it():
    by_text = check_trace(golden("checkmate_fig2b_orphan"), CheckOptions(cut="O1=1,O2=1,O3=1"))
    by_dict = check_trace(golden("checkmate_fig2b_orphan"), CheckOptions(cut={"O1": 1, "O2": 1, "O3": 1}))
    assert by_text.to_json() == by_dict.to_json()
    with pytest.raises(CheckerUsageError, match="'P0=last' is not PROC=CKPT"):
        CheckOptions(cut="P0=last")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("properties", 3, "properties: expected a set of property names"),
        ("properties", "consistency", "properties: expected a set of property names"),  # set after construction
        ("cut", [("P0", 1)], "cut: expected a dict"),
        ("failures", 0, "failures: expected None"),
        ("failures", [0], "failures: expected None"),
        # a flag given as a string was true, a cap below 1 turned a clean trace into a violation
        # with no violation, a cap of another type blamed the trace, facts of another type raised ValueError
        ("z3", "no", "z3: expected True or False"),
        ("crosscheck", "no", "crosscheck: expected True or False"),
        ("max_per_result", -1, "max_per_result: expected a whole number of at least 1"),
        ("max_per_result", 0, "max_per_result: expected a whole number of at least 1"),
        ("max_per_result", "5", "max_per_result: expected a whole number of at least 1"),
        ("max_witnesses", 0, "max_witnesses: expected a whole number of at least 1"),
        ("facts", "aligned", "facts: expected a dict of protocol facts"),
    ],
)
def test_options_of_a_type_they_cannot_be_are_a_usage_error(field, value, message):
    opts = CheckOptions()
    setattr(opts, field, value)
    with pytest.raises(CheckerUsageError, match=message):
        check_trace(golden("theory_c_domino"), opts)
