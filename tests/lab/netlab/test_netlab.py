"""``dmq netlab``: real nodes in network namespaces deliver everything through a kill, a partition,
a flood of invalid messages and a stake-less cluster; the run's recording makes a capacity report;
and nothing of the lab outlives the run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import trio

from dmq.cli.tool import run as dmq
from dmq.recorder.schema import decode_manifest, parse_data_file_name, safe_name
from lab.devnet.topology import is_connected
from lab.netlab import NamespacesUnavailable, NetlabOptions, run_netlab
from lab.netlab.addresses import NETWORK, node_address
from lab.netlab.invalid import FLOOD_CLASSES
from lab.netlab.namespaces import (PREFIX, Lab, NeighbourTable, check_available, existing_namespaces,
                                           remove_leftovers)
from lab.netlab.plan import public_roots
from lab.netlab.priority import autogroup_niceness
from lab.netlab.report import REPORT_FILE
from tests.conftest import ROOT
from tests.interop.conftest import missing_tool


NICENESS_BEFORE_THE_RUN = os.getpriority(os.PRIO_PROCESS, 0)
AUTOGROUP_BEFORE_THE_RUN = autogroup_niceness()


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


def test_an_unknown_fault_is_refused_in_one_line(tmp_path):
    result = subprocess.run([sys.executable, "-m", "dmq.cli.tool", "netlab", "--faults", "kill,meteor", "--dir",
                             str(tmp_path / "lab")], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "unknown fault meteor" in lines[0] and "stakeless" in lines[0], result.stderr
    assert not (tmp_path / "lab").exists()


def _in(namespace: str, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", "netns", "exec", namespace, *command], capture_output=True, text=True)


def _connect(namespace: str, address: str) -> str:
    """What a TCP connect to port 9 (nothing listens) says: refused means the address answered."""
    probe = ("import socket\ntry:\n    socket.create_connection((%r, 9), timeout=1.5)\n"
             "except OSError as exc:\n    print(type(exc).__name__)" % address)
    return _in(namespace, sys.executable, "-c", probe).stdout.strip()


async def _greeting_inside(lab: Lab, index: int) -> bytes:
    """What a listener on 127.0.0.1 of namespace ``index`` (only there) says to a connection made
    from here through :meth:`Lab.open_tcp_stream`."""
    server = ("import socket\ns = socket.socket()\ns.bind(('127.0.0.1', 7000))\ns.listen()\nprint('up', flush=True)\n"
              "c, _ = s.accept()\nc.sendall(b'hello from n%d')\nc.close()" % index)
    listener = subprocess.Popen([*lab.exec_prefix(index), sys.executable, "-c", server], stdout=subprocess.PIPE, text=True)
    try:
        assert listener.stdout.readline().strip() == "up"
        stream = await lab.open_tcp_stream(index, 7000)
        async with stream:
            received = b""
            while chunk := await stream.receive_some(100):
                received += chunk
        return received
    finally:
        listener.kill()
        listener.wait()


def test_neighbour_table_limits_are_raised_and_put_back():
    _require_namespaces()
    settings = Path("/proc/sys/net/ipv4/neigh/default")
    before = {name: (settings / name).read_text() for name in ("gc_thresh2", "gc_thresh3")}
    table = NeighbourTable()
    try:
        table.ensure(int(before["gc_thresh3"]) + 1)
        assert int((settings / "gc_thresh3").read_text()) == 2 * (int(before["gc_thresh3"]) + 1)
        assert int((settings / "gc_thresh2").read_text()) >= int(before["gc_thresh2"])
    finally:
        table.restore()
    assert {name: (settings / name).read_text() for name in before} == before


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
        assert trio.run(_greeting_inside, lab, 1) == b"hello from n1"
    finally:
        assert lab.teardown() == []
    assert not [name for name in existing_namespaces() if name.startswith(lab.run_id)]


_SINK = """import socket, time
s = socket.socket()
s.bind((%r, 7001))
s.listen()
print("up", flush=True)
c, _ = s.accept()
total, first = 0, None
while chunk := c.recv(65536):
    first = first or time.monotonic()
    total += len(chunk)
