#!/usr/bin/env bash
# Sets up everything snapcheck needs on a fresh Debian/Ubuntu machine:
# a virtual environment in .venv with the project installed (editable, with the
# test and Flink extras), and a Java 17+ JDK (Spark and TLC need Java; the Flink
# tracing jobs are compiled with javac). Idempotent and fast on
# re-runs: the install is skipped while pyproject.toml is unchanged.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
py="${PYTHON:-python3}"

if ! "$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
    echo "snapcheck needs Python 3.11 or newer; '$py' is $("$py" --version 2>&1 || echo missing)." >&2
    echo "Install it (Debian/Ubuntu: sudo apt-get install python3 python3-venv) or set PYTHON=/path/to/python3.11." >&2
    exit 2
fi

java_major() {
    java -version 2>&1 | awk -F '"' '/version/ {split($2, v, "."); print (v[1] == "1" ? v[2] : v[1]); exit}'
}
need_java=1
if command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1; then
    major="$(java_major)"
    [ -n "$major" ] && [ "$major" -ge 17 ] && need_java=0
fi
if [ "$need_java" = 1 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "[setup] installing Java 17 (openjdk-17-jdk-headless) with apt-get" >&2
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless >/dev/null
    else
        echo "snapcheck needs a Java 17+ JDK (java and javac) for Spark, TLC and the Flink jobs, and none was found." >&2
        echo "Install it with:  sudo apt-get install -y openjdk-17-jdk-headless   then re-run this command." >&2
        exit 2
    fi
fi

if [ ! -x .venv/bin/python ]; then
    echo "[setup] creating virtual environment .venv" >&2
    "$py" -m venv .venv
fi
stamp=".venv/.snapcheck-installed"
want="$(cat pyproject.toml | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "[setup] installing snapcheck and its dependencies into .venv (first run: about a minute)" >&2
    # pip's and the build backend's chatter goes to a log, shown only when the install fails
    if ! { .venv/bin/python -m pip install -q --upgrade pip && .venv/bin/python -m pip install -q -e '.[dev,flink]'; } \
            > .venv/install.log 2>&1; then
        cat .venv/install.log >&2
        echo "[setup] installing snapcheck failed (log above, also in .venv/install.log)" >&2
        exit 1
    fi
    echo "$want" > "$stamp"
fi
# Compile the Flink tracing library and jobs against the installed Flink jars
# (javac; cached, about a second when nothing changed).
.venv/bin/snapcheck flink build >/dev/null
