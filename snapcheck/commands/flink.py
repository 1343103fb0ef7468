"""``snapcheck flink``: check a real, unmodified Apache Flink 2.x (docs/flink.md).

* ``snapcheck flink build`` — compile the instrumentation library and jobs with javac against
  the installed apache-flink-libraries jars (cached; quick when nothing changed).
* ``snapcheck flink run --job J --mode M --parallelism N --fail OP:SUBTASK:COUNT --seed S -o T``
  — run a traced job in a local MiniCluster, merge its per-subtask trace files into the v1
  trace ``T`` and judge it (``--no-check`` to only write the trace).
* ``snapcheck flink campaign --traces N`` — randomized runs, each judged; a table, and the
  reproducing command of every violation in an exactly-once mode.

The verdict of a Flink trace is the checker's (consistency of every completed checkpoint,
no in-flight records in aligned mode, exactly-once after recovery, ...) plus Flink's own
expectations (``snapcheck.flink.expectations``): the restore of the latest completed
checkpoint, and no merge anomaly. ``dropped`` on a channel whose unaligned channel state was
never restored is not a verdict on Flink (that state is internal to Flink) and is shown as a note.
"""

from __future__ import annotations

import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import click
from rich.table import Table

from snapcheck.checker.report import VERDICT_EXIT, worst_exit
from snapcheck.console import echo, make_console
from snapcheck.options import OUTPUT_FILE
from snapcheck.traces.errors import EXIT_CLEAN, EXIT_VIOLATION, UsageError

console = make_console()


def _build(force: bool = False, home: str | None = None):
    from snapcheck.flink.build import FlinkSetupError, build

    try:
        return build(force, home)
    except FlinkSetupError as exc:
        raise UsageError(str(exc)) from None


