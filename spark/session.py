"""The Spark session the jobs share: local mode unless a master is given.

Local mode (``local[*]``) needs nothing but a Java runtime, so the report runs on an
operator's laptop; ``--master spark://...`` (or ``yarn``, ``k8s://...``) runs the same jobs on
a cluster, and ``--start-cluster N`` on a standalone cluster started for the run
(:mod:`spark.cluster`). The settings below make small jobs fast and results reproducible: UTC
for every timestamp, partition values kept as strings (node names look like numbers
sometimes), a re-ingested run replacing only its own partitions, and as many shuffle
partitions as the cluster has cores (``defaultParallelism``), not Spark's fixed 200 that
leave a small cluster scheduling empty tasks.

Everything that can be checked before the JVM starts is checked first and reported in one
line: a missing Java runtime, a ``spark://`` master that does not answer (Spark itself would
retry for a minute), a running session on another master (it is never silently reused).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import shutil
import socket
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from spark.failures import root_cause
from spark.options import SparkOptions

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from spark.progress import Progress

__all__ = ["DEFAULT_MASTER", "SparkUnavailable", "spark_session", "open_session", "master_addresses"]

DEFAULT_MASTER = "local[*]"
#: How long a master is given to answer a TCP connection before it counts as unreachable.
CONNECT_TIMEOUT_S = 3.0
#: How long a cluster is given to start this application's executors.
EXECUTOR_WAIT_S = 60.0
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"

_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
    "spark.sql.adaptive.enabled": "true",
}


class SparkUnavailable(RuntimeError):
    """Spark cannot start (or a running session cannot serve); the message says why."""


def master_addresses(master: str) -> list[tuple[str, int]]:
    """``(host, port)`` of each master of a ``spark://h1:p1,h2:p2`` URL (none for other kinds)."""
    if not master.startswith("spark://"):
        return []
    addresses = []
    for part in master[len("spark://"):].split(","):
        parsed = urlsplit(f"spark://{part}")
        try:
            port = parsed.port or 7077
        except ValueError:
            raise SparkUnavailable(f"{master}: {part!r} is not host:port") from None
        if not parsed.hostname:
            raise SparkUnavailable(f"{master}: {part!r} is not host:port")
        addresses.append((parsed.hostname, port))
    return addresses


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _on_this_machine(master: str) -> bool:
    """Whether the executors run here (local mode, or a standalone master on loopback)."""
    if master.startswith("local"):
        return True
    addresses = master_addresses(master)
    return bool(addresses) and all(_is_loopback(host) for host, _ in addresses)


def _check_java() -> None:
    home = os.environ.get("JAVA_HOME")
    if home:
        if not (Path(home) / "bin" / "java").is_file():
            raise SparkUnavailable(f"JAVA_HOME={home} has no bin/java: Spark needs a Java runtime (17 or later)")
    elif shutil.which("java") is None:
        raise SparkUnavailable("no Java runtime: Spark needs Java 17 or later (set JAVA_HOME or put java on PATH)")


def _check_reachable(master: str) -> None:
    """Fail in seconds, naming the URL and the reason, when no master of ``master`` answers."""
    reasons = []
    for host, port in master_addresses(master):
        try:
            socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
            return
        except socket.timeout:
            reasons.append(f"{host}:{port}: no answer within {CONNECT_TIMEOUT_S:g} s")
        except OSError as exc:
            reasons.append(f"{host}:{port}: {exc.strerror or exc}")
    if reasons:
        raise SparkUnavailable(f"cannot reach the Spark master {master}: " + "; ".join(reasons))


def _wait_for_executors(session: "SparkSession", master: str, count: int, options: SparkOptions) -> None:
    """A standalone master that has no worker able to host an executor would leave every job
    waiting forever ("Initial job has not accepted any resources"): wait a while, then say so."""
    tracker = session.sparkContext._jsc.sc()
    deadline = time.monotonic() + EXECUTOR_WAIT_S
    while tracker.getExecutorMemoryStatus().size() - 1 < count:  # the driver counts as one
        if time.monotonic() > deadline:
            session.stop()
            asked = ", ".join(f"{k} {v}" for k, v in (("--executor-cores", options.executor_cores),
                                                      ("--executor-memory", options.executor_memory)) if v)
            raise SparkUnavailable(
                f"the Spark master {master} started no executor for this application within {EXECUTOR_WAIT_S:.0f} s: "
                f"no worker is registered, or none has the cores and memory asked for ({asked or 'the defaults'})")
        time.sleep(0.2)


def _settings(master: str, options: SparkOptions, log_config: Path,
              driver_memory: str | None) -> tuple[dict[str, str], dict[str, str]]:
    """The project's defaults, and what the caller asked for (applied last, so it wins)."""
    base = dict(_DEFAULTS)
    base["spark.driver.extraJavaOptions"] = f"-Dlog4j.configurationFile={log_config.as_uri()}"
    if _on_this_machine(master):
        # Executors on this machine talk to the driver over loopback only.
        base["spark.driver.bindAddress"] = base["spark.driver.host"] = "127.0.0.1"
    asked: dict[str, str] = {}
    if driver_memory is not None:
        asked["spark.driver.memory"] = driver_memory
    if options.executor_memory is not None:
        asked["spark.executor.memory"] = options.executor_memory
    if options.executor_cores is not None:
        asked["spark.executor.cores"] = str(options.executor_cores)
    asked.update(dict(options.conf))
    return base, asked


