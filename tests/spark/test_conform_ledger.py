"""The ledger of the conformance campaign at scale (``benchmarks/conform_at_scale.py``):
a finished campaign's summary is kept once, entries add up, and every kept entry is
consistent (what the specifications said accounts for every run chosen)."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import conform_at_scale as cas  # noqa: E402


def summary(base: int, runs: int, rejected: int, disagreements: list[str]) -> dict:
    row = dict.fromkeys(cas.COUNTS, 0) | {"outside_reasons": {"finish": 1}, "error_examples": []}
    row.update(chosen=runs, conformed=runs - 1, accepted=runs - 1 - rejected, rejected=rejected, outside=1)
    return {
        "base_seed": base,
        "runs": runs,
        "seconds": 10.0,
        "master": "local[2]",
        "conform_fraction": 1.0,
        "conformance": [row],
        "mutants": [{"runs": 4, "caught_by_spec": rejected}],
        "failing_runs": [],
        "disagreements": [
            {
                "protocol": "p",
                "mutant": m,
                "spec": "S",
                "spec_verdict": "REJECT",
                "checker_verdict": "clean",
                "command": f"cmd {base} {i}",
            }
            for i, m in enumerate(disagreements)
        ],
    }


def test_campaigns_are_kept_once_and_add_up(tmp_path, monkeypatch):
    ledger, out = tmp_path / "ledger", tmp_path / "out"
    monkeypatch.setattr(cas, "LEDGER", ledger)
    for c, (rejected, dis) in enumerate([(2, ["m1", "m1", "m2"]), (1, ["m1"])]):
        (out / f"conform-{c}").mkdir(parents=True)
        (out / f"conform-{c}" / "summary.json").write_text(json.dumps(summary(100 + 10 * c, 10, rejected, dis)))
    (out / "conform-0" / "commit.txt").write_text("abc1234\n")
    cas.keep(out)
    first = (ledger / "seed-100.json").read_text()
    (out / "conform-0" / "summary.json").write_text(json.dumps(summary(100, 10, 9, [])))
    cas.keep(out)  # an entry, once kept, is not replaced
    assert (ledger / "seed-100.json").read_text() == first
    a = cas.collect(ledger)
    assert (a["chunks"], a["runs"], a["rejected"], a["caught_by_spec"], a["mutant_runs"]) == (2, 20, 3, 3, 8)
    assert a["commits"] == {"abc1234": 10, "unknown": 10}
    text = cas.report(a)
    assert "seeds 100…119" in text and "abc1234 (10 runs), unknown (10 runs)" in text
    assert "| `m1` | S | REJECT | clean | 3 | `cmd 100 0` |" in text
    assert "| `m2` | S | REJECT | clean | 1 | `cmd 100 2` |" in text


@pytest.mark.parametrize("path", sorted(cas.LEDGER.glob("*.json")), ids=lambda p: p.name)
def test_every_kept_entry_accounts_for_its_runs(path):
    e = json.loads(path.read_text())
    assert e["seeds"][1] - e["seeds"][0] + 1 == e["runs"] == e["chosen"], "--conform 1: every run is chosen"
    assert e["conformed"] == e["accepted"] + e["rejected"]
    assert e["chosen"] == e["conformed"] + e["outside"] + e["no_spec"] + e["no_java"] + e["no_trace"] + e["errors"]
    assert sum(e["outside_reasons"].values()) == e["outside"]
    assert e["caught_by_spec"] <= min(e["mutant_runs"], e["rejected"])
    assert all(d["runs"] >= 1 and d["example"].startswith("snapcheck simulate ") for d in e["disagreements"])
    assert path.name == f"seed-{e['seeds'][0]}.json"


def test_chunks_run_in_turn_skipping_those_kept(tmp_path, monkeypatch):
    import chunks

    ran = []

    def fake_run(cmd, **kw):  # a chunk's campaign: its summary appears
        out = Path(cmd[cmd.index("-o") + 1])
        ran.append(int(cmd[cmd.index("-s") + 1]))
        (out / "summary.json").write_text("{}")
        return chunks.subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(chunks.subprocess, "run", fake_run)
    monkeypatch.setattr(chunks, "commit", lambda: "abc1234")
    chunks.run_chunks("conform", [], 4, 10, tmp_path, first=100, done={120}.__contains__)
    assert ran == [100, 110, 130]  # 120 was kept elsewhere
    assert (tmp_path / "conform-0" / "commit.txt").read_text() == "abc1234\n"
    chunks.run_chunks("conform", [], 4, 10, tmp_path, first=100)  # resumed: only the one kept elsewhere runs
    assert ran == [100, 110, 130, 120]


def test_the_documented_resume_plan_fits_the_ledger_and_a_misaligned_one_is_refused():
    kept = cas.kept_seeds()
    plan = [cas.covered(7_000_000 + c * 2_500, 2_500, kept) for c in range(40)]
    done = sum(e[1] - e[0] + 1 for e in kept)
    assert plan[: done // 2_500] == [True] * (done // 2_500) and not any(plan[done // 2_500 :])
    with pytest.raises(SystemExit, match="overlaps the ledger"):
        cas.covered(7_017_000, 2_500, kept)  # half in the last entry, half beyond
