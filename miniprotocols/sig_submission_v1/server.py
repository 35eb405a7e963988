"""The V1 server: the inbound (pulling) peer, run by the connection responder (docs/protocol/node-to-node.md 9.1)."""

from __future__ import annotations

from typing import Any

from ouroboros_mux.channel import MessageChannel

from ..framework import Driver
from ..sig_submission import InboundPeer, SigSink
from .spec import DIALECT

__all__ = ["inbound"]


def inbound(driver_or_channel: Driver | MessageChannel, sink: SigSink, **limits: Any) -> InboundPeer:
    """An inbound peer pulling into ``sink``; waits for MsgInit, returns when the outbound sends MsgDone."""
    return InboundPeer(DIALECT, driver_or_channel, sink, **limits)
