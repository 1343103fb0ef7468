"""One shared, quiet Spark session per process (docs/spark.md, "Spark settings").

``get_session(master)`` starts the session on first use and returns the same one
afterwards; start-up costs about 8 s before useful work, so every caller in a
process (CLI, tests, benchmarks) shares it. Settings that mattered on the
2-core reference machine:

* Python worker reuse on (tasks cost ≈30 ms with it, 150–330 ms without);
* ``SPARK_LOCAL_IP=127.0.0.1`` for local masters, a log4j2 configuration for
  the driver that only lets errors through (none of the failed-task reports,
  whose exception reaches the caller anyway), and no console progress bar:
  stderr stays clean (executors of a cluster log as the cluster configures);
* driver memory set before the JVM starts (``spark.driver.memory``);
* Arrow batches of 10,000 rows.

Which Python the executors run (``PYSPARK_PYTHON``): on a local master the
driver's own interpreter (same machine: pyarrow and the kit are there); on a
cluster with shipping on (the default, ``shipping``) the packed environment's
``./environment/bin/python``; ``spark.pyspark.python`` given in ``conf`` wins
over both (the environment is then not packed); otherwise the executors'
own default. ``conf`` holds Spark settings passed through (``--conf``), applied
after the defaults above.

A cluster that cannot be reached (a ``spark://`` master that refuses the
connection or gives the application no executor, a session that cannot start)
is a ``UsageError`` naming the master.
"""

import os
import sys
import tempfile

DEFAULT_MASTER = "local[*]"

_LOG4J2 = """\
status = error
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.spark.name = org.apache.spark
logger.spark.level = error
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
logger.parquet.name = org.apache.parquet
logger.parquet.level = error
logger.executor.name = org.apache.spark.executor.Executor
logger.executor.level = off
logger.tasks.name = org.apache.spark.scheduler.TaskSetManager
logger.tasks.level = off
logger.writer.name = org.apache.spark.sql.execution.datasources.FileFormatWriter
logger.writer.level = off
"""

_session = None
_master = None


def _log4j2_file() -> str:
    path = os.path.join(tempfile.gettempdir(), f"snapcheck-log4j2-{os.getuid()}.properties")
    if not os.path.exists(path) or open(path).read() != _LOG4J2:
        tmp = path + f".{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(_LOG4J2)
        os.replace(tmp, path)
    return path


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def local_cores(master: str) -> int:
    """Number of cores a ``local[N]`` / ``local[*]`` master uses."""
    if master == "local":
        return 1
    inner = master[len("local[") : -1].split(",")[0]
    return os.cpu_count() or 1 if inner == "*" else int(inner)


EXECUTOR_WAIT_S = 120  # how long a spark:// master may take to give the application an executor


def get_session(
    master: str | None = None,
    driver_memory: str = "2g",
    app_name: str = "snapcheck",
    conf: dict | None = None,
    ship: bool | None = None,
    protocols=(),
):
    """The process's Spark session, started on first call (``master`` defaults to local[*]).

    ``conf``: Spark settings (they win over the defaults). ``ship``: send the kit and its
    Python environment to the executors (default: on for cluster masters, not possible on a
    local one). ``protocols``: specs of the campaign's protocols and mutants; the modules of
    user classes among them are sent to the executors (``shipping.ship_user_modules``).

    ``master=None`` takes the running session, whatever its master. Asking for a
    different master than the running session's is a usage error: Spark allows
    one SparkContext per process (``stop_session`` first).
    """
    global _session, _master
    from snapcheck.traces.errors import UsageError

    if master is not None and master != _master:
        _check_reachable(master)  # an unreachable cluster is the error to report, whatever runs
    if _session is not None:
        if master is not None and master != _master:
            raise UsageError(
                f"a Spark session with master {_master!r} is already running in this process; "
                f"cannot switch to {master!r}"
            )
    else:
        _session = _start(master or DEFAULT_MASTER, driver_memory, app_name, dict(conf or {}), ship)
        _master = master or DEFAULT_MASTER
    if protocols:
        from snapcheck.spark_validation.shipping import ship_user_modules, user_protocols

        ship_user_modules(_session.sparkContext, user_protocols(protocols))
    return _session


def _start(master: str, driver_memory: str, app_name: str, conf: dict, ship: bool | None):
    from snapcheck.traces.errors import UsageError

    local = is_local(master)
    if ship and local:
        raise UsageError(
            f"--ship sends the kit to a cluster's executors; master {master!r} runs them in this "
            "process's machine already"
        )
    ship = not local if ship is None else ship
    python = conf.get("spark.pyspark.python")
    kit = None
    if ship:
        from snapcheck.spark_validation.shipping import ENV_DIR, ENV_PYTHON, build_kit, pack_environment

        kit = build_kit()  # added to the context below: spark.submit.pyFiles is read only by the
        if python is None:  # spark-submit that starts the process's JVM, not by a later context
            _append(conf, "spark.archives", f"{pack_environment()}#{ENV_DIR}")
            python = ENV_PYTHON
    if python is None and local:
        python = sys.executable
    if python is not None:
        os.environ["PYSPARK_PYTHON"] = python
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    java_opts = f"-Dlog4j2.configurationFile=file:{_log4j2_file()} -Dlog4j.configurationFile=file:{_log4j2_file()}"
    settings = {
        "spark.driver.memory": driver_memory,
        "spark.driver.extraJavaOptions": java_opts,
        "spark.python.worker.reuse": "true",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.constraintPropagation.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        # Spark starts its Python workers with ``python -m``, which puts the current directory
        # first on their sys.path: a user's random.py there would replace the standard module
        # in every worker. The user's protocol modules reach the workers by addPyFile instead.
        "spark.executorEnv.PYTHONSAFEPATH": "1",
    }
    if local:
        cores = local_cores(master)
        settings.update(
            {
                "spark.ui.enabled": "false",
                "spark.sql.shuffle.partitions": str(max(2, 2 * cores)),
                "spark.default.parallelism": str(max(1, cores)),
                "spark.driver.host": "127.0.0.1",
                "spark.driver.bindAddress": "127.0.0.1",
            }
        )
    settings.update(conf)
    b = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        b = b.config(key, value)
    try:
        _launch_jvm(master, app_name, settings)
        session = b.getOrCreate()
    except Exception as exc:  # py4j / JVM start-up errors: Java, the machine, the cluster or the settings
        raise UsageError(
            f"cannot start a Spark session on {master}: {_first_line(exc)} (what Java said, if anything, is above)"
        ) from None
    if master.startswith("spark://"):
        _wait_for_executors(session, master)
    session.sparkContext.setLogLevel("ERROR")
    if kit is not None:
        session.sparkContext.addPyFile(kit)
    return session


