"""The raw topic: every body without an adapter tag (Mithril and any other opaque use).

The framework serves it itself: raw items on protocol 1000 carry the exact message bytes
(C2) and protocol 15 serves raw messages only (:func:`is_raw_message`) on an instance that
carries adapters. An instance that carries raw only classifies nothing (docs/topics-design.md 2.1): it
accepts, relays and notifies every message the reference would, whatever its body starts
with, so it never needs this module.
"""

from __future__ import annotations

from dmq.message import DmqMessage
from ouroboros_mux.cbor import Cursor

from .adapter import ITEM_MESSAGE, Delivery
from .classify import ADAPTER_NUMBERS, tag_of

__all__ = ["raw_delivery", "message_meta", "message_body_of", "is_raw_message"]


def message_meta(adapter: int, topic_key: bytes, arrival: int, *, inner_id: bytes | None = None,
                 pool: bytes | None = None, flags: int = 0) -> dict[int, object]:
    """``meta`` of an item (docs/topics-design.md 3.5)."""
    meta: dict[int, object] = {0: adapter, 1: topic_key, 4: arrival}
    if inner_id is not None:
        meta[2] = inner_id
    if pool is not None:
        meta[3] = pool
    if flags:
        meta[5] = flags
    return meta


def raw_delivery(message: DmqMessage, arrival: int) -> Delivery:
    """The protocol 1000 item of a raw message: its exact received bytes (C2).

    The raw topic has no key; ``meta`` names the wrapping pool as the key.
    """
    meta = message_meta(ADAPTER_NUMBERS["raw"], b"", arrival, pool=message.pool_id)
    return Delivery(adapter=ADAPTER_NUMBERS["raw"], body=[ITEM_MESSAGE, meta, message.raw],
                    facets={4: frozenset({message.pool_id})}, deadline=float(message.expires_at))


def message_body_of(raw: bytes) -> bytes:
    """The body of a stored DMQ message, from its bytes (without the full decode).

    ``[id, [body, kesPeriod, expiresAt], ...]``: walk the heads of the outer array, the id and
    the payload array; the body is the first item of the payload.
    """
    cursor = Cursor(raw)
    cursor.array_header()
    cursor.skip()            # id
    cursor.array_header()    # payload
    return cursor.bytes()


def is_raw_message(raw: bytes) -> bool:
    """Whether a stored message's body is raw (protocol 15 serves only those, C2)."""
    try:
        return tag_of(message_body_of(raw)) is None
    except (ValueError, IndexError):
        return True
