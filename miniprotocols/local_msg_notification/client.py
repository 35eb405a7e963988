"""The local message notification client: what an aggregator runs against its node."""

from __future__ import annotations

from ouroboros_mux.channel import MessageChannel

from ..framework import Driver, Role, as_driver
from .spec import LOCAL_MSG_NOTIFICATION
from .types import MsgClientDone, MsgReplyMessagesBlocking, MsgRequestMessages

__all__ = ["LocalMsgNotificationClient"]


class LocalMsgNotificationClient:
    def __init__(self, driver_or_channel: Driver | MessageChannel) -> None:
        self.driver = as_driver(driver_or_channel, LOCAL_MSG_NOTIFICATION, Role.CLIENT)

    async def request(self, blocking: bool) -> tuple[tuple[bytes, ...], bool]:
        """Ask for the next messages; return their raw bytes and the server's "has more".

        A blocking reply carries no flag (reference "Issue #15"); it is reported as False.
        """
        await self.driver.send(MsgRequestMessages(blocking))
        reply = await self.driver.recv()
        if isinstance(reply, MsgReplyMessagesBlocking):
            return reply.messages, False
        return reply.messages, reply.has_more

    async def done(self) -> None:
        await self.driver.send(MsgClientDone())
