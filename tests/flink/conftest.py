"""The jar of the Flink adapter for the real-Flink tests (skipped without a JDK or Flink)."""

from __future__ import annotations

import pytest

from snapcheck.flink.build import FlinkSetupError, build


@pytest.fixture(scope="module")
def jar():
    try:
        return build()
    except FlinkSetupError as exc:
        pytest.skip(f"Flink or the JDK is not available: {exc}")
