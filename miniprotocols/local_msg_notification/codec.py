"""Local message notification codec (docs/protocol/local-protocols.md 8.1).

The reference writes both reply lists indefinite, even empty ones (``83019ffff4``), and
its blocking reply has exactly two items since "Issue #15" dropped ``hasMore``. Requests
are decoded strictly, as the reference server does. Replies are decoded as the reference
client does, except that a definite list is also accepted: only the client side ever
decodes replies, and leniency there costs nothing. An empty blocking reply is a decoder
failure, as in the reference.
"""

from __future__ import annotations

import enum

from ..framework import CodecError
from ..framework import cbor_write as w
from ..framework.envelope import open_envelope, raw_items
from .types import (
    LocalNotificationMessage,
    MsgClientDone,
    MsgReplyMessagesBlocking,
    MsgReplyMessagesNonBlocking,
    MsgRequestMessages,
)

__all__ = ["LocalNotificationCodec"]

_REQUEST_BLOCKING = w.array_header(2) + w.uint(0) + w.boolean(True)
_REQUEST_NON_BLOCKING = w.array_header(2) + w.uint(0) + w.boolean(False)
_NON_BLOCKING_PREFIX = w.array_header(3) + w.uint(1) + w.INDEFINITE_ARRAY
_BLOCKING_PREFIX = w.array_header(2) + w.uint(2) + w.INDEFINITE_ARRAY
_CLIENT_DONE = w.array_header(1) + w.uint(3)


def _messages(messages: tuple[bytes, ...]) -> bytes:
    return w.join_items(messages)


class LocalNotificationCodec:
    def encode(self, message: LocalNotificationMessage) -> bytes:
        if isinstance(message, MsgRequestMessages):
            return _REQUEST_BLOCKING if message.blocking else _REQUEST_NON_BLOCKING
        if isinstance(message, MsgReplyMessagesNonBlocking):
            return (_NON_BLOCKING_PREFIX + _messages(message.messages) + w.BREAK
                    + w.boolean(message.has_more))
        if isinstance(message, MsgReplyMessagesBlocking):
            return _BLOCKING_PREFIX + _messages(message.messages) + w.BREAK
        if isinstance(message, MsgClientDone):
            return _CLIENT_DONE
        raise TypeError(f"not a local message notification message: {message!r}")

    def decode(self, state: enum.Enum, raw: bytes) -> LocalNotificationMessage:
        cursor, length, tag = open_envelope(raw)
        if (length, tag) == (2, 0):
            message: LocalNotificationMessage = MsgRequestMessages(cursor.bool())
        elif (length, tag) == (3, 1):
            messages = raw_items(cursor, allow_definite=True)
            message = MsgReplyMessagesNonBlocking(messages, cursor.bool())
        elif (length, tag) == (2, 2):
            messages = raw_items(cursor, allow_definite=True)
            if not messages:
                raise CodecError("empty list in a blocking reply")
            message = MsgReplyMessagesBlocking(messages)
        elif (length, tag) == (1, 3):
            message = MsgClientDone()
        else:
            raise CodecError(f"unexpected local message notification key (length {length}, tag {tag})")
        cursor.expect_end()
        return message
