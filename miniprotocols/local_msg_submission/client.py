"""The local message submission client: submit raw messages, read verdicts.

This is what a signer (or the project's own publisher library) runs: one
:meth:`submit` per message, then :meth:`done`.
"""

from __future__ import annotations

from ouroboros_mux.channel import MessageChannel

from ..framework import Driver, Role, as_driver
from .spec import LOCAL_MSG_SUBMISSION
from .types import ACCEPTED, MsgAcceptMessage, MsgDone, MsgRejectMessage, MsgSubmitMessage, SubmitResult

__all__ = ["LocalMsgSubmissionClient"]


class LocalMsgSubmissionClient:
    def __init__(self, driver_or_channel: Driver | MessageChannel) -> None:
        self.driver = as_driver(driver_or_channel, LOCAL_MSG_SUBMISSION, Role.CLIENT)

    async def submit(self, raw_message: bytes) -> SubmitResult:
        """Submit one message (its exact CBOR bytes); return ACCEPTED or the reject reason."""
        await self.driver.send(MsgSubmitMessage(raw_message))
        reply = await self.driver.recv()
        if isinstance(reply, MsgAcceptMessage):
            return ACCEPTED
        assert isinstance(reply, MsgRejectMessage)
        return reply.reason

    async def done(self) -> None:
        """End the protocol (the connection may then be closed)."""
        await self.driver.send(MsgDone())
