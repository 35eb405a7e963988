"""CBOR terms rendered the way the reference node prints them in refuse texts.

When version data does not decode, the reference refuses with
``"unknown encoding: " ++ show term``, where ``term`` is the cborg ``Term`` the peer sent
(``TList [TInt 2912307721,TBool False]``, ``TListI [...]`` for an indefinite list, and so
on). The text is informational, but an operator comparing logs of the two
implementations side by side should read the same words, so this module reproduces
Haskell's ``show`` for the term shapes cborg produces: ``TInt`` for integers in the
64-bit signed range and ``TInteger`` beyond it (bignum tags 2 and 3 included),
``TBytes``/``TString`` with Haskell string escapes, the ``I`` variants for
indefinite-length items, ``TTagged``, ``TBool``, ``TNull``, ``TSimple`` and the floats.
"""

from __future__ import annotations

import math
import struct
from decimal import Decimal

from ouroboros_mux.cbor import (BREAK, MAJOR_ARRAY, MAJOR_BYTES, MAJOR_MAP, MAJOR_NINT, MAJOR_TAG,
                                MAJOR_TEXT, MAJOR_UINT, CborError, item_end, read_head)

__all__ = ["show_term", "haskell_string"]

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_ASCII_NAMES = ("NUL SOH STX ETX EOT ENQ ACK a b t n v f r SO SI DLE DC1 DC2 DC3 DC4 NAK SYN ETB "
                "CAN EM SUB ESC FS GS RS US").split()


def haskell_string(chars: str) -> str:
    """Haskell's ``show`` of a String: quotes, named control characters, decimal escapes."""
    out = ['"']
    for i, ch in enumerate(chars):
        code = ord(ch)
        nxt = chars[i + 1] if i + 1 < len(chars) else ""
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif code > 127:
            out.append(f"\\{code}")
            if nxt.isdigit() and nxt.isascii():
                out.append("\\&")
        elif code == 127:
            out.append("\\DEL")
        elif code >= 32:
            out.append(ch)
        else:
            out.append("\\" + _ASCII_NAMES[code])
            if code == 14 and nxt == "H":
                out.append("\\&")
    out.append('"')
    return "".join(out)


def _haskell_float(value: float, single: bool) -> str:
    """Haskell's ``show`` of a Float/Double: shortest digits, fixed in [0.1, 10^7), else exponent."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    magnitude = abs(value)
    if magnitude == 0:
        return sign + "0.0"
    if single:
        text = next(t for t in (f"{magnitude:.{p}g}" for p in range(1, 10))
                    if struct.unpack(">f", struct.pack(">f", float(t)))[0] == magnitude)
    else:
        text = repr(magnitude)
    decimal_tuple = Decimal(text).normalize().as_tuple()
    digits = "".join(map(str, decimal_tuple.digits))
    exponent = len(digits) + decimal_tuple.exponent  # value = 0.<digits> * 10**exponent
    if 0.1 <= magnitude < 10**7:
        if exponent <= 0:
            return f"{sign}0.{'0' * -exponent}{digits}"
        whole = digits[:exponent].ljust(exponent, "0")
        return f"{sign}{whole}.{digits[exponent:] or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}e{exponent - 1}"


class _Reader:
    """A recursive walk over one well-formed item (checked beforehand with ``item_end``)."""

    def __init__(self, buf) -> None:
        self.buf = buf
        self.pos = 0

    def head(self) -> tuple[int, int, int | None]:
        major, info, arg, self.pos = read_head(self.buf, self.pos, len(self.buf))
        return major, info, arg

    def at_break(self) -> bool:
        if self.buf[self.pos] == BREAK:
            self.pos += 1
            return True
        return False

    def chunks(self, major: int, length: int | None) -> tuple[bytes, bool]:
        if length is not None:
            data = bytes(self.buf[self.pos:self.pos + length])
            self.pos += length
            return data, False
        parts = []
        while not self.at_break():
            _, _, size = self.head()
            parts.append(bytes(self.buf[self.pos:self.pos + size]))
            self.pos += size
        return b"".join(parts), True

    def term(self, prec: int) -> str:
        major, info, arg = self.head()
        if major in (MAJOR_UINT, MAJOR_NINT):
            value = arg if major == MAJOR_UINT else -1 - arg
            return _ctor("TInt" if _INT64_MIN <= value <= _INT64_MAX else "TInteger", _num(value), prec)
        if major == MAJOR_BYTES:
            data, indefinite = self.chunks(major, arg)
            return _ctor("TBytesI" if indefinite else "TBytes", haskell_string(data.decode("latin-1")), prec)
        if major == MAJOR_TEXT:
            data, indefinite = self.chunks(major, arg)
            text = data.decode("utf-8", errors="replace")
            return _ctor("TStringI" if indefinite else "TString", haskell_string(text), prec)
        if major == MAJOR_ARRAY:
            items = []
            while (len(items) < arg) if arg is not None else not self.at_break():
                items.append(self.term(0))
            return _ctor("TList" if arg is not None else "TListI", "[" + ",".join(items) + "]", prec)
        if major == MAJOR_MAP:
            pairs = []
            while (len(pairs) < arg) if arg is not None else not self.at_break():
                key = self.term(0)
                pairs.append(f"({key},{self.term(0)})")
            return _ctor("TMap" if arg is not None else "TMapI", "[" + ",".join(pairs) + "]", prec)
        if major == MAJOR_TAG:
            if arg in (2, 3) and read_head(self.buf, self.pos, len(self.buf))[0] == MAJOR_BYTES:
                _, _, size = self.head()
                data, _ = self.chunks(MAJOR_BYTES, size)
                magnitude = int.from_bytes(data, "big")
                value = magnitude if arg == 2 else -1 - magnitude
                return _ctor("TInteger", _num(value), prec)
            return _ctor("TTagged", f"{arg} {self.term(11)}", prec)
        # Major type 7: simple values and floats.
        if info == 20 or info == 21:
            return _ctor("TBool", "True" if info == 21 else "False", prec)
        if info == 22:
            return "TNull"
        if info == 25:
            return _ctor("THalf", _paren_negative(_haskell_float(_half(arg), True)), prec)
        if info == 26:
            value = struct.unpack(">f", arg.to_bytes(4, "big"))[0]
            return _ctor("TFloat", _paren_negative(_haskell_float(value, True)), prec)
        if info == 27:
            value = struct.unpack(">d", arg.to_bytes(8, "big"))[0]
            return _ctor("TDouble", _paren_negative(_haskell_float(value, False)), prec)
        return _ctor("TSimple", str(arg), prec)


def _half(bits: int) -> float:
    return struct.unpack(">e", bits.to_bytes(2, "big"))[0]


def _num(value: int) -> str:
    return f"({value})" if value < 0 else str(value)


def _paren_negative(text: str) -> str:
    return f"({text})" if text.startswith("-") else text


def _ctor(name: str, argument: str, prec: int) -> str:
    text = f"{name} {argument}"
    return f"({text})" if prec > 10 else text


def show_term(raw) -> str:
    """Haskell ``show`` of the cborg ``Term`` for one complete CBOR item.

    Raises :class:`~ouroboros_mux.cbor.CborError` if ``raw`` is not exactly one
    well-formed item.
    """
    if item_end(raw, 0, len(raw)) != len(raw):
        raise CborError("trailing bytes after the term")
    return _Reader(raw).term(0)
