"""The handshake as the protocol engine's data: states, agency, limits, transitions, codec.

The same :class:`~protocol_engine.ProtocolSpec` as every mini-protocol's, so the engine's
sans-IO :class:`~protocol_engine.ProtocolMachine` checks each move of the sans-IO peers
(:mod:`handshake.protocol`) and the engine's trio :class:`~protocol_engine.Driver` runs the
handshake over the bearer (:mod:`handshake.driver`). Only the limits and the codec differ
between links, so each link has one spec, built the first time it is asked for.
"""

from __future__ import annotations

import functools
from types import MappingProxyType
from typing import Mapping

from protocol_engine import ProtocolSpec, StateSpec

from .codec import HandshakeCodec
from .links import HandshakeLink
from .messages import MsgAcceptVersion, MsgProposeVersions, MsgQueryReply, MsgRefuse, MsgReplyVersions
from .states import AGENCY, State

__all__ = ["TRANSITIONS", "protocol_spec"]

#: (state, message kind) -> next state. Anything not listed is a protocol violation.
TRANSITIONS: Mapping[tuple[State, type], State] = MappingProxyType({
    (State.PROPOSE, MsgProposeVersions): State.CONFIRM,
    (State.CONFIRM, MsgAcceptVersion): State.DONE,
    (State.CONFIRM, MsgRefuse): State.DONE,
    (State.CONFIRM, MsgQueryReply): State.DONE,
    # Simultaneous open: the other side's proposal arrives while we wait for a reply.
    (State.CONFIRM, MsgReplyVersions): State.DONE,
})


@functools.cache
def protocol_spec(link: HandshakeLink) -> ProtocolSpec:
    """The handshake on ``link``: its byte and time limits per state, and its codec.

    Links compare by identity and are few (module constants), so the cache stays small.
    """
    states = {state: StateSpec(agency, link.size_limits.get(state), link.time_limits.get(state))
              for state, agency in AGENCY.items()}
    return ProtocolSpec(f"Handshake ({link.name})", states, State.PROPOSE, TRANSITIONS, HandshakeCodec(link))
