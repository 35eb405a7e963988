"""Peer sharing as one :class:`ProtocolSpec`."""

from __future__ import annotations

from ..framework import ProtocolSpec
from .codec import PeerSharingCodec
from .types import STATES, TRANSITIONS, PeerSharingState

__all__ = ["PEER_SHARING"]

PEER_SHARING = ProtocolSpec(
    name="peer-sharing",
    states=STATES,
    initial=PeerSharingState.IDLE,
    transitions=TRANSITIONS,
    codec=PeerSharingCodec(),
)
