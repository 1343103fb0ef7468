"""A Spark standalone cluster on this machine, from the installed pyspark: one master and N
workers bound to 127.0.0.1, for the cluster tests and the cluster benchmark.

``LocalCluster(workers=2, cores=1, python=PATH)`` starts the master and the workers
(``spark-class org.apache.spark.deploy.{master.Master,worker.Worker}``, each in its own
process group, logs in ``workdir``, a new temporary directory unless given), waits until every worker is registered, and stops
them by their process-group ids on exit. ``python`` becomes the workers' default Python
(first on their ``PATH`` and their ``PYSPARK_PYTHON``), e.g. a bare virtual environment to
show that the executors need nothing pre-installed.

>>> LocalCluster(workers=2).url.startswith("spark://127.0.0.1:")
True
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalCluster:
    def __init__(
        self,
        workers: int = 2,
        cores: int = 1,
        memory: str = "1500m",
        python: str | None = None,
        workdir: str | None = None,
        timeout: float = 180,
    ):
        self.workers, self.cores, self.memory, self.python = workers, cores, memory, python
        self.workdir = Path(workdir) if workdir else None  # made by start() when not given
        self.timeout = timeout
        self.port, self.ui_port = free_port(), free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen] = []

    def _env(self) -> dict:
        import pyspark

        home = Path(pyspark.__file__).parent
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_", "VIRTUAL_ENV"))}
        env.update(SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", SPARK_NO_DAEMONIZE="1")
        if self.python:
            env.update(PYSPARK_PYTHON=self.python, PATH=f"{Path(self.python).parent}:{env.get('PATH', '')}")
        return env

    def _start(self, name: str, *args: str) -> subprocess.Popen:
        import pyspark

        assert self.workdir is not None  # made by start()
        log = (self.workdir / f"{name}.log").open("w")
        p = subprocess.Popen(
            ["bash", str(Path(pyspark.__file__).parent / "bin" / "spark-class"), *args],
            env=self._env(),
            cwd=self.workdir,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs.append(p)
        return p

    def log(self, name: str) -> str:
        assert self.workdir is not None  # made by start()
        path = self.workdir / f"{name}.log"
        return path.read_text()[-3000:] if path.exists() else ""

    def start(self) -> LocalCluster:
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="snapcheck-cluster-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self._start(
                "master",
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--webui-port",
                str(self.ui_port),
            )
            for i in range(self.workers):
                self._start(
                    f"worker{i}",
                    "org.apache.spark.deploy.worker.Worker",
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    str(self.cores),
                    "--memory",
                    self.memory,
                    "--work-dir",
                    str(self.workdir / f"work{i}"),
                    "--webui-port",
                    str(free_port()),
                    self.url,
                )
            self._wait()
        except BaseException:
            self.stop()
            raise
        return self

    def alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2) as r:
                return sum(w["state"] == "ALIVE" for w in json.load(r)["workers"])
        except (OSError, ValueError, KeyError):
            return 0

    def _wait(self) -> None:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            for i, p in enumerate(self.procs):
                if p.poll() is not None:
                    name = "master" if i == 0 else f"worker{i - 1}"
                    raise RuntimeError(f"{name} exited with {p.returncode}: {self.log(name)}")
            if self.alive_workers() >= self.workers:
                return
            time.sleep(1)
        raise RuntimeError(f"{self.workers} workers not registered after {self.timeout} s: {self.log('master')}")

    def stop(self) -> None:
        """Stop every process started here, by its process group (the JVM and its children)."""
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.procs = []

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
