"""Mithril's ``SignedEntityType``: what a single signature signs, in bincode bytes.

Source: ``input-output-hk/mithril: mithril-common/src/entities/signed_entity_type.rs``. The type
is a Rust enum serialised with bincode ``standard()`` (:mod:`.bincode`): the variant index as
a ``u32`` varint, then the variant's fields as ``u64`` varints in declaration order (``Epoch``,
``BlockNumber``, ``BlockNumberOffset`` and ``ImmutableFileNumber`` are ``u64`` newtypes;
``CardanoDbBeacon`` is ``{epoch, immutable_file_number}``).

The variant index is the position in the enum, so it changed when Mithril removed
``CardanoImmutableFilesFull`` (``unstable`` commit ``c660b48c``, May 2026): index 2 meant
``CardanoImmutableFilesFull`` in every release up to 2617.0 and means ``CardanoDatabase``
since. Both orders are here as data. :data:`CURRENT_ORDER` is the default because only
``unstable`` Mithril sends the message format a 0.7 node accepts (docs/protocol/README.md 12.3 item 10);
:data:`ORDER_UNTIL_2617` reads what the released signers put in their (legacy-format) messages.

Like Mithril's decoder (``bincode::serde::decode_from_slice``), bytes after the entity are
ignored and an unknown variant index is an error.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Sequence

from .bincode import BincodeError, decode_varint, encode_varint

__all__ = [
    "MithrilStakeDistribution",
    "CardanoStakeDistribution",
    "CardanoImmutableFilesFull",
    "CardanoDatabase",
    "CardanoTransactions",
    "CardanoBlocksTransactions",
    "SignedEntityType",
    "CURRENT_ORDER",
    "ORDER_UNTIL_2617",
    "SignedEntityTypeError",
    "encode_signed_entity_type",
    "decode_signed_entity_type",
]


class SignedEntityTypeError(ValueError):
    """Bytes that Mithril would not decode as a signed entity type (of the chosen variant order)."""


@dataclass(frozen=True, slots=True)
class MithrilStakeDistribution:
    epoch: int


@dataclass(frozen=True, slots=True)
class CardanoStakeDistribution:
    epoch: int


@dataclass(frozen=True, slots=True)
class CardanoImmutableFilesFull:
    """Discontinued in ``unstable``; present in the enum of every release up to 2617.0."""

    epoch: int
    immutable_file_number: int


@dataclass(frozen=True, slots=True)
class CardanoDatabase:
    epoch: int
    immutable_file_number: int


@dataclass(frozen=True, slots=True)
class CardanoTransactions:
    epoch: int
    block_number: int


@dataclass(frozen=True, slots=True)
class CardanoBlocksTransactions:
    epoch: int
    block_number: int
    block_number_offset: int


SignedEntityType = (
    MithrilStakeDistribution
    | CardanoStakeDistribution
    | CardanoImmutableFilesFull
    | CardanoDatabase
    | CardanoTransactions
    | CardanoBlocksTransactions
)

#: Variant index -> type, as ``unstable`` (2eedbd25) declares the enum.
CURRENT_ORDER: tuple[type, ...] = (
    MithrilStakeDistribution,
    CardanoStakeDistribution,
    CardanoDatabase,
    CardanoTransactions,
    CardanoBlocksTransactions,
)

#: Variant index -> type, as releases up to 2617.0 declare the enum.
ORDER_UNTIL_2617: tuple[type, ...] = (
    MithrilStakeDistribution,
    CardanoStakeDistribution,
    CardanoImmutableFilesFull,
    CardanoDatabase,
    CardanoTransactions,
    CardanoBlocksTransactions,
)


def encode_signed_entity_type(entity: SignedEntityType, order: Sequence[type] = CURRENT_ORDER) -> bytes:
    """The bincode bytes Mithril's ``SignedEntityType::to_bytes_vec`` writes for ``entity``."""
    try:
        index = list(order).index(type(entity))
    except ValueError:
        raise SignedEntityTypeError(f"{type(entity).__name__} is not a variant in this variant order") from None
    out = bytearray(encode_varint(index))
    for field in fields(entity):
        out += encode_varint(getattr(entity, field.name))
    return bytes(out)


def decode_signed_entity_type(
    data: bytes, order: Sequence[type] = CURRENT_ORDER
) -> tuple[SignedEntityType, int]:
    """Decode an entity at the start of ``data``; return it and the number of bytes it used."""
    try:
        index, pos = decode_varint(data, 0, bits=32, what="signed entity type variant")
        if index >= len(order):
            raise SignedEntityTypeError(
                f"unknown signed entity type variant {index} (this variant order has {len(order)})"
            )
        cls = order[index]
        values = []
        for field in fields(cls):
            value, pos = decode_varint(data, pos, bits=64, what=f"{cls.__name__}.{field.name}")
            values.append(value)
    except BincodeError as exc:
        raise SignedEntityTypeError(str(exc)) from None
    return cls(*values), pos
