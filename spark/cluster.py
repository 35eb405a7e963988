"""A throw-away standalone Spark cluster on loopback: a master and N workers for one run.

``dmq capacity-report --start-cluster N`` runs the report on a real standalone cluster
without the operator installing or starting anything: the master and the workers are the
``org.apache.spark.deploy`` daemons of the installed pyspark, bound to 127.0.0.1 on free
ports, with their logs and scratch space in a temporary directory. The cluster is ready
when the master's status page lists every worker alive; it is stopped (workers, their
executors, then the master) when the run ends, however it ends. Each daemon runs in its own
process group, so a Ctrl-C reaches only this process, which then stops them in order.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

__all__ = ["ClusterError", "LocalCluster", "spark_home"]

HOST = "127.0.0.1"
#: Starting a daemon's JVM takes a few seconds; a busy machine may need many more.
START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 15.0
#: Heap of the master and worker daemons (executors get --executor-memory).
DAEMON_MEMORY = "256m"


class ClusterError(RuntimeError):
    """The local cluster could not start; the message says which daemon and why."""


def spark_home() -> Path:
    """The Spark installation the driver uses too: ``SPARK_HOME``, else the pyspark package."""
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"])
    import pyspark

    return Path(pyspark.__file__).parent


def _last_line(log: Path) -> str:
    """The last line of a daemon's log that says something (an exception or an error)."""
    try:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    for line in reversed(lines):
        if "Exception" in line or "ERROR" in line or "Error:" in line:
            return line
    return lines[-1] if lines else "no output"


class LocalCluster:
    """``with LocalCluster(workers=2) as cluster: spark_session(cluster.master_url)``."""

    def __init__(self, workers: int = 1, *, cores: int = 1, memory: str = "1g") -> None:
        if workers < 1:
            raise ClusterError(f"a local cluster needs at least one worker, not {workers}")
        self.workers, self.cores, self.memory = workers, cores, memory
        self.master_url = ""
        self._status_url = ""
        self._dir: Path | None = None
        self._processes: list[tuple[str, subprocess.Popen, Path]] = []

    def __enter__(self) -> "LocalCluster":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _spawn(self, name: str, args: list[str], env: dict[str, str]) -> None:
        assert self._dir is not None
        log = self._dir / f"{name}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], stdout=out,
                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                       start_new_session=True)
        self._processes.append((name, process, log))

    def _status(self) -> dict | None:
        try:
            with urllib.request.urlopen(self._status_url, timeout=2) as answer:
                return json.load(answer)
        except (OSError, urllib.error.URLError, ValueError):
            return None

    def _wait(self, what: str, ready) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            for name, process, log in self._processes:
                if process.poll() is not None:
                    raise ClusterError(f"the local Spark {name} exited (status {process.returncode}) while "
                                       f"waiting for {what}: {_last_line(log)}")
            status = self._status()
            if status is not None and ready(status):
                return
            time.sleep(0.25)
        raise ClusterError(f"the local Spark cluster did not get {what} within {START_TIMEOUT_S:.0f} s")

    def start(self) -> str:
        """Start the master and the workers; returns the master's ``spark://`` URL once all are alive."""
        # Imported here: importing ``spark`` pulls nothing of ``dmq`` but the recorder's schema.
        from dmq.ports import free_ports

        if not (spark_home() / "bin" / "spark-class").is_file():
            raise ClusterError(f"no bin/spark-class under {spark_home()}: cannot start a local cluster")
        self._dir = Path(tempfile.mkdtemp(prefix="dmq-spark-cluster-"))
        env = {**os.environ, "SPARK_LOCAL_IP": HOST, "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
               "SPARK_LOG_DIR": str(self._dir), "SPARK_WORKER_DIR": str(self._dir / "work"),
               "SPARK_LOCAL_DIRS": str(self._dir / "scratch")}
        port, ui_port, *worker_ui_ports = free_ports(2 + self.workers, HOST)
        self.master_url = f"spark://{HOST}:{port}"
        self._status_url = f"http://{HOST}:{ui_port}/json/"
        try:
            self._spawn("master", ["org.apache.spark.deploy.master.Master", "--host", HOST, "--port", str(port),
                                   "--webui-port", str(ui_port)], env)
            self._wait("its master up", lambda status: status.get("status") == "ALIVE")
            for index, worker_ui in enumerate(worker_ui_ports):
                self._spawn(f"worker-{index + 1}", [
                    "org.apache.spark.deploy.worker.Worker", "--host", HOST, "--cores", str(self.cores),
                    "--memory", self.memory, "--webui-port", str(worker_ui),
                    "--work-dir", str(self._dir / "work"), self.master_url], env)
            self._wait(f"{self.workers} worker(s) registered",
                       lambda status: sum(w.get("state") == "ALIVE" for w in status.get("workers", ()))
                       >= self.workers)
        except BaseException:
            self.stop()
            raise
        return self.master_url

    def stop(self) -> None:
        """Stop the workers (and the executors they started), then the master; idempotent."""
        for _, process, _ in reversed(self._processes):
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for _, process, _ in reversed(self._processes):
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                process.wait()
        self._processes.clear()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
