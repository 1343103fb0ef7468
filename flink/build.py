"""Compile the Java instrumentation library and jobs (``flink/java``) with ``javac`` against the
jars of a PyPI package ``apache-flink-libraries`` (module ``pyflink``), into a cached jar.

No Maven and no downloads: the classpath is ``pyflink/lib/*.jar`` (flink-dist and its
dependencies), from the installed package or from the ``pyflink`` directory given as ``home``
(``--flink-home``, or ``SNAPCHECK_FLINK_HOME``), e.g. a second environment holding another
release. The adapter supports two lines of Flink; what differs between them is confined to one
class, ``Compat``: ``flink/java/compat/flink-2`` for Flink 2.x and ``flink/java/compat/flink-1.17``
for 1.17, and the build compiles the one that matches the Flink version (``compat_line``). The jar
is cached under ``$SNAPCHECK_CACHE/flink/<key>/`` (default ``~/.cache/snapcheck``), where ``key``
hashes the Java sources, the Flink version and the ``javac`` version, so a second ``build()`` with
nothing changed only hashes a few files.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

JAVA_SRC = Path(__file__).resolve().parent / "java"
JAR_NAME = "snapcheck-flink.jar"
LOG4J = """\
rootLogger.level = WARN
rootLogger.appenderRef.console.ref = console
appender.console.name = console
appender.console.type = Console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss,SSS} %-5p %c{1} - %m%n
"""
# Flink 2.x on Java 17 needs these (from Flink's default env.java.opts.all).
JAVA_OPENS = [
    f"--add-opens=java.base/{p}=ALL-UNNAMED"
    for p in (
        "java.lang",
        "java.lang.reflect",
        "java.io",
        "java.net",
        "java.nio",
        "sun.nio.ch",
        "java.text",
        "java.time",
        "java.util",
        "java.util.concurrent",
        "java.util.concurrent.atomic",
        "java.util.concurrent.locks",
    )
]


class FlinkSetupError(Exception):
    """The JDK or the Flink package is missing, or the Java sources do not compile."""


@dataclass(frozen=True)
class Build:
    jar: Path
    flink_lib: Path
    flink_version: str
    java: str
    log4j: Path
    cached: bool

    def classpath(self) -> str:
        return os.pathsep.join([str(self.jar), str(self.flink_lib / "*")])

    def java_command(self, main: str, args: list[str], heap_mb: int = 1024, tmp: str | None = None) -> list[str]:
        """The JVM command running ``main``; ``tmp``: its temporary directory (Flink's mini
        cluster keeps its blobs, I/O spill and shuffle files there)."""
        return [
            self.java,
            f"-Xmx{heap_mb}m",
            *([f"-Djava.io.tmpdir={tmp}"] if tmp else []),
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            *JAVA_OPENS,
            f"-Dlog4j2.configurationFile={self.log4j}",
            "-cp",
            self.classpath(),
            main,
            *args,
        ]


def flink_home(home: str | Path | None = None) -> tuple[Path, str]:
    """The pyflink directory (``home``, else ``$SNAPCHECK_FLINK_HOME``, else the installed package)
    and its Flink version (without importing pyflink)."""
    home = home or os.environ.get("SNAPCHECK_FLINK_HOME")
    if home:
        home = Path(home)
        if not home.is_dir():
            raise FlinkSetupError(f"Flink home {home} is not a directory (expected a pyflink directory with lib/)")
    else:
        spec = importlib.util.find_spec("pyflink")
        if spec is None or not spec.submodule_search_locations:
            raise FlinkSetupError(
                "the Flink jars are missing: the PyPI package apache-flink-libraries is not "
                "installed (install the project's 'flink' extra: pip install -e '.[flink]')"
            )
        home = Path(list(spec.submodule_search_locations)[0])
    lib = home / "lib"
    if not any(lib.glob("flink-dist-*.jar")):
        raise FlinkSetupError(f"{lib} has no flink-dist jar: apache-flink-libraries looks incomplete; reinstall it")
    version = None
    vfile = home / "version.py"
    if vfile.exists():
        m = re.search(r"__version__\s*=\s*[\"']([^\"']+)", vfile.read_text())
        version = m.group(1) if m else None
    if version is None:
        m = re.match(r"flink-dist-(.+)\.jar", next(lib.glob("flink-dist-*.jar")).name)
        version = m.group(1)
    return home, version


def jdk() -> tuple[str, str, str]:
    """(javac, java, javac version); needs a JDK 11 or newer. The version of a given javac binary
    (path, mtime, size) is remembered in the cache, so a cached build starts no JVM."""
    home = os.environ.get("JAVA_HOME")
    cands = [Path(home) / "bin"] if home else []
    javac = next((str(d / "javac") for d in cands if (d / "javac").exists()), None) or shutil.which("javac")
    java = next((str(d / "java") for d in cands if (d / "java").exists()), None) or shutil.which("java")
    if not javac or not java:
        raise FlinkSetupError(
            "no JDK found: 'javac' and 'java' are needed (install a JDK 17, e.g. "
            "apt-get install openjdk-17-jdk-headless, or set JAVA_HOME)"
        )
    real = os.path.realpath(javac)
    st = os.stat(real)
    memo = cache_root() / "javac-version"
    stamp = f"{real}\t{st.st_mtime_ns}\t{st.st_size}\t"
    if memo.exists():
        line = memo.read_text()
        if line.startswith(stamp):
            return javac, java, line[len(stamp) :].strip()
    try:
        out = subprocess.run([javac, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FlinkSetupError(f"cannot run {javac}: {exc}") from None
    text = (out.stdout + out.stderr).strip()
    m = re.search(r"javac (\d+)", text)
    if not m or int(m.group(1)) < 11:
        raise FlinkSetupError(f"{javac} reports {text!r}: Flink 2.x needs a JDK 11 or newer (17 recommended)")
    memo.parent.mkdir(parents=True, exist_ok=True)
    memo.write_text(stamp + text + "\n")
    return javac, java, text


def compat_line(version: str) -> str:
    """The adapter's source line for a Flink version: ``flink-2`` or ``flink-1.17``.

    >>> compat_line("2.3.0"), compat_line("1.17.1")
    ('flink-2', 'flink-1.17')
    """
    m = re.match(r"(\d+)\.(\d+)", version)
    if m and int(m.group(1)) >= 2:
        return "flink-2"
    if m and (int(m.group(1)), int(m.group(2))) == (1, 17):
        return "flink-1.17"
    raise FlinkSetupError(f"Flink {version} is not supported: the adapter supports Flink 2.x and 1.17")


def sources(line: str = "flink-2") -> list[Path]:
    """The Java sources of the adapter for one line (the shared ones and that line's ``Compat``)."""
    return sorted(JAVA_SRC.glob("snapcheck/**/*.java")) + sorted((JAVA_SRC / "compat" / line).rglob("*.java"))


def cache_root() -> Path:
    return Path(os.environ.get("SNAPCHECK_CACHE") or Path.home() / ".cache" / "snapcheck") / "flink"


def build(force: bool = False, home: str | Path | None = None) -> Build:
    """The cached jar for the Flink of ``home`` (see ``flink_home``), compiled first if the
    sources, Flink or javac changed (or ``force``)."""
    home, version = flink_home(home)
    javac, java, jv = jdk()
    srcs = sources(compat_line(version))
    if not srcs:
        raise FlinkSetupError(f"no Java sources under {JAVA_SRC}")
    h = hashlib.sha256()
    for p in srcs:
        h.update(str(p.relative_to(JAVA_SRC)).encode() + b"\0" + p.read_bytes() + b"\0")
    h.update(f"flink={version};{jv};{LOG4J}".encode())
    key = h.hexdigest()[:16]
    target = cache_root() / key
    jar = target / JAR_NAME
    log4j = target / "log4j2.properties"
    lib = home / "lib"
    if jar.exists() and log4j.exists() and not force:
        return Build(jar, lib, version, java, log4j, True)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        cmd = [javac, "-nowarn", "-encoding", "UTF-8", "-d", str(classes), "-cp", str(lib / "*"), *map(str, srcs)]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise FlinkSetupError(
                f"javac failed on {JAVA_SRC} against Flink {version}:\n" + (res.stderr or res.stdout)[-4000:]
            )
        staged = Path(tmp) / "out"
        staged.mkdir()
        with zipfile.ZipFile(staged / JAR_NAME, "w", zipfile.ZIP_DEFLATED) as z:
            for f in sorted(classes.rglob("*.class")):
                z.write(f, f.relative_to(classes).as_posix())
        (staged / "log4j2.properties").write_text(LOG4J)
        (staged / "BUILD-INFO").write_text(f"flink {version}\n{jv}\nsources {len(srcs)} files, key {key}\n")
        if target.exists():
            shutil.rmtree(target)
        os.replace(staged, target)
    return Build(jar, lib, version, java, log4j, False)
