"""Per-peer Prometheus series, read from the peer table at scrape time.

Byte counters move with every SDU; updating a labelled counter per SDU would cost more
than the traffic it measures. A custom collector instead reads the live counters of
every peer when Prometheus asks, so the figures are exact and the hot path pays nothing.
Names follow :class:`dmq.metrics.SeriesNames`; the per-peer series carry ``peer``
(``host:port``) and ``direction`` labels. ``peerSelection.{KnownPeers,EstablishedPeers,
ActivePeers}`` are the reference's peer-selection counters over the outbound peers (a DMQ
connection runs every protocol once established, so established peers are active ones).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.registry import Collector

from dmq.metrics import SeriesNames

from ouroboros_mux.mux import Provenance

from .peers import PeerState, PeerTable

__all__ = ["PeerCollector"]


class PeerCollector(Collector):
    """Yields the per-peer families of one :class:`PeerTable`."""

    def __init__(self, peers: PeerTable, names: SeriesNames | None = None) -> None:
        self.peers = peers
        self.names = names or SeriesNames()

    def collect(self) -> Iterator:
        n = self.names
        labels = ["peer", "direction"]
        bytes_in = n.family("peer.bytesIn", "counter", "Bytes received from the peer, SDU headers included", labels)
        bytes_out = n.family("peer.bytesOut", "counter", "Bytes sent to the peer, SDU headers included", labels)
        accepted = n.family("peer.sigsAccepted", "counter", "Messages pulled from the peer and accepted", labels)
        rejected = n.family("peer.sigsRejected", "counter", "Messages pulled from the peer and rejected", labels)
        connections = n.family("peer.connections", "counter", "Connections established with the peer", labels)
        state = n.family("peer.state", "int", "1 for the peer's current state", [*labels, "state"])
        rtt = n.family("peer.keepAliveRtt", "real", "Last keep-alive round trip, seconds", labels)
        known = established = 0
        for peer in self.peers:
            key = [peer.peer, peer.provenance.value]
            bytes_in.add_metric(key, peer.bytes_in)
            bytes_out.add_metric(key, peer.bytes_out)
            accepted.add_metric(key, peer.messages_accepted)
            rejected.add_metric(key, peer.messages_rejected)
            connections.add_metric(key, peer.connections)
            state.add_metric([*key, peer.state.value], 1)
            if peer.keep_alive_rtt is not None:
                rtt.add_metric(key, peer.keep_alive_rtt)
            if peer.provenance is Provenance.OUTBOUND:
                known += 1
                established += peer.state is PeerState.HOT
        yield from (bytes_in, bytes_out, accepted, rejected, connections, state, rtt)
        for name, doc, value in (("peerSelection.KnownPeers", "Outbound peers known", known),
                                 ("peerSelection.EstablishedPeers", "Outbound peers connected", established),
                                 ("peerSelection.ActivePeers", "Outbound peers running sig-submission",
                                  established)):
            family = n.family(name, "int", doc)
            family.add_metric([], value)
            yield family
