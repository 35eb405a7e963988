"""``dmq capacity-report`` on a real standalone cluster, on URIs, and its one-line failures.

The cluster run starts its own master and worker (the installed pyspark's daemons, on
loopback) in a separate process, since this process already holds the tests' local session;
its tables and plots must be byte for byte those of local mode on the same recording. That
process is started before the local report is made, so that the two runs (each mostly JVMs
starting and small Spark jobs waiting on their scheduler) share the machine's cores rather than
taking turns.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from dmq.cli.tool import run as dmq
from tests.spark.recordings import write_current_recording, write_v1_recording

REPORT = "capacity-report.md"


def dmq_process(*args: str, env: dict[str, str] | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    """The command as an operator runs it: its own process (and its own Spark driver)."""
    return subprocess.run([sys.executable, "-m", "dmq.cli.tool", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def tables(report: Path) -> list[str]:
    return [line for line in report.read_text().splitlines() if line.startswith("|")]


def pngs(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.glob("*.png"))}


def processes_mentioning(text: str) -> list[int]:
    """Processes whose command line or environment holds ``text``."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if any(text.encode() in (proc / part).read_bytes() for part in ("cmdline", "environ")):
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr and "py4j" not in stderr.lower()
    return lines[0]


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    """Two nodes of two schema versions in one run: samples, connections, a memory fit."""
    directory = tmp_path_factory.mktemp("cluster") / "small"
    write_v1_recording(directory)
    write_current_recording(directory)
    return directory


