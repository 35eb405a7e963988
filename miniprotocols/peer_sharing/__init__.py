"""Peer sharing, mini-protocol 13 (docs/protocol/node-to-node.md 9.6)."""

from .client import PeerSharingClient
from .codec import PeerSharingCodec, decode_address, encode_address
from .server import PeersFor, serve
from .spec import PEER_SHARING
from .types import (
    BUSY_TIME_LIMIT,
    BYTE_LIMIT,
    INGRESS_LIMIT,
    MAX_PEERS_PER_REPLY,
    PROTOCOL_NUM,
    MsgDone,
    MsgSharePeers,
    MsgShareRequest,
    PeerAddress,
    PeerSharingState,
)

__all__ = [
    "PROTOCOL_NUM",
    "INGRESS_LIMIT",
    "BYTE_LIMIT",
    "BUSY_TIME_LIMIT",
    "MAX_PEERS_PER_REPLY",
    "PEER_SHARING",
    "PeerSharingState",
    "PeerAddress",
    "MsgShareRequest",
    "MsgSharePeers",
    "MsgDone",
    "PeerSharingCodec",
    "encode_address",
    "decode_address",
    "PeerSharingClient",
    "PeersFor",
    "serve",
]
