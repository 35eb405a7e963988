"""Mithril's publisher, exactly, for ten times the node's descriptor limit: nothing piles up.

``DmqPublisherClientPallas::publish_message`` (input-output-hk/mithril,
``internal/mithril-dmq/src/publisher/client/pallas.rs``) opens a ``DmqClient`` per message,
submits, sends MsgDone (``terminate_gracefully``) and drops the client without ``abort``: the
client's plexer tasks live on in the signer's process and keep the socket open, so the
connection never ends from the client's side. The harness's signer in ``--connection
mithril`` does exactly that, and reports how many descriptors its own process holds, which
shows the sockets really stay open on the client side.

A node limited to :data:`DESCRIPTOR_LIMIT` descriptors takes ten times that many
publications from such signers, at every pallas-network line Mithril has shipped, while a
Mithril-style aggregator listens. Every message is accepted and delivered to the
aggregator exactly once; the node's descriptors stay below the limit by a margin and its RSS
grows only by what the messages it holds cost (``LocalIdleTimeout`` releases each finished
connection, docs/protocol/local-protocols.md 7.4). Without that bound the node held a
descriptor and about 16 KiB per publication and stopped accepting at the limit.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from tests.e2e.conftest import devnet_config
from tests.e2e.messages import DEVNET, DMQ_DEVNET_MAGIC as MAGIC
from tests.e2e.node_process import read_rss
from tests.e2e.test_descriptor_exhaustion import DescriptorLimitedNode, open_descriptors
from tests.interop.pallas_harness import LEGACY_VERSIONS, PALLAS_VERSIONS, HarnessProcess, run_signer

pytestmark = pytest.mark.interop

#: The node's soft and hard ``nofile`` limit.
DESCRIPTOR_LIMIT = 128
PUBLICATIONS = 10 * DESCRIPTOR_LIMIT
#: Publications per signer process: twice the node's limit, so that one signer alone would
#: exhaust the node were its finished connections kept. Each process keeps all of its
#: connections open until it exits, as a Mithril signer does for its life.
PER_SIGNER = 2 * DESCRIPTOR_LIMIT
#: Short, so that the test is; the node holds about (publications per second) x IDLE connections.
IDLE = 0.125
#: Publications start at least this far apart: at most 500 a second, so at most about 63
#: finished connections wait out the bound at any time, whatever the machine's speed.
PACE_MS = 2
#: The node's descriptors never come within this of its limit.
MARGIN = 32
#: RSS may grow, after warm-up, by what the node keeps per accepted message (the message in
#: the mempool, about 1.1 KiB measured), not by anything per connection (16 KiB when they were kept).
RSS_PER_MESSAGE = 3 * 1024
#: Deadline of every wait (a busy machine is slow, never this slow).
PATIENCE = 120.0


class _Sampler:
    """Samples the node's descriptors and RSS every few milliseconds, in a thread."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.samples: list[tuple[int, int]] = []   # (descriptors, RssAnon)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append((open_descriptors(self.pid), read_rss(self.pid)["RssAnon"]))
            except (FileNotFoundError, ProcessLookupError):
                return
            self._stop.wait(0.005)

    def __enter__(self) -> _Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    @property
    def most_descriptors(self) -> int:
        return max(descriptors for descriptors, _ in self.samples)


@pytest.mark.parametrize("version", PALLAS_VERSIONS)
def test_mithril_publisher_for_ten_times_the_descriptor_limit(pallas_harness, version, signers, tmp_path):
    legacy = version in LEGACY_VERSIONS
    config = devnet_config(LocalIdleTimeout=IDLE, TraceOptions={"": {"severity": "Notice"}})
    if legacy:  # docs/interop.md: the legacy lines need these to publish and to read rejects
        config.update(LegacyMessageFormat=True, LegacyRejectText=version == "0.34")
    workdir = tmp_path / "node"
    workdir.mkdir()
    (workdir / "shelley-genesis.json").write_bytes((DEVNET / "shelley-genesis.json").read_bytes())
    node = DescriptorLimitedNode(workdir, config, ("--min-sig-delay", "0"))
    node.limit = DESCRIPTOR_LIMIT
    node.start()
    try:
        messages = [signers[i % 2].sign(legacy=legacy).raw for i in range(PUBLICATIONS)]
        with HarnessProcess(pallas_harness, version, "aggregator", "--socket", str(node.socket_path),
                            "--magic", str(MAGIC), "--dedupe", "off", "--expect", str(PUBLICATIONS)) as consumer:
            consumer.wait_for(lambda e: e["event"] == "connected", timeout=PATIENCE)
            baseline = open_descriptors(node.pid)
            results, held_by_signers, rss_after_warm_up = [], [], None
            with _Sampler(node.pid) as sampler:
                for start in range(0, PUBLICATIONS, PER_SIGNER):
                    batch = messages[start:start + PER_SIGNER]
                    published = run_signer(pallas_harness, version, node.socket_path, MAGIC, batch,
                                           connection="mithril", pace_ms=PACE_MS, timeout=PATIENCE)
                    results += published
                    held_by_signers.append(published[-1]["fds"] - published[0]["fds"])
                    if rss_after_warm_up is None:
                        rss_after_warm_up = read_rss(node.pid)["RssAnon"]
                    assert node.running, node.diagnostics()
                rss_at_end = read_rss(node.pid)["RssAnon"]
            delivered = consumer.wait_for(lambda e: e["event"] == "message", count=PUBLICATIONS, timeout=PATIENCE)
            consumer.wait_for(lambda e: e["event"] == "done", timeout=PATIENCE)
            # The finished connections are all released: back to the node's own and the aggregator's.
            deadline = time.monotonic() + PATIENCE
            while open_descriptors(node.pid) > baseline and time.monotonic() < deadline:
                time.sleep(0.02)
            settled = open_descriptors(node.pid)
        errors = [result for result in results if result.get("verdict") != "accepted" or result.get("done_error")]
        assert errors == [], errors[:3]
        assert len(results) == PUBLICATIONS
        # Each signer process kept a socket open per publication: Mithril's pattern, for real.
        assert all(held >= PER_SIGNER - 1 for held in held_by_signers), held_by_signers
        # Delivered to the aggregator exactly once each (no de-duplication in the aggregator).
        received = [event["cbor"] for event in delivered]
        assert sorted(received) == sorted(raw.hex() for raw in messages)
        assert consumer.of_kind("error") == [] and {e["connection"] for e in consumer.of_kind("message")} == {1}
        most = sampler.most_descriptors
        rss_growth = rss_at_end - rss_after_warm_up
        after_warm_up = PUBLICATIONS - PER_SIGNER
        print(f"\npallas {version}: {PUBLICATIONS} publications, node descriptors baseline {baseline}, "
              f"at most {most} (limit {DESCRIPTOR_LIMIT}), settled {settled}; RssAnon "
              f"{rss_after_warm_up // 1024} KiB after warm-up -> {rss_at_end // 1024} KiB at the end "
              f"({rss_growth / after_warm_up:.0f} B per publication); signers held {held_by_signers} sockets")
        assert most <= DESCRIPTOR_LIMIT - MARGIN, most
        assert settled <= baseline
        assert rss_growth <= RSS_PER_MESSAGE * after_warm_up, rss_growth
        assert not node.trace_events("DescriptorsExhausted")
        stderr = node.stderr_path.read_text()
        assert "Traceback" not in stderr, stderr
    finally:
        node.kill()
