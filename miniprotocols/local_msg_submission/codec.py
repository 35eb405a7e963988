"""Local message submission codec: the LocalTxSubmission envelope with DMQ reasons.

``[0, message]`` / ``[1]`` / ``[2, reason]`` / ``[3]``; reasons ``[0, tstr]`` / ``[1]`` /
``[2]`` / ``[3, tstr]``, all definite (docs/protocol/local-protocols.md 7.1, 7.2); the node may also write a bare
``tstr`` to legacy clients (``RejectText``). The reason decoder accepts only the
``(tag, length)`` pairs Pallas and the reference accept, so what this codec decodes is
exactly what the current clients can decode. The submitted message is cut out as its raw
span and spliced back unchanged when encoding.
"""

from __future__ import annotations

import enum

from ouroboros_mux.cbor import Cursor

from ..framework import CodecError
from ..framework import cbor_write as w
from ..framework.envelope import open_envelope, rest_of_item
from .types import (
    LocalSubmissionMessage,
    MsgAcceptMessage,
    MsgDone,
    MsgRejectMessage,
    MsgSubmitMessage,
    RejectAlreadyReceived,
    RejectExpired,
    RejectInvalid,
    RejectOther,
    RejectReason,
    RejectText,
)

__all__ = ["LocalSubmissionCodec", "encode_reason", "decode_reason"]

_SUBMIT_PREFIX = w.array_header(2) + w.uint(0)
_ACCEPT = w.array_header(1) + w.uint(1)
_REJECT_PREFIX = w.array_header(2) + w.uint(2)
_DONE = w.array_header(1) + w.uint(3)
_ALREADY_RECEIVED = w.array_header(1) + w.uint(1)
_EXPIRED = w.array_header(1) + w.uint(2)


def encode_reason(reason: RejectReason) -> bytes:
    if isinstance(reason, RejectInvalid):
        return w.array_header(2) + w.uint(0) + w.text(reason.text)
    if isinstance(reason, RejectAlreadyReceived):
        return _ALREADY_RECEIVED
    if isinstance(reason, RejectExpired):
        return _EXPIRED
    if isinstance(reason, RejectOther):
        return w.array_header(2) + w.uint(3) + w.text(reason.text)
    if isinstance(reason, RejectText):
        return w.text(reason.text)
    raise TypeError(f"not a reject reason: {reason!r}")


def decode_reason(cursor: Cursor) -> RejectReason:
    length = cursor.definite_array()
    if length == 0:
        raise CodecError("empty reject reason")
    tag = cursor.uint()
    if (tag, length) == (0, 2):
        return RejectInvalid(cursor.text())
    if (tag, length) == (1, 1):
        return RejectAlreadyReceived()
    if (tag, length) == (2, 1):
        return RejectExpired()
    if (tag, length) == (3, 2):
        return RejectOther(cursor.text())
    raise CodecError(f"unrecognised reject reason (tag {tag}, length {length})")


class LocalSubmissionCodec:
    def encode(self, message: LocalSubmissionMessage) -> bytes:
        if isinstance(message, MsgSubmitMessage):
            return _SUBMIT_PREFIX + w.check_item(message.message)
        if isinstance(message, MsgAcceptMessage):
            return _ACCEPT
        if isinstance(message, MsgRejectMessage):
            return _REJECT_PREFIX + encode_reason(message.reason)
        if isinstance(message, MsgDone):
            return _DONE
        raise TypeError(f"not a local message submission message: {message!r}")

    def decode(self, state: enum.Enum, raw: bytes) -> LocalSubmissionMessage:
        try:
            w.check_item(raw, "local message submission message")
        except ValueError as exc:
            raise CodecError(str(exc)) from None
        return self.decode_framed(state, raw)

    def decode_framed(self, state: enum.Enum, raw: bytes) -> LocalSubmissionMessage:
        """``decode`` for one whole item as framed by the channel: a submitted message is
        the rest of the ``[0, message]`` envelope, cut out without a second walk (the
        ingress decodes it once more, strictly, as a DMQ message)."""
        cursor, length, tag = open_envelope(raw)
        if (length, tag) == (2, 0):
            message: LocalSubmissionMessage = MsgSubmitMessage(rest_of_item(cursor))
        elif (length, tag) == (1, 1):
            message = MsgAcceptMessage()
        elif (length, tag) == (2, 2):
            message = MsgRejectMessage(decode_reason(cursor))
        elif (length, tag) == (1, 3):
            message = MsgDone()
        else:
            raise CodecError(f"unexpected local message submission key (length {length}, tag {tag})")
        cursor.expect_end()
        return message
