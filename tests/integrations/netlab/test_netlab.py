"""``dmq netlab``: real nodes in network namespaces deliver everything through a kill and a partition,
and nothing of the lab outlives the run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import trio

from integrations.devnet.topology import is_connected
from integrations.netlab import NamespacesUnavailable, NetlabOptions, run_netlab
from integrations.netlab.addresses import NETWORK, node_address
from integrations.netlab.namespaces import PREFIX, Lab, check_available, existing_namespaces, remove_leftovers
from integrations.netlab.plan import public_roots
from integrations.netlab.report import REPORT_FILE
from tests.conftest import ROOT
from tests.interop.conftest import missing_tool


def _require_namespaces() -> None:
    try:
        check_available()
    except NamespacesUnavailable as exc:
        missing_tool(str(exc))


def test_addresses_are_distinct_and_in_the_benchmarking_range():
    addresses = [node_address(i) for i in range(100)]
    assert len(set(addresses)) == 100
    assert all(__import__("ipaddress").ip_address(a) in NETWORK for a in addresses)
    assert addresses[0] == "198.18.0.1" and str(NETWORK) == "198.18.0.0/15"


@pytest.mark.parametrize("nodes", [2, 7, 50, 100])
def test_public_roots_alone_connect_every_node(nodes):
    links = [(i, root) for i in range(nodes) for root in public_roots(nodes, i, 3, seed=0)]
    assert all(dialer != listener for dialer, listener in links)
    assert is_connected(links, nodes)


def test_without_ip_the_command_says_so_in_one_line_and_offers_the_devnet(tmp_path):
    result = subprocess.run([sys.executable, "-m", "dmq.cli.tool", "netlab", "--nodes", "2", "--dir",
                             str(tmp_path / "lab")], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "PATH": str(tmp_path)})
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "network namespaces are unavailable" in lines[0] and "dmq devnet" in lines[0]
    assert not (tmp_path / "lab").exists()


def _in(namespace: str, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", "netns", "exec", namespace, *command], capture_output=True, text=True)


def _connect(namespace: str, address: str) -> str:
    """What a TCP connect to port 9 (nothing listens) says: refused means the address answered."""
    probe = ("import socket\ntry:\n    socket.create_connection((%r, 9), timeout=1.5)\n"
             "except OSError as exc:\n    print(type(exc).__name__)" % address)
    return _in(namespace, sys.executable, "-c", probe).stdout.strip()


def test_lab_joins_nodes_on_one_bridge_with_no_way_out():
    _require_namespaces()
    lab = Lab(3)
    try:
        lab.build()
        first = lab.namespace(0)
        assert _connect(first, node_address(2)) == "ConnectionRefusedError"
        assert _in(first, "ip", "route", "show", "default").stdout.strip() == ""
        assert _connect(first, "192.0.2.1") == "OSError"  # no route: unreachable at once
        assert subprocess.run(["ip", "-n", lab.bridge_namespace, "-4", "addr", "show"], capture_output=True,
                              text=True).stdout.count("inet ") == 0
        lab.set_connected(2, False)
        assert _connect(first, node_address(2)) == "TimeoutError"
        lab.set_connected(2, True)
        assert _connect(first, node_address(2)) == "ConnectionRefusedError"
        lab.limit_rate(1, 10)
        assert "tbf" in _in(lab.namespace(1), "tc", "qdisc", "show", "dev", "eth0").stdout
    finally:
        assert lab.teardown() == []
    assert not [name for name in existing_namespaces() if name.startswith(lab.run_id)]


def test_leftovers_of_a_dead_run_are_removed_and_a_live_runs_kept():
    _require_namespaces()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale, live = f"{PREFIX}{dead.pid}-test-n0", f"{PREFIX}{os.getpid()}-test-n0"
    for name in (stale, live):
        subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        removed = remove_leftovers()
        assert stale in removed and live not in removed
        present = existing_namespaces()
        assert stale not in present and live in present
    finally:
        for name in (stale, live):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


def test_namespaced_nodes_deliver_everything_through_a_kill_and_a_partition(tmp_path):
    _require_namespaces()
    options = NetlabOptions(nodes=7, pools=14, period=4.0, duration=24.0, directory=tmp_path / "lab",
                            kill_fraction=0.15, partition_fraction=0.3, drain_timeout=20.0)
    report = trio.run(run_netlab, options)

    assert report.accepted > 0.9 * report.attempted, (report.rejected, report.failed)
    assert [(node.node, node.missing, node.duplicates) for node in report.nodes if node.missing or node.duplicates] == []
    assert all(node.delivered == report.accepted for node in report.nodes)
    kinds = {fault.kind: fault for fault in report.faults}
    assert set(kinds) == {"kill -9 and restart", "partition and heal"}
    assert all(fault.recovery_seconds is not None for fault in report.faults)
    assert report.steady_latency["p50_ms"] is not None
    assert report.steady_latency["p99_ms"] <= report.latency["max_ms"]
    killed = kinds["kill -9 and restart"].nodes
    # The restarted node's aggregator reconnected to it: the node really went away.
    assert all(node.connections >= 2 for node in report.nodes if node.node in killed)
    assert report.leftovers == [] and not [name for name in existing_namespaces() if name.startswith(report.run_id)]
    written = json.loads((tmp_path / "lab" / REPORT_FILE).read_text())
    assert written["complete"] is True and written["missing"] == 0


def test_sigterm_mid_run_removes_every_namespace(tmp_path):
    _require_namespaces()
    lab = subprocess.Popen([sys.executable, "-m", "dmq.cli.tool", "netlab", "--nodes", "3", "--pools", "3",
                            "--duration", "120", "--dir", str(tmp_path / "lab")], cwd=ROOT,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ours = f"{PREFIX}{lab.pid}-"
    try:
        deadline = time.monotonic() + 40
        while len([n for n in existing_namespaces() if n.startswith(ours)]) < 4 and time.monotonic() < deadline:
            assert lab.poll() is None, lab.communicate()
            time.sleep(0.2)
        assert len([n for n in existing_namespaces() if n.startswith(ours)]) == 4
        lab.send_signal(signal.SIGTERM)
        out, err = lab.communicate(timeout=40)
    finally:
        if lab.poll() is None:
            lab.kill()
    assert lab.returncode == 0, err
    assert [n for n in existing_namespaces() if n.startswith(ours)] == []
    assert "every namespace removed" in out
