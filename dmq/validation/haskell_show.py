"""Haskell ``show`` for the few types that appear in validation error texts.

The reference node replies to a local client with ``show err`` and logs the same text; the
Mithril client only reads the reject tag, but operators compare logs of both nodes, and the
texts are part of what "wire-compatible" means here (docs/protocol/validation.md section 6.2). These renderers
reproduce GHC's derived and library ``Show`` instances for the argument types of
``SigValidationError``: ``KESPeriod`` (a newtype shown through ``Quiet``), ``KeyHash`` (a
derived record around a hash shown as a quoted hex string), ``DiffTime`` (fixed picoseconds
with trailing zeros chopped and an ``s`` suffix). ``String``/``Text`` are shown by
:func:`handshake.term_text.haskell_string`, the one copy of that rule.
"""

from __future__ import annotations

__all__ = ["show_kes_period_arg", "show_key_hash_arg", "show_diff_time"]

_PICOSECONDS = 10**12


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
