"""One shared, quiet Spark session per process (docs/spark.md, "Spark settings").

``get_session(master)`` starts the session on first use and returns the same one
afterwards; start-up costs about 8 s before useful work, so every caller in a
process (CLI, tests, benchmarks) shares it. Settings that mattered on the
2-core reference machine:

* ``PYSPARK_PYTHON`` = the driver's interpreter, so Python workers see pyarrow
  and the project's modules;
* Python worker reuse on (tasks cost ≈30 ms with it, 150–330 ms without);
* ``SPARK_LOCAL_IP=127.0.0.1`` for local masters, a log4j2 configuration that
  only lets errors through, and no console progress bar: stderr stays clean;
* driver memory set before the JVM starts (``spark.driver.memory``);
* Arrow batches of 10,000 rows.

A real cluster is reached with ``master="spark://host:7077"`` (or ``yarn``,
``k8s://…``); the executors then need the same Python environment (this
project installed, pyarrow, pandas), see docs/spark.md.
"""

from __future__ import annotations

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
    inner = master[len("local["):-1].split(",")[0]
    return os.cpu_count() or 1 if inner == "*" else int(inner)


def get_session(master: str | None = None, driver_memory: str = "2g", app_name: str = "snapcheck"):
    """The process's Spark session, started on first call (``master`` defaults to local[*]).

    ``master=None`` takes the running session, whatever its master. Asking for a
    different master than the running session's is a usage error: Spark allows
    one SparkContext per process (``stop_session`` first).
    """
    global _session, _master
    if _session is not None:
        if master is not None and master != _master:
            from snapcheck.traces.errors import UsageError

            raise UsageError(f"a Spark session with master {_master!r} is already running in this process; "
                             f"cannot switch to {master!r}")
        return _session
    master = master or DEFAULT_MASTER
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    if is_local(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    java_opts = f"-Dlog4j2.configurationFile=file:{_log4j2_file()} -Dlog4j.configurationFile=file:{_log4j2_file()}"
    b = (SparkSession.builder.master(master).appName(app_name)
         .config("spark.driver.memory", driver_memory)
         .config("spark.driver.extraJavaOptions", java_opts)
         .config("spark.executor.extraJavaOptions", java_opts)
         .config("spark.python.worker.reuse", "true")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.execution.arrow.pyspark.enabled", "true")
         .config("spark.sql.execution.arrow.maxRecordsPerBatch", "10000")
         .config("spark.sql.adaptive.enabled", "true")
         .config("spark.sql.constraintPropagation.enabled", "false")
         .config("spark.sql.session.timeZone", "UTC"))
    if is_local(master):
        cores = local_cores(master)
        b = (b.config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", str(max(2, 2 * cores)))
             .config("spark.default.parallelism", str(max(1, cores)))
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1"))
    _session = b.getOrCreate()
    _session.sparkContext.setLogLevel("ERROR")
    _master = master
    return _session


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
