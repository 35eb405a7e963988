"""Sig submission V1 codec: TxSubmission2's (``anncodecTxSubmission2'``, docs/protocol/node-to-node.md 9.4).

Dispatch on ``(length, tag)`` as the reference does; every V1 message decodes in every
state and the driver judges where it is allowed, except that an empty ids reply is a
decoder failure in the blocking ids state (the reference codec's own rule). Note that
``8106`` is ``MsgInit`` here but ``MsgDone`` in V2: the negotiated version picks the codec.
``decode_framed`` and ``decode_prefix`` read the round messages in their usual form directly, as V2's do.
"""

from __future__ import annotations

import enum

from ..framework import CodecError
from ..framework import cbor_write as w
from ..framework.decoded import decoded_builder
from ..framework.envelope import open_envelope
from ..sig_submission import wire
from ..sig_submission.usual import UsualReader
from .types import (
    MsgDone,
    MsgInit,
    MsgReplyTxIds,
    MsgReplyTxs,
    MsgRequestTxIds,
    MsgRequestTxs,
    SigSubmissionV1Message,
    SigSubmissionV1State,
)

__all__ = ["SigSubmissionV1Codec"]

_INIT = w.array_header(1) + w.uint(6)
_DONE = w.array_header(1) + w.uint(4)

#: Decoded messages are built without their constructors' checks: the reading checked them.
_build_request_ids = decoded_builder(MsgRequestTxIds)
_build_reply_ids = decoded_builder(MsgReplyTxIds)
_build_request_bodies = decoded_builder(MsgRequestTxs)
_build_reply_bodies = decoded_builder(MsgReplyTxs)


class SigSubmissionV1Codec:
    #: The encoder of each message class: one lookup per message sent, instead of a test per class.
    _encoders = {
        MsgInit: lambda message: _INIT,
        MsgRequestTxIds: lambda message: wire.encode_request_ids(0, message.blocking, message.ack, message.req),
        MsgReplyTxIds: lambda message: wire.encode_id_sizes(1, message.ids),
        MsgRequestTxs: lambda message: wire.encode_ids(2, message.ids),
        MsgReplyTxs: lambda message: wire.encode_messages(3, message.messages),
        MsgDone: lambda message: _DONE,
    }
    _usual = UsualReader((0, _build_request_ids), (1, _build_reply_ids), (2, _build_request_bodies),
                         (3, _build_reply_bodies), SigSubmissionV1State.TX_IDS_BLOCKING)

    def encode(self, message: SigSubmissionV1Message) -> bytes:
        encode = self._encoders.get(type(message))
        if encode is None:
            raise TypeError(f"not a sig submission V1 message: {message!r}")
        return encode(message)

    def decode(self, state: enum.Enum, raw: bytes) -> SigSubmissionV1Message:
        cursor, length, tag = open_envelope(raw)
        if (length, tag) == (1, 6):
            message: SigSubmissionV1Message = MsgInit()
        elif (length, tag) == (4, 0):
            message = _build_request_ids(*wire.decode_request_ids(cursor))
        elif (length, tag) == (2, 1):
            ids = wire.decode_id_sizes(cursor)
            if not ids and state is SigSubmissionV1State.TX_IDS_BLOCKING:
                raise CodecError("MsgReplyTxIds: empty list not permitted in reply to a blocking request")
            message = _build_reply_ids(ids)
        elif (length, tag) == (2, 2):
            message = _build_request_bodies(wire.decode_ids(cursor))
        elif (length, tag) == (2, 3):
            message = _build_reply_bodies(wire.decode_messages(cursor))
        elif (length, tag) == (1, 4):
            message = MsgDone()
        else:
            raise CodecError(f"unexpected sig submission V1 key (length {length}, tag {tag})")
        cursor.expect_end()
        return message

    def decode_framed(self, state: enum.Enum, raw: bytes) -> SigSubmissionV1Message:
        """:meth:`decode` for one framed message: the round messages in their usual form read directly."""
        message = self._usual.read(state, raw)
        return self.decode(state, raw) if message is None else message

    #: ``decode_prefix(state, buf)``: the round message in its usual form at the start of ``buf``
    #: and where it ends; None for anything else (the channel then frames it and
    #: :meth:`decode_framed` reads it). The reader's own method, so that no call stands between.
    decode_prefix = _usual.read_prefix
