"""The Spark session the jobs share: local mode unless a master is given.

Local mode (``local[*]``) needs nothing but a Java runtime, so the report runs on an
operator's laptop; ``--master spark://...`` (or ``yarn``, ``k8s://...``) runs the same jobs on
a cluster. The settings below make small jobs fast and results reproducible: UTC for every
timestamp, partition values kept as strings (node names look like numbers sometimes), and a
re-ingested run replacing only its own partitions.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DEFAULT_MASTER", "SparkUnavailable", "spark_session"]

DEFAULT_MASTER = "local[*]"


class SparkUnavailable(RuntimeError):
    """Spark (pyspark or its Java runtime) cannot start; the message says what is missing."""


def spark_session(
    master: str | None = None,
    *,
    app_name: str = "dmq-capacity",
    shuffle_partitions: int | None = None,
    driver_memory: str | None = None,
) -> "SparkSession":
    """A session on ``master`` (default ``local[*]``); reuses the running one if any."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise SparkUnavailable(f"pyspark is not installed ({exc}); install the 'spark' extra") from None
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    master = master or DEFAULT_MASTER
    log_config = Path(__file__).with_name("log4j2.properties")
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.driver.extraJavaOptions", f"-Dlog4j.configurationFile={log_config.as_uri()}")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.sources.partitionOverwriteMode", "dynamic")
        .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
        .config("spark.sql.adaptive.enabled", "true")
    )
    if master.startswith("local"):
        # Local mode talks to itself only: keep the driver on loopback.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
        if shuffle_partitions is None:
            shuffle_partitions = 2 * (os.cpu_count() or 2)
    if shuffle_partitions is not None:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    if driver_memory is not None:
        builder = builder.config("spark.driver.memory", driver_memory)
    try:
        session = builder.getOrCreate()
    except Exception as exc:  # JAVA_HOME unset, no java on PATH, a master that does not answer
        raise SparkUnavailable(f"cannot start Spark on {master}: {str(exc).strip().splitlines()[0]}") from None
    session.sparkContext.setLogLevel("ERROR")
    return session
