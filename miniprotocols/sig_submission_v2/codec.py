"""Sig submission V2 codec (``codecSigSubmissionV2``, docs/protocol/node-to-node.md 9.3).

The decoder dispatches on ``(length, tag)`` as the reference does and decodes every V2
message in every state, leaving "not valid here" to the driver, with one exception that
is the reference codec's own: an empty ids reply is a decoder failure in the blocking
ids state (a blocking reply is a non-empty list by type there) and valid elsewhere.
Lists are indefinite both ways; messages inside ``[5, ...]`` stay the exact received
spans and must have a message's outer shape. ``decode_framed``, which the driver uses, reads
the round messages written the usual way straight from their bytes
(:mod:`miniprotocols.sig_submission.usual`) and anything else as ``decode`` does;
``decode_prefix`` reads them the same way at the start of a channel's received bytes, telling
where they end, so the channel need not walk them to frame them.
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
    MsgReplyNoSigIds,
    MsgReplySigIds,
    MsgReplySigs,
    MsgRequestSigIds,
    MsgRequestSigs,
    SigSubmissionV2Message,
    SigSubmissionV2State,
)

__all__ = ["SigSubmissionV2Codec"]

_REPLY_NO_SIG_IDS = w.array_header(1) + w.uint(3)
_DONE = w.array_header(1) + w.uint(6)

#: Decoded messages are built without their constructors' checks: the reading checked them.
_build_request_ids = decoded_builder(MsgRequestSigIds)
_build_reply_ids = decoded_builder(MsgReplySigIds)
_build_request_bodies = decoded_builder(MsgRequestSigs)
_build_reply_bodies = decoded_builder(MsgReplySigs)


class SigSubmissionV2Codec:
    #: The encoder of each message class: one lookup per message sent, instead of a test per class.
    _encoders = {
        MsgRequestSigIds: lambda message: wire.encode_request_ids(1, message.blocking, message.ack, message.req),
        MsgReplySigIds: lambda message: wire.encode_id_sizes(2, message.ids),
        MsgReplyNoSigIds: lambda message: _REPLY_NO_SIG_IDS,
        MsgRequestSigs: lambda message: wire.encode_ids(4, message.ids),
        MsgReplySigs: lambda message: wire.encode_messages(5, message.messages),
        MsgDone: lambda message: _DONE,
    }
    _usual = UsualReader((1, _build_request_ids), (2, _build_reply_ids), (4, _build_request_bodies),
                         (5, _build_reply_bodies), SigSubmissionV2State.SIG_IDS_BLOCKING)

    def encode(self, message: SigSubmissionV2Message) -> bytes:
        encode = self._encoders.get(type(message))
        if encode is None:
            raise TypeError(f"not a sig submission V2 message: {message!r}")
        return encode(message)

    def decode(self, state: enum.Enum, raw: bytes) -> SigSubmissionV2Message:
        cursor, length, tag = open_envelope(raw)
        if (length, tag) == (4, 1):
            message: SigSubmissionV2Message = _build_request_ids(*wire.decode_request_ids(cursor))
        elif (length, tag) == (2, 2):
            ids = wire.decode_id_sizes(cursor)
            if not ids and state is SigSubmissionV2State.SIG_IDS_BLOCKING:
                raise CodecError("MsgReplySigIds: empty list not permitted in reply to a blocking request")
            message = _build_reply_ids(ids)
        elif (length, tag) == (1, 3):
            message = MsgReplyNoSigIds()
        elif (length, tag) == (2, 4):
            message = _build_request_bodies(wire.decode_ids(cursor))
        elif (length, tag) == (2, 5):
            message = _build_reply_bodies(wire.decode_messages(cursor))
        elif (length, tag) == (1, 6):
            message = MsgDone()
        else:
            raise CodecError(f"unexpected sig submission V2 key (length {length}, tag {tag})")
        cursor.expect_end()
        return message

    def decode_framed(self, state: enum.Enum, raw: bytes) -> SigSubmissionV2Message:
        """:meth:`decode` for one framed message: the round messages in their usual form read directly."""
        message = self._usual.read(state, raw)
        return self.decode(state, raw) if message is None else message

    #: ``decode_prefix(state, buf)``: the round message in its usual form at the start of ``buf``
    #: and where it ends; None for anything else (the channel then frames it and
    #: :meth:`decode_framed` reads it). The reader's own method, so that no call stands between.
    decode_prefix = _usual.read_prefix
