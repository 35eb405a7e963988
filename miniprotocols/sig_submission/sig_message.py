"""The two facts this layer needs from a raw DMQ message: its carried id and its payload span.

A bodies reply is matched against the request by the id the message carries (its first
item), as the reference does; whether that id really is the Blake2b-256 of the payload is
validation check 4 of the node, which sees the same raw bytes. Everything else about the
message stays opaque here. The shape test is the reference decoder's outer shape (a
definite array of five whose first item is a 32-byte string and whose second is the
payload array), so bytes that cannot be a message fail as a decoder failure of the
reply, where the reference fails too.
"""

from __future__ import annotations

import hashlib

from ouroboros_mux.cbor import MAJOR_ARRAY, CborError, Cursor

from ..framework import CodecError
from .limits import ID_SIZE

__all__ = ["MESSAGE_ITEMS", "carried_id", "checked_id", "read_message", "payload_span", "computed_id"]

#: ``[messageId, messagePayload, kesSignature, operationalCertificate, coldVerificationKey]``.
MESSAGE_ITEMS = 5

#: How every message starts when its array and id heads take one byte each, as encoders
#: write them: ``85`` (array of 5), ``5820`` (32-byte string); the id follows.
_USUAL_START = bytes([0x85, 0x58, ID_SIZE])
_ID_AT = slice(len(_USUAL_START), len(_USUAL_START) + ID_SIZE)


def _open(raw: bytes) -> tuple[Cursor, bytes]:
    cursor = Cursor(raw)
    try:
        count = cursor.definite_array()
        if count != MESSAGE_ITEMS:
            raise CodecError(f"a message is an array of {MESSAGE_ITEMS} items, got {count}")
        message_id = cursor.bytes(size=ID_SIZE)
    except CborError as exc:
        raise CodecError(f"not a message: {exc}") from None
    return cursor, message_id


def carried_id(raw: bytes) -> bytes:
    """The id a raw message carries (its first item), checking the message's outer shape."""
    cursor, message_id = _open(raw)
    try:
        if cursor.peek_major() != MAJOR_ARRAY:
            raise CodecError("a message's payload must be an array")
        cursor.skip()
    except CborError as exc:
        raise CodecError(f"not a message: {exc}") from None
    return message_id


def read_message(cursor: Cursor) -> tuple[bytes, bytes]:
    """``(raw, id)`` of the message at ``cursor``, its outer shape checked in the same walk.

    What a bodies reply is cut into: one pass over each message finds both its end and
    its id, where slicing the item out and then reading its id would walk it twice.
    """
    start = cursor.pos
    try:
        count = cursor.definite_array()
        if count != MESSAGE_ITEMS:
            raise CodecError(f"a message is an array of {MESSAGE_ITEMS} items, got {count}")
        message_id = cursor.bytes(size=ID_SIZE)
        if cursor.peek_major() != MAJOR_ARRAY:
            raise CodecError("a message's payload must be an array")
        for _ in range(MESSAGE_ITEMS - 1):
            cursor.skip()
    except CborError as exc:
        raise CodecError(f"not a message: {exc}") from None
    return bytes(cursor.buf[start:cursor.pos]), message_id


def checked_id(raw: bytes) -> bytes:
    """The carried id of a message whose outer shape a codec already checked.

    A slice when the message starts the usual way; the full reading otherwise.
    """
    if raw[:3] == _USUAL_START:
        return raw[_ID_AT]
    return carried_id(raw)


def payload_span(raw: bytes) -> tuple[int, int]:
    """``(start, end)`` of the payload item: the bytes the id and the KES signature cover."""
    cursor, _ = _open(raw)
    try:
        if cursor.peek_major() != MAJOR_ARRAY:
            raise CodecError("a message's payload must be an array")
        return cursor.skip()
    except CborError as exc:
        raise CodecError(f"not a message: {exc}") from None


def computed_id(raw: bytes) -> bytes:
    """Blake2b-256 of the payload span as received: what the carried id must equal."""
    start, end = payload_span(raw)
    return hashlib.blake2b(memoryview(raw)[start:end], digest_size=ID_SIZE).digest()
