"""The integer encoding of bincode 2's ``config::standard()``, as Mithril serialises entities.

Mithril writes a signed entity type with ``bincode::serde::encode_to_vec(…, standard())``
(``mithril-common/src/entities/signed_entity_type.rs``): little-endian variable-length
integers, where a value below 251 is one byte and larger values are a marker byte followed by
the value in 2, 4 or 8 little-endian bytes. Enum variants are written as their index (a
``u32``), newtypes and struct fields as their inner values in declaration order.

Only what Mithril's types use is here: unsigned integers up to 64 bits. Decoding accepts what
bincode's decoder accepts (a marker wider than necessary is not an error there) and refuses
what it refuses (a marker for a width larger than the target type, a cut-off value).
"""

from __future__ import annotations

import struct

__all__ = ["BincodeError", "encode_varint", "decode_varint", "U32_MAX", "U64_MAX"]

U32_MAX = 0xFFFF_FFFF
U64_MAX = 0xFFFF_FFFF_FFFF_FFFF

_SINGLE_BYTE_MAX = 250
_U16_MARKER = 251
_U32_MARKER = 252
_U64_MARKER = 253
_U128_MARKER = 254

#: marker -> (little-endian struct format, payload size, widest target the marker fits)
_MARKERS = {
    _U16_MARKER: ("<H", 2, 16),
    _U32_MARKER: ("<I", 4, 32),
    _U64_MARKER: ("<Q", 8, 64),
}


class BincodeError(ValueError):
    """Bytes that bincode would refuse to decode as the requested value."""


def encode_varint(value: int) -> bytes:
    """The shortest bincode ``standard()`` encoding of an unsigned integer up to 64 bits."""
    if not 0 <= value <= U64_MAX:
        raise ValueError(f"{value} is not an unsigned 64-bit integer")
    if value <= _SINGLE_BYTE_MAX:
        return bytes((value,))
    if value <= 0xFFFF:
        return bytes((_U16_MARKER,)) + struct.pack("<H", value)
    if value <= U32_MAX:
        return bytes((_U32_MARKER,)) + struct.pack("<I", value)
    return bytes((_U64_MARKER,)) + struct.pack("<Q", value)


def decode_varint(data: bytes, pos: int, *, bits: int, what: str) -> tuple[int, int]:
    """Read an unsigned integer of at most ``bits`` (32 or 64) at ``pos``; return it and the next offset."""
    if pos >= len(data):
        raise BincodeError(f"{what}: missing (the bytes end at offset {pos})")
    marker = data[pos]
    if marker <= _SINGLE_BYTE_MAX:
        return marker, pos + 1
    if marker == _U128_MARKER or marker not in _MARKERS:
        raise BincodeError(f"{what}: invalid integer marker 0x{marker:02x} at offset {pos}")
    fmt, size, width = _MARKERS[marker]
    if width > bits:
        raise BincodeError(f"{what}: a {width}-bit integer at offset {pos} where a {bits}-bit one is expected")
    end = pos + 1 + size
    if end > len(data):
        raise BincodeError(f"{what}: integer cut off at offset {pos} ({len(data) - pos - 1} of {size} bytes)")
    return struct.unpack_from(fmt, data, pos + 1)[0], end
