"""Per-peer Prometheus series, read from the peer table at scrape time.

Byte counters move with every SDU; updating a labelled counter per SDU would cost more
than the traffic it measures. A custom collector instead reads the live counters of
every peer when Prometheus asks, so the figures are exact and the hot path pays nothing.
Series use the node's prefix (``dmq_node_``) and one ``peer`` label (``host:port``).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from .peers import PeerState, PeerTable

__all__ = ["PeerCollector"]


class PeerCollector(Collector):
    """Yields the per-peer families of one :class:`PeerTable`."""

    def __init__(self, peers: PeerTable, prefix: str = "dmq_node_") -> None:
        self.peers = peers
        self.prefix = prefix

    def collect(self) -> Iterator:
        p = self.prefix
        labels = ["peer", "direction"]
        bytes_in = CounterMetricFamily(f"{p}peer_bytes_in", "Bytes received from the peer, SDU headers included",
                                       labels=labels)
        bytes_out = CounterMetricFamily(f"{p}peer_bytes_out", "Bytes sent to the peer, SDU headers included",
                                        labels=labels)
        accepted = CounterMetricFamily(f"{p}peer_messages_accepted", "Messages pulled from the peer and accepted",
                                       labels=labels)
        rejected = CounterMetricFamily(f"{p}peer_messages_rejected", "Messages pulled from the peer and rejected",
                                       labels=labels)
        connections = CounterMetricFamily(f"{p}peer_connections", "Connections established with the peer",
                                          labels=labels)
        state = GaugeMetricFamily(f"{p}peer_state", "1 for the peer's current state", labels=[*labels, "state"])
        rtt = GaugeMetricFamily(f"{p}peer_keep_alive_rtt_seconds", "Last keep-alive round trip", labels=labels)
        per_state = {s: 0 for s in PeerState}
        for peer in self.peers:
            key = [peer.peer, peer.direction.value]
            bytes_in.add_metric(key, peer.bytes_in)
            bytes_out.add_metric(key, peer.bytes_out)
            accepted.add_metric(key, peer.messages_accepted)
            rejected.add_metric(key, peer.messages_rejected)
            connections.add_metric(key, peer.connections)
            state.add_metric([*key, peer.state.value], 1)
            per_state[peer.state] += 1
            if peer.keep_alive_rtt is not None:
                rtt.add_metric(key, peer.keep_alive_rtt)
        totals = GaugeMetricFamily(f"{p}peers", "Peers by state", labels=["state"])
        for s, count in per_state.items():
            totals.add_metric([s.value], count)
        yield from (bytes_in, bytes_out, accepted, rejected, connections, state, rtt, totals)
