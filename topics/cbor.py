"""Deterministic CBOR (RFC 8949 section 4.2.1) for adapter bodies: a strict decoder and the encoder.

Adapter ids and signatures are computed over bytes that independent encoders must agree on,
and the node never re-encodes what it received (docs/architecture.md principle 3). So a received
body is accepted only if it already *is* the deterministic encoding of its value: every head
in shortest form, only definite lengths, map keys unique and in bytewise order of their
encodings, floats in their shortest exact form. The decoder checks exactly that while it
reads, and reports the two ways to fail apart, because they are different reject reasons
(``malformed``: not well-formed CBOR, trailing bytes, invalid UTF-8, duplicate keys, nesting;
``non_canonical``: well-formed but not deterministic).

Why not cbor2 here: it decodes many semantic tags into Python objects that re-encode
differently, and it cannot report the byte span of a nested item, which the adapters need in
order to hash and verify inner messages as received.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Any

# The project's one head reader and writer (``head`` is re-exported for the adapters).
from ouroboros_mux.cbor import CborError, read_head
from ouroboros_mux.cbor import write_head as head

__all__ = [
    "Tag",
    "Undefined",
    "UNDEFINED",
    "CborMalformed",
    "CborNonCanonical",
    "encode",
    "decode",
    "decode_item",
    "head",
]

_MAX_DEPTH = 64


class CborMalformed(ValueError):
    """Not one well-formed, valid CBOR item (reject reason ``malformed``)."""


class CborNonCanonical(ValueError):
    """Well-formed CBOR that is not the deterministic encoding of its value (``non_canonical``)."""


@dataclass(frozen=True, slots=True)
class Tag:
    """A tagged item: ``number`` and the decoded ``value`` it wraps."""

    number: int
    value: Any


class Undefined:
    """The CBOR simple value ``undefined`` (distinct from ``null``)."""

    _instance: Undefined | None = None

    def __new__(cls) -> Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "undefined"


UNDEFINED = Undefined()


# -- encoding ------------------------------------------------------------------------------

def _encode_float(value: float) -> bytes:
    if math.isnan(value):
        return b"\xf9\x7e\x00"
    for fmt, prefix in ((">e", b"\xf9"), (">f", b"\xfa")):
        try:
            packed = struct.pack(fmt, value)
        except OverflowError:
            continue
        if struct.unpack(fmt, packed)[0] == value:
            return prefix + packed
    return b"\xfb" + struct.pack(">d", value)


def _encode_into(value: Any, out: bytearray) -> None:
    if value is False:
        out += b"\xf4"
    elif value is True:
        out += b"\xf5"
    elif value is None:
        out += b"\xf6"
    elif value is UNDEFINED:
        out += b"\xf7"
    elif isinstance(value, int):
        out += head(0, value) if value >= 0 else head(1, -1 - value)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        out += head(2, len(data))
        out += data
    elif isinstance(value, str):
        data = value.encode("utf-8")
        out += head(3, len(data))
        out += data
    elif isinstance(value, (list, tuple)):
        out += head(4, len(value))
        for item in value:
            _encode_into(item, out)
    elif isinstance(value, dict):
        pairs = sorted((encode(k), encode(v)) for k, v in value.items())
        for (k1, _), (k2, _) in zip(pairs, pairs[1:]):
            if k1 == k2:
                raise ValueError("a map cannot hold two keys with the same encoding")
        out += head(5, len(pairs))
        for k, v in pairs:
            out += k
            out += v
    elif isinstance(value, Tag):
        out += head(6, value.number)
        _encode_into(value.value, out)
    elif isinstance(value, float):
        out += _encode_float(value)
    else:
        raise TypeError(f"cannot encode {type(value).__name__} as deterministic CBOR")


def encode(value: Any) -> bytes:
    """The deterministic encoding of ``value``.

    Supported: ``int``, ``bytes``, ``str``, ``list``/``tuple``, ``dict`` (keys sorted by their
    encoded bytes), ``bool``, ``None``, :data:`UNDEFINED`, :class:`Tag`, ``float``.
    """
    out = bytearray()
    _encode_into(value, out)
    return bytes(out)


# -- decoding ------------------------------------------------------------------------------

def _read_head(buf: bytes, pos: int, end: int) -> tuple[int, int, int | None, int]:
    """``(major, info, argument, next_pos)``; argument None means indefinite."""
    try:
        return read_head(buf, pos, end)
    except CborError as exc:  # truncation included: a body is complete or malformed
        raise CborMalformed(str(exc)) from None


def _check_shortest(major: int, info: int, argument: int) -> None:
    if major == 7:
        return
    if info == 24 and argument < 24 or info == 25 and argument <= 0xFF or \
            info == 26 and argument <= 0xFFFF or info == 27 and argument <= 0xFFFFFFFF:
        raise CborNonCanonical(f"integer or length {argument} not in its shortest form")


def decode_item(buf: bytes, pos: int = 0, end: int | None = None, depth: int = 0) -> tuple[Any, int]:
    """Decode one deterministic item at ``pos``; return ``(value, end_offset)``."""
    if end is None:
        end = len(buf)
    if depth > _MAX_DEPTH:
        raise CborMalformed("nesting too deep")
    major, info, argument, pos = _read_head(buf, pos, end)
    if argument is None:
        # Definite lengths only: an indefinite item is well-formed but never deterministic.
        _skip_indefinite(buf, pos, end, major, depth)
        raise CborNonCanonical("indefinite-length item")
    if major != 7:
        _check_shortest(major, info, argument)
    if major == 0:
        return argument, pos
    if major == 1:
        return -1 - argument, pos
    if major in (2, 3):
        stop = pos + argument
        if stop > end:
            raise CborMalformed("premature end of input")
        data = bytes(buf[pos:stop])
        if major == 2:
            return data, stop
        try:
            return data.decode("utf-8"), stop
        except UnicodeDecodeError as exc:
            raise CborMalformed(f"invalid UTF-8 in a text string: {exc.reason}") from None
    if major == 4:
        items = []
        for _ in range(argument):
            item, pos = decode_item(buf, pos, end, depth + 1)
            items.append(item)
        return items, pos
    if major == 5:
        result: dict[Any, Any] = {}
        previous: bytes | None = None
        for _ in range(argument):
            key_start = pos
            key, pos = decode_item(buf, pos, end, depth + 1)
            key_bytes = bytes(buf[key_start:pos])
            if previous is not None:
                if key_bytes == previous:
                    raise CborMalformed("duplicate map key")
                if key_bytes < previous:
                    raise CborNonCanonical("map keys not in bytewise order of their encodings")
            previous = key_bytes
            try:
                hash(key)
            except TypeError:
                raise CborMalformed("a map key of this project must be a number, string or bytes") from None
            value, pos = decode_item(buf, pos, end, depth + 1)
            result[key] = value
        return result, pos
    if major == 6:
        value, pos = decode_item(buf, pos, end, depth + 1)
        return Tag(argument, value), pos
    return _simple(buf, info, argument, pos)


def _simple(buf: bytes, info: int, argument: int, pos: int) -> tuple[Any, int]:
    if info < 24:
        known = {20: False, 21: True, 22: None, 23: UNDEFINED}
        if argument in known:
            return known[argument], pos
        raise CborMalformed(f"unassigned simple value {argument}")
    if info == 24:
        if argument < 32:
            raise CborMalformed("simple value in two bytes below 32")
        raise CborMalformed(f"unassigned simple value {argument}")
    size = {25: 2, 26: 4, 27: 8}[info]
    raw = buf[pos - size:pos]
    value = struct.unpack({2: ">e", 4: ">f", 8: ">d"}[size], raw)[0]
    if _encode_float(value) != bytes((0xE0 | info,)) + bytes(raw):
        raise CborNonCanonical("float not in its shortest exact form")
    return value, pos


def _skip_indefinite(buf: bytes, pos: int, end: int, major: int, depth: int) -> None:
    """Walk an indefinite item so that a malformed one is reported as malformed, not non-canonical."""
    while True:
        if pos >= end:
            raise CborMalformed("premature end of input")
        if buf[pos] == 0xFF:
            return
        if major in (2, 3):
            cmajor, _, carg, pos = _read_head(buf, pos, end)
            if cmajor != major or carg is None:
                raise CborMalformed("invalid chunk in an indefinite-length string")
            pos += carg
            continue
        try:
            _, pos = decode_item(buf, pos, end, depth + 1)
        except CborNonCanonical:
            pos = _well_formed_end(buf, pos, end)
        if major == 5:
            try:
                _, pos = decode_item(buf, pos, end, depth + 1)
            except CborNonCanonical:
                pos = _well_formed_end(buf, pos, end)


def _well_formed_end(buf: bytes, pos: int, end: int) -> int:
    from ouroboros_mux.cbor import CborError, item_end

    try:
        return item_end(buf, pos, end)
    except CborError as exc:
        raise CborMalformed(str(exc)) from None


def decode(buf: bytes) -> Any:
    """Decode ``buf`` as exactly one deterministic item (nothing before or after it)."""
    value, stop = decode_item(buf, 0, len(buf))
    if stop != len(buf):
        raise CborMalformed(f"{len(buf) - stop} bytes after the item")
    return value