@dataclass
class ClusterRun:
    """``dmq capacity-report --start-cluster 1`` running in its own process, writing into ``directory``."""

    process: subprocess.Popen
    directory: Path
    started: float

    @property
    def out(self) -> Path:
        return self.directory / "report"

    @property
    def scratch(self) -> Path:
        """Its TMPDIR: where the cluster keeps its logs and work directories."""
        return self.directory / "tmp"

    def wait(self, timeout: float = 240) -> subprocess.CompletedProcess:
        """Its exit status and output, once it and its Spark driver (which holds its output) have ended."""
        stdout, stderr = self.process.communicate(timeout=timeout)
        return subprocess.CompletedProcess(self.process.args, self.process.returncode, stdout, stderr)

    def stop(self) -> None:
        """End it if it still runs: Ctrl-C, on which it stops its cluster, then kill whatever is
        left of it (the process, its driver, daemons and executors: all have its TMPDIR)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                pass
        for pid in processes_mentioning(str(self.scratch)):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self.process.wait()


@pytest.fixture(scope="module")
def cluster_run(recording, tmp_path_factory) -> Iterator[ClusterRun]:
    """The report on a standalone cluster it starts, begun before ``local_report`` (which it is
    compared with) is made, so that the two overlap; stopped, cluster and all, however the test ends."""
    directory = tmp_path_factory.mktemp("cluster-run")
    (directory / "tmp").mkdir()
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "dmq.cli.tool", "capacity-report", recording.as_uri(),
         "-o", (directory / "report").as_uri() + "/", "-q", "--start-cluster", "1", "--executor-cores", "1",
         "--executor-memory", "512m"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env={**os.environ, "TMPDIR": str(directory / "tmp")})
    run = ClusterRun(process, directory, started)
    try:
        yield run
    finally:
        run.stop()


@pytest.fixture(scope="module")
def local_report(spark, recording, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("local") / "report"
    assert dmq(["capacity-report", str(recording), "-o", str(out), "--master", "local[2]", "-q"]) == 0
    return out


@pytest.mark.timeout(300)
def test_a_started_standalone_cluster_gives_the_tables_and_plots_of_local_mode(cluster_run, local_report, recording):
    out, scratch = cluster_run.out, cluster_run.scratch
    done = cluster_run.wait()
    seconds = time.monotonic() - cluster_run.started
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"capacity report: {out.as_uri()}/{REPORT}"
    text = (out / REPORT).read_text()
    assert "Spark master: `spark://127.0.0.1:" in text
    # Read from and written to file URIs (the output's with a trailing slash), named as given.
    assert f"Inputs: `{recording.as_uri()}`" in text
    # Partitions follow the parallelism: one 1-core worker and local[2] both give 2.
    assert "(2 shuffle partitions)" in text and "(2 shuffle partitions)" in (local_report / REPORT).read_text()
    assert tables(out / REPORT) == tables(local_report / REPORT)
    assert len(tables(out / REPORT)) > 50
    assert pngs(out) == pngs(local_report)
    assert set(pngs(out)) == {"capacity-by-period.png", "small-held.png", "small-rss.png", "small-traffic.png",
                              "small-verify.png"}
    assert (out / "parquet" / "message_events" / "run=small").is_dir()
    # The cluster is gone: its directory removed, none of its daemons or executors left running.
    assert list(scratch.iterdir()) == []
    assert processes_mentioning(str(scratch)) == []
    print(f"cluster run: {seconds:.1f} s")


def test_a_missing_uri_is_one_line(spark, tmp_path, capsys):
    missing = (tmp_path / "nowhere").as_uri()
    assert dmq(["capacity-report", missing, "--master", "local[2]", "-q"]) == 1
    assert one_line(capsys.readouterr().err) == f"dmq capacity-report: recording {missing}: not a directory"


def test_conf_reaches_the_session(spark, recording, tmp_path):
    out = tmp_path / "report"
    assert dmq(["capacity-report", str(recording), "-o", str(out), "--master", "local[2]", "-q",
                "--conf", "spark.sql.shuffle.partitions=3", "--conf", "spark.dmq.test.marker=seen"]) == 0
    assert spark.conf.get("spark.dmq.test.marker") == "seen"
    assert spark.conf.get("spark.sql.shuffle.partitions") == "3"
    assert "(3 shuffle partitions)" in (out / REPORT).read_text()
    # Without --conf the partitions follow the parallelism again.
    assert dmq(["capacity-report", "-o", str(tmp_path / "again"), "--master", "local[2]", "-q"]) == 0
    assert spark.conf.get("spark.sql.shuffle.partitions") == str(spark.sparkContext.defaultParallelism)


def test_a_setting_the_running_session_cannot_take_is_refused(spark, tmp_path, capsys):
    assert dmq(["capacity-report", "-o", str(tmp_path), "--master", "local[2]", "-q",
                "--executor-memory", "3g"]) == 1
    assert one_line(capsys.readouterr().err) == (
        "dmq capacity-report: the running Spark session on local[2] has spark.executor.memory=None; "
        "spark.executor.memory=3g needs a new session")


def test_another_master_is_refused_while_a_session_runs(spark, tmp_path, capsys):
    assert dmq(["capacity-report", "-o", str(tmp_path), "--master", "local[1]", "-q"]) == 1
    assert one_line(capsys.readouterr().err) == (
        "dmq capacity-report: a Spark session on local[2] is already running in this process; "
        "stop it before asking for local[1]")
    assert spark.sparkContext.master == "local[2]"


def test_a_failed_job_is_its_root_cause_in_one_line(spark, tmp_path, capsys):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the Parquet dataset should go\n")
    recording = tmp_path / "rec"
    write_v1_recording(recording)
    assert dmq(["capacity-report", str(recording), "-o", str(tmp_path / "out"), "--parquet", str(blocker),
                "--master", "local[2]", "-q"]) == 1
    line = one_line(capsys.readouterr().err)
    assert line.startswith("dmq capacity-report: the Spark job failed: ")
    assert "not-a-directory" in line


def test_an_unreachable_master_fails_fast_in_one_line(recording):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening: connections are refused
        started = time.monotonic()
        done = dmq_process("capacity-report", str(recording), "--master", f"spark://127.0.0.1:{port}", "-q",
                           timeout=60)
    assert time.monotonic() - started < 15
    assert done.returncode == 1
    assert one_line(done.stderr) == (f"dmq capacity-report: cannot reach the Spark master spark://127.0.0.1:{port}: "
                                     f"127.0.0.1:{port}: Connection refused")


def test_no_java_is_one_line(recording, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(Path(sys.executable).parent)
    done = dmq_process("capacity-report", str(recording), "-o", str(tmp_path), "-q", env=env, timeout=60)
    assert done.returncode == 1
    assert one_line(done.stderr) == ("dmq capacity-report: no Java runtime: Spark needs Java 17 or later "
                                     "(set JAVA_HOME or put java on PATH)")
