"""A minimal CBOR cursor: item boundaries and strict headers over received bytes.

Why this exists next to cbor2: the Ouroboros protocols need two things cbor2 does not
expose. The mux must find where one message ends inside a byte stream that may hold half
a message or three of them, without decoding it; and codecs must keep the exact byte span
of nested items (a DMQ message inside a reply, the payload inside a message) and know
whether an array was written definite or indefinite, because the reference decoders are
strict about it. Values are still decoded with cbor2 wherever spans and framing do not
matter.

Everything here works on ``bytes``/``memoryview`` with integer offsets and never copies.
"""

from __future__ import annotations

import struct

_unpack_uint32 = struct.Struct(">I").unpack_from
_unpack_uint64 = struct.Struct(">Q").unpack_from
_pack_head16 = struct.Struct(">BH").pack
_pack_head32 = struct.Struct(">BI").pack
_pack_head64 = struct.Struct(">BQ").pack

__all__ = [
    "CborError",
    "CborIncomplete",
    "MAJOR_UINT",
    "MAJOR_NINT",
    "MAJOR_BYTES",
    "MAJOR_TEXT",
    "MAJOR_ARRAY",
    "MAJOR_MAP",
    "MAJOR_TAG",
    "MAJOR_SIMPLE",
    "BREAK",
    "read_head",
    "write_head",
    "item_end",
    "Cursor",
]

MAJOR_UINT = 0
MAJOR_NINT = 1
MAJOR_BYTES = 2
MAJOR_TEXT = 3
MAJOR_ARRAY = 4
MAJOR_MAP = 5
MAJOR_TAG = 6
MAJOR_SIMPLE = 7

BREAK = 0xFF

_MAX_NESTING = 256


class CborError(ValueError):
    """The bytes are not well-formed CBOR, or not the shape a strict reader asked for."""


class CborIncomplete(CborError):
    """The bytes end before the item does: wait for more input.

    ``needed`` (when known) is an offset the input must reach before the item can be
    complete: a lower bound, so a reader can wait for that many bytes instead of
    rescanning on every arrival (a big byte string is then scanned twice, not once per
    segment).
    """

    def __init__(self, message: str = "premature end of input", needed: int | None = None) -> None:
        super().__init__(message)
        self.needed = needed


def read_head(buf, pos: int, end: int) -> tuple[int, int, int | None, int]:
    """Read one initial byte and its argument: the one CBOR head reader of the project.

    Returns ``(major, info, argument, next_pos)``; ``argument`` is None for the
    indefinite marker (info 31, also the break byte 0xff). Raises :class:`CborIncomplete`
    when ``buf[pos:end]`` ends inside the head and :class:`CborError` for a reserved
    additional information or an indefinite integer or tag. Non-shortest heads are read
    as they are; ``info`` lets a strict caller refuse them. Callers with their own error
    types convert these at their boundary.
    """
    if pos >= end:
        raise CborIncomplete(needed=pos + 1)
    ib = buf[pos]
    major = ib >> 5
    info = ib & 0x1F
    pos += 1
    if info < 24:
        return major, info, info, pos
    if info == 24:
        if pos + 1 > end:
            raise CborIncomplete(needed=pos + 1)
        return major, info, buf[pos], pos + 1
    if info == 25:
        if pos + 2 > end:
            raise CborIncomplete(needed=pos + 2)
        return major, info, (buf[pos] << 8) | buf[pos + 1], pos + 2
    if info == 26:
        if pos + 4 > end:
            raise CborIncomplete(needed=pos + 4)
        return major, info, _unpack_uint32(buf, pos)[0], pos + 4
    if info == 27:
        if pos + 8 > end:
            raise CborIncomplete(needed=pos + 8)
        return major, info, _unpack_uint64(buf, pos)[0], pos + 8
    if info == 31:
        if major in (MAJOR_UINT, MAJOR_NINT, MAJOR_TAG):
            raise CborError(f"indefinite length not allowed for major type {major}")
        return major, info, None, pos
    raise CborError(f"reserved additional information {info}")


