"""What a start says about the mistakes ``--check`` catches: a busy port ends it with one line
naming the port; a doubtful setting (a magic of another network, a misspelt key, an unused
signing key) is a warning line and the node runs, since a private network may use any magic
and the reference ignores keys it does not know."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator

import pytest

from dmq.ports import free_ports
from lab.devnet.node_process import node_command

from .conftest import NodeDirectory


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A port another process (this test) listens on."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    with sock:
        yield sock


def _start_and_fail(directory: NodeDirectory, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(node_command("--host-addr", "127.0.0.1", *flags), cwd=directory.path,
                          capture_output=True, text=True, timeout=60)


def test_a_busy_node_to_node_port_is_one_line(node_directory: NodeDirectory, listener: socket.socket):
    port = listener.getsockname()[1]
    done = _start_and_fail(node_directory, "--port", str(port))
    assert done.returncode == 1
    assert done.stderr == f"dmq-node: node-to-node address 127.0.0.1 port {port}: cannot listen: " \
                          "Address already in use\n"


def test_a_busy_prometheus_port_is_one_line_naming_it(node_directory: NodeDirectory, listener: socket.socket):
    port = listener.getsockname()[1]
    node_directory.config["PrometheusPort"] = port
    node_directory.write_config()
    done = _start_and_fail(node_directory, "--port", "0")
    assert done.returncode == 1
    assert done.stderr == (f"dmq-node: Prometheus port 127.0.0.1:{port}: already in use by another process; "
                           "stop that process or choose another port\n")


def test_doubtful_settings_are_warnings_and_the_node_runs(tmp_path, start_node):
    """A preview Cardano magic in NetworkMagic, a misspelt key and a signing key on a raw-only node."""
    node = start_node("node", NetworkMagic=2, NetworkMagik=2147483650, TopicKesKey="kes.skey")
    assert node.running
    warnings = node.stderr_path.read_text().splitlines()
    assert len(warnings) == 3, warnings
    assert all(line.startswith("dmq-node: warning: ") for line in warnings)
    assert "is the Cardano magic of preview; the DMQ magic of preview (what Mithril proposes) is 2147483650" \
        in warnings[1]
    assert 'unknown key "NetworkMagik" is ignored; did you mean "NetworkMagic"?' in warnings[0]
    assert '"TopicKesKey" / --topic-kes-key kes.skey is set, but nothing uses it' in warnings[2]


def test_the_start_up_lines_name_configuration_topology_sockets_and_metrics(start_node):
    n2n, metrics = free_ports(2)
    node = start_node("node", flags=("--port", str(n2n)), PrometheusPort=metrics, PeerSharing=False)
    namespaces = {event.ns: event.data for event in node.log_events()}
    assert namespaces["Startup.Configuration"]["config"]["PortNumber"] == n2n
    assert namespaces["Startup.Configuration"]["config"]["PeerSharing"] is False
    assert namespaces["Startup.Topology"]["topology"] == {"localRoots": [], "publicRoots": [],
                                                          "useLedgerAfterSlot": -1}
    assert namespaces["Startup.DiffusionInit.ServerSocketUp"]["socket"] == f"127.0.0.1:{n2n}"
    assert namespaces["Startup.Prometheus"] == {"kind": "PrometheusSimpleStart", "event": "PrometheusSimpleStart",
                                                "host": "127.0.0.1",
                                                "port": metrics}
    assert namespaces["Startup.Configuration"]["kind"] == "Configuration"
    assert namespaces["Startup.Topology"]["kind"] == "Topology"
    assert namespaces["Startup.DiffusionInit.LocalSocketUp"]["path"] == "dmq.socket"
