"""The local message notification server: replies from the node's per-client cursor.

``source`` is that cursor. Its ``next_batch(blocking, limit)`` returns up to ``limit``
raw messages after the cursor and whether more remain, advancing the cursor past what it
returned; when ``blocking`` it waits until it has at least one. The server only frames
the answers: at most :data:`MAX_MESSAGES_PER_REPLY` per reply, the flag only on
non-blocking replies. The end of the client's stream is a normal end (the aggregator drops
its connection on any error and reconnects).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ouroboros_mux.channel import ChannelClosed, MessageChannel

from ..framework import Driver, Role, as_driver
from .spec import LOCAL_MSG_NOTIFICATION
from .types import (
    MAX_MESSAGES_PER_REPLY,
    MsgClientDone,
    MsgReplyMessagesBlocking,
    MsgReplyMessagesNonBlocking,
    MsgRequestMessages,
)

__all__ = ["MessageSource", "SourceContractError", "serve"]


class MessageSource(Protocol):
    async def next_batch(self, blocking: bool, limit: int) -> tuple[Sequence[bytes], bool]:
        """Up to ``limit`` raw messages after the cursor, and whether more remain.

        A source that knows each message to be one CBOR item returns them as
        :class:`~miniprotocols.framework.cbor_write.CheckedItems`; others are checked
        when the reply is encoded.
        """


class SourceContractError(RuntimeError):
    """The message source answered outside its contract (a bug in the node, not the client)."""


async def serve(driver_or_channel: Driver | MessageChannel, source: MessageSource, *,
                limit: int = MAX_MESSAGES_PER_REPLY) -> None:
    """Serve one client until MsgClientDone or the end of its stream."""
    if not 1 <= limit <= MAX_MESSAGES_PER_REPLY:
        raise ValueError(f"reply limit must be within 1..{MAX_MESSAGES_PER_REPLY}, got {limit}")
    driver = as_driver(driver_or_channel, LOCAL_MSG_NOTIFICATION, Role.SERVER)
    while True:
        try:
            request = await driver.recv()
        except ChannelClosed:
            return
        if isinstance(request, MsgClientDone):
            return
        assert isinstance(request, MsgRequestMessages)
        messages, has_more = await source.next_batch(request.blocking, limit)
        if len(messages) > limit:
            raise SourceContractError(f"message source returned {len(messages)} messages for a limit of {limit}")
        if request.blocking:
            if not messages:
                raise SourceContractError("message source returned no message for a blocking request")
            reply: MsgReplyMessagesBlocking | MsgReplyMessagesNonBlocking = MsgReplyMessagesBlocking(messages)
        else:
            reply = MsgReplyMessagesNonBlocking(messages, bool(has_more))
        try:
            await driver.send(reply)
        except ChannelClosed:
            return
