"""Reading protocol envelopes strictly, the way the reference decoders do.

Every Ouroboros mini-protocol message is a definite array whose first item is a tag
word; the reference decoders read ``(listLen, tag)`` first and dispatch on the pair, so an
unknown pair, an indefinite outer array or a wrong length is a decoder failure. Nested
messages are returned as raw spans, never decoded here.
"""

from __future__ import annotations

from ouroboros_mux.cbor import Cursor

from protocol_engine.errors import CodecError

__all__ = ["open_envelope", "raw_items", "rest_of_item"]


def open_envelope(raw: bytes) -> tuple[Cursor, int, int]:
    """Read the outer definite array header and tag; return ``(cursor, length, tag)``."""
    cursor = Cursor(raw)
    length = cursor.definite_array()
    if length == 0:
        raise CodecError("empty message array")
    tag = cursor.uint()
    return cursor, length, tag


def rest_of_item(cursor: Cursor) -> bytes:
    """The bytes from the cursor to the end: the last field of a framed envelope.

    Only for a buffer known to be exactly one well-formed item (``Codec.decode_framed``),
    read up to its definite envelope's last field: that field then ends where the buffer
    does, so its span needs no walk.
    """
    if cursor.pos >= cursor.end:
        raise CodecError("envelope ends before its last field")
    rest = cursor.buf[cursor.pos:cursor.end] if cursor.pos else cursor.buf
    cursor.pos = cursor.end
    return bytes(rest)


def raw_items(cursor: Cursor, *, allow_definite: bool = False) -> tuple[bytes, ...]:
    """Read an array of items and return each one's exact bytes.

    The reference writes and reads these lists indefinite; ``allow_definite`` also accepts
    a definite list, for clients that are lenient about what they receive.
    """
    count = cursor.array_header()
    if count is None:
        items = []
        while not cursor.at_break():
            items.append(cursor.raw_item())
        cursor.read_break()
        return tuple(items)
    if not allow_definite:
        raise CodecError("expected an indefinite-length list")
    return tuple(cursor.raw_item() for _ in range(count))
