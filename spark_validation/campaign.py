"""A validation campaign: N runs (seeds S … S+N-1) simulated and checked on Spark or in one process.

Both engines execute the same work — ``runner.run_one`` on
``configs.draw_config(i, S + i)`` for every run ``i`` — and write the same
result table (Parquet, one row per run) under ``OUT/results``:

* ``engine="spark"``: the runs are cut into coarse chunks (≥ 1–2 k runs per
  task on large campaigns, 2–4 tasks per core: Spark costs ≈30 ms per task, so
  throughput is set by the per-run Python work; with ``--conform`` one task per
  core, since traces of one topology share TLC runs only within a task), each chunk a row of a
  ``spark.range`` DataFrame whose partitions ``mapInArrow`` turns into result
  batches. Rows are a pure function of the run id, so the result is identical
  whatever the partitioning; a retried task recomputes the same rows and Spark's
  output commit protocol keeps exactly one attempt's file (written with
  overwrite semantics), so retries never duplicate rows — and ``run_campaign``
  verifies ``count = count(distinct run_id) = N`` on what was written.
* ``engine="python"``: a plain loop in this process (the baseline of the
  benchmark and the reference of the engine-equality test).

A rich progress bar follows the runs (Spark: completed tasks, from the status
tracker).
"""

from __future__ import annotations

import math
import os
import threading
import time
from dataclasses import dataclass

from snapcheck.spark_validation.configs import Selection, draw_config
from snapcheck.spark_validation.conformance import Conformer
from snapcheck.spark_validation.output_dirs import check_replaceable, replace_dataset
from snapcheck.spark_validation.runner import COLUMN_NAMES, UserState, arrow_schema, run_one, spark_schema, user_specs

MAX_CHUNK = 2000  # runs per Spark task on large campaigns
TASKS_PER_CORE = 3
CONFORM_TASKS_PER_CORE = 1  # --conform: runs of one topology share TLC runs only within a task


@dataclass
class CampaignResult:
    results: str  # directory of the result Parquet files
    runs: int
    seconds: float
    engine: str
    master: str | None
    tasks: int