class Judgement:
    """The verdict on one Flink trace."""

    def __init__(self, trace):
        from snapcheck.checker import CheckOptions, check_trace
        from snapcheck.flink.expectations import (
            anomaly_findings,
            latest_checkpoint_findings,
            skipped_reassignment_findings,
        )

        self.trace = trace
        self.report = check_trace(trace, CheckOptions(max_per_result=10**9))
        self.violations = self.report.violations
        self.hidden = self.report.stats.get("unobservable_in_transit", 0)
        self.findings = (
            latest_checkpoint_findings(trace) + skipped_reassignment_findings(trace) + anomaly_findings(trace)
        )
        self.faults = self.report.faults
        flink = (trace.header.metadata or {}).get("flink") or {}
        self.status = flink.get("status", "?")
        self.rescale = flink.get("rescale")
        if self.status in ("timeout", "failed"):
            from snapcheck.flink.expectations import Finding

            why = flink.get("error") or "no progress before the run's time limit (a hang?)"
            self.findings.append(
                Finding(
                    f"run-{self.status}",
                    f"the Flink job ended with status {self.status}: {why.splitlines()[0] if why else ''}",
                )
            )

    @property
    def ok(self) -> bool:
        return not self.violations and not self.findings

    @property
    def verdict(self) -> str:
        """``violation``, ``clean``, or ``not-judged`` when no property of the checker
        applied to the trace and Flink's expectations found nothing (no verdict)."""
        if not self.ok:
            return "violation"
        return "not-judged" if self.report.verdict == "not-judged" else "clean"

    def exit_code(self, require_faults: bool = False) -> int:
        """The command's exit code for this trace (``--require-faults``: a requested
        failure that never fired is a violation)."""
        if require_faults and self.faults_not_exercised:
            return EXIT_VIOLATION
        return VERDICT_EXIT[self.verdict]

    @property
    def faults_not_exercised(self) -> list[dict]:
        """Requested failures (--fail) that never fired: the run tested no recovery from them."""
        return [f for f in self.faults if not f["exercised"]]

    @property
    def kinds(self) -> list[str]:
        return sorted({v.kind for v in self.violations} | {f.kind for f in self.findings})

    def stats(self) -> dict:
        ev = self.trace.events
        return {
            "events": len(ev),
            "rounds": len({e.round for e in ev if e.type == "round_complete"}),
            "restores": len({e.recovery for e in ev if e.type == "restore"}),
            "replayed": sum(1 for e in ev if e.type == "replay" and e.source == "channel_state"),
            "reread": sum(1 for e in ev if e.type == "replay" and e.source == "source"),
            "hidden": self.hidden,
            "faults_not_exercised": len(self.faults_not_exercised),
            "rescaled": int(bool(self.rescale) and not self.rescale.get("skipped")),
        }

    def detail(self, limit: int = 3) -> str:
        msgs = [f"[{v.kind}] {v.message}" for v in self.violations[:limit]]
        msgs += [f"[{f.kind}] {f.message}" for f in self.findings[:limit]]
        return "\n".join(msgs)

    def render(self, examples: int = 2) -> str:
        """Counts per (kind, subject), the first ``examples`` messages of each kind, the findings."""
        lines = []
        groups: dict[tuple[str, str], list] = {}
        for v in self.violations:
            groups.setdefault((v.kind, v.subject), []).append(v)
        shown: dict[str, int] = {}
        for (kind, subject), vs in groups.items():
            lines.append(f"{kind} ({vs[0].property}) in {subject}: {len(vs)} violation(s)")
            for v in vs:
                if shown.get(kind, 0) >= examples:
                    break
                shown[kind] = shown.get(kind, 0) + 1
                lines.append(f"  - lines {', '.join(map(str, v.lines))}: {v.message}")
        for f in self.findings:
            lines.append(f"[{f.kind}] {f.message}")
        s = self.stats()
        lines.append(
            f"Flink run {self.status}: {s['events']} events, {s['rounds']} completed checkpoints, "
            f"{s['restores']} recoveries, {s['replayed']} records replayed from channel state, "
            f"{s['reread']} source records re-read."
        )
        if self.hidden:
            lines.append(
                f"note: {self.hidden} in-flight record(s) of checkpoints that were never restored: their "
                "unaligned channel state is internal to Flink (not judged)."
            )
        for f in self.faults_not_exercised:
            lines.append(f"NOT EXERCISED: {f['fault']} ({f['detail']}): this run tested no recovery from it.")
        if self.rescale and self.rescale.get("skipped"):
            lines.append(
                f"NOT EXERCISED: rescale {self.rescale.get('kind')} ({self.rescale['skipped']}): the job was "
                "not restored at another parallelism."
            )
        elif self.rescale:
            gens = self.rescale.get("generations") or []
            lines.append(
                f"rescale ({self.rescale.get('kind')}): parallelism "
                f"{' -> '.join(str(g.get('parallelism')) for g in gens)}, restored checkpoint "
                f"{self.rescale.get('restored_checkpoint')}."
            )
            from snapcheck.flink.expectations import stateless_operators

            ckpt, ops = stateless_operators(self.trace)
            for s in ops:
                lines.append(f"checkpoint {ckpt} (_metadata): operator without state of its own: {s.describe()}.")
        verdict = {
            "clean": "clean",
            "not-judged": "NOTHING JUDGED (no property applied to this trace)",
            "violation": "VIOLATION (" + ", ".join(self.kinds) + ")",
        }[self.verdict]
        if self.ok and self.faults_not_exercised:
            verdict += (
                f", but {len(self.faults_not_exercised)} requested failure(s) never fired: recovery not exercised"
            )
        lines.append("verdict: " + verdict)
        return "\n".join(lines)


def judge_file(path: str, trace_id: str | None = None) -> Judgement:
    from snapcheck.traces import read_trace

    return Judgement(read_trace(path, trace_id=trace_id))


def _kv(items, what: str, conv=str) -> dict:
    out = {}
    for it in items:
        if "=" not in it:
            raise UsageError(f"{what}: expected KEY=VALUE, got {it!r}")
        k, v = it.split("=", 1)
        try:
            out[k.strip()] = conv(v.strip())
        except ValueError:
            raise UsageError(f"{what}: bad value in {it!r}") from None
    return out


_FLINK_HOME = click.option(
    "--flink-home",
    type=click.Path(file_okay=False, exists=True),
    default=None,
    help="A pyflink directory (with lib/) of another apache-flink-libraries install, e.g. Flink 1.17 in its own "
    "environment (default: $SNAPCHECK_FLINK_HOME, else the installed package).",
)

_REQUIRE_FAULTS = click.option(
    "--require-faults",
    is_flag=True,
    help="Exit 1 when a requested failure (--fail) never fired: the run exercised no recovery from it.",
)


@click.group("flink")
def flink() -> None:
    """Trace and check real Apache Flink jobs (local MiniCluster; see docs/flink.md)."""


@flink.command("build")
@click.option("--force", is_flag=True, help="Recompile even if the cached jar is up to date.")
@_FLINK_HOME
def build_cmd(force: bool, flink_home: str | None) -> None:
    """Compile the instrumentation library and jobs against the installed Flink jars (cached)."""
    t0 = time.monotonic()
    b = _build(force, flink_home)
    how = "cached" if b.cached else f"compiled in {time.monotonic() - t0:.1f} s"
    echo(f"snapcheck-flink jar: {b.jar} (Flink {b.flink_version}, {how})")


