"""The devnet's small parts: probe bodies, percentiles, metrics scraping, aggregator counting, options."""

from __future__ import annotations

import socket
import struct
from pathlib import Path

import pytest
import trio

from dmq.clock import ManualClock
from dmq.diffusion.peers import PeerTable
from dmq.diffusion.prometheus import PeerCollector
from dmq.metrics import NodeMetrics, serve_metrics
from dmq.trace import ConnectionOpened, MessageAccepted, MessageRejected
from lab.devnet.aggregator import Aggregator
from lab.devnet.orchestrator import DevnetError, DevnetLayout, DevnetOptions, MARKER_FILE, prepare_directory
from lab.devnet.probe import DEFAULT_BODY_SIZE, Probe, ProbeError, body_size_range, probe_body, read_probe
from lab.devnet.scrape import ScrapeError, scrape_node
from lab.devnet.stats import LatencyRecorder, RateWindow, nearest_rank
from lab.devnet.pools import generate_pools
from clients.mithril import (FixedKesPeriod, MessageBuilder, ReceivedMessage, RegisterSignatureMessageDmq,
                                  SigningCredentials)


@pytest.mark.parametrize("size", [body_size_range()[0], DEFAULT_BODY_SIZE, 2000])
@pytest.mark.parametrize("sequence", [0, 1, 300, 70_000, 2**40])
def test_a_probe_body_has_the_size_asked_and_reads_back(size, sequence):
    probe = Probe(pool_index=17, sequence=sequence, sent_at=1_800_000_000.123456)
    body = probe_body(probe, size)
    assert len(body) == size
    assert read_probe(RegisterSignatureMessageDmq.from_bytes(body)) == probe


def test_probe_bodies_differ_and_outside_sizes_are_refused():
    bodies = {probe_body(Probe(pool, sequence, 1.0)) for pool in range(3) for sequence in range(3)}
    assert len(bodies) == 9
    with pytest.raises(ProbeError):
        probe_body(Probe(0, 0, 1.0), 2001)
    with pytest.raises(ProbeError):
        probe_body(Probe(0, 0, 1.0), body_size_range()[0] - 1)


def test_nearest_rank_percentiles():
    values = [float(v) for v in range(1, 101)]
    assert nearest_rank(values, 0.5) == 50 and nearest_rank(values, 0.99) == 99 and nearest_rank(values, 1) == 100
    recorder = LatencyRecorder()
    assert recorder.percentile(0.5) is None
    for value in (0.3, 0.1, 0.2):
        recorder.add(value)
    assert recorder.percentile(0.5) == 0.2 and recorder.maximum == 0.3
    assert recorder.summary() == {"p50_ms": 200.0, "p90_ms": 300.0, "p99_ms": 300.0, "max_ms": 300.0}


def test_rate_window_forgets_old_arrivals():
    window = RateWindow(window=2.0)
    window.add(10.0, 4)
    window.add(11.0, 2)
    assert window.rate(11.5) == 3.0
    assert window.rate(12.5) == 1.0
    assert window.rate(20.0) == 0.0


async def test_scrape_reads_what_the_nodes_metrics_endpoint_serves():
    metrics = NodeMetrics()
    metrics.bind_mempool(lambda: 7, lambda: 7000)
    metrics(ConnectionOpened(0.0, "local#1", "n2c", 1))
    # Node-to-node links are the peer table's hot peers by who opened them (duplex ones: the
    # connectionManager series count those both ways, as the reference does).
    peers = PeerTable()
    for label in ("127.0.0.1:4001", "127.0.0.1:4002"):
        peers.outbound(label).established(None, 1, duplex=True)
    peers.inbound("127.0.0.1:50000").established(None, 1, duplex=True)
    peers.outbound("127.0.0.1:4003")  # known, not connected
    metrics.registry.register(PeerCollector(peers, metrics.names))
    metrics(MessageAccepted(0.0, b"i", b"p", 1000, "local"))
    metrics(MessageAccepted(0.0, b"i", b"p", 1000, "127.0.0.1:4000"))
    metrics(MessageRejected(0.0, b"i", b"p", 1000, "local", "SigDuplicate", "reject"))
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve_metrics, metrics, 0)
        sample = await scrape_node(port)
        nursery.cancel_scope.cancel()
    assert sample.messages_held == 7
    assert (sample.outbound_peers, sample.inbound_peers) == (2, 1)
    assert sample.connections["n2c"] == 1
    assert sample.accepted == {"local": 1, "peer": 1}
    assert sample.rejected == {"SigDuplicate": 1}


