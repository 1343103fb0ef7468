"""A randomized campaign over real Flink runs: every choice flows from one seed.

``sample(rng)`` draws a run configuration: job, checkpointing mode, parallelism,
data volume and rate, checkpoint interval, zero to two injected failures (at a
record count or a time, in a random operator subtask), simulated per-record work
in one operator (backpressure, so that unaligned checkpoints have in-flight data),
buffer timeout, aligned-checkpoint timeout, and some of Flink 2.x's recovery
options (recover output on downstream, checkpointing during recovery, network
buffer size and debloating), where the recent bugs of docs/bug-zoo.md live.
A share of the runs (``rescale_share``) is restored at another parallelism
(``--rescale``): stop-with-savepoint at a random time, or a failure that fails the job for good
and a restore of its latest retained checkpoint; that draw comes from its own generator seeded by
the run's seed, so the other draws of a campaign do not depend on the share.
``run_campaign`` runs the configurations one after another and judges each trace
with the function it is given (the CLI passes the checker).
"""

from __future__ import annotations

import random
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from snapcheck.flink.build import Build, FlinkSetupError
from snapcheck.flink.run import MODES, OPERATORS, RunConfig, run_job
from snapcheck.traces.errors import TraceErrors

CAMPAIGN_JOBS = ("keyed-agg", "q3-join", "chain")
MODE_WEIGHTS = {"aligned": 3, "unaligned": 3, "timeout": 3, "at-least-once": 2}
# Roughly how many records one subtask of each operator processes per source record of a
# subtask (filters pass 1/2 of the persons and 1/4 of the auctions), to place count failures.
VOLUME = {"join": 0.75, "sink@q3-join": 0.3}


def sample(rng: random.Random, jobs=CAMPAIGN_JOBS, modes=MODES, rescale_share: float = 0.0) -> RunConfig:
    job = rng.choice(list(jobs))
    mode = rng.choices(list(modes), weights=[MODE_WEIGHTS[m] for m in modes])[0]
    p = rng.choice([1, 2, 2, 2, 3, 3, 4])
    records = rng.choice([300, 500, 800, 1200])
    rate = rng.choice([500.0, 1000.0, 2000.0, 4000.0])
    ops = OPERATORS[job]
    fails = []
    for _ in range(rng.choices([0, 1, 2], weights=[1, 5, 2])[0]):
        op, sub = rng.choice(ops), rng.randrange(p)
        if rng.random() < 0.75:
            volume = VOLUME.get(f"{op}@{job}", VOLUME.get(op, 1.0)) if job == "q3-join" else 1.0
            spec = f"{op}:{sub}:{rng.randint(1, max(1, int(records * volume * 0.9)))}"
        else:
            spec = f"{op}:{sub}:@{rng.randint(100, int(1000 * records / rate) + 500)}"
        if spec not in fails:
            fails.append(spec)
    work = {}
    if rng.random() < 0.6:
        work[rng.choice(ops[1:])] = rng.choice([20, 100, 300])
    conf = {}
    if mode in ("unaligned", "timeout"):
        if rng.random() < 0.3:
            conf["execution.checkpointing.unaligned.recover-output-on-downstream.enabled"] = "true"
        if rng.random() < 0.3:
            conf["execution.checkpointing.during-recovery.enabled"] = "true"
    elif rng.random() < 0.2:
        conf["execution.checkpointing.max-concurrent-checkpoints"] = "2"
    if rng.random() < 0.3:
        conf["taskmanager.memory.segment-size"] = rng.choice(["4kb", "8kb"])
    if rng.random() < 0.2:
        conf["taskmanager.network.memory.buffer-debloat.enabled"] = "true"
    cfg = RunConfig(
        job=job,
        mode=mode,
        parallelism=p,
        records=records,
        rate=rate,
        interval_ms=rng.choice([20, 50, 100, 200]),
        fails=fails,
        seed=rng.randrange(1 << 31),
        work=work,
        buffer_timeout_ms=rng.choice([1, 10, 100]),
        aligned_timeout_ms=rng.choice([1, 5, 20, 100]),
        timeout_s=90,
        conf=conf,
    )
    draw_rescale(cfg, random.Random(cfg.seed), rescale_share)
    return cfg


