"""Keep-alive codec (``codecKeepAlive_v2``): ``[0, cookie]``, ``[1, cookie]``, ``[2]``.

The decoder dispatches on ``(length, tag)`` like the reference; it decodes every
keep-alive message in every state and leaves "not valid here" to the driver.
"""

from __future__ import annotations

import enum

from ..framework import CodecError
from ..framework import cbor_write as w
from ..framework.envelope import open_envelope
from .types import KeepAliveMessage, MsgDone, MsgKeepAlive, MsgKeepAliveResponse

__all__ = ["KeepAliveCodec"]

_DONE = w.array_header(1) + w.uint(2)


class KeepAliveCodec:
    def encode(self, message: KeepAliveMessage) -> bytes:
        if isinstance(message, MsgKeepAlive):
            return w.array_header(2) + w.uint(0) + w.uint(message.cookie)
        if isinstance(message, MsgKeepAliveResponse):
            return w.array_header(2) + w.uint(1) + w.uint(message.cookie)
        if isinstance(message, MsgDone):
            return _DONE
        raise TypeError(f"not a keep-alive message: {message!r}")

    def decode(self, state: enum.Enum, raw: bytes) -> KeepAliveMessage:
        cursor, length, tag = open_envelope(raw)
        if (length, tag) == (2, 0):
            message: KeepAliveMessage = MsgKeepAlive(cursor.uint(0xFFFF))
        elif (length, tag) == (2, 1):
            message = MsgKeepAliveResponse(cursor.uint(0xFFFF))
        elif (length, tag) == (1, 2):
            message = MsgDone()
        else:
            raise CodecError(f"unexpected keep-alive key (length {length}, tag {tag})")
        cursor.expect_end()
        return message
