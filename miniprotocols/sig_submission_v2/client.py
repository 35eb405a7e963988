"""The V2 client: the inbound (pulling) peer, run by the connection initiator (docs/protocol/node-to-node.md 9.1)."""

from __future__ import annotations

from typing import Any

from ouroboros_mux.channel import MessageChannel

from ..framework import Driver
from ..sig_submission import InboundPeer, SigSink
from .spec import DIALECT

__all__ = ["inbound"]


def inbound(driver_or_channel: Driver | MessageChannel, sink: SigSink, **limits: Any) -> InboundPeer:
    """An inbound peer pulling into ``sink``; ``limits`` are :class:`InboundPeer`'s keyword options."""
    return InboundPeer(DIALECT, driver_or_channel, sink, **limits)
