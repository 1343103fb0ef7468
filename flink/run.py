"""Run one traced Flink job in a local MiniCluster (one JVM) and merge its trace.

``RunConfig`` is everything that defines a run; ``RunConfig.command()`` is the
``snapcheck flink run`` command line that repeats it. The run is not bit-for-bit
reproducible (thread interleavings, barrier timing and the rebalance start differ
between runs), but the data, the configuration and the failure points are.
"""

from __future__ import annotations

import shlex
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from snapcheck.flink.build import Build, FlinkSetupError
from snapcheck.flink.merge import MergeResult, merge_run

JOBS = ("keyed-agg", "q3-join", "chain", "stateless-mid", "stateless-sink")
MODES = ("aligned", "unaligned", "timeout", "at-least-once")
EXACTLY_ONCE_MODES = ("aligned", "unaligned", "timeout")
# Traced operators of each job (failure injection targets) and which read a source.
OPERATORS = {
    "keyed-agg": ("src", "agg", "sink"),
    "q3-join": ("persons", "pfilter", "auctions", "afilter", "join", "sink"),
    "chain": ("src", "parse", "enrich", "score", "sink"),
    "stateless-mid": ("src", "relay", "sink"),
    "stateless-sink": ("src", "agg", "sink"),
}
RESCALE_KINDS = ("savepoint", "failure")


def parse_rescale(spec: str) -> tuple[str, int, int | None]:
    """``KIND:P[@MS]`` -> (kind, new parallelism, stop time in ms or None).

    >>> parse_rescale("savepoint:3@800"), parse_rescale("failure:1")
    (('savepoint', 3, 800), ('failure', 1, None))
    """
    kind, _, rest = spec.partition(":")
    par, _, at = rest.partition("@")
    if kind not in RESCALE_KINDS or not par.isdigit() or (at and not at.isdigit()) or (at and kind != "savepoint"):
        raise ValueError(f"bad --rescale {spec!r}: expected savepoint:P[@MS] or failure:P")
    if not 1 <= int(par) <= 16:
        raise ValueError(f"bad --rescale {spec!r}: parallelism {par} out of range 1..16")
    return kind, int(par), int(at) if at else None


