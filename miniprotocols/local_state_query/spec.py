"""Local state query as one :class:`ProtocolSpec`."""

from __future__ import annotations

from ..framework import ProtocolSpec
from .codec import LocalStateQueryCodec
from .types import STATES, TRANSITIONS, LocalStateQueryState

__all__ = ["LOCAL_STATE_QUERY"]

LOCAL_STATE_QUERY = ProtocolSpec(
    name="local-state-query",
    states=STATES,
    initial=LocalStateQueryState.IDLE,
    transitions=TRANSITIONS,
    codec=LocalStateQueryCodec(),
)