@flink.command("run")
@click.option(
    "--job",
    type=click.Choice(["keyed-agg", "q3-join", "chain", "stateless-mid", "stateless-sink"]),
    default="keyed-agg",
    show_default=True,
)
@click.option(
    "--mode",
    type=click.Choice(["aligned", "unaligned", "timeout", "at-least-once"]),
    default="aligned",
    show_default=True,
    help="Checkpointing: aligned, unaligned, aligned with timeout, AT_LEAST_ONCE.",
)
@click.option("--parallelism", "-P", type=int, default=2, show_default=True)
@click.option(
    "--fail",
    "fails",
    multiple=True,
    help="Inject a failure: OP:SUBTASK:COUNT (before that subtask's COUNT-th record) or OP:SUBTASK:@MS "
    "(first record after MS ms). Repeatable; each fires once.",
)
@click.option("--seed", "-s", type=int, default=0, show_default=True, help="Seed of the generated data.")
@click.option("--records", type=int, default=1000, show_default=True, help="Records per source subtask.")
@click.option("--rate", type=float, default=1000.0, show_default=True, help="Records/s per source subtask (0: max).")
@click.option("--interval", type=int, default=100, show_default=True, help="Checkpoint interval (ms).")
@click.option(
    "--aligned-timeout",
    type=int,
    default=10,
    show_default=True,
    help="Aligned-checkpoint timeout of --mode timeout (ms).",
)
@click.option("--buffer-timeout", type=int, default=100, show_default=True, help="Network buffer timeout (ms).")
@click.option("--restart-delay", type=int, default=100, show_default=True, help="Fixed-delay restart delay (ms).")
@click.option("--work", "work", multiple=True, help="OP=MICROS: simulated work per record (backpressure).")
@click.option("--conf", "conf", multiple=True, help="KEY=VALUE: extra Flink configuration. Repeatable.")
@click.option("--timeout", type=int, default=120, show_default=True, help="Give up on the job after this many s.")
@click.option(
    "--quiet",
    type=int,
    default=500,
    show_default=True,
    help="The run ends after the sources are done and no record moved for this many ms.",
)
@click.option("--output", "-o", required=True, type=OUTPUT_FILE, help="The merged v1 trace.")
@click.option(
    "--keep-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Keep the raw per-subtask files and run.json here (default: a temporary directory).",
)
@click.option(
    "--check/--no-check",
    default=True,
    show_default=True,
    help="Judge the trace (exit 1 on a violation) or only write it.",
)
@click.option(
    "--rescale",
    default=None,
    metavar="KIND:P[@MS]",
    help="Restore the job at parallelism P: 'savepoint:P@MS' stops it with a savepoint MS ms after the "
    "first source record (default: half the sources' time); 'failure:P' lets the first --fail fail it "
    "for good and restores its latest retained checkpoint.",
)
@_FLINK_HOME
@_REQUIRE_FAULTS
def run_cmd(
    job,
    mode,
    parallelism,
    fails,
    seed,
    records,
    rate,
    interval,
    aligned_timeout,
    buffer_timeout,
    restart_delay,
    work,
    conf,
    timeout,
    quiet,
    output,
    keep_dir,
    check,
    rescale,
    flink_home,
    require_faults,
) -> None:
    """Run a traced Flink job with injected failures and write its trace (then: snapcheck check)."""
    from snapcheck.flink.build import FlinkSetupError
    from snapcheck.flink.run import RunConfig, run_job

    cfg = RunConfig(
        job=job,
        mode=mode,
        parallelism=parallelism,
        records=records,
        rate=rate,
        interval_ms=interval,
        fails=list(fails),
        seed=seed,
        timeout_s=timeout,
        quiet_ms=quiet,
        work=_kv(work, "--work", int),
        buffer_timeout_ms=buffer_timeout,
        restart_delay_ms=restart_delay,
        aligned_timeout_ms=aligned_timeout,
        conf=_kv(conf, "--conf"),
        rescale=rescale,
    )
    try:
        cfg.validate()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    from snapcheck.traces.atomic import ensure_writable

    ensure_writable(output)
    b = _build(home=flink_home)
    tmp = None
    if keep_dir is None:
        tmp = tempfile.mkdtemp(prefix="snapcheck-flink-")
        run_dir = Path(tmp) / "run"
    else:
        run_dir = Path(keep_dir)
    try:
        outcome = run_job(cfg, run_dir, b)
    except FlinkSetupError as exc:
        raise UsageError(str(exc)) from None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    merged = outcome.merged
    merged.write(output)
    echo(f"{output}: {len(merged.events)} events from a {outcome.seconds:.1f} s run (status {outcome.status})")
    for a in merged.anomalies:
        echo(f"[flink-anomaly] {a}")
    if check:
        from snapcheck.traces.errors import TraceErrors

        try:
            j = judge_file(output)
        except TraceErrors as exc:
            if not merged.anomalies:
                raise
            echo(exc.render())
            echo("verdict: VIOLATION (flink-anomaly): the anomalies above make the merged trace invalid")
            sys.exit(EXIT_VIOLATION)
        echo(j.render())
        code = j.exit_code(require_faults)
        if code != EXIT_CLEAN:
            sys.exit(code)


