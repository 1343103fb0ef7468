#!/usr/bin/env bash
# snapcheck quickstart, for a fresh Debian/Ubuntu machine with Python 3.11+.
#
#   ./quickstart.sh [ARGS]       set everything up, then run the main job (snapcheck verify-all ARGS)
#   ./quickstart.sh test [ARGS]  set everything up, then run the test suite (pytest ARGS)
#
# Setup (scripts/bootstrap.sh) creates .venv, installs snapcheck with its
# dependencies, and checks for Java 17+ (installing it with apt-get when run as
# root, otherwise printing the exact command). Arguments after the mode go to
# the main job or to pytest; `run` may be left out (./quickstart.sh --skip-specs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
mode=run
if [ $# -gt 0 ] && { [ "$1" = run ] || [ "$1" = test ]; }; then
    mode="$1"
    shift
fi
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
esac
