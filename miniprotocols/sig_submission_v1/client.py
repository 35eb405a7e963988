"""The V1 client: the outbound (serving) peer, run by the connection initiator (docs/protocol/node-to-node.md 9.1)."""

from __future__ import annotations

from ouroboros_mux.channel import MessageChannel

from ..framework import Driver
from ..sig_submission import OutboundPeer, SigSource
from ..sig_submission.policy import MAX_UNACKNOWLEDGED_IDS
from .spec import DIALECT

__all__ = ["outbound"]


def outbound(driver_or_channel: Driver | MessageChannel, source: SigSource, *,
             window: int = MAX_UNACKNOWLEDGED_IDS, start_position: int = -1) -> OutboundPeer:
    """An outbound peer serving ``source``: opens with MsgInit, blocks on blocking requests.

    ``stop()`` on the returned peer ends the protocol with MsgDone at the next blocking request.
    """
    return OutboundPeer(DIALECT, driver_or_channel, source, blocking_timeout=None,
                        window=window, start_position=start_position)
