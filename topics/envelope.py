"""The common adapter envelope with minimal padding (docs/topics-design.md 2.3).

``#6.tag([version: 1, kind: uint, content: any, ? pad: bstr])``. The DMQ core refuses
bodies under 90 bytes, so a short envelope carries ``pad``: the shortest string of zero
bytes that makes the body at least 90 bytes. Padding anywhere else, or longer than needed,
is ``non_canonical``, so the body of a given content is unique and independent encoders
agree on it. Inner ids and signatures never cover ``pad``; adapters get the exact received
bytes of ``content`` (``content_raw``) to hash and verify.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dmq.message import MAX_BODY_SIZE, MIN_BODY_SIZE
from ouroboros_mux.cbor import MAJOR_ARRAY, read_head

from . import cbor
from .classify import TAG_RANGE, tag_head, tag_of
from .reasons import MALFORMED, NON_CANONICAL, TOO_LARGE, UNKNOWN_TOPIC, RejectReason

__all__ = ["ENVELOPE_VERSION", "Envelope", "EnvelopeError", "encode_envelope", "decode_envelope", "pad_length"]

ENVELOPE_VERSION = 1


class EnvelopeError(ValueError):
    """A body that is not a valid envelope; ``reason`` is its reject reason."""

    def __init__(self, reason: RejectReason, detail: str) -> None:
        super().__init__(f"{reason.name}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Envelope:
    """A decoded envelope: the decoded ``content`` and its exact received bytes."""

    tag: int
    kind: int
    content: Any
    content_raw: bytes
    pad: int                   # number of zero bytes of padding (0 when absent)
    body: bytes                # the whole body as received


def pad_length(unpadded: int) -> int | None:
    """Zero bytes of padding a body of ``unpadded`` bytes needs, or None when it needs none.

    Adding ``pad`` grows the array head from 3 to 4 items without changing its size, and
    adds a byte-string head of 1 byte (length < 24) or 2 bytes (length < 256).
    """
    if unpadded >= MIN_BODY_SIZE:
        return None
    n = 0
    while unpadded + len(cbor.head(2, n)) + n < MIN_BODY_SIZE:
        n += 1
    return n


def encode_envelope(tag: int, kind: int, content: Any = None, *, content_raw: bytes | None = None) -> bytes:
    """The one canonical body for ``content`` (or for already-encoded ``content_raw``).

    Raises :class:`EnvelopeError` (``too_large``) when the body would exceed 2000 bytes.
    """
    if tag not in TAG_RANGE:
        raise ValueError(f"{tag} is not an adapter tag")
    if content_raw is None:
        content_raw = cbor.encode(content)
    fields = cbor.encode(ENVELOPE_VERSION) + cbor.encode(kind) + content_raw
    unpadded = 3 + 1 + len(fields)
    pad = pad_length(unpadded)
    if pad is None:
        body = tag_head(tag) + cbor.head(4, 3) + fields
    else:
        body = tag_head(tag) + cbor.head(4, 4) + fields + cbor.encode(bytes(pad))
    if len(body) > MAX_BODY_SIZE:
        raise EnvelopeError(TOO_LARGE, f"body of {len(body)} bytes exceeds {MAX_BODY_SIZE}")
    return body


def decode_envelope(body: bytes) -> Envelope:
    """Strictly decode a tagged body; raises :class:`EnvelopeError` with the reason."""
    tag = tag_of(body)
    if tag is None:
        raise EnvelopeError(MALFORMED, "body does not start with an adapter tag")
    if len(body) > MAX_BODY_SIZE:
        raise EnvelopeError(TOO_LARGE, f"body of {len(body)} bytes exceeds {MAX_BODY_SIZE}")
    try:
        # The whole body must be one deterministic item: check that first, so a trailing
        # byte or a non-canonical head anywhere is reported before any field rule.
        cbor.decode(body)
        pos = 3
        end = len(body)
        major, _, count, pos = read_head(body, pos, end)
        if major != MAJOR_ARRAY:
            raise EnvelopeError(MALFORMED, "envelope is not an array")
        if count not in (3, 4):
            raise EnvelopeError(MALFORMED, f"envelope has {count} fields, expected 3 or 4")
        version, pos = cbor.decode_item(body, pos, end)
        if not isinstance(version, int) or isinstance(version, bool) or version < 0:
            raise EnvelopeError(MALFORMED, "envelope version is not a uint")
        if version != ENVELOPE_VERSION:
            raise EnvelopeError(UNKNOWN_TOPIC, f"envelope version {version}")
        kind, pos = cbor.decode_item(body, pos, end)
        if not isinstance(kind, int) or isinstance(kind, bool) or kind < 0:
            raise EnvelopeError(MALFORMED, "envelope kind is not a uint")
        start = pos
        content, pos = cbor.decode_item(body, pos, end)
        content_raw = bytes(body[start:pos])
        pad = 0
        if count == 4:
            pad_start = pos
            pad_value, pos = cbor.decode_item(body, pos, end)
            if not isinstance(pad_value, bytes):
                raise EnvelopeError(MALFORMED, "pad is not a byte string")
            if pad_value.count(0) != len(pad_value):
                raise EnvelopeError(NON_CANONICAL, "pad holds non-zero bytes")
            if pad_length(pad_start) != len(pad_value):
                raise EnvelopeError(NON_CANONICAL, "pad is not the minimal padding")
            pad = len(pad_value)
        elif len(body) < MIN_BODY_SIZE:
            raise EnvelopeError(NON_CANONICAL, f"body of {len(body)} bytes lacks its padding")
    except cbor.CborMalformed as exc:
        raise EnvelopeError(MALFORMED, str(exc)) from None
    except cbor.CborNonCanonical as exc:
        raise EnvelopeError(NON_CANONICAL, str(exc)) from None
    return Envelope(tag, kind, content, content_raw, pad, body)