async def test_scrape_of_a_closed_port_is_a_scrape_error():
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    port = listener.socket.getsockname()[1]
    await listener.aclose()
    with pytest.raises(ScrapeError):
        await scrape_node(port, timeout=1.0)


async def test_a_scrape_reset_by_the_node_is_a_scrape_error():
    """A node that resets the connection mid-reply (a busy one under a hundred peers did) must not
    end the run that reads it: the read is a ScrapeError like any other failed read."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]

    async def reset(stream: trio.SocketStream) -> None:
        await stream.receive_some(1000)
        await stream.send_all(b"HTTP/1.1 200 OK\r\n")
        # Linger 0: close sends a reset, not an end of stream.
        stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        stream.socket.close()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.serve_listeners, reset, listeners)
        with pytest.raises(ScrapeError, match="reset"):
            await scrape_node(port, timeout=5.0)
        nursery.cancel_scope.cancel()


def signed_messages(directory: Path, clock: ManualClock) -> list[ReceivedMessage]:
    """A probe from a generated pool, and a message whose body is not a probe (a foreign one)."""
    pool = generate_pools(directory, 1)[0]
    builder = MessageBuilder(SigningCredentials.from_files(pool.paths.kes_skey, pool.paths.opcert),
                             FixedKesPeriod(0), clock)
    bodies = [probe_body(Probe(0, 0, clock.now() - 0.25)), bytes(range(100))]
    return [ReceivedMessage(builder.build(body), party_id=pool.pool_id_bech32) for body in bodies]


async def test_aggregator_tells_a_duplicate_on_one_connection_from_a_replay_on_a_new_one(tmp_path):
    clock = ManualClock(1_800_000_000.5)
    aggregator = Aggregator(0, tmp_path / "dmq.socket", 42, clock)
    probe, foreign = signed_messages(tmp_path / "pools", clock)
    aggregator._take([probe], connection=1)
    aggregator._take([probe, foreign], connection=1)
    assert (len(aggregator.arrivals), aggregator.duplicates, aggregator.replays) == (2, 1, 0)
    aggregator._take([probe, foreign], connection=2)         # a reconnect starts at the mempool's beginning
    assert (len(aggregator.arrivals), aggregator.duplicates, aggregator.replays) == (2, 1, 2)
    assert aggregator.foreign == 1
    assert aggregator.latencies.summary()["p50_ms"] == 250.0
    assert aggregator.missing({probe.message.message_id: None, b"x" * 32: None}) == 1


def test_options_are_checked_with_the_flag_named():
    with pytest.raises(DevnetError, match="--nodes"):
        DevnetOptions(nodes=0)
    with pytest.raises(DevnetError, match="--period"):
        DevnetOptions(period=0)
    with pytest.raises(DevnetError, match="aggregators"):
        DevnetOptions(nodes=3, aggregators=(3,))
    assert DevnetOptions(nodes=3, aggregators=(2, 0, 2)).aggregator_nodes == (0, 2)
    assert DevnetOptions(nodes=3).aggregator_nodes == (0, 1, 2)
    assert DevnetOptions(period=10).min_sig_delay == 5


def test_a_directory_is_replaced_only_when_it_holds_a_previous_devnet(tmp_path):
    layout = DevnetLayout(tmp_path / "dn")
    prepare_directory(layout)
    (layout.root / "old-file").write_text("from the previous run")
    prepare_directory(layout)
    assert sorted(p.name for p in layout.root.iterdir()) == [MARKER_FILE]
    other = DevnetLayout(tmp_path / "mine")
    other.root.mkdir()
    (other.root / "notes.txt").write_text("not a devnet")
    with pytest.raises(DevnetError, match="not empty"):
        prepare_directory(other)
    assert (other.root / "notes.txt").exists()
