"""Project-wide pytest configuration: slow tests run only with --runslow or SNAPCHECK_SLOW=1."""

import os

import pytest

# A ``snapcheck conform`` a test runs starts a warm server (snapcheck.command_server):
# it ends this long after the suite's last one, not five minutes later.
os.environ.setdefault("SNAPCHECK_SERVER_IDLE", "20")


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False, help="also run tests marked slow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow") or os.environ.get("SNAPCHECK_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow or SNAPCHECK_SLOW=1")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def snapcheck_cli(capsys):
    """Run ``snapcheck ARGS`` through ``cli.main`` (its error handling included): returns
    (exit code, stdout), or (exit code, stdout + stderr) with ``stderr=True``."""
    from snapcheck.cli import main

    def _run(*args, stderr: bool = False):
        capsys.readouterr()
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code
        out = capsys.readouterr()
        return code, out.out + out.err if stderr else out.out

    return _run
