"""Every query of the shipped Grafana dashboard returns data on a real Prometheus.

A plain Mithril sidecar (the devnet's Mithril magic, raw messages only, genesis stake) runs as a
process with one peer (a second node that dials it) and takes a little traffic on its socket; a
real Prometheus (Debian's ``prometheus``) scrapes it every second. Each expression of
``deploy/grafana/dmq-node.json``, with ``$instance`` set to the sidecar, must come back non-empty,
and so must the ``instance`` variable's own query. A panel whose description says it is for
topic signing only is run against a node that signs topic messages (a third process, scraped
too) and must be empty on the sidecar: its mark is then both needed and true.

Waits are polls of Prometheus's HTTP API with a deadline; Prometheus and the nodes are stopped
whatever happens. scripts/setup.sh installs Prometheus as root; in CI (``CI`` set) a missing one
fails the test, elsewhere it is skipped with the reason.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from dmq.ports import free_ports
from lab.devnet.topology import topology_document
from tests.e2e.messages import DMQ_DEVNET_MAGIC as MAGIC
from tests.e2e.raw_n2c import ACCEPT, publish_like_mithril_signer
from tests.interop.conftest import missing_tool

from .topic_node import n2n_port, topic_nodes  # noqa: F401  (a fixture)

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "dmq-node.json"
#: How a panel says it applies to a topic-signing node only (the start of its description).
TOPIC_SIGNING_ONLY = "Topic signing only"
#: Generous for a loaded machine; a quiet one has every answer within a few seconds of the peer's handshake.
DEADLINE = 45.0


@pytest.fixture
def prometheus_binary() -> str:
    """Checked before the (trio) test starts, so a skip or a CI failure is one plain line."""
    found = shutil.which("prometheus")
    if found is None:
        missing_tool("prometheus is missing (Debian package prometheus; scripts/setup.sh installs it as root)")
    return found


def panels() -> list[dict]:
    return json.loads(DASHBOARD.read_text())["panels"]


def instance_query() -> str:
    """The metric the dashboard's ``instance`` variable lists instances of (``label_values(m, instance)``)."""
    variables = json.loads(DASHBOARD.read_text())["templating"]["list"]
    (query,) = [v["query"]["query"] for v in variables if v["name"] == "instance"]
    match = re.fullmatch(r"label_values\((\w+),\s*instance\)", query)
    assert match, query
    return match.group(1)


class Prometheus:
    """A Prometheus process scraping ``targets`` every second, with its storage in ``workdir``."""

    def __init__(self, binary: str, workdir: Path, targets: list[str]) -> None:
        (self.port,) = free_ports(1)
        config = workdir / "prometheus.yml"
        config.write_text(json.dumps({
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
            "scrape_configs": [{"job_name": "dmq-node", "static_configs": [{"targets": targets}]}],
        }))
        self.log = workdir / "prometheus.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [binary, f"--config.file={config}", f"--storage.tsdb.path={workdir / 'data'}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def api(self, path: str, **params: str) -> dict:
        url = f"http://127.0.0.1:{self.port}{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=10) as reply:
                body = json.loads(reply.read())
        except urllib.error.HTTPError as error:  # a bad query: Prometheus says why
            raise AssertionError(f"{params}: {error.read().decode(errors='replace')}") from None
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list:
        return self.api("/api/v1/query", query=expr)["result"]

    def wait_ready(self, deadline: float) -> None:
        while True:
            if self.process.poll() is not None:
                raise AssertionError(f"prometheus exited: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=5) as reply:
                    if reply.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError):
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"prometheus not ready; {self.log.read_text()[-2000:]}")
            time.sleep(0.1)


def with_instance(expr: str, instance: str) -> str:
    """``expr`` with ``$instance`` as Grafana fills it in: a regular expression, escaped for a PromQL string."""
    return expr.replace("$instance", re.escape(instance).replace("\\", "\\\\"))


async def test_every_dashboard_query_returns_data_on_a_mithril_sidecar_with_one_peer(
        prometheus_binary, start_node, topic_nodes, signers, tmp_path):
    sidecar_port, signing_port = free_ports(2)
    sidecar = start_node("sidecar", PrometheusPort=sidecar_port, MinSigDelay=0)
    (tmp_path / "peer").mkdir()
    (tmp_path / "peer" / "dmq.topology.json").write_text(
        json.dumps(topology_document([("127.0.0.1", n2n_port(sidecar))])))
    start_node("peer")
    topic_nodes("signing", PrometheusPort=signing_port)
    for signer in signers[:2]:  # a little traffic: one message per pool
        assert await publish_like_mithril_signer(sidecar.socket_path, MAGIC, signer.sign().raw) == ACCEPT
    sidecar_instance, signing_instance = f"127.0.0.1:{sidecar_port}", f"127.0.0.1:{signing_port}"

    queries: dict[str, str] = {}   # "panel / refId" -> the expression as Grafana sends it
    topic_only: list[str] = []
    for panel in panels():
        signing_only = panel.get("description", "").startswith(TOPIC_SIGNING_ONLY)
        for target in panel["targets"]:
            name = f"{panel['title']} / {target['refId']}"
            queries[name] = with_instance(target["expr"], signing_instance if signing_only else sidecar_instance)
            if signing_only:
                topic_only.append(name)
    assert len(queries) >= 20 and len(topic_only) < len(queries) // 4

    (tmp_path / "prometheus").mkdir()
    prometheus = Prometheus(prometheus_binary, tmp_path / "prometheus", [sidecar_instance, signing_instance])
    try:
        deadline = time.monotonic() + DEADLINE
        prometheus.wait_ready(deadline)
        empty = dict(queries)
        while empty:
            empty = {name: expr for name, expr in empty.items() if not prometheus.query(expr)}
            if empty and time.monotonic() > deadline:
                raise AssertionError(f"no data after {DEADLINE} s for {sorted(empty)}; "
                                     f"targets: {prometheus.api('/api/v1/targets')['activeTargets']}")
            time.sleep(0.2)
        listed = prometheus.api("/api/v1/series", **{"match[]": instance_query()})
        assert {series["instance"] for series in listed} == {sidecar_instance, signing_instance}
        for name in topic_only:  # the mark is true: a sidecar has no signing key
            expr = next(t["expr"] for p in panels() for t in p["targets"] if f"{p['title']} / {t['refId']}" == name)
            assert prometheus.query(with_instance(expr, sidecar_instance)) == [], name
    finally:
        prometheus.stop()
