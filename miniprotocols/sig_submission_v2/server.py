"""The V2 server: the outbound (serving) peer, run by the connection responder (docs/protocol/node-to-node.md 9.1)."""

from __future__ import annotations

from ouroboros_mux.channel import MessageChannel

from ..framework import Driver
from ..sig_submission import BLOCKING_REPLY_TIMEOUT, OutboundPeer, SigSource
from ..sig_submission.policy import MAX_UNACKNOWLEDGED_IDS
from .spec import DIALECT

__all__ = ["outbound"]


def outbound(driver_or_channel: Driver | MessageChannel, source: SigSource, *,
             blocking_timeout: float = BLOCKING_REPLY_TIMEOUT,
             window: int = MAX_UNACKNOWLEDGED_IDS,
             start_position: int = -1) -> OutboundPeer:
    """An outbound peer serving ``source``; a blocking request gets ``[3]`` after ``blocking_timeout`` s."""
    return OutboundPeer(DIALECT, driver_or_channel, source, blocking_timeout=blocking_timeout,
                        window=window, start_position=start_position)
