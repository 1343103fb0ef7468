"""Summary and verdict of a campaign, on hand-made result tables (no Spark, no simulation)."""

import pyarrow.parquet as pq

from snapcheck.spark_validation.runner import COLUMN_NAMES, arrow_schema
from snapcheck.spark_validation.summary import markdown, summarize


def _row(run_id, protocol, verdict="clean", mutant=None, kinds="", **kw):
    r = dict.fromkeys(COLUMN_NAMES)
    r.update(
        run_id=run_id,
        seed=run_id,
        protocol=protocol,
        mutant=mutant,
        workload="q1",
        verdict=verdict,
        violation_kinds=kinds,
        violations=len(kinds.split(",")) if kinds else 0,
        oracle="skipped",
        events=100,
        checkpoints=10,
        useless=0,
        rollback_checkpoints=1,
        domino=False,
        replayed_messages=2,
        overhead_ratio=1.5,
        command=f"snapcheck simulate --protocol {protocol} --seed {run_id} -o run.jsonl",
    )
    r.update(kw)
    return r


def _summary(tmp_path, rows, **meta):
    d = tmp_path / "results"
    d.mkdir()
    pq.write_table(__import__("pyarrow").Table.from_pylist(rows, schema=arrow_schema()), d / "part-0.parquet")
    return summarize(str(d), meta)


def test_clean_campaign_is_ok(tmp_path):
    s = _summary(
        tmp_path,
        [
            _row(0, "unaligned"),
            _row(1, "unaligned", useless=1),
            _row(2, "unaligned", "violation", "unaligned-late-snapshot", "orphan"),
        ],
    )
    assert s["ok"]
    p = s["protocols"][0]
    assert (p["runs"], p["events"], p["failing_runs"], p["useless_pct"], p["mutants_caught"]) == (2, 200, 0, 5.0, "1/1")
    assert s["mutants"][0]["reported"] == ["orphan"] and not s["mutants"][0]["escaped"]


def test_a_failing_correct_run_fails_the_campaign_and_is_listed_with_its_command(tmp_path):
    s = _summary(
        tmp_path,
        [
            _row(0, "unaligned"),
            _row(1, "unaligned", "violation", kinds="dropped"),
            _row(2, "unaligned", "error", error="ValueError: boom"),
        ],
    )
    assert not s["ok"]
    assert [f["run_id"] for f in s["failing_runs"]] == [1, 2]
    assert s["failing_runs"][0]["command"] == "snapcheck simulate --protocol unaligned --seed 1 -o run.jsonl"
    assert "snapcheck simulate --protocol unaligned --seed 2" in markdown(s)


def test_a_run_the_protocol_broke_in_says_where_in_the_summary(tmp_path):
    """A failing run that ended in the protocol's own error names the handler, the
    exception and the line (what ``simulate`` prints), not the kind alone."""
    why = "in on_restore of op[0]: RuntimeError: lost (at mine.py:12, in on_restore)"
    s = _summary(tmp_path, [_row(0, "mine.py:Mine", "violation", kinds="protocol-error", protocol_error=why)])
    (f,) = s["failing_runs"]
    assert f["protocol_error"] == why
    assert f"violation: protocol-error; the protocol broke {why}" in markdown(s)


def test_a_property_no_run_was_judged_for_is_said_with_why(tmp_path):
    """A protocol whose runs were never judged for a property they could be judged for (no
    round completed: no consistency) passes a campaign without it: the summary says so, per
    protocol, with the reason most runs give; one judged in some run (exactly-once) is not listed."""
    import json as _json

    no_rounds = _json.dumps({"consistency": "no rounds", "exactly-once": "no restore"})
    s = _summary(
        tmp_path,
        [
            _row(0, "mine.py:Mine", unjudged=no_rounds),
            _row(1, "mine.py:Mine", unjudged=_json.dumps({"consistency": "no rounds", "exactly-once": None})),
            _row(2, "unaligned", unjudged=_json.dumps({"consistency": None})),
        ],
    )
    assert s["ok"]
    never = {p["protocol"]: p["properties_never_judged"] for p in s["protocols"]}
    assert never == {"mine.py:Mine": [{"property": "consistency", "reason": "no rounds"}], "unaligned": []}
    assert "## Properties no run judged" in markdown(s) and "- mine.py:Mine: consistency: no rounds" in markdown(s)


