#!/usr/bin/env bash
# snapcheck quickstart, for a fresh Debian/Ubuntu machine with Python 3.11+.
#
#   ./quickstart.sh         set everything up, then run the main job on the embedded default
#   ./quickstart.sh test    set everything up, then run the whole test suite
#
# Setup (scripts/bootstrap.sh) creates .venv, installs snapcheck with its
# dependencies, and checks for Java 17+ (installing it with apt-get when run as
# root, otherwise printing the exact command). Extra arguments are passed on
# (to `snapcheck verify-all`, or to pytest).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
mode="${1:-run}"
[ $# -gt 0 ] && shift
bash scripts/bootstrap.sh
case "$mode" in
    run)
        exec .venv/bin/snapcheck verify-all "$@"
        ;;
    test)
        set +e
        .venv/bin/python -m pytest -n 2 --dist loadfile "$@"
        rc=$?
        set -e
        if [ "$rc" = 5 ]; then
            echo "quickstart: pytest collected no tests: the test suite is missing or mis-configured" >&2
            exit 1
        fi
        exit "$rc"
        ;;
    *)
        echo "usage: ./quickstart.sh [run|test] [ARGS...]" >&2
        exit 2
        ;;
esac
