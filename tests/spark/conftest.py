"""One local Spark session for every Spark test (starting the JVM is the expensive part)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from spark.session import spark_session

    session = spark_session("local[2]", app_name="dmq-capacity-tests", shuffle_partitions=2)
    yield session
    session.stop()