@flink.command("classpath")
@click.option("--jvm-options", is_flag=True, help="Print the JVM options Flink needs on Java 17 instead.")
def classpath_cmd(jvm_options: bool) -> None:
    """Print the classpath (snapcheck-flink jar + Flink jars) to compile and run your own traced job."""
    from snapcheck.flink.build import JAVA_OPENS

    b = _build()
    echo(" ".join([*JAVA_OPENS, f"-Dlog4j2.configurationFile={b.log4j}"]) if jvm_options else b.classpath())


@flink.command("merge")
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True))
@click.option("--output", "-o", required=True, type=OUTPUT_FILE, help="The merged v1 trace.")
def merge_cmd(run_dir, output) -> None:
    """Merge the per-subtask trace files and run.json of a traced run (e.g. your own job run with
    TracedJob.run) into one v1 trace."""
    from snapcheck.flink.merge import merge_run
    from snapcheck.traces.atomic import ensure_writable

    ensure_writable(output)
    res = merge_run(run_dir)
    res.write(output)
    echo(
        f"{output}: {len(res.events)} events"
        + (f"; {len(res.anomalies)} anomalies:\n  " + "\n  ".join(res.anomalies) if res.anomalies else "")
    )


@flink.command("check")
@click.argument("traces", nargs=-1, required=True, type=click.Path(dir_okay=False))
@_REQUIRE_FAULTS
@click.option("--trace-id", default=None, help="Which trace of a multi-trace Parquet file to judge.")
def check_cmd(traces, require_faults, trace_id) -> None:
    """Judge Flink traces written by 'snapcheck flink run': the checker's verdict plus Flink's
    expectations (latest completed checkpoint restored, no merge anomaly), without judging the
    channel state of unaligned checkpoints that were never restored. Exit 1 on a violation, 4 when
    no property applied to a trace (over many traces: the worst, as 'snapcheck check')."""
    codes = []
    for path in traces:
        j = judge_file(path, trace_id)
        echo(f"{path}:")
        echo(j.render())
        codes.append(j.exit_code(require_faults))
    worst = worst_exit(codes)
    if worst != EXIT_CLEAN:
        sys.exit(worst)