@dataclass
class RunConfig:
    job: str = "keyed-agg"
    mode: str = "aligned"
    parallelism: int = 2
    records: int = 1000  # per source subtask
    rate: float = 1000.0  # records per second per source subtask (0 = unthrottled)
    interval_ms: int = 100  # checkpoint interval
    fails: list[str] = field(default_factory=list)  # OP:SUBTASK:COUNT or OP:SUBTASK:@MS
    seed: int = 0
    timeout_s: int = 120
    quiet_ms: int = 500
    work: dict[str, int] = field(default_factory=dict)  # OP -> simulated microseconds per record
    buffer_timeout_ms: int = 100
    restart_delay_ms: int = 100
    aligned_timeout_ms: int = 10
    conf: dict[str, str] = field(default_factory=dict)  # extra Flink configuration
    heap_mb: int = 1024
    rescale: str | None = None  # KIND:P[@MS]: restore the job at parallelism P (see parse_rescale)

    def validate(self) -> None:
        if self.job not in JOBS:
            raise ValueError(f"unknown job {self.job!r} (known: {', '.join(JOBS)})")
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r} (known: {', '.join(MODES)})")
        if not 1 <= self.parallelism <= 16:
            raise ValueError(f"parallelism {self.parallelism} out of range 1..16")
        for spec in self.fails:
            parts = spec.split(":")
            if (
                len(parts) != 3
                or not parts[1].isdigit()
                or not (parts[2].isdigit() or (parts[2][:1] == "@" and parts[2][1:].isdigit()))
            ):
                raise ValueError(f"bad failure spec {spec!r}: expected OP:SUBTASK:COUNT or OP:SUBTASK:@MS")
            if parts[0] not in OPERATORS[self.job]:
                raise ValueError(
                    f"bad failure spec {spec!r}: job {self.job} has operators {', '.join(OPERATORS[self.job])}"
                )
            if int(parts[1]) >= self.parallelism:
                raise ValueError(f"bad failure spec {spec!r}: subtask {parts[1]} >= parallelism {self.parallelism}")
        for op in self.work:
            if op not in OPERATORS[self.job]:
                raise ValueError(f"--work names {op!r}, not an operator of {self.job}")
        if self.rescale is not None:
            kind, _, _ = parse_rescale(self.rescale)
            if kind == "failure" and not self.fails:
                raise ValueError(
                    "--rescale failure:P needs a --fail: the job fails for good at the first injected "
                    "failure and is restored at parallelism P from its latest retained checkpoint"
                )

    def java_args(self, out_dir: str) -> list[str]:
        args = [
            "--job",
            self.job,
            "--mode",
            self.mode,
            "--parallelism",
            str(self.parallelism),
            "--records",
            str(self.records),
            "--rate",
            str(self.rate),
            "--interval",
            str(self.interval_ms),
            "--seed",
            str(self.seed),
            "--timeout",
            str(self.timeout_s),
            "--quiet",
            str(self.quiet_ms),
            "--buffer-timeout",
            str(self.buffer_timeout_ms),
            "--restart-delay",
            str(self.restart_delay_ms),
            "--aligned-timeout",
            str(self.aligned_timeout_ms),
            "--out",
            out_dir,
        ]
        for f in self.fails:
            args += ["--fail", f]
        for op, us in self.work.items():
            args += ["--work", f"{op}={us}"]
        for k, v in self.conf.items():
            args += ["--conf", f"{k}={v}"]
        if self.rescale:
            args += ["--rescale", self.rescale]
        return args

    def command(self, out: str = "trace.jsonl") -> str:
        """The ``snapcheck flink run`` command that repeats this run."""
        d = RunConfig()
        parts = [
            "snapcheck",
            "flink",
            "run",
            "--job",
            self.job,
            "--mode",
            self.mode,
            "--parallelism",
            str(self.parallelism),
            "--seed",
            str(self.seed),
        ]
        for f in self.fails:
            parts += ["--fail", f]
        for name, flag in (
            ("records", "--records"),
            ("rate", "--rate"),
            ("interval_ms", "--interval"),
            ("buffer_timeout_ms", "--buffer-timeout"),
            ("restart_delay_ms", "--restart-delay"),
            ("aligned_timeout_ms", "--aligned-timeout"),
            ("timeout_s", "--timeout"),
            ("quiet_ms", "--quiet"),
        ):
            v = getattr(self, name)
            if name == "aligned_timeout_ms" and self.mode != "timeout":
                continue
            if v != getattr(d, name):
                parts += [flag, str(v)]
        for op, us in self.work.items():
            parts += ["--work", f"{op}={us}"]
        for k, v in self.conf.items():
            parts += ["--conf", f"{k}={v}"]
        if self.rescale:
            parts += ["--rescale", self.rescale]
        parts += ["-o", out]
        return shlex.join(parts)


@dataclass
class RunOutcome:
    config: RunConfig
    run_dir: Path
    seconds: float
    merged: MergeResult

    @property
    def status(self) -> str:
        return self.merged.header["metadata"]["flink"]["status"]


def run_job(cfg: RunConfig, run_dir: str | Path, build: Build) -> RunOutcome:
    """Run ``cfg`` with the jar of ``build``; the per-subtask files, ``run.json`` and the JVM's
    log (``java.log``) go to ``run_dir``; returns the merged trace."""
    cfg.validate()
    run_dir = Path(run_dir)
    if run_dir.exists() and any(run_dir.iterdir()):
        raise FlinkSetupError(f"run directory {run_dir} is not empty")
    run_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    # Flink's mini cluster leaves its blob, I/O and shuffle directories in the JVM's temporary
    # directory: a private one, removed after the run
    with open(run_dir / "java.log", "wb") as log, tempfile.TemporaryDirectory(prefix="snapcheck-flink-") as tmp:
        cmd = build.java_command("snapcheck.flink.Main", cfg.java_args(str(run_dir)), cfg.heap_mb, tmp)
        try:
            res = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=cfg.timeout_s + 120)
        except subprocess.TimeoutExpired:
            raise FlinkSetupError(
                f"the Flink JVM did not exit within {cfg.timeout_s + 120} s (log: {run_dir / 'java.log'})"
            ) from None
    seconds = time.monotonic() - t0
    if res.returncode != 0 or not (run_dir / "run.json").exists():
        tail = (run_dir / "java.log").read_text(errors="replace")[-3000:]
        raise FlinkSetupError(f"the Flink run failed (exit {res.returncode}); end of {run_dir / 'java.log'}:\n{tail}")
    return RunOutcome(cfg, run_dir, seconds, merge_run(str(run_dir)))
