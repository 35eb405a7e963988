"""Per-peer, connection-manager and peer-selection Prometheus series, read at scrape time.

Byte counters move with every SDU; updating a labelled counter per SDU would cost more
than the traffic it measures. A custom collector instead reads the live counters of
every peer when Prometheus asks, so the figures are exact and the hot path pays nothing.
Names follow :class:`dmq.metrics.SeriesNames`; the per-peer series carry ``peer``
(``host:port``) and ``direction`` labels.

The reference's own series come from the same tables, under the names and with the meaning
ouroboros-network gives them:

- ``connectionManager.*`` (``ConnectionManagerCounters``, ``connectionStateToCounters`` in
  ``Ouroboros.Network.ConnectionManager.Core``): a connection counts as ``duplexConns`` or
  ``unidirectionalConns`` by the data flow its handshake agreed, and as ``inboundConns`` and/or
  ``outboundConns`` by the sides that use it. Each side of a duplex DMQ connection runs both
  the initiator and the responder protocols, which is the reference's ``DuplexState``: such a
  connection is also a ``fullDuplexConns`` one and counts as both inbound and outbound.
- ``peerSelection.*`` (``PeerSelectionCounters``' ``asMetrics``): the outbound governor's known
  peers. A DMQ node promotes an established connection straight to hot (every protocol runs
  once the handshake is done), so ``Warm`` is 0 and ``EstablishedPeers`` equals
  ``ActivePeers``; a peer being dialled counts in ``ColdPeersPromotions``. It has no ledger
  peers, so the big-ledger series are 0. ``WarmLocalRoots`` and ``HotLocalRoots`` are computed
  as the reference computes them (active and established-minus-active local roots), names
  and all.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.registry import Collector

from dmq.metrics import SeriesNames

from ouroboros_mux.mux import Provenance

from .governor import Governor, PeerSource
from .peers import PeerState, PeerTable

__all__ = ["PeerCollector", "connection_counters", "peer_selection_counters"]


def connection_counters(peers: PeerTable) -> dict[str, int]:
    """``connectionManager.*`` over the node-to-node connections that passed their handshake."""
    counts = dict.fromkeys(("fullDuplexConns", "duplexConns", "unidirectionalConns", "inboundConns",
                            "outboundConns"), 0)
    for peer in peers.hot():
        if peer.duplex:
            for name in ("fullDuplexConns", "duplexConns", "inboundConns", "outboundConns"):
                counts[name] += 1
        else:
            counts["unidirectionalConns"] += 1
            counts["inboundConns" if peer.provenance is Provenance.INBOUND else "outboundConns"] += 1
    return counts


def peer_selection_counters(governor: Governor | None) -> dict[str, int]:
    """``peerSelection.*`` over the outbound governor's known peers."""
    known = governor.known if governor is not None else []
    hot = [p for p in known if p.state is PeerState.HOT]
    roots = [p for p in known if p.source is not PeerSource.SHARED]
    local = [p for p in known if p.source is PeerSource.LOCAL_ROOT]
    shared = [p for p in known if p.source is PeerSource.SHARED]

    def hot_in(group: list) -> int:
        return sum(p.state is PeerState.HOT for p in group)

    counts = {
        "Cold": len(known) - len(hot), "Warm": 0, "Hot": len(hot),
        "RootPeers": len(roots), "KnownPeers": len(known),
        "ColdPeersPromotions": sum(p.state is PeerState.CONNECTING for p in known),
        "EstablishedPeers": len(hot), "ActivePeers": len(hot),
        "WarmPeersDemotions": 0, "WarmPeersPromotions": 0, "ActivePeersDemotions": 0,
        "KnownLocalRootPeers": len(local), "EstablishedLocalRootPeers": hot_in(local),
        "ActiveLocalRootPeers": hot_in(local),
        "WarmLocalRoots": hot_in(local), "HotLocalRoots": 0,
        "KnownNonRootPeers": len(shared), "EstablishedNonRootPeers": hot_in(shared),
        "ActiveNonRootPeers": hot_in(shared),
    }
    for name in ("ColdBigLedgerPeers", "WarmBigLedgerPeers", "HotBigLedgerPeers", "KnownBigLedgerPeers",
                 "EstablishedBigLedgerPeers", "ActiveBigLedgerPeers"):
        counts[name] = 0
    return counts


class PeerCollector(Collector):
    """Yields the per-peer families of one :class:`PeerTable`, and the reference's counters."""

    def __init__(self, peers: PeerTable, names: SeriesNames | None = None, governor: Governor | None = None) -> None:
        self.peers = peers
        self.names = names or SeriesNames()
        self.governor = governor

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
        yield from (bytes_in, bytes_out, accepted, rejected, connections, state, rtt)
        for name, value in connection_counters(self.peers).items():
            family = n.family("connectionManager." + name, "int", _CM_HELP[name])
            family.add_metric([], value)
            yield family
        for name, value in peer_selection_counters(self.governor).items():
            family = n.family("peerSelection." + name, "int", "Outbound peers: " + name)
            family.add_metric([], value)
            yield family


_CM_HELP = {
    "fullDuplexConns": "Duplex node-to-node connections used in both directions",
    "duplexConns": "Node-to-node connections whose handshake agreed duplex data flow",
    "unidirectionalConns": "Node-to-node connections whose handshake agreed unidirectional data flow",
    "inboundConns": "Node-to-node connections used as inbound (responder) ones",
    "outboundConns": "Node-to-node connections used as outbound (initiator) ones",
}