@flink.command("campaign")
@click.option("--traces", "-n", "runs", type=int, default=20, show_default=True, help="Number of randomized runs.")
@click.option("--seed", "-s", type=int, default=1, show_default=True, help="Seed of the randomized configurations.")
@click.option(
    "--job",
    "jobs",
    multiple=True,
    type=click.Choice(["keyed-agg", "q3-join", "chain", "stateless-mid", "stateless-sink"]),
    help="Restrict to these jobs (repeatable; default: keyed-agg, q3-join, chain).",
)
@click.option(
    "--mode",
    "modes",
    multiple=True,
    type=click.Choice(["aligned", "unaligned", "timeout", "at-least-once"]),
    help="Restrict to these modes (repeatable).",
)
@click.option(
    "--output",
    "-o",
    "out_dir",
    type=click.Path(file_okay=False),
    default="flink-campaign",
    show_default=True,
    help="Where traces of violations (and campaign.json) go.",
)
@click.option("--keep-clean", is_flag=True, help="Also keep the traces of clean runs.")
@click.option(
    "--conf",
    "conf",
    multiple=True,
    help="KEY=VALUE: Flink configuration forced on every run (a focused campaign). Repeatable.",
)
@click.option(
    "--rescale-share",
    type=click.FloatRange(0, 1),
    default=0.25,
    show_default=True,
    help="Share of the runs restored at another parallelism (stop-with-savepoint or failure).",
)
def campaign_cmd(runs, seed, jobs, modes, out_dir, keep_clean, conf, rescale_share) -> None:
    """Randomize job, mode, parallelism, failures and seed; run, check and tabulate.

    Exit 1 if a run in an exactly-once mode violates a property (AT_LEAST_ONCE violations
    are expected and counted as detections)."""
    import orjson

    from snapcheck.flink.campaign import CAMPAIGN_JOBS, run_campaign, sample, summarize
    from snapcheck.flink.run import MODES

    if runs < 1:
        raise UsageError("--traces must be at least 1")
    b = _build()
    rng = random.Random(seed)
    configs = [sample(rng, jobs or CAMPAIGN_JOBS, modes or MODES, rescale_share) for _ in range(runs)]
    forced = _kv(conf, "--conf")
    for c in configs:
        c.conf.update(forced)
    out = Path(out_dir)

    def judge(path: str):
        from snapcheck.traces.errors import TraceErrors

        try:
            j = judge_file(path)
        except TraceErrors as exc:  # only when merge anomalies broke the trace (see run)
            return False, ["flink-anomaly", "invalid-trace"], exc.render()[:600], {}
        return j.ok, j.kinds, j.detail(), j.stats()

    def progress(r) -> None:
        c = r.config
        verdict = "clean" if r.ok else "[red]" + ", ".join(r.kinds) + "[/]"
        if r.stats.get("faults_not_exercised"):
            verdict += f" [yellow](failure not fired: {r.stats['faults_not_exercised']})[/]"
        console.print(
            f"{r.index + 1:>4}/{runs} {c.job:<9} {c.mode:<13} p={c.parallelism}"
            f"{'→' + c.rescale if c.rescale else ''} "
            f"fail={','.join(c.fails) or '-':<24} {r.seconds:5.1f}s {r.status:<9} {verdict}"
        )

    t0 = time.monotonic()
    rows = run_campaign(configs, b, out, judge, keep_clean, progress)
    table = Table(
        title=f"Flink campaign: {runs} runs, seed {seed}, {time.monotonic() - t0:.0f} s", title_justify="left"
    )
    for col in (
        "mode",
        "runs",
        "with recovery",
        "rescaled",
        "clean",
        "violating",
        "kinds (runs)",
        "checkpoints",
        "replayed from channel state",
        "mean s",
    ):
        table.add_column(col)
    summary = summarize(rows)
    for mode, d in sorted(summary.items()):
        kinds = ", ".join(f"{k} ({n})" for k, n in sorted(d["kinds"].items())) or "-"
        table.add_row(
            mode,
            str(d["runs"]),
            str(d["with_failure"]),
            str(d["rescaled"]),
            str(d["clean"]),
            str(d["violations"]),
            kinds,
            str(d["rounds"]),
            str(d["replayed"]),
            f"{d['seconds'] / d['runs']:.1f}",
        )
    console.print(table)
    bad = [r for r in rows if not r.ok and r.exactly_once]
    for r in bad:
        console.print(
            f"[red]violation[/] in run {r.index} ({r.config.mode}): {', '.join(r.kinds)}; "
            f"trace {r.trace or '-'}\n  reproduce: {r.config.command()}\n  " + r.detail.replace("\n", "\n  "),
            markup=True,
        )
    alo = [r for r in rows if r.config.mode == "at-least-once"]
    if alo:
        found = sum(1 for r in alo if not r.ok)
        console.print(
            f"AT_LEAST_ONCE: violations detected in {found}/{len(alo)} runs "
            f"({sum(1 for r in alo if r.stats.get('restores'))} with a recovery)."
        )
    doc = {
        "runs": runs,
        "seed": seed,
        "jobs": list(jobs),
        "modes": list(modes),
        "conf": forced,
        "summary": summary,
        "rows": [
            {
                "index": r.index,
                "job": r.config.job,
                "mode": r.config.mode,
                "parallelism": r.config.parallelism,
                "fails": r.config.fails,
                "rescale": r.config.rescale,
                "status": r.status,
                "ok": r.ok,
                "kinds": r.kinds,
                "seconds": round(r.seconds, 2),
                "stats": r.stats,
                "trace": r.trace,
                "command": r.config.command(),
                "detail": r.detail,
            }
            for r in rows
        ],
    }
    from snapcheck.traces.atomic import write_atomic

    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "campaign.json", orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    if bad:
        sys.exit(EXIT_VIOLATION)


def register(group: click.Group) -> None:
    group.add_command(flink)
