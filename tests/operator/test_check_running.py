"""``dmq-node --check --running``: the check before a restart, while the node runs.

The running node's local socket and ports are busy, held by the node the restart will stop:
with ``--running`` they are accepted, because the socket answers a version query and the
kernel says the process behind it holds the ports. A port any other process holds is still a
problem, and ``--running`` with no node running is one line saying so.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dmq.cli.doctor import check
from dmq.ports import free_ports


def _check(workdir: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "dmq.cli.node", "--check", "-c", "dmq.config.json", "-t", "dmq.topology.json",
               "--host-addr", "127.0.0.1", *flags]
    return subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=60)


@pytest.fixture
def running(start_node):
    n2n, metrics = free_ports(2)
    node = start_node("node", flags=("--port", str(n2n)), PrometheusPort=metrics)
    return node, n2n, metrics


def test_without_running_the_running_node_s_socket_and_ports_are_busy(running):
    node, n2n, metrics = running
    done = _check(node.workdir, "--port", str(n2n))
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) == 3, lines
    assert "local socket dmq.socket: another process is already listening on it" in lines[0]
    assert f"node-to-node port (PortNumber / --port) 127.0.0.1:{n2n}: already in use" in lines[1]
    assert f"Prometheus port (PrometheusPort) 127.0.0.1:{metrics}: already in use" in lines[2]


def test_with_running_the_node_s_own_socket_and_ports_pass(running):
    node, n2n, _ = running
    done = _check(node.workdir, "--port", str(n2n), "--running")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("dmq-node: check passed: the running node's configuration")


def test_with_running_a_port_held_by_another_process_is_still_a_problem(running):
    node, n2n, _ = running
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen(1)
        taken = other.getsockname()[1]
        node.config["PrometheusPort"] = taken  # the edited configuration names a port someone else holds
        (node.workdir / "dmq.config.json").write_text(json.dumps(node.config))
        done = _check(node.workdir, "--port", str(n2n), "--running")
    assert done.returncode == 1
    assert done.stderr == (f"dmq-node: Prometheus port (PrometheusPort) 127.0.0.1:{taken}: already in use by "
                           "another process; stop that process or choose another port\n")


def test_running_without_a_node_is_one_line(running):
    node, n2n, _ = running
    node.kill()  # leaves a stale socket file, which nothing answers on
    done = _check(node.workdir, "--port", str(n2n), "--running")
    assert done.returncode == 1
    assert done.stderr.startswith("dmq-node: --running: local socket dmq.socket: no node is running on it")
    assert len(done.stderr.splitlines()) == 1
    # Without --running the stopped node's files pass: the stale socket is replaced at the next start.
    assert _check(node.workdir, "--port", str(n2n)).returncode == 0


def test_running_goes_with_check(tmp_path):
    done = subprocess.run([sys.executable, "-m", "dmq.cli.node", "--running"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert (done.returncode, done.stderr) == (1, "dmq-node: --running goes with --check (see dmq-node --help)\n")


def test_running_with_something_else_on_the_socket_is_one_line(node_directory, capsys):
    """A process listening on the socket that does not answer a version query is no DMQ node."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as impostor:
        impostor.bind(str(node_directory.path / "dmq.socket"))
        impostor.listen(1)
        answer = threading.Thread(target=lambda: impostor.accept()[0].close())  # hangs up at once
        answer.start()
        status = check(node_directory.flags(), "dmq doctor", running=True)
        answer.join(timeout=10)
    lines = capsys.readouterr().err.splitlines()
    assert status == 1 and len(lines) == 1, lines
    assert lines[0].startswith("dmq doctor: --running: local socket dmq.socket: the process listening on it "
                               "does not answer as a DMQ node"), lines