def test_an_error_in_a_mutant_run_is_the_kit_failing_not_a_catch(tmp_path):
    # run 1 raised in the kit (e.g. a configuration the simulator refuses); run 2 caught it
    s = _summary(
        tmp_path,
        [
            _row(0, "unaligned"),
            _row(1, "unaligned", "error", "unaligned-late-snapshot", error="UsageError: refused"),
            _row(2, "unaligned", "violation", "unaligned-late-snapshot", "orphan"),
            _row(3, "unc", "error", "unc-no-logging", error="KeyError: 'x'"),
        ],
    )
    assert not s["ok"]
    m = {x["mutant"]: x for x in s["mutants"]}
    assert (m["unaligned-late-snapshot"]["caught"], m["unaligned-late-snapshot"]["runs_to_first_catch"]) == (1, 2)
    assert m["unc-no-logging"]["escaped"] and m["unc-no-logging"]["caught"] == 0
    assert [(f["run_id"], f["mutant"]) for f in s["failing_runs"]] == [
        (1, "unaligned-late-snapshot"),
        (3, "unc-no-logging"),
    ]
    assert "(mutant unc-no-logging of unc, q1): error: KeyError: 'x'" in markdown(s)


def test_a_failing_run_is_named_by_its_seed_too(tmp_path):
    """A campaign started at ``-s 1000`` runs seed 1166 as its run 166: the line names
    both, so it matches the command's ``--seed`` and ``run-SEED.jsonl``."""
    import io

    from rich.console import Console

    from snapcheck.spark_validation.summary import print_summary

    s = _summary(tmp_path, [_row(166, "unaligned", "violation", kinds="dropped", seed=1166)])
    out = io.StringIO()
    print_summary(s, Console(file=out, width=200))
    assert "FAILING run 166, seed 1166 (unaligned)" in out.getvalue()
    assert "- run 166, seed 1166 (unaligned, q1)" in markdown(s)


def test_commands_naming_a_protocol_relative_to_the_campaign_say_where_to_run_them(tmp_path):
    from snapcheck.spark_validation.main_job import located_here

    assert located_here("mine.py:Mine") and located_here("pkg.mod:Mine") and not located_here("/abs/mine.py:Mine")
    rows = [_row(1, "mine.py:Mine", "violation", kinds="dropped")]
    assert "run them from /home/me/hunt" in markdown(_summary(tmp_path, rows, workdir="/home/me/hunt"))
    (tmp_path / "b").mkdir()
    assert "run them from" not in markdown(_summary(tmp_path / "b", rows, workdir=None))


def test_an_escaped_mutant_fails_the_campaign(tmp_path):
    s = _summary(
        tmp_path,
        [
            _row(0, "unaligned"),
            _row(1, "unaligned", mutant="unaligned-no-dedup"),
            _row(2, "unaligned", mutant="unaligned-no-dedup"),
        ],
        mutants_selected=["unaligned-no-dedup", "unaligned-no-output-part"],
    )
    assert not s["ok"]
    m = s["mutants"][0]
    assert m["escaped"] and m["caught"] == 0 and len(m["escaped_runs"]) == 2
    assert s["mutants_not_run"] == ["unaligned-no-output-part"]
    assert "ESCAPED" in markdown(s)


def test_the_summary_says_how_the_runs_were_shared_with_the_mutants(tmp_path):
    rows = [_row(i, "unaligned", mutant="unaligned-no-dedup" if i % 2 else None) for i in range(4)]
    s = _summary(tmp_path, rows, mutants_selected=["unaligned-no-dedup"], mutant_every=2)
    assert "Drawn blind, taking turns: every second run is a mutant run." in markdown(s)


