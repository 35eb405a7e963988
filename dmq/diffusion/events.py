"""Trace events of node-to-node diffusion.

Connections themselves are reported with the node's own ``ConnectionOpened`` and
``ConnectionClosed`` (links ``n2n-out`` and ``n2n-in``), so the connection gauges of the
metrics sink count them with everything else. The events here say what only diffusion
knows: why the governor dials or waits, why an inbound connection was turned away, what
peer sharing taught the node.
"""

from __future__ import annotations

from dataclasses import dataclass

from dmq.trace import TraceEvent

__all__ = [
    "PeerDialFailed",
    "PeerBackoff",
    "InboundRefused",
    "InboundDelayed",
    "PeersShared",
    "PeerForgotten",
    "MessageOffered",
    "MessageSent",
]


@dataclass(frozen=True, slots=True)
class PeerDialFailed(TraceEvent):
    """An outbound attempt ended before a mux ran (connect or handshake)."""

    peer: str
    error: str


@dataclass(frozen=True, slots=True)
class PeerBackoff(TraceEvent):
    """The governor will not dial ``peer`` again for ``delay`` seconds (``failures`` in a row)."""

    peer: str
    failures: int
    delay: float


@dataclass(frozen=True, slots=True)
class InboundRefused(TraceEvent):
    """An accepted socket closed at once: the hard limit of inbound connections is reached."""

    peer: str
    connections: int
    hard_limit: int


@dataclass(frozen=True, slots=True)
class InboundDelayed(TraceEvent):
    """Accepting paused for ``delay`` seconds: more inbound connections than the soft limit."""

    connections: int
    delay: float


@dataclass(frozen=True, slots=True)
class PeersShared(TraceEvent):
    """Peer sharing: ``peer`` answered a request with ``count`` addresses, ``new`` of them unknown."""

    peer: str
    count: int
    new: int


@dataclass(frozen=True, slots=True)
class PeerForgotten(TraceEvent):
    """A peer that is not a root failed too often in a row and was dropped from the known set."""

    peer: str
    failures: int


@dataclass(frozen=True, slots=True)
class MessageOffered(TraceEvent):
    """Ids announced to a peer in one reply (one event per id; recorded, not logged)."""

    message_id: bytes
    size: int
    peer: str


@dataclass(frozen=True, slots=True)
class MessageSent(TraceEvent):
    """A message's bytes sent to a peer that requested them (recorded, not logged)."""

    message_id: bytes
    size: int
    peer: str
