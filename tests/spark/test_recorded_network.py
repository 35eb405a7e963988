"""A recorded network of three nodes diffusing to each other, through ingest and measure.

The one-node devnet run checks the local side; this one checks what only node-to-node
diffusion shows (bytes per peer, the redundancy factor) against what each node's own
metrics and peer table counted, on the same connections.
"""

from __future__ import annotations

import pytest
import trio

from spark.extrapolate import measured_costs
from spark.ingest import find_recording, ingest
from spark.measure import SIG_SUBMISSION, measure
from tests.dmq.recorder.capacity_network import LoadSpec, record_network

SPEC = LoadSpec(nodes=3, degree=2, pools=24, rounds=4, ttl_s=120, steps=2)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    return trio.run(record_network, tmp_path_factory.mktemp("network"), SPEC)


@pytest.fixture(scope="module")
def measured(spark, recorded, tmp_path_factory):
    parquet = tmp_path_factory.mktemp("network-parquet")
    ingest(spark, [find_recording(recorded.recording, run="network")], parquet)
    return measure(spark, parquet, "network")


def test_every_message_reached_every_node_once(recorded, measured):
    m = measured
    assert recorded.submitted == SPEC.messages == 12 * 4
    assert m.unique_messages == SPEC.messages
    assert m.accepted == 3 * SPEC.messages and m.rejected == 0
    assert len(m.nodes) == 3
    totals = sorted(recorded.nodes, key=lambda t: t.name)
    for node in m.nodes:
        assert node.accepted == SPEC.messages
        # Pool i submits to node i % 3: a third of the messages are local at each node.
        assert node.accepted_local == SPEC.messages // 3
    assert sorted(n.accepted for n in m.nodes) == sorted(t.accepted for t in totals)
    assert sorted(n.accepted_bytes for n in m.nodes) == sorted(t.accepted_bytes for t in totals)
    assert sorted(n.expired for n in m.nodes) == sorted(t.expired for t in totals)
    assert sorted((n.final_held, n.final_bytes_held) for n in m.nodes) == sorted(
        (t.mempool_messages, t.mempool_bytes) for t in totals)
    assert m.expired == sum(t.expired for t in totals) > 0


def test_node_to_node_bytes_agree_with_the_peer_table(recorded, measured):
    m = measured
    recorded_out = sorted(n.n2n_bytes_out for n in m.nodes)
    recorded_in = sorted(n.n2n_bytes_in for n in m.nodes)
    # The recorder samples each connection's mux: the peer table's mux counters, exactly.
    assert recorded_out == sorted(sum(p[3] for p in t.peers.values()) for t in recorded.nodes)
    assert recorded_in == sorted(sum(p[2] for p in t.peers.values()) for t in recorded.nodes)
    # The peer metrics count the bearer, which also carried the handshake before the mux ran:
    # the same few bytes on every connection of a direction, and nothing else.
    handshake = {(direction, p[1] - p[3], p[0] - p[2]) for t in recorded.nodes
                 for (direction, _), p in t.peers.items()}
    assert {h[0] for h in handshake} == {"outbound", "inbound"}
    assert len(handshake) == 2 and all(0 < h[1] < 64 and 0 < h[2] < 64 for h in handshake)
    for node in m.nodes:
        assert node.n2n_connections == 4  # a full mesh of three: two dialled, two accepted
        assert 0 < node.sig_bytes_out < node.n2n_bytes_out


def test_redundancy_and_per_peer_bytes_follow_from_the_node_counts(recorded, measured):
    m = measured
    out = sum(sum(p[3] for p in t.peers.values()) for t in recorded.nodes)
    accepted_bytes = sum(t.accepted_bytes for t in recorded.nodes)
    assert m.redundancy == pytest.approx(out / accepted_bytes, rel=1e-12)
    # Pull-based: each of the nodes that did not originate a message downloads its body once
    # ((nodes - 1) / nodes of the accepted bytes), and ids cost more on top: every id is
    # announced on every connection it crosses, except back to a peer that announced it first
    # (docs/protocol/node-to-node.md 9.8).
    assert 2 / 3 < m.redundancy < 2.5
    sig_out = sum(n.sig_bytes_out for n in m.nodes)
    assert m.bytes_per_message_per_peer == pytest.approx(sig_out / (3 * SPEC.messages * 4))
    assert {p.protocol for p in m.protocols} >= {SIG_SUBMISSION, 14}
    costs = measured_costs(m)
    assert costs.redundancy == m.redundancy and "redundancy" not in dict(costs.assumed)
    assert m.memory_basis == "anonymous"


def test_offered_and_sent_follow_the_pull(recorded, measured):
    m = measured
    # Pull-based and claimed once across peers: every node fetches each message it did not
    # get locally exactly once, so the bodies served are the messages times the other nodes.
    assert m.sent == 2 * SPEC.messages
    # Ids are announced on every outbound side that had not seen them, at least once per fetch.
    assert m.sent <= m.offered <= 3 * SPEC.messages * 4
