"""The Spark benchmark's campaign report: medians of alternating rounds, the large campaign, and
the 1,000,000-run extrapolation from the best-founded rate (no Spark needed)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_spark  # noqa: E402

TP = {
    "runs": 1000,
    "python_s": 10.0,
    "spark1_s": [12.0, 30.0, 10.0],
    "spark2_s": [6.0, 10.0, 6.25],
    "pool1_s": [10.0, 11.0, 9.0],
    "pool2_s": [5.0, 6.0, 5.0],
    "session_s": {"local[2]": 9.0, "local[1]": 1.0},
    "identical": True,
    "events": 750_000,
    "bytes_per_row": 160.0,
    "peak_rss": 2**30,
}


def test_speed_up_is_the_median_of_the_per_round_ratios():
    md = bench_spark.campaign_report(TP, None)
    # rounds 2.00×, 3.00×, 1.60× → median 2.00× (not the ratio of the median times, 12/6.25 = 1.92×)
    assert "**2.00×** median (rounds: 2.00×, 3.00×, 1.60×" in md
    assert "1 → 2-process scaling of the same runs without Spark: 1.83× median (rounds: 2.00×, 1.83×, 1.80×)" in md
    assert "| Spark local[2] | 6.2 | 160.0 |" in md  # median time 6.25 s
    assert "10.0 ms per run in one process" in md  # median pool-of-1 time / runs
    assert "from the measured local[2] rate of 160.0 runs/s (1,000 runs)" in md


def test_a_large_campaign_is_reported_and_becomes_the_extrapolation_basis():
    big = {
        "runs": 100_000,
        "seconds": 500.0,
        "peak_rss": 3 * 2**29,
        "tenths": (2**30, 2**30 + 2**20),
        "bytes": 13_000_000,
        "load": "1.0, 1.0, 1.0",
    }
    md = bench_spark.campaign_report(TP, big)
    assert "### Large campaign (100,000 runs on local[2], measured)" in md
    assert "**200.0 runs/s**" in md and "1,024 MB in the first tenth of the campaign, 1,025 MB in the last" in md
    assert "from the large campaign's rate of 200.0 runs/s: 5,000 s" in md
    assert "≈ 124 MB of result files" in md  # 130 bytes per run of the large one
    million = dict(big, runs=1_000_000, seconds=590.0)
    assert "1,000,000 runs: measured above (target ≤ 10 min: met)" in bench_spark.campaign_report(TP, million)


def test_peak_rss_tenths_compare_the_start_and_the_end_of_the_sampling():
    mem = bench_spark.PeakRSS()
    mem.samples = [5, 7] + [6] * 16 + [9, 8]
    assert mem.tenths() == (7, 9)