print(total, time.monotonic() - first)
"""
_SOURCE = "import socket\nc = socket.create_connection((%r, 7001))\nc.sendall(bytes(%d))\nc.close()"


def _transfer_seconds(lab: Lab, sender: int, receiver: int, size: int) -> float:
    """Seconds from the first to the last of ``size`` bytes sent over TCP from node ``sender`` to node ``receiver``."""
    sink = subprocess.Popen([*lab.exec_prefix(receiver), sys.executable, "-c", _SINK % node_address(receiver)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert sink.stdout.readline().strip() == "up"
        subprocess.run([*lab.exec_prefix(sender), sys.executable, "-c", _SOURCE % (node_address(receiver), size)],
                       check=True, timeout=60)
        received, seconds = sink.stdout.readline().split()
        assert int(received) == size
        return float(seconds)
    finally:
        sink.kill()
        sink.wait()


def test_a_rate_limit_holds_a_nodes_sending_to_its_rate():
    # --rate-mbit: a token bucket on each node's own interface. 1 MB at 8 Mbit/s takes a second
    # (less the 32 kbit burst); only the limited node's sending is slowed.
    _require_namespaces()
    lab = Lab(2)
    try:
        lab.build()
        lab.limit_rate(1, 8)
        limited = _transfer_seconds(lab, 1, 0, 1_000_000)
        assert limited >= 0.9, limited
        unlimited = _transfer_seconds(lab, 0, 1, 1_000_000)
        assert unlimited < limited, (unlimited, limited)
    finally:
        assert lab.teardown() == []


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


@pytest.fixture(scope="module")
def lab_run(tmp_path_factory):
    """One small run with every fault and attack, and recording on: 7 nodes, about a minute.

    The nodes' inbound hard limit is lowered to 24 (soft 18, 1 s delay) so that the stake-less
    cluster fills the victim's slots within the run; at the default 512 the soft-limit delays
    alone take minutes. The nodes are lowered to niceness 0 once they listen, not to the default
    19: seven nodes cannot starve the run, and at the lowest priority on a machine busy with other
    work the victim accepts too slowly for the cluster to fill it within the run."""
    _require_namespaces()
    directory = tmp_path_factory.mktemp("netlab") / "lab"
    options = NetlabOptions(nodes=7, pools=14, period=4.0, duration=24.0, directory=directory,
                            kill_fraction=0.15, partition_fraction=0.15, drain_timeout=20.0,
                            faults=("kill", "partition", "flood", "stakeless"), flood_targets=2, stakeless_peers=2,
                            inbound_limit=(24, 18, 1.0), record_traffic=True, resource_interval=1.0,
                            metrics_interval=1.0, niceness=0)
    return directory, trio.run(run_netlab, options)


def test_namespaced_nodes_deliver_everything_through_a_kill_and_a_partition(lab_run):
    directory, report = lab_run
    assert report.accepted > 0.9 * report.attempted, (report.rejected, report.failed)
    assert [(node.node, node.missing, node.duplicates) for node in report.nodes if node.missing or node.duplicates] == []
    assert all(node.delivered == report.accepted and node.unexpected == node.foreign == 0 for node in report.nodes)
    kinds = {fault.kind: fault for fault in report.faults}
    assert set(kinds) == {"kill -9 and restart", "partition and heal"}
    assert all(fault.recovery_seconds is not None for fault in report.faults)
    assert report.steady_latency["p50_ms"] is not None
    assert report.steady_latency["p99_ms"] <= report.latency["max_ms"]
    killed = kinds["kill -9 and restart"].nodes
    # Each node's own count: every message accepted once (a restarted node counts from its restart).
    assert all(node.node_accepted == report.accepted for node in report.nodes if node.node not in killed)
    assert all(0 <= node.node_accepted < report.accepted for node in report.nodes if node.node in killed)
    # The restarted node's aggregator reconnected to it: the node really went away.
    assert all(node.connections >= 2 for node in report.nodes if node.node in killed)
    assert report.leftovers == [] and not [name for name in existing_namespaces() if name.startswith(report.run_id)]
    written = json.loads((directory / REPORT_FILE).read_text())
    assert written["complete"] is True and written["missing"] == 0 and written["defended"] is True


def test_a_flood_of_invalid_messages_is_refused_where_it_lands_and_relayed_nowhere(lab_run):
    _, report = lab_run
    flood, = [attack for attack in report.attacks if attack.kind == "flood"]
    outcome = flood.outcome
    faulted = {name for fault in report.faults for name in fault.nodes}
    assert len(flood.nodes) == 2 and not set(flood.nodes) & faulted
    assert set(outcome["classes"]) == set(FLOOD_CLASSES)
    for kind, seen in outcome["classes"].items():
        assert seen["served"] > 0 and seen["as_documented"], (kind, seen)
        if seen["reaction"] == "disconnect":
            assert seen["opened"] >= 2 * len(flood.nodes)
    # Every target pulled and refused every class, for the reason the class is built to fail.
    for target in flood.nodes:
        assert set(outcome["rejected_at_targets"][target]) == {c.error for c in FLOOD_CLASSES.values()}
    assert outcome["offered_ids"] > 0 and outcome["delivered_to_aggregators"] == 0
    assert outcome["foreign_deliveries"] == 0 and outcome["flood_rejections_elsewhere"] == {}
    assert flood.held and report.complete


def test_a_stakeless_cluster_fills_the_victims_inbound_slots_yet_it_gets_every_message(lab_run):
    _, report = lab_run
    stakeless, = [attack for attack in report.attacks if attack.kind == "stakeless"]
    outcome = stakeless.outcome
    victim, = stakeless.nodes
    assert len(stakeless.addresses) == 2
    # The victim reached its hard limit (its log traces each connection it closed there at once);
    # its metrics, read every second, saw it past the soft limit.
    assert outcome["victim_hard_limit"] == 24 and outcome["victim_refusals_at_hard_limit"] > 0
    assert 18 <= outcome["victim_peak_inbound"] <= 24
    assert outcome["cluster_peak_holding"] >= 18 and outcome["cluster_refused"] > 0
    assert outcome["victim_missing"] == 0 and stakeless.held
    assert next(node for node in report.nodes if node.node == victim).delivered == report.accepted
    assert all(node.inbound_peak is not None for node in report.nodes)  # every node's metrics were read
    assert outcome["latency_at_attacked"]["p50_ms"] is not None and outcome["latency_elsewhere"]["p50_ms"] is not None


def test_every_nodes_cpu_and_memory_are_sampled(lab_run):
    _, report = lab_run
    processes = {usage["name"]: usage for usage in report.resources["processes"]}
    assert set(processes) == {node.node for node in report.nodes}
    for usage in processes.values():
        assert usage["samples"] >= 10 and usage["cpu_seconds"] > 0
        # The first sample may catch the process still exec'ing into Python: only the median is a node's.
        assert 0 < usage["rss_mib"]["min"] <= usage["rss_mib"]["median"] <= usage["rss_mib"]["max"] < 1024
        assert usage["rss_mib"]["median"] > 20
        assert 0 <= usage["cpu_percent"]["min"] <= usage["cpu_percent"]["max"]
    total = report.resources["total"]
    assert total["rss_mib_peak"] >= sum(u["rss_mib"]["min"] for u in processes.values())


def test_the_nodes_run_below_the_run_and_the_run_reports_how_it_kept_time(lab_run):
    _, report = lab_run
    harness = report.harness
    # The run (root) raised its own priority while it ran and put it back; every node started at the
    # run's (-10) and was lowered once it listened to the nodes' (0 here), in its session's
    # autogroup as well where the kernel has autogroups.
    assert harness["niceness"] == -10 and os.getpriority(os.PRIO_PROCESS, 0) == NICENESS_BEFORE_THE_RUN
    assert harness["nodes_niceness"] == 0
    assert {usage["niceness"] for usage in report.resources["processes"]} == {0}
    if AUTOGROUP_BEFORE_THE_RUN is not None:
        assert harness["autogroup_niceness"] == -10 and autogroup_niceness() == AUTOGROUP_BEFORE_THE_RUN
        assert {usage["autogroup_niceness"] for usage in report.resources["processes"]} == {0}
    # Every submission's start was measured against its due time, and the faults' against the plan.
    assert harness["publish_lateness"]["count"] == report.attempted > 0
    assert 0 <= harness["publish_lateness"]["p50_ms"] <= harness["publish_lateness"]["max_ms"]
    assert set(harness["faults_late_seconds"]) == {fault.kind for fault in report.faults}
    assert all(late >= 0 for late in harness["faults_late_seconds"].values())
    assert 0 < harness["cpu_seconds"] and harness["wall_seconds"] >= report.publishing_seconds
    assert harness["run_queue_wait_seconds"] >= 0


def test_every_node_records_its_traffic_under_its_own_name(lab_run):
    directory, report = lab_run
    manifests = [decode_manifest(path.read_text(), str(path)) for path in (directory / "traffic").glob("manifest.*.json")]
    killed = next(f for f in report.faults if f.kind.startswith("kill")).nodes
    # One recording session per node start (the killed node started twice), each under the node's own
    # address (its configured host address and port), so no two nodes merge in the capacity report.
    address = {node.node: node.address for node in report.nodes}
    assert sorted(m["node"] for m in manifests) == sorted(
        [f"{node.address}:3001" for node in report.nodes] + [f"{address[name]}:3001" for name in killed])
    for kind in ("message_events", "connection_samples", "node_samples"):
        files = list((directory / "traffic" / kind).glob("*.jsonl"))
        assert {parse_data_file_name(f.name)[0] for f in files} == {safe_name(f"{n.address}:3001") for n in report.nodes}
    # The flood's rejections are in the targets' recordings: what the capacity report measures.
    events = "".join(p.read_text() for p in (directory / "traffic" / "message_events").glob("*.jsonl"))
    assert "InvalidKESSignature" in events and "UnrecognizedPool" in events


@pytest.mark.slow  # the Spark pipeline: two minutes on a busy two-core machine
def test_capacity_report_runs_on_a_netlab_recording(lab_run):
    directory, report = lab_run
    out = directory / "capacity-report"
    assert dmq(["capacity-report", str(directory / "traffic"), "--output", str(out), "--master", "local[2]",
                "-q"]) == 0
    text = (out / "capacity-report.md").read_text()
    assert "### Run `traffic` (recorded)" in text


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