def chunk_plan(n: int, cores: int, per_core: int = TASKS_PER_CORE) -> list[tuple[int, int]]:
    """Run-id ranges [a, b): at least ``per_core`` tasks per core, at most MAX_CHUNK runs each."""
    tasks = min(n, max(cores * per_core, math.ceil(n / MAX_CHUNK)))
    cuts = [n * k // tasks for k in range(tasks + 1)] if tasks else [0]
    return list(zip(cuts, cuts[1:]))


def _rows(a: int, b: int, base_seed: int, sel: Selection) -> list[dict]:
    """The result rows of runs ``a … b-1``; with ``sel.conform``, the chosen ones validated
    against their TLA+ specifications here, after the runs (``conformance``)."""
    conformer = Conformer(sel.conform) if sel.conform else None
    specs = user_specs(*sel.protocols, *sel.mutants)
    users = UserState(specs) if specs else None  # what they keep outside a run, from here on
    rows = []
    try:
        for i in range(a, b):
            seed = base_seed + i
            wants = conformer is not None and conformer.wants(seed)
            if users is not None:
                users.mark()  # before the draw, whose dry runs run the protocol too
            cfg = draw_config(i, seed, sel)
            rows.append(run_one(i, seed, cfg, sel.oracle, conformer if wants else None, users))
    finally:
        if conformer is not None:
            conformer.finish()
    return rows


def _batch(rows: list[dict]):
    import pyarrow as pa

    return pa.RecordBatch.from_pylist(rows, schema=arrow_schema())


def run_campaign(
    n: int,
    sel: Selection,
    out_dir: str,
    *,
    base_seed: int = 0,
    engine: str = "spark",
    master: str | None = None,
    progress: bool = True,
    session_options: dict | None = None,
) -> CampaignResult:
    """Run the campaign; ``session_options`` go to ``session.get_session`` (``conf``, ``ship``)."""
    sel.check()
    results = os.path.join(os.path.abspath(out_dir), "results")  # executors resolve no relative path
    check_replaceable(results)  # before any run: the results of an earlier run are replaced, nothing else
    os.makedirs(out_dir, exist_ok=True)
    start = time.perf_counter()
    if engine == "python":
        _run_python(n, sel, results, base_seed, progress)
        tasks = 1
    elif engine == "spark":
        tasks = _run_spark(n, sel, results, base_seed, master, progress, session_options or {})
    else:
        from snapcheck.traces.errors import UsageError

        raise UsageError(f"unknown engine {engine!r} (use spark or python)")
    seconds = time.perf_counter() - start
    _verify(results, n)
    return CampaignResult(results, n, seconds, engine, master, tasks)


def _verify(results: str, n: int) -> None:
    """Exactly one row per run id 0..n-1 was written (no lost, no duplicated run)."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    ids = ds.dataset(results, format="parquet").to_table(columns=["run_id"]).column("run_id")
    distinct = len(pc.unique(ids))
    if len(ids) != n or distinct != n or (n and (pc.min(ids).as_py() != 0 or pc.max(ids).as_py() != n - 1)):
        raise RuntimeError(f"result table has {len(ids)} rows and {distinct} distinct run ids, expected {n}")


def _progress_bar(total: int):
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("[bold]validate[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("runs"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        transient=False,
    )


def _run_python(n: int, sel: Selection, results: str, base_seed: int, progress: bool) -> None:
    import pyarrow.parquet as pq

    replace_dataset(results)
    os.makedirs(results)
    writer = pq.ParquetWriter(os.path.join(results, "part-00000.parquet"), arrow_schema())
    bar = _progress_bar(n) if progress else None
    try:
        if bar:
            bar.start()
            task = bar.add_task("runs", total=n)
        for a, b in chunk_plan(n, 1):
            writer.write_batch(_batch(_rows(a, b, base_seed, sel)))
            if bar:
                bar.update(task, completed=b)
    finally:
        writer.close()
        if bar:
            bar.stop()


def _run_spark(
    n: int, sel: Selection, results: str, base_seed: int, master: str | None, progress: bool, session_options: dict
) -> int:
    from snapcheck.spark_validation.session import (
        check_visible,
        default_parallelism,
        executor_environment_error,
        get_session,
    )
    from snapcheck.spark_validation.shipping import user_protocols

    specs = sel.protocols + sel.mutants
    spark = get_session(master, protocols=specs, **session_options)
    plan = chunk_plan(n, default_parallelism(), CONFORM_TASKS_PER_CORE if sel.conform else TASKS_PER_CORE)
    bounds = [a for a, _ in plan] + [n]
    user = user_protocols(specs)  # user classes: sent by reference, their modules shipped

    def compute(batches):
        user.register()
        for batch in batches:
            for k in batch.column(0).to_pylist():
                yield _batch(_rows(bounds[k], bounds[k + 1], base_seed, sel))

    sc = spark.sparkContext
    group = f"snapcheck-validate-{os.getpid()}-{time.monotonic_ns()}"
    sc.setJobGroup(group, f"snapcheck validate: {n} runs", interruptOnCancel=True)
    df = spark.range(0, len(plan), 1, numPartitions=len(plan)).mapInArrow(compute, spark_schema())
    watcher = _SparkProgress(sc, group, plan) if progress else None
    try:
        if watcher:
            watcher.start()
        try:
            df.write.mode("overwrite").parquet(results)
        except Exception as exc:
            err = executor_environment_error(exc, master)
            if err is None:
                raise
            raise err from None
        if n:
            check_visible(results)
    finally:
        if watcher:
            watcher.stop()
        sc.setLocalProperty("spark.jobGroup.id", None)
    return len(plan)


class _SparkProgress:
    """Polls Spark's status tracker and shows completed runs (completed tasks × their chunk sizes)."""

    def __init__(self, sc, group: str, plan: list[tuple[int, int]]):
        self.sc, self.group, self.plan = sc, group, plan
        self.total = plan[-1][1] if plan else 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self.bar = _progress_bar(self.total)

    def start(self) -> None:
        self.bar.start()
        self.task = self.bar.add_task("runs", total=self.total)
        self._thread.start()

    def _done_tasks(self) -> int:
        st = self.sc.statusTracker()
        done = 0
        for job in st.getJobIdsForGroup(self.group):
            info = st.getJobInfo(job)
            if info is None:
                continue
            for sid in info.stageIds:
                stage = st.getStageInfo(sid)
                if stage is not None and stage.numTasks == len(self.plan):
                    done = max(done, stage.numCompletedTasks)
        return done

    def _loop(self) -> None:
        size = self.total / max(1, len(self.plan))
        while not self._stop.wait(0.5):
            self.bar.update(self.task, completed=min(self.total, round(self._done_tasks() * size)))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.bar.update(self.task, completed=self.total)
        self.bar.stop()


def read_results(results: str):
    """The result table as a pyarrow Table sorted by run id (both engines' output)."""
    import pyarrow.dataset as ds

    table = ds.dataset(results, format="parquet").to_table(columns=list(COLUMN_NAMES))
    return table.sort_by("run_id")
