"""What the node knows about each node-to-node peer right now: state, traffic, messages.

One :class:`PeerStats` per outbound peer address (kept across reconnections, so its
counters say what the peer has cost and brought over the node's lifetime) and one per
live inbound connection (dropped when it closes: inbound peers come from ephemeral ports,
and keeping them would grow without bound). Byte counters read the live bearer while a
connection runs, so a scrape in the middle of a busy connection is current; they include
the handshake and the 8-byte header of every SDU, i.e. what crossed the wire.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass, field

from ouroboros_mux.bearer import Bearer
from ouroboros_mux.mux import Mux, Provenance

__all__ = ["PeerState", "PeerStats", "PeerTable"]


class PeerState(str, enum.Enum):
    COLD = "cold"              # known, not connected, may be dialled now
    CONNECTING = "connecting"  # TCP connect or handshake under way
    HOT = "hot"                # connection established, protocols running
    BACKOFF = "backoff"        # failed recently; not dialled before its back-off ends


@dataclass(eq=False)
class PeerStats:
    """Counters and state of one peer (outbound address or inbound connection).

    ``provenance`` says who opened the connection; the Prometheus series carry it as their
    ``direction`` label.
    """

    peer: str
    provenance: Provenance
    state: PeerState = PeerState.COLD
    version: int | None = None
    duplex: bool | None = None
    #: Connections that passed the handshake.
    connections: int = 0
    failures: int = 0
    messages_accepted: int = 0
    messages_rejected: int = 0
    keep_alive_rtt: float | None = None
    last_error: str | None = None
    _closed_bytes_in: int = 0
    _closed_bytes_out: int = 0
    _bearer: Bearer | None = field(default=None, repr=False)
    _mux: Mux | None = field(default=None, repr=False)

    @property
    def bytes_in(self) -> int:
        live = self._bearer.bytes_in if self._bearer is not None else 0
        return self._closed_bytes_in + live

    @property
    def bytes_out(self) -> int:
        live = self._bearer.bytes_out if self._bearer is not None else 0
        return self._closed_bytes_out + live

    @property
    def mux(self) -> Mux | None:
        """The live connection's mux (per-protocol counters), None when not connected."""
        return self._mux

    def attach(self, bearer: Bearer) -> None:
        """Count a new connection's bytes (from before its handshake)."""
        self._bearer = bearer

    def established(self, mux: Mux, version: int, duplex: bool) -> None:
        self._mux = mux
        self.version = version
        self.duplex = duplex
        self.connections += 1
        self.state = PeerState.HOT

    def detach(self) -> None:
        """The connection ended: fold its byte counts into the totals."""
        if self._bearer is not None:
            self._closed_bytes_in += self._bearer.bytes_in
            self._closed_bytes_out += self._bearer.bytes_out
        self._bearer = None
        self._mux = None


class PeerTable:
    """Every peer's :class:`PeerStats`: outbound ones by listening address, inbound ones by connection.

    Labels are ``host:port``; an inbound label names the remote end of the connection
    (usually an ephemeral port), so the two provenances are kept apart.
    """

    def __init__(self) -> None:
        self._peers: dict[tuple[Provenance, str], PeerStats] = {}

    def outbound(self, label: str) -> PeerStats:
        key = (Provenance.OUTBOUND, label)
        stats = self._peers.get(key)
        if stats is None:
            stats = self._peers[key] = PeerStats(label, Provenance.OUTBOUND)
        return stats

    def inbound(self, label: str) -> PeerStats:
        stats = PeerStats(label, Provenance.INBOUND, state=PeerState.CONNECTING)
        self._peers[(Provenance.INBOUND, label)] = stats
        return stats

    def drop(self, stats: PeerStats) -> None:
        key = (stats.provenance, stats.peer)
        if self._peers.get(key) is stats:
            del self._peers[key]

    def get(self, label: str, provenance: Provenance = Provenance.OUTBOUND) -> PeerStats | None:
        return self._peers.get((provenance, label))

    def __iter__(self) -> Iterator[PeerStats]:
        return iter(list(self._peers.values()))

    def __len__(self) -> int:
        return len(self._peers)

    def hot(self, provenance: Provenance | None = None) -> list[PeerStats]:
        return [p for p in self._peers.values()
                if p.state is PeerState.HOT and (provenance is None or p.provenance is provenance)]
