"""Haskell ``show`` of a Text, as the reference puts it into reject reasons.

The reference node builds the text of ``[3, t]`` (and of ``[0, t]``) with ``show``, so a
reason text reaches clients in Haskell literal syntax: in double quotes, with ``\\"``,
``\\\\``, named control escapes and decimal escapes for everything above ASCII. Clients
compare these strings, so the node must produce the same characters. This follows
``GHC.Show.showLitString`` / ``showLitChar`` exactly, including the ``\\&`` separator that
keeps a decimal escape from absorbing a following digit (and ``\\SO`` from absorbing an
``H``).
"""

from __future__ import annotations

__all__ = ["show_text"]

_CONTROL_NAMES = (
    "NUL", "SOH", "STX", "ETX", "EOT", "ENQ", "ACK", "a", "b", "t", "n", "v", "f", "r", "SO", "SI",
    "DLE", "DC1", "DC2", "DC3", "DC4", "NAK", "SYN", "ETB", "CAN", "EM", "SUB", "ESC", "FS", "GS", "RS", "US",
)


def show_text(value: str) -> str:
    """``show (value :: Text)``, for example ``custom`` -> ``"custom"`` (with the quotes)."""
    out = ['"']
    count = len(value)
    for index, char in enumerate(value):
        following = value[index + 1] if index + 1 < count else ""
        code = ord(char)
        if char == '"':
            out.append('\\"')
        elif code > 0x7F:
            out.append(f"\\{code}")
            if following.isascii() and following.isdigit():
                out.append("\\&")
        elif code == 0x7F:
            out.append("\\DEL")
        elif char == "\\":
            out.append("\\\\")
        elif code >= 0x20:
            out.append(char)
        else:
            out.append("\\" + _CONTROL_NAMES[code])
            if code == 0x0E and following == "H":
                out.append("\\&")
    out.append('"')
    return "".join(out)
