"""Peer sharing (mini-protocol 13): states, messages, addresses, limits and the table.

A node asks a peer for up to ``amount`` addresses of other peers it knows; the peer
answers with at most 10. Both the request and the answer must fit in one initial TCP
window (4 segments of 1 440 bytes), which is where the 5 760-byte limits come from.
Only registered on a connection whose handshake agreed ``peerSharing = 1``.
(``ouroboros-network: Ouroboros/Network/Protocol/PeerSharing/{Type,Codec}.hs``; docs/protocol/node-to-node.md 9.6.)
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ..framework import Agency, ProtocolState, StateSpec

__all__ = [
    "PROTOCOL_NUM",
    "INGRESS_LIMIT",
    "BYTE_LIMIT",
    "MAX_PEERS_PER_REPLY",
    "BUSY_TIME_LIMIT",
    "PeerSharingState",
    "PeerAddress",
    "MsgShareRequest",
    "MsgSharePeers",
    "MsgDone",
    "PeerSharingMessage",
    "STATES",
    "TRANSITIONS",
]

PROTOCOL_NUM = 13
#: ``maxTransmissionUnit``: 4 x 1440, the per-state byte limit and the mux ingress limit.
BYTE_LIMIT = 4 * 1440
INGRESS_LIMIT = BYTE_LIMIT
#: The most addresses the reference puts in one reply.
MAX_PEERS_PER_REPLY = 10
#: The reference's ``longWait``: how long the client waits for the reply.
BUSY_TIME_LIMIT = 60.0


class PeerSharingState(ProtocolState):
    IDLE = "StIdle"
    BUSY = "StBusy"
    DONE = "StDone"


@dataclass(frozen=True, slots=True)
class PeerAddress:
    """An IPv4 or IPv6 address and a TCP port."""

    address: ipaddress.IPv4Address | ipaddress.IPv6Address
    port: int

    def __post_init__(self) -> None:
        if not isinstance(self.address, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
            raise ValueError(f"peer address must be an IPv4 or IPv6 address, got {self.address!r}")
        if isinstance(self.port, bool) or not isinstance(self.port, int) or not 0 <= self.port <= 0xFFFF:
            raise ValueError(f"port must be a word16, got {self.port!r}")

    @classmethod
    def of(cls, host: str, port: int) -> PeerAddress:
        """From a textual IP address (no host names: peers are shared as addresses)."""
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            raise ValueError(f"peer sharing carries IP addresses, not {host!r}") from None
        return cls(address, port)

    @property
    def host(self) -> str:
        return str(self.address)

    def as_tuple(self) -> tuple[str, int]:
        return self.host, self.port


@dataclass(frozen=True, slots=True)
class MsgShareRequest:
    """``[0, amount]``: ask for up to ``amount`` (a word8) peer addresses."""

    amount: int

    def __post_init__(self) -> None:
        if isinstance(self.amount, bool) or not isinstance(self.amount, int) or not 0 <= self.amount <= 0xFF:
            raise ValueError(f"peer sharing amount must be a word8, got {self.amount!r}")


@dataclass(frozen=True, slots=True)
class MsgSharePeers:
    """``[1, [peerAddress*]]``: the addresses shared (possibly none)."""

    peers: tuple[PeerAddress, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "peers", tuple(self.peers))


@dataclass(frozen=True, slots=True)
class MsgDone:
    """``[2]``: the client ends the protocol."""


PeerSharingMessage = MsgShareRequest | MsgSharePeers | MsgDone

STATES = {
    PeerSharingState.IDLE: StateSpec(Agency.CLIENT, BYTE_LIMIT, None),
    PeerSharingState.BUSY: StateSpec(Agency.SERVER, BYTE_LIMIT, BUSY_TIME_LIMIT),
    PeerSharingState.DONE: StateSpec(Agency.NOBODY),
}

TRANSITIONS = {
    (PeerSharingState.IDLE, MsgShareRequest): PeerSharingState.BUSY,
    (PeerSharingState.IDLE, MsgDone): PeerSharingState.DONE,
    (PeerSharingState.BUSY, MsgSharePeers): PeerSharingState.IDLE,
}
