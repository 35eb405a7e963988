"""Haskell ``show`` for the few types that appear in validation error texts.

The reference node replies to a local client with ``show err`` and logs the same text; the
Mithril client only reads the reject tag, but operators compare logs of both nodes, and the
texts are part of what "wire-compatible" means here (docs/protocol/validation.md section 6.2). These renderers
reproduce GHC's derived and library ``Show`` instances for the argument types of
``SigValidationError``: ``KESPeriod`` (a newtype shown through ``Quiet``), ``KeyHash`` (a
derived record around a hash shown as a quoted hex string), ``DiffTime`` (fixed picoseconds
with trailing zeros chopped and an ``s`` suffix) and ``String``/``Text`` (quoted, with
Haskell's escapes).
"""

from __future__ import annotations

__all__ = ["show_string", "show_kes_period_arg", "show_key_hash_arg", "show_diff_time"]

_ASCII_NAMES = (
    "NUL", "SOH", "STX", "ETX", "EOT", "ENQ", "ACK", "BEL", "BS", "HT", "LF", "VT", "FF", "CR",
    "SO", "SI", "DLE", "DC1", "DC2", "DC3", "DC4", "NAK", "SYN", "ETB", "CAN", "EM", "SUB",
    "ESC", "FS", "GS", "RS", "US",
)
_SHORT_ESCAPES = {7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r"}
_PICOSECONDS = 10**12


def _show_char_in_string(char: str) -> str:
    code = ord(char)
    if char == '"':
        return '\\"'
    if char == "\\":
        return "\\\\"
    if code > 0x7F:
        return f"\\{code}"
    if code == 0x7F:
        return "\\DEL"
    if code >= 0x20:
        return char
    if code in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[code]
    return "\\" + _ASCII_NAMES[code]


def show_string(text: str) -> str:
    """``show`` of a Haskell ``String`` or ``Text``: quoted, GHC escapes, ``\\&`` guards.

    A numeric escape followed by a digit, and ``\\SO`` followed by ``H``, get the empty
    escape ``\\&`` between them so the text reads back unambiguously, exactly as GHC emits.
    """
    pieces = [_show_char_in_string(c) for c in text]
    out = ['"']
    for i, piece in enumerate(pieces):
        out.append(piece)
        following = text[i + 1] if i + 1 < len(text) else ""
        if piece[0] == "\\" and piece[1:].isdigit() and following.isdigit() and following.isascii():
            out.append("\\&")
        elif piece == "\\SO" and following == "H":
            out.append("\\&")
    out.append('"')
    return "".join(out)


def show_kes_period_arg(period: int) -> str:
    """A ``KESPeriod`` in argument position: ``(KESPeriod 62)``."""
    return f"(KESPeriod {period})"


def show_key_hash_arg(key_hash: bytes) -> str:
    """A ledger ``KeyHash`` in argument position: ``(KeyHash {unKeyHash = "<hex>"})``."""
    return f'(KeyHash {{unKeyHash = "{key_hash.hex()}"}})'


def show_diff_time(seconds: float) -> str:
    """``show`` of a ``DiffTime``: ``12.5s``, ``60s``, ``0.000001s``.

    The reference measures with a nanosecond monotonic clock, so the float is first
    rounded to whole nanoseconds; that keeps float noise out of the text.
    """
    picoseconds = round(seconds * 1_000_000_000) * 1000
    sign = "-" if picoseconds < 0 else ""
    whole, fraction = divmod(abs(picoseconds), _PICOSECONDS)
    digits = f"{fraction:012d}".rstrip("0")
    return f"{sign}{whole}{'.' + digits if digits else ''}s"