def draw_rescale(cfg: RunConfig, rng: random.Random, share: float) -> None:
    """With probability ``share``, restore ``cfg`` at another parallelism: by stop-with-savepoint
    at 30–70 % of the sources' time, or (half the time) by a failure at such a time that fails the
    job for good (it replaces the run's failures) and a restore of its latest retained checkpoint."""
    if rng.random() >= share:
        return
    p2 = rng.choice([q for q in (1, 2, 3, 4) if q != cfg.parallelism])
    span = int(1000 * cfg.records / cfg.rate) if cfg.rate else 500
    at = max(300, int(span * rng.uniform(0.3, 0.7)))
    if rng.random() < 0.5:
        cfg.rescale = f"savepoint:{p2}@{at}"
    else:
        op = rng.choice(OPERATORS[cfg.job])
        cfg.fails = [f"{op}:{rng.randrange(cfg.parallelism)}:@{at}"]
        cfg.rescale = f"failure:{p2}"


@dataclass
class CampaignRow:
    index: int
    config: RunConfig
    seconds: float
    status: str  # the run's status (completed / failed / timeout) or "error"
    ok: bool
    kinds: list[str] = field(default_factory=list)
    detail: str = ""
    trace: str | None = None
    stats: dict = field(default_factory=dict)

    @property
    def exactly_once(self) -> bool:
        return self.config.mode != "at-least-once"


def run_campaign(
    configs: list[RunConfig],
    build: Build,
    work_dir: Path,
    judge: Callable[[str], tuple[bool, list[str], str, dict]],
    keep_clean: bool = False,
    progress: Callable[[CampaignRow], None] | None = None,
) -> list[CampaignRow]:
    """Run each configuration, merge and judge its trace: ``judge(trace_path) -> (ok, kinds,
    detail, stats)``. Traces of violations in exactly-once modes (and of the first three
    AT_LEAST_ONCE runs) are kept in ``work_dir``, the others only with ``keep_clean``; the raw
    per-subtask files are removed after merging."""
    work_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, cfg in enumerate(configs):
        run_dir = work_dir / f"run-{i:04d}"
        trace_path = work_dir / f"run-{i:04d}.jsonl"
        if run_dir.exists():
            shutil.rmtree(run_dir)
        t0 = time.monotonic()
        try:
            outcome = run_job(cfg, run_dir, build)
            outcome.merged.write(str(trace_path))
            ok, kinds, detail, stats = judge(str(trace_path))
            row = CampaignRow(i, cfg, time.monotonic() - t0, outcome.status, ok, kinds, detail, str(trace_path), stats)
        except (FlinkSetupError, TraceErrors) as exc:  # the JVM failed, or its files are unreadable
            row = CampaignRow(i, cfg, time.monotonic() - t0, "error", False, ["run-error"], str(exc)[-600:])
        expected = not row.exactly_once and sum(1 for r in rows if not r.exactly_once and r.trace) >= 3
        if (row.ok or expected) and not keep_clean and row.trace:
            Path(row.trace).unlink(missing_ok=True)
            row.trace = None
        if row.status != "error":
            shutil.rmtree(run_dir, ignore_errors=True)
        rows.append(row)
        if progress:
            progress(row)
    return rows


def summarize(rows: list[CampaignRow]) -> dict:
    """Per mode: runs, runs with a recovery, clean and violating runs, kinds seen, completed
    checkpoints, records replayed from channel state, in-flight records of never-restored
    checkpoints (unobservable), seconds."""
    by_mode: dict[str, dict] = {}
    for r in rows:
        d = by_mode.setdefault(
            r.config.mode,
            {
                "runs": 0,
                "clean": 0,
                "violations": 0,
                "kinds": {},
                "with_failure": 0,
                "seconds": 0.0,
                "rounds": 0,
                "replayed": 0,
                "hidden": 0,
                "rescaled": 0,
            },
        )
        d["runs"] += 1
        d["seconds"] += r.seconds
        d["with_failure"] += bool(r.stats.get("restores"))
        for k in ("rounds", "replayed", "hidden", "rescaled"):
            d[k] += r.stats.get(k, 0)
        if r.ok:
            d["clean"] += 1
        else:
            d["violations"] += 1
            for k in r.kinds:
                d["kinds"][k] = d["kinds"].get(k, 0) + 1
    return by_mode
