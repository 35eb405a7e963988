"""Local state query codec (``codecLocalStateQuery``): ``(length, tag)`` dispatch, raw bodies.

Points, queries and results are spliced in and cut out as exact CBOR items: the protocol
does not interpret them (their shapes depend on the block type and the node-to-client
version), so a result arrives at the caller as the very bytes cardano-node sent.
"""

from __future__ import annotations

import enum

from ..framework import CodecError
from ..framework import cbor_write as w
from ..framework.envelope import open_envelope
from .types import (
    IMMUTABLE_TIP,
    VOLATILE_TIP,
    AcquireFailure,
    AcquireTarget,
    ImmutableTip,
    LocalStateQueryMessage,
    MsgAcquire,
    MsgAcquired,
    MsgDone,
    MsgFailure,
    MsgQuery,
    MsgReAcquire,
    MsgRelease,
    MsgResult,
    SpecificPoint,
    VolatileTip,
)

__all__ = ["LocalStateQueryCodec"]

# Tags of the acquire and re-acquire messages per target: (specific point, volatile, immutable).
_ACQUIRE_TAGS = (0, 8, 10)
_REACQUIRE_TAGS = (6, 9, 11)

_ACQUIRED = w.array_header(1) + w.uint(1)
_RELEASE = w.array_header(1) + w.uint(5)
_DONE = w.array_header(1) + w.uint(7)


def _encode_target(target: AcquireTarget, tags: tuple[int, int, int]) -> bytes:
    if isinstance(target, SpecificPoint):
        return w.array_header(2) + w.uint(tags[0]) + target.point
    if isinstance(target, VolatileTip):
        return w.array_header(1) + w.uint(tags[1])
    if isinstance(target, ImmutableTip):
        return w.array_header(1) + w.uint(tags[2])
    raise TypeError(f"not an acquire target: {target!r}")


class LocalStateQueryCodec:
    def encode(self, message: LocalStateQueryMessage) -> bytes:
        if isinstance(message, MsgAcquire):
            return _encode_target(message.target, _ACQUIRE_TAGS)
        if isinstance(message, MsgAcquired):
            return _ACQUIRED
        if isinstance(message, MsgFailure):
            return w.array_header(2) + w.uint(2) + w.uint(int(message.failure))
        if isinstance(message, MsgQuery):
            return w.array_header(2) + w.uint(3) + message.query
        if isinstance(message, MsgResult):
            return w.array_header(2) + w.uint(4) + message.result
        if isinstance(message, MsgRelease):
            return _RELEASE
        if isinstance(message, MsgReAcquire):
            return _encode_target(message.target, _REACQUIRE_TAGS)
        if isinstance(message, MsgDone):
            return _DONE
        raise TypeError(f"not a local state query message: {message!r}")

    def decode(self, state: enum.Enum, raw: bytes) -> LocalStateQueryMessage:
        cursor, length, tag = open_envelope(raw)
        key = (length, tag)
        message: LocalStateQueryMessage
        if key == (2, 0):
            message = MsgAcquire(SpecificPoint(cursor.raw_item()))
        elif key == (1, 8):
            message = MsgAcquire(VOLATILE_TIP)
        elif key == (1, 10):
            message = MsgAcquire(IMMUTABLE_TIP)
        elif key == (1, 1):
            message = MsgAcquired()
        elif key == (2, 2):
            code = cursor.uint()
            try:
                message = MsgFailure(AcquireFailure(code))
            except ValueError:
                raise CodecError(f"unknown acquire failure {code}") from None
        elif key == (2, 3):
            message = MsgQuery(cursor.raw_item())
        elif key == (2, 4):
            message = MsgResult(cursor.raw_item())
        elif key == (1, 5):
            message = MsgRelease()
        elif key == (2, 6):
            message = MsgReAcquire(SpecificPoint(cursor.raw_item()))
        elif key == (1, 9):
            message = MsgReAcquire(VOLATILE_TIP)
        elif key == (1, 11):
            message = MsgReAcquire(IMMUTABLE_TIP)
        elif key == (1, 7):
            message = MsgDone()
        else:
            raise CodecError(f"unexpected local state query key (length {length}, tag {tag})")
        cursor.expect_end()
        return message
