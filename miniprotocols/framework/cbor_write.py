"""Writing protocol envelopes around raw CBOR spans.

Why not cbor2 here: the envelopes must splice messages in as the exact bytes they were
received as (never re-encoded), and must choose definite or indefinite array headers the
way the reference does; cbor2 cannot embed pre-encoded bytes. Everything written here is
the shortest form, as the reference's encoder (cborg) writes it.
"""

from __future__ import annotations

import functools

# ``head`` is the project's one head writer, re-exported so envelope code reads ``w.head``.
from ouroboros_mux.cbor import MAJOR_ARRAY, MAJOR_TEXT, MAJOR_UINT, CborError, item_end
from ouroboros_mux.cbor import write_head as head

__all__ = [
    "head", "uint", "array_header", "text", "boolean", "INDEFINITE_ARRAY", "BREAK", "check_item",
    "CheckedItems", "as_items", "join_items",
]

INDEFINITE_ARRAY = b"\x9f"
BREAK = b"\xff"
_FALSE = b"\xf4"
_TRUE = b"\xf5"


def _uint(value: int) -> bytes:
    return head(MAJOR_UINT, value)


#: ``uint(value)``: an unsigned integer, written once per value while it recurs (by type: ``1.0``
#: is refused as before, not taken for ``1``). Most on the wire do: counts, and the size of each
#: message announced, which a node announces to every peer; a value written already costs one C
#: call instead of two Python calls. The cache is bounded, and errors are not kept.
uint = functools.lru_cache(maxsize=4096, typed=True)(_uint)


def array_header(length: int) -> bytes:
    return head(MAJOR_ARRAY, length)


def text(value: str) -> bytes:
    data = value.encode("utf-8")
    return head(MAJOR_TEXT, len(data)) + data


def boolean(value: bool) -> bytes:
    return _TRUE if value else _FALSE


def check_item(raw: bytes, what: str = "message") -> bytes:
    """Return ``raw`` if it is exactly one complete CBOR item, else raise ValueError.

    Splicing anything else into an envelope would desynchronise the peer's framing.
    """
    try:
        end = item_end(raw, 0, len(raw))
    except CborError as exc:
        raise ValueError(f"{what} is not one CBOR item: {exc}") from None
    if end != len(raw):
        raise ValueError(f"{what} has {len(raw) - end} bytes after its CBOR item")
    return raw


class CheckedItems(tuple):
    """Byte strings each known to be exactly one complete CBOR item.

    Made by code that can vouch for it: the node's mempool holds only messages its codec
    decoded strictly when they were accepted (or reloaded), so replies built from it splice
    them without walking each one again (a walk per message per reply was about half of the
    node's CPU when ten aggregators drained a full mempool). Anything else is checked by
    :func:`join_items`.
    """

    __slots__ = ()


def as_items(items) -> tuple:
    """``items`` as a tuple, keeping a :class:`CheckedItems` as it is (``tuple()`` would not)."""
    return items if isinstance(items, tuple) else tuple(items)


def join_items(items, what: str = "message") -> bytes:
    """The items back to back, each checked to be one CBOR item unless they are :class:`CheckedItems`."""
    if type(items) is CheckedItems:
        return b"".join(items)
    return b"".join(check_item(item, what) for item in items)