def test_inconclusive_runs_do_not_fail_the_campaign(tmp_path):
    s = _summary(tmp_path, [_row(0, "bcs", "inconclusive", kinds="every final round aborted")])
    assert s["ok"] and s["protocols"][0]["inconclusive"] == 1


def test_runs_whose_domino_was_not_judged_count_as_none_and_warn_nothing(tmp_path):
    import warnings

    rows = [_row(0, "unc", domino=None), _row(1, "unc", domino=True), _row(2, "unc", domino=None)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pandas' downcasting FutureWarning reached users' terminals
        s = _summary(tmp_path, rows)
    assert s["protocols"][0]["domino"] == 1


def test_what_the_oracle_did_not_judge_is_said(tmp_path):
    opted = "skipped: the protocol declares failure_free_oracle = False"
    rows = [_row(0, "mine.py:Mine", oracle=opted), _row(1, "mine.py:Mine", oracle=opted), _row(2, "unaligned")]
    s = _summary(tmp_path, rows, oracle=True)
    by = {p["protocol"]: p["oracle_not_applied"] for p in s["protocols"]}
    assert by == {"mine.py:Mine": 2, "unaligned": 0}
    assert "- mine.py:Mine: 2 of 2 runs (the protocol declares failure_free_oracle = False)" in markdown(s)
    (tmp_path / "off").mkdir()
    off = _summary(tmp_path / "off", [_row(0, "unaligned")], oracle=False)
    assert "- every run: the oracle was off (--no-oracle)" in markdown(off)


def test_each_mutant_says_how_many_catches_reported_a_kind_it_expects(tmp_path):
    """Any failing run catches a mutant; the summary also counts those that reported one of
    the kinds its class declares (``expect``), so a mutant caught only for another reason
    shows it."""
    from snapcheck.reference.catalogue import resolve

    expect = sorted(resolve("unaligned-late-snapshot").expect)
    s = _summary(
        tmp_path,
        [
            _row(0, "unaligned"),
            _row(1, "unaligned", "violation", "unaligned-late-snapshot", expect[0]),
            _row(2, "unaligned", "violation", "unaligned-late-snapshot", "protocol-error"),
        ],
    )
    m = s["mutants"][0]
    assert (m["caught"], m["caught_as_expected"], m["expected_kinds"]) == (2, 1, expect)
    assert f"| 1 ({' or '.join(expect)}) |" in markdown(s)


def test_a_mutant_run_the_oracle_caught_is_listed_with_a_command_that_runs_the_oracle(tmp_path):
    """Like a failing run of a correct protocol: a catch the oracle made (the checker saw
    nothing) reproduces only with ``--oracle``, which the run's command carries
    (``runner.run_one``; tests/spark/test_run_verdicts.py) and the listed example keeps."""
    differs = dict(oracle="differs: sink output differs", command=_row(1, "unaligned")["command"] + " --oracle")
    s = _summary(
        tmp_path,
        [
            _row(0, "unaligned"),
            _row(1, "unaligned", "violation", mutant="unaligned-no-dedup", **differs),
            _row(3, "unaligned", "violation", mutant="unaligned-no-dedup", kinds="duplicate-processing"),
        ],
    )
    assert s["mutants"][0]["examples"] == [
        "snapcheck simulate --protocol unaligned --seed 1 -o run.jsonl --oracle",
        "snapcheck simulate --protocol unaligned --seed 3 -o run.jsonl",
    ]


def test_an_escaped_mutant_says_how_many_of_its_runs_judged_nothing(tmp_path):
    """A mutant whose every run gave up is not a mutant the checker missed: the table, the
    markdown and the ESCAPED line count its inconclusive runs."""
    import io

    from rich.console import Console

    from snapcheck.spark_validation.summary import print_summary

    rows = (
        [_row(0, "unaligned")]
        + [
            _row(i, "unaligned", "inconclusive", mutant="unaligned-no-dedup", kinds="every final round aborted")
            for i in (1, 2)
        ]
        + [_row(3, "unaligned", mutant="unaligned-no-dedup")]
    )
    s = _summary(tmp_path, rows, mutants_selected=["unaligned-no-dedup"])
    [m] = s["mutants"]
    assert m["escaped"] and m["runs"] == 3 and m["inconclusive"] == 2
    assert "| unaligned-no-dedup | unaligned | 3 | 0 | 2 |" in markdown(s)
    out = io.StringIO()
    print_summary(s, Console(file=out, width=200))
    assert "ESCAPED mutant unaligned-no-dedup: 3 run(s), none caught (2 of them inconclusive" in out.getvalue()


def test_a_protocol_failing_only_when_restored_at_another_parallelism_gets_a_hint(tmp_path):
    """A user protocol that keeps per-channel bookkeeping a rescale breaks fails only in its
    rescaled runs; the summary says so, and how to declare that it does not rescale."""

    def failing(i, rescaled):
        return _row(
            i,
            "mine.py:Mine",
            "violation",
            kinds="dropped",
            command=f"snapcheck simulate --protocol mine.py:Mine --seed {i}"
            + (" --rescale restart@900:3" if rescaled else "")
            + " -o run.jsonl",
        )

    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    hint = "mine.py:Mine: all 2 of its failing runs were restored at another parallelism (--rescale)"
    assert hint in markdown(_summary(tmp_path / "a", [failing(0, True), failing(1, True), _row(2, "mine.py:Mine")]))
    assert hint.split(":")[0] + ": all" not in markdown(_summary(tmp_path / "b", [failing(0, True), failing(1, False)]))


def test_a_protocol_whose_runs_mostly_judged_nothing_is_warned_about(tmp_path):
    """A protocol under which no round completes passes every safety check: its runs are
    inconclusive, and an OK verdict with nothing more said read as a pass. The summary
    warns for a protocol at least half of whose runs were inconclusive, and only then."""
    rows = [_row(0, "mine.py:Mine", "inconclusive"), _row(1, "mine.py:Mine", "inconclusive"), _row(2, "mine.py:Mine")]
    rows += [_row(3, "unaligned"), _row(4, "unaligned"), _row(5, "unaligned", "inconclusive")]
    s = _summary(tmp_path, rows)
    assert s["ok"]
    text = markdown(s)
    assert "**Warning:** mine.py:Mine: 2 of its 3 runs were inconclusive" in text
    assert "unaligned: 1 of" not in text


def test_a_failing_run_says_the_digest_of_the_trace_its_command_writes(tmp_path):
    digest = "ab" * 32
    rows = [_row(1, "abs-aligned", "violation", kinds="orphan", trace_sha256=digest), _row(2, "abs-aligned")]
    s = _summary(tmp_path, rows)
    assert [f["trace_sha256"] for f in s["failing_runs"]] == [digest]
    assert f"SHA-256 `{digest}` (`sha256sum run-1.jsonl`)" in markdown(s)


def test_runs_with_a_requested_crash_that_never_fired_are_said(tmp_path):
    """A requested crash whose moment never came tested no recovery: the summary counts
    the runs with one per protocol, in the coverage table and on the console."""
    import io

    from rich.console import Console

    from snapcheck.spark_validation.summary import print_summary

    rows = [
        _row(0, "unaligned", situations='{"snapshot": 2}', faults_not_fired=0),
        _row(1, "unaligned", situations='{"snapshot": 1}', faults_not_fired=2),
        _row(2, "unaligned", situations='{"overtake": 1}', faults_not_fired=1),
    ]
    s = _summary(tmp_path, rows)
    assert s["protocols"][0]["faults_not_fired"] == 2
    [line] = [x for x in markdown(s).splitlines() if x.startswith("| unaligned | 3 | overtake 1, snapshot 2 |")]
    assert line.endswith(" | 2 |")
    out = io.StringIO()
    print_summary(s, Console(file=out, width=200))
    assert "not fired unaligned: 2 of 3 runs had a requested crash whose moment never came" in out.getvalue()