def write_head(major: int, argument: int) -> bytes:
    """The shortest head for ``major`` with ``argument``: the one CBOR head writer.

    The reference's encoders (cborg, Pallas' minicbor) always write the shortest form, and
    deterministic CBOR requires it, so there is no other form to choose. ValueError for a
    negative argument or one beyond 64 bits.
    """
    if argument < 0:
        raise ValueError(f"CBOR argument must be non-negative, got {argument}")
    top = major << 5
    if argument < 24:
        return bytes((top | argument,))
    if argument <= 0xFF:
        return bytes((top | 24, argument))
    if argument <= 0xFFFF:
        return _pack_head16(top | 25, argument)
    if argument <= 0xFFFFFFFF:
        return _pack_head32(top | 26, argument)
    if argument <= 0xFFFFFFFFFFFFFFFF:
        return _pack_head64(top | 27, argument)
    raise ValueError(f"CBOR argument {argument} does not fit in 64 bits")


def item_end(buf, pos: int = 0, end: int | None = None) -> int:
    """Offset just past the CBOR data item starting at ``pos``.

    Raises :class:`CborIncomplete` when ``buf[pos:end]`` holds only the beginning of an
    item, and :class:`CborError` when the bytes cannot be CBOR. It checks structure only
    (lengths, nesting, break codes, chunk types), which is what framing needs.

    The mux frames every received message with it, and the codecs walk messages again, so
    it is written for speed: the head of each item is decoded inline (the same rules as
    :func:`read_head`, which the rare indefinite-length strings still use), about 1.8 times
    faster than a call per head.
    """
    if end is None:
        end = len(buf)
    # Iterative walk: a stack of "items still expected" per open container, where -1
    # means an indefinite container waiting for a break byte.
    stack: list[int] = []
    while True:
        if pos >= end:
            raise CborIncomplete(needed=pos + 1)
        ib = buf[pos]
        if ib == BREAK and stack and stack[-1] == -1:
            pos += 1
            stack.pop()
        else:
            major = ib >> 5
            info = ib & 0x1F
            pos += 1
            # The argument, inline (the common case, info < 24, first).
            if info < 24:
                arg = info
            elif info == 24:
                if pos + 1 > end:
                    raise CborIncomplete(needed=pos + 1)
                arg = buf[pos]
                pos += 1
            elif info == 25:
                if pos + 2 > end:
                    raise CborIncomplete(needed=pos + 2)
                arg = (buf[pos] << 8) | buf[pos + 1]
                pos += 2
            elif info == 26:
                if pos + 4 > end:
                    raise CborIncomplete(needed=pos + 4)
                arg = _unpack_uint32(buf, pos)[0]
                pos += 4
            elif info == 27:
                if pos + 8 > end:
                    raise CborIncomplete(needed=pos + 8)
                arg = _unpack_uint64(buf, pos)[0]
                pos += 8
            elif info == 31:
                if major == 0 or major == 1 or major == 6:
                    raise CborError(f"indefinite length not allowed for major type {major}")
                arg = None
            else:
                raise CborError(f"reserved additional information {info}")
            if major == 2 or major == 3:
                if arg is None:
                    while True:
                        if pos >= end:
                            raise CborIncomplete(needed=pos + 1)
                        if buf[pos] == BREAK:
                            pos += 1
                            break
                        cmajor, _, carg, pos = read_head(buf, pos, end)
                        if cmajor != major or carg is None:
                            raise CborError("invalid chunk in indefinite-length string")
                        pos += carg
                        if pos > end:
                            raise CborIncomplete(needed=pos)
                else:
                    pos += arg
                    if pos > end:
                        raise CborIncomplete(needed=pos)
            elif major == 4 or major == 5:
                if arg is None:
                    stack.append(-1)
                    if len(stack) > _MAX_NESTING:
                        raise CborError("nesting too deep")
                    continue
                if arg:
                    stack.append(arg * 2 if major == 5 else arg)
                    if len(stack) > _MAX_NESTING:
                        raise CborError("nesting too deep")
                    continue
            elif major == 6:
                stack.append(1)
                if len(stack) > _MAX_NESTING:
                    raise CborError("nesting too deep")
                continue
            elif major == 7:
                if info == 31:
                    raise CborError("unexpected break")
                if info == 24 and arg < 32:
                    raise CborError("invalid simple value encoding")
        # One item completed: count it against the enclosing definite containers.
        while stack:
            left = stack[-1]
            if left == -1:
                break
            if left > 1:
                stack[-1] = left - 1
                break
            stack.pop()
        if not stack:
            return pos


