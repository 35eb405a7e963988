"""``dmq status`` and the shipped Grafana dashboard against a real ``dmq-node`` process.

The node runs as operators run it (its own process, a configuration file with a metrics port);
known traffic goes in through its socket, and ``dmq status --json`` must report exactly that.
The dashboard test reads every metric name out of the dashboard's PromQL and checks that the
node exports it, so a renamed series cannot leave a panel silently empty.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from dmq.ports import free_ports
from tests.e2e.messages import DMQ_DEVNET_MAGIC as MAGIC
from tests.e2e.raw_n2c import ACCEPT, publish_like_mithril_signer

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "dmq-node.json"
#: Series only a node holding a signing key (``TopicKesKey``) exports; their names are checked
#: against ``NodeMetrics.bind_kes`` in tests/dmq/node/test_trace_sinks.py.
SIGNER_ONLY = {"dmq_node_remainingKESPeriods_int"}


def status(node, port: int, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dmq.cli.tool", "status", "--metrics", f"127.0.0.1:{port}",
                           "--socket", str(node.socket_path), "--magic", str(MAGIC), *flags],
                          capture_output=True, text=True, timeout=60)


async def test_status_reports_the_traffic_the_node_received(start_node, signers):
    (port,) = free_ports(1)
    node = start_node(PrometheusPort=port, MinSigDelay=0)
    messages = [signers[i % len(signers)].sign() for i in range(3)]
    assert len({m.message_id for m in messages}) == 3
    for message in messages:
        assert await publish_like_mithril_signer(node.socket_path, MAGIC, message.raw) == ACCEPT
    assert await publish_like_mithril_signer(node.socket_path, MAGIC, messages[0].raw) != ACCEPT  # a duplicate
    (rejection,) = node.trace_events("MessageRejected")
    reason = rejection["reason"].split(" ", 1)[0]

    metrics_page(port)
    result = status(node, port, "--json", "--interval", "0.2")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["messages"]["accepted"] == {"local": 3, "peer": 0}
    assert doc["messages"]["rejected"] == {"local": 1, "peer": 0}
    assert doc["messages"]["rejectedByReason"] == {reason: 1}
    assert doc["messages"]["held"] == 3
    assert doc["messages"]["heldBytes"] == sum(len(m.raw) for m in messages)
    assert doc["messages"]["perSecond"]["accepted"] == 0.0   # nothing arrived between the two scrapes
    assert doc["socket"]["reachable"] and 4097 in doc["socket"]["versions"]
    assert doc["stake"]["pools"] > 0 and doc["database"]["sizeBytes"] > 0 and doc["database"]["freeBytes"] > 0
    assert doc["connections"]["localClients"] == 0 and doc["peers"] == [] and doc["kes"] is None

    frame = status(node, port, "--once", "--interval", "0.1")
    assert frame.returncode == 0, frame.stderr
    assert "3 local, 0 from peers" in frame.stdout and f"{reason}: 1" in frame.stdout


def test_an_unreachable_endpoint_is_one_line_and_status_1(tmp_path):
    (port,) = free_ports(1)  # nothing listens there
    result = subprocess.run([sys.executable, "-m", "dmq.cli.tool", "status", "--metrics", f"127.0.0.1:{port}",
                             "--socket", str(tmp_path / "none.socket"), "--json"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("dmq status: metrics endpoint")


def metrics_page(port: int, deadline: float = 20.0) -> str:
    """The node's metrics page; the endpoint starts a moment after the socket."""
    give_up = time.monotonic() + deadline
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
                return reply.read().decode()
        except OSError:
            if time.monotonic() > give_up:
                raise
            time.sleep(0.1)


def dashboard_series() -> set[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    exprs.append(dashboard["templating"]["list"][1]["query"]["query"])
    return {name for expr in exprs for name in re.findall(r"\b(dmq_node_[A-Za-z0-9_]+)", expr)}


def test_every_series_the_dashboard_queries_is_exported(start_node):
    from prometheus_client.parser import text_string_to_metric_families

    (port,) = free_ports(1)
    start_node(PrometheusPort=port)  # with diffusion (--host-addr), a genesis stake view and a store
    text = metrics_page(port)
    exported = set()
    for family in text_string_to_metric_families(text):
        exported.add(family.name)
        exported.update(sample.name for sample in family.samples)
    wanted = dashboard_series()
    assert len(wanted) > 15
    assert wanted - SIGNER_ONLY <= exported, sorted(wanted - SIGNER_ONLY - exported)
