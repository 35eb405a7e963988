"""The body a Mithril signer puts in a DMQ message: ``RegisterSignatureMessageDmq``.

Source: ``input-output-hk/mithril: mithril-common/src/messages/register_signature.rs``::

    u16be len(signed_entity_type) ‖ signed_entity_type ‖ u32be len(signature) ‖ signature

The signed entity type is bincode (:mod:`.signed_entity`); the signature is a mithril-stm
``SingleSignature``, kept opaque here because checking it needs the BLS12-381 curve and the
aggregator's key registration, neither of which a DMQ client has. The DMQ node never looks
inside a body at all; this module is for tools and for a consumer that wants to know what it
received.

Parsing follows Mithril's ``try_from_bytes_vec``: each length must fit the bytes that
remain, an unknown entity variant is an error, and bytes after the signature are ignored.
``raw`` keeps the bytes a message was parsed from; :meth:`RegisterSignatureMessageDmq.to_bytes`
writes them the way Mithril's ``try_to_bytes_vec`` does.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Sequence

from .signed_entity import (
    CURRENT_ORDER,
    SignedEntityType,
    SignedEntityTypeError,
    decode_signed_entity_type,
    encode_signed_entity_type,
)

__all__ = [
    "BodyDecodeError",
    "RegisterSignatureMessageDmq",
    "PackedSingleSignature",
    "SIGNATURE_FORMAT_CBOR_V1",
    "SIGNATURE_FORMAT_PACKED",
]

_ENTITY_LENGTH = struct.Struct(">H")
_SIGNATURE_LENGTH = struct.Struct(">I")
_U64 = struct.Struct(">Q")

#: mithril-stm ``codec::CODEC_VERSION_CBOR_V1``: a signature starting with this byte is CBOR.
_CBOR_V1_PREFIX = 0x01
SIGNATURE_FORMAT_CBOR_V1 = "cbor-v1"
SIGNATURE_FORMAT_PACKED = "packed"
_BLS_SIGNATURE_SIZE = 48


class BodyDecodeError(ValueError):
    """A body that Mithril's aggregator would fail to parse as ``RegisterSignatureMessageDmq``."""


@dataclass(frozen=True, slots=True)
class PackedSingleSignature:
    """mithril-stm's manually packed ``SingleSignature`` (every signature not starting with 0x01).

    ``u64be n ‖ n × u64be lottery index ‖ 48-byte BLS signature ‖ u64be signer index``,
    possibly followed by a SNARK extension that is not decoded here.
    """

    indexes: tuple[int, ...]
    sigma: bytes
    signer_index: int


@dataclass(frozen=True, slots=True)
class RegisterSignatureMessageDmq:
    """One single signature registered through DMQ."""

    signed_entity_type: SignedEntityType
    signature: bytes
    #: The bytes this message was parsed from (None for a message built here).
    raw: bytes | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_bytes(cls, data: bytes, *, order: Sequence[type] = CURRENT_ORDER) -> RegisterSignatureMessageDmq:
        data = bytes(data)
        pos = 0
        if len(data) < _ENTITY_LENGTH.size:
            raise BodyDecodeError(f"body of {len(data)} bytes has no signed entity type length")
        (entity_length,) = _ENTITY_LENGTH.unpack_from(data, pos)
        pos += _ENTITY_LENGTH.size
        entity_bytes = data[pos:pos + entity_length]
        if len(entity_bytes) != entity_length:
            raise BodyDecodeError(
                f"signed entity type of {entity_length} bytes announced, {len(entity_bytes)} present"
            )
        try:
            entity, _ = decode_signed_entity_type(entity_bytes, order)
        except SignedEntityTypeError as exc:
            raise BodyDecodeError(f"signed entity type: {exc}") from None
        pos += entity_length
        if len(data) < pos + _SIGNATURE_LENGTH.size:
            raise BodyDecodeError(f"body ends at byte {len(data)} before the signature length")
        (signature_length,) = _SIGNATURE_LENGTH.unpack_from(data, pos)
        pos += _SIGNATURE_LENGTH.size
        signature = data[pos:pos + signature_length]
        if len(signature) != signature_length:
            raise BodyDecodeError(f"signature of {signature_length} bytes announced, {len(signature)} present")
        if not signature:
            raise BodyDecodeError("empty single signature")
        return cls(entity, signature, data)

    def to_bytes(self, *, order: Sequence[type] = CURRENT_ORDER) -> bytes:
        entity_bytes = encode_signed_entity_type(self.signed_entity_type, order)
        if len(entity_bytes) > 0xFFFF or len(self.signature) > 0xFFFF_FFFF:
            raise ValueError("signed entity type or signature too long for its length prefix")
        return (
            _ENTITY_LENGTH.pack(len(entity_bytes)) + entity_bytes
            + _SIGNATURE_LENGTH.pack(len(self.signature)) + bytes(self.signature)
        )

    @property
    def signature_format(self) -> str:
        """``cbor-v1`` (current mithril-stm) or ``packed`` (the earlier manual layout)."""
        return SIGNATURE_FORMAT_CBOR_V1 if self.signature[0] == _CBOR_V1_PREFIX else SIGNATURE_FORMAT_PACKED

    def packed_signature(self) -> PackedSingleSignature:
        """The fields of a packed signature; BodyDecodeError for CBOR or truncated ones."""
        sig = self.signature
        if self.signature_format != SIGNATURE_FORMAT_PACKED:
            raise BodyDecodeError("the single signature is CBOR (cbor-v1), not the packed layout")
        if len(sig) < _U64.size:
            raise BodyDecodeError("packed single signature shorter than its index count")
        (count,) = _U64.unpack_from(sig, 0)
        sigma_at = _U64.size * (1 + count)
        if len(sig) < sigma_at + _BLS_SIGNATURE_SIZE + _U64.size:
            raise BodyDecodeError(f"packed single signature of {len(sig)} bytes is too short for {count} indexes")
        indexes = tuple(_U64.unpack_from(sig, _U64.size * (1 + i))[0] for i in range(count))
        sigma = sig[sigma_at:sigma_at + _BLS_SIGNATURE_SIZE]
        (signer_index,) = _U64.unpack_from(sig, sigma_at + _BLS_SIGNATURE_SIZE)
        return PackedSingleSignature(indexes, sigma, signer_index)
