"""The keep-alive protocol as one :class:`ProtocolSpec`."""

from __future__ import annotations

from ..framework import ProtocolSpec
from .codec import KeepAliveCodec
from .types import STATES, TRANSITIONS, KeepAliveState

__all__ = ["KEEP_ALIVE"]

KEEP_ALIVE = ProtocolSpec(
    name="keep-alive",
    states=STATES,
    initial=KeepAliveState.CLIENT,
    transitions=TRANSITIONS,
    codec=KeepAliveCodec(),
)
