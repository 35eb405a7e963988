"""The peer sharing client: ask a peer for addresses of other peers."""

from __future__ import annotations

from ouroboros_mux.channel import MessageChannel

from ..framework import Driver, Role, as_driver
from .spec import PEER_SHARING
from .types import MsgDone, MsgShareRequest

__all__ = ["PeerSharingClient"]


class PeerSharingClient:
    def __init__(self, driver_or_channel: Driver | MessageChannel) -> None:
        self.driver = as_driver(driver_or_channel, PEER_SHARING, Role.CLIENT)

    async def request(self, amount: int) -> list[tuple[str, int]]:
        """Ask for up to ``amount`` (0..255) addresses; return them as ``(host, port)``.

        The peer may answer with fewer (the reference shares at most 10), or none.
        """
        await self.driver.send(MsgShareRequest(amount))
        reply = await self.driver.recv()
        return [peer.as_tuple() for peer in reply.peers]

    async def done(self) -> None:
        await self.driver.send(MsgDone())