class Cursor:
    """A strict, forward-only reader over one buffer that reports offsets.

    Codecs use it to check the exact shapes the reference decoders accept (definite or
    indefinite arrays, fixed byte-string sizes, unsigned ranges) and to slice raw spans
    of nested items without re-encoding anything.
    """

    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf, pos: int = 0, end: int | None = None) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end

    # -- peeking -------------------------------------------------------------------
    def at_end(self) -> bool:
        return self.pos >= self.end

    def peek_major(self) -> int:
        if self.pos >= self.end:
            raise CborIncomplete("premature end of input")
        return self.buf[self.pos] >> 5

    def at_break(self) -> bool:
        if self.pos >= self.end:
            raise CborIncomplete("premature end of input")
        return self.buf[self.pos] == BREAK

    # -- structure -----------------------------------------------------------------
    def array_header(self) -> int | None:
        """Read an array header; return its length, or None if indefinite."""
        major, _, arg, pos = read_head(self.buf, self.pos, self.end)
        if major != MAJOR_ARRAY:
            raise CborError(f"expected array, got major type {major}")
        self.pos = pos
        return arg

    def definite_array(self, length: int | None = None) -> int:
        """Read a definite array header, optionally of an exact length."""
        n = self.array_header()
        if n is None:
            raise CborError("expected definite-length array")
        if length is not None and n != length:
            raise CborError(f"expected array of {length} items, got {n}")
        return n

    def indefinite_array(self) -> None:
        n = self.array_header()
        if n is not None:
            raise CborError("expected indefinite-length array")

    def map_header(self) -> int | None:
        major, _, arg, pos = read_head(self.buf, self.pos, self.end)
        if major != MAJOR_MAP:
            raise CborError(f"expected map, got major type {major}")
        self.pos = pos
        return arg

    def read_break(self) -> None:
        if self.pos >= self.end:
            raise CborIncomplete("premature end of input")
        if self.buf[self.pos] != BREAK:
            raise CborError("expected break")
        self.pos += 1

    def tag(self) -> int:
        major, _, arg, pos = read_head(self.buf, self.pos, self.end)
        if major != MAJOR_TAG:
            raise CborError(f"expected tag, got major type {major}")
        self.pos = pos
        return arg

    # -- scalars -------------------------------------------------------------------
    def uint(self, maximum: int = 0xFFFFFFFFFFFFFFFF) -> int:
        major, _, arg, pos = read_head(self.buf, self.pos, self.end)
        if major != MAJOR_UINT:
            raise CborError(f"expected unsigned integer, got major type {major}")
        if arg > maximum:
            raise CborError(f"integer {arg} above {maximum}")
        self.pos = pos
        return arg

    def bool(self) -> bool:
        if self.pos >= self.end:
            raise CborIncomplete("premature end of input")
        b = self.buf[self.pos]
        if b == 0xF4:
            self.pos += 1
            return False
        if b == 0xF5:
            self.pos += 1
            return True
        raise CborError("expected bool")

    def bytes(self, size: int | None = None, min_size: int = 0, max_size: int | None = None) -> bytes:
        """Read a definite byte string (indefinite ones are refused, as the reference does)."""
        major, _, arg, pos = read_head(self.buf, self.pos, self.end)
        if major != MAJOR_BYTES:
            raise CborError(f"expected byte string, got major type {major}")
        if arg is None:
            raise CborError("expected definite-length byte string")
        if size is not None and arg != size:
            raise CborError(f"expected {size} bytes, got {arg}")
        if arg < min_size or (max_size is not None and arg > max_size):
            raise CborError(f"byte string of {arg} bytes outside {min_size}..{max_size}")
        stop = pos + arg
        if stop > self.end:
            raise CborIncomplete("premature end of input")
        self.pos = stop
        return bytes(self.buf[pos:stop])

    def text(self) -> str:
        major, _, arg, pos = read_head(self.buf, self.pos, self.end)
        if major != MAJOR_TEXT:
            raise CborError(f"expected text string, got major type {major}")
        if arg is None:
            raise CborError("expected definite-length text string")
        stop = pos + arg
        if stop > self.end:
            raise CborIncomplete("premature end of input")
        self.pos = stop
        try:
            return bytes(self.buf[pos:stop]).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CborError(f"invalid UTF-8 in text string: {exc}") from None

    # -- spans ---------------------------------------------------------------------
    def skip(self) -> tuple[int, int]:
        """Skip one whole item; return its ``(start, end)`` span."""
        start = self.pos
        self.pos = item_end(self.buf, start, self.end)
        return start, self.pos

    def raw_item(self) -> bytes:
        """The exact bytes of the next item, as received."""
        start, stop = self.skip()
        return bytes(self.buf[start:stop])

    def expect_end(self) -> None:
        if self.pos != self.end:
            raise CborError(f"{self.end - self.pos} trailing bytes after the item")