@contextlib.contextmanager
def _executor_python(master: str, options: SparkOptions) -> Iterator[None]:
    """PySpark tells the executors which Python to run from ``PYSPARK_PYTHON`` at the moment the
    context starts. Set it only when asked, or when the executors run here (this interpreter then
    exists for them); a remote cluster keeps its own (``python3`` unless configured)."""
    chosen = options.executor_python
    if chosen is None and "PYSPARK_PYTHON" not in os.environ and _on_this_machine(master):
        chosen = sys.executable
    if chosen is None:
        yield
        return
    before = os.environ.get("PYSPARK_PYTHON")
    os.environ["PYSPARK_PYTHON"] = chosen
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYSPARK_PYTHON", None)
        else:
            os.environ["PYSPARK_PYTHON"] = before


def _reuse(session: "SparkSession", master: str | None, base: Mapping[str, str],
           asked: Mapping[str, str]) -> "SparkSession":
    """The running session, if it is on the master asked for and can take the settings asked for.

    Settings that can change at run time are set; one that cannot (executor memory, driver
    settings ...) must already have the value asked for.
    """
    running = session.sparkContext.master
    if master is not None and master != running:
        raise SparkUnavailable(f"a Spark session on {running} is already running in this process; "
                               f"stop it before asking for {master}")
    for key, value in {**base, **asked}.items():
        try:
            session.conf.set(key, value)
        except Exception:  # a static or core setting: fixed when the context started
            current = session.sparkContext.getConf().get(key)
            if key in asked and current != value:
                raise SparkUnavailable(f"the running Spark session on {running} has {key}={current}; "
                                       f"{key}={value} needs a new session") from None
    return session


def spark_session(
    master: str | None = None,
    *,
    app_name: str = "dmq-capacity",
    shuffle_partitions: int | None = None,
    driver_memory: str | None = None,
    options: SparkOptions | None = None,
    executors: int = 1,
) -> "SparkSession":
    """A session on ``master`` (``options.master``; default: the running session, else ``local[*]``).

    A running session is reused only when it is on the master asked for; ``executors`` is how
    many executors a ``spark://`` master must have started before the jobs run.
    """
    options = options or SparkOptions()
    master = master or options.master
    try:
        from pyspark import SparkContext
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise SparkUnavailable(f"pyspark is not installed ({exc}); install the 'spark' extra") from None
    log_config = Path(__file__).with_name("log4j2.properties")
    if master is not None:
        _check_reachable(master)
    running = SparkContext._active_spark_context
    base, asked = _settings(master or (running.master if running else DEFAULT_MASTER), options, log_config,
                            driver_memory)
    if running is not None:
        session = _reuse(SparkSession.builder.getOrCreate(), master, base, asked)
    else:
        master = master or DEFAULT_MASTER
        _check_java()
        builder = SparkSession.builder.master(master).appName(app_name)
        for key, value in {**base, **asked}.items():
            builder = builder.config(key, value)
        if _on_this_machine(master):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        try:
            with _executor_python(master, options):
                session = builder.getOrCreate()
        except Exception as exc:  # a master that refused the application, a JVM that did not start
            raise SparkUnavailable(f"cannot start Spark on {master}: {root_cause(exc)}") from None
        session.sparkContext.setLogLevel("ERROR")
        if master.startswith("spark://"):
            _wait_for_executors(session, master, executors, options)
    if shuffle_partitions is not None:
        session.conf.set(SHUFFLE_PARTITIONS, str(shuffle_partitions))
    elif SHUFFLE_PARTITIONS not in dict(options.conf):
        session.conf.set(SHUFFLE_PARTITIONS, str(session.sparkContext.defaultParallelism))
    return session


@contextlib.contextmanager
def open_session(options: SparkOptions, progress: "Progress", *, app_name: str = "dmq-capacity"
                 ) -> Iterator["SparkSession"]:
    """The session a command runs on, with the local cluster ``options.start_cluster`` asks for.

    A cluster started here is stopped when the block ends, however it ends (an error, Ctrl-C),
    and the session on it first.
    """
    if not options.start_cluster:
        with progress.stage(f"start Spark ({options.master or DEFAULT_MASTER})"):
            session = spark_session(options=options, app_name=app_name)
        yield session
        return
    from spark.cluster import ClusterError, LocalCluster

    _check_java()  # the daemons need it as much as the driver
    cores = options.executor_cores or 1
    cluster = LocalCluster(options.start_cluster, cores=cores, memory=options.executor_memory or "1g")
    try:
        with progress.stage(f"start a local Spark cluster ({options.start_cluster} worker(s), "
                            f"{cores} core(s) each)"):
            try:
                cluster.start()
            except ClusterError as exc:
                raise SparkUnavailable(str(exc)) from None
        with progress.stage(f"start Spark ({cluster.master_url})"):
            session = spark_session(cluster.master_url, options=options, app_name=app_name,
                                    executors=options.start_cluster)
        try:
            yield session
        finally:
            session.stop()
    finally:
        cluster.stop()
