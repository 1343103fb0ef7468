"""One Spark session (local[2], quiet logs) shared by every Spark test of the run: starting
one costs about 8 s, so the fixture is session-scoped and the tests are few and small."""

import pytest


@pytest.fixture(scope="session")
def spark():
    from snapcheck.spark_validation.session import get_session, stop_session

    session = get_session("local[2]")
    yield session
    stop_session()