# What the JVM prints on every start that is noise to a snapcheck user: Spark's launcher adds the
# incubating vector module, and Java 17 warns that it is used.
JVM_NOISE = ("WARNING: Using incubator modules",)


def _launch_jvm(master: str, app_name: str, settings: dict) -> None:
    """Start the process's Spark JVM (py4j gateway) with its standard error read by a thread
    that passes every line on to ours except ``JVM_NOISE`` (pyspark would otherwise let the
    JVM write to our standard error directly). The session built next uses this gateway."""
    import threading

    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    conf = SparkConf().setMaster(master).setAppName(app_name).setAll(list(settings.items()))

    def forward(stream) -> None:
        with stream:
            for raw in iter(stream.readline, b""):
                line = raw.decode(errors="replace")
                if not line.startswith(JVM_NOISE):
                    sys.stderr.write(line)
                    sys.stderr.flush()

    # read from before the start: a JVM that dies starting (a bad option, no memory) says why
    read_end, write_end = os.pipe()
    threading.Thread(target=forward, args=(os.fdopen(read_end, "rb"),), name="spark-jvm-stderr", daemon=True).start()
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stderr": write_end})
    finally:
        os.close(write_end)  # (the JVM holds its own copy)
    SparkContext._gateway = gateway
    SparkContext._jvm = gateway.jvm


def _append(conf: dict, key: str, value: str) -> None:
    conf[key] = f"{conf[key]},{value}" if conf.get(key) else value


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:300]


def _check_reachable(master: str) -> None:
    """A ``spark://host:port[,host:port…]`` master must accept a TCP connection (on one of its
    hosts); other cluster managers are reached by Spark itself."""
    import socket

    from snapcheck.traces.errors import UsageError

    if not master.startswith("spark://"):
        return
    errors = []
    for hostport in master[len("spark://") :].split(","):
        host, _, port = hostport.rpartition(":")
        if not host or not port.isdigit():
            raise UsageError(f"master {master!r}: expected spark://HOST:PORT")
        try:
            with socket.create_connection((host, int(port)), timeout=5):
                return
        except OSError as exc:
            errors.append(f"{hostport}: {exc.strerror or exc}")
    raise UsageError(f"cannot reach the Spark master {master} ({'; '.join(errors)})")


def _wait_for_executors(session, master: str) -> None:
    """Wait until the standalone master gave the application an executor (a master without
    workers, or whose workers lack the cores or memory asked for, would leave the job waiting
    without a word)."""
    import time

    from snapcheck.traces.errors import UsageError

    sc = session.sparkContext
    deadline = time.monotonic() + EXECUTOR_WAIT_S
    while time.monotonic() < deadline:
        if sc._jsc.sc().getExecutorMemoryStatus().size() > 1:  # the driver's block manager is one
            return
        time.sleep(0.5)
    memory = sc.getConf().get("spark.executor.memory", "1g")
    session.stop()
    raise UsageError(
        f"the Spark master {master} gave this application no executor within {EXECUTOR_WAIT_S} s "
        f"(no worker alive, or none with a free core and {memory} of memory)"
    )


def check_visible(path: str) -> None:
    """The driver must see the Parquet files that executors wrote under ``path``: an output
    directory on a disk of the driver's own (not shared with the executors) holds only Spark's
    commit marker here. Not seeing them is a ``UsageError`` naming the directory."""
    from snapcheck.traces.errors import UsageError

    if not any(f.endswith(".parquet") for f in (os.listdir(path) if os.path.isdir(path) else ())):
        raise UsageError(
            f"{os.path.dirname(path) or path}: the files the Spark executors wrote are not visible "
            "on the driver; give --output a directory the driver and every executor share "
            "(HDFS, S3, NFS)"
        )


def executor_environment_error(exc: BaseException, master: str | None):
    """A ``UsageError`` for a cluster job that failed because the executors' Python lacks a module
    (nothing shipped and nothing installed there), else None: that is the cluster's setup, not a
    bug of the kit."""
    import re

    from snapcheck.traces.errors import UsageError

    if master is None or is_local(master):
        return None
    m = re.search(r"No module named '([\w.]+)'", str(exc))
    if not m:
        return None
    return UsageError(
        f"the Python of the executors of {master} cannot import {m.group(1)!r}: let snapcheck ship "
        "its environment (--ship, the default on clusters), or install the kit and its dependencies "
        "there and point spark.pyspark.python at that Python"
    )


def default_parallelism() -> int:
    """Cores available to the running session (local[N] → N, cluster → total executor cores)."""
    return max(1, _session.sparkContext.defaultParallelism) if _session is not None else 1


def stop_session() -> None:
    """Stop the shared session (tests and benchmarks that switch masters)."""
    global _session, _master
    if _session is not None:
        _session.stop()
        _session = None
        _master = None
