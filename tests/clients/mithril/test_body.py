"""The Mithril body ``RegisterSignatureMessageDmq`` and its bincode signed entity type."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clients.mithril import (
    CURRENT_ORDER,
    ORDER_UNTIL_2617,
    BodyDecodeError,
    CardanoBlocksTransactions,
    CardanoDatabase,
    CardanoImmutableFilesFull,
    CardanoStakeDistribution,
    CardanoTransactions,
    MithrilStakeDistribution,
    RegisterSignatureMessageDmq,
    SignedEntityTypeError,
)
from clients.mithril.bincode import BincodeError, decode_varint, encode_varint
from clients.mithril.signed_entity import decode_signed_entity_type, encode_signed_entity_type

# Mithril's golden HTTP message carries the same signature as JSON:
# {"sigma":[130,177,15,229,…,139,36],"indexes":[0,1,3,4,6,…,97,98],"signer_index":2}.
GOLDEN_INDEXES = (0, 1, 3, 4, 6, 8, 9, 10, 11, 12, 14, 18, 21, 22, 23, 25, 26, 27, 30, 33, 34, 38, 41, 43, 50,
                  58, 59, 60, 61, 62, 67, 69, 71, 73, 75, 76, 77, 81, 82, 83, 84, 90, 91, 92, 93, 97, 98)


@pytest.fixture(scope="module")
def golden(vectors) -> bytes:
    return bytes.fromhex(vectors["mithril_body"]["body"])


def test_golden_body_round_trips_byte_for_byte(golden):
    parsed = RegisterSignatureMessageDmq.from_bytes(golden)
    assert parsed.signed_entity_type == CardanoDatabase(epoch=10, immutable_file_number=1728)
    assert len(parsed.signature) == 440 and parsed.raw == golden
    assert parsed.to_bytes() == golden
    rebuilt = RegisterSignatureMessageDmq(CardanoDatabase(10, 1728), parsed.signature)
    assert rebuilt.to_bytes() == golden and rebuilt == parsed


def test_golden_signature_fields_match_mithrils_json_golden(golden):
    parsed = RegisterSignatureMessageDmq.from_bytes(golden)
    assert parsed.signature_format == "packed"
    packed = parsed.packed_signature()
    assert packed.indexes == GOLDEN_INDEXES
    assert packed.signer_index == 2
    assert packed.sigma[:4] == bytes([130, 177, 15, 229]) and packed.sigma[-2:] == bytes([139, 36])


def test_variant_index_two_meant_immutable_files_full_until_2617(golden):
    """The same bytes name another entity in released Mithril: the variant order is data."""
    old = RegisterSignatureMessageDmq.from_bytes(golden, order=ORDER_UNTIL_2617)
    assert old.signed_entity_type == CardanoImmutableFilesFull(10, 1728)
    assert old.to_bytes(order=ORDER_UNTIL_2617) == golden
    assert encode_signed_entity_type(CardanoDatabase(10, 1728), ORDER_UNTIL_2617)[0] == 3
    with pytest.raises(SignedEntityTypeError):
        encode_signed_entity_type(CardanoImmutableFilesFull(1, 2), CURRENT_ORDER)


@pytest.mark.parametrize("value, encoded", [
    (0, "00"), (250, "fa"), (251, "fbfb00"), (1728, "fbc006"), (65535, "fbffff"),
    (65536, "fc00000100"), (2**32 - 1, "fcffffffff"), (2**32, "fd0000000001000000"),
    (2**64 - 1, "fdffffffffffffffff"),
])
def test_bincode_varints(value, encoded):
    assert encode_varint(value).hex() == encoded
    assert decode_varint(bytes.fromhex(encoded), 0, bits=64, what="x") == (value, len(encoded) // 2)


def test_bincode_refusals():
    with pytest.raises(BincodeError, match="64-bit integer"):
        decode_varint(bytes.fromhex("fd0100000000000000"), 0, bits=32, what="variant")
    with pytest.raises(BincodeError, match="marker 0xfe"):
        decode_varint(bytes.fromhex("fe") + bytes(16), 0, bits=64, what="x")
    with pytest.raises(BincodeError, match="cut off"):
        decode_varint(bytes.fromhex("fcffff"), 0, bits=64, what="x")
    # A wider marker than necessary is accepted, as bincode's decoder accepts it.
    assert decode_varint(bytes.fromhex("fc05000000"), 0, bits=32, what="x") == (5, 5)


entities = st.one_of(
    st.builds(MithrilStakeDistribution, st.integers(0, 2**64 - 1)),
    st.builds(CardanoStakeDistribution, st.integers(0, 2**64 - 1)),
    st.builds(CardanoDatabase, st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)),
    st.builds(CardanoTransactions, st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)),
    st.builds(CardanoBlocksTransactions, st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1),
              st.integers(0, 2**64 - 1)),
)


@given(entity=entities, signature=st.binary(min_size=1, max_size=600))
def test_bodies_round_trip(entity, signature):
    body = RegisterSignatureMessageDmq(entity, signature).to_bytes()
    parsed = RegisterSignatureMessageDmq.from_bytes(body)
    assert parsed.signed_entity_type == entity and parsed.signature == signature
    assert decode_signed_entity_type(encode_signed_entity_type(entity))[0] == entity


def test_signed_entity_bytes_per_variant():
    assert encode_signed_entity_type(MithrilStakeDistribution(5)).hex() == "0005"
    assert encode_signed_entity_type(CardanoStakeDistribution(300)).hex() == "01fb2c01"
    assert encode_signed_entity_type(CardanoTransactions(1, 70000)).hex() == "0301fc70110100"
    assert encode_signed_entity_type(CardanoBlocksTransactions(1, 2, 3)).hex() == "04010203"


def test_mithril_parsing_rules(golden):
    # Bytes after the signature are ignored, as Mithril's reader ignores them.
    assert RegisterSignatureMessageDmq.from_bytes(golden + b"\x00\x01").signed_entity_type == CardanoDatabase(10, 1728)
    with pytest.raises(BodyDecodeError, match="unknown signed entity type variant 5"):
        RegisterSignatureMessageDmq.from_bytes(bytes.fromhex("000105") + golden[7:])
    with pytest.raises(BodyDecodeError, match="signature of 440 bytes announced, 439 present"):
        RegisterSignatureMessageDmq.from_bytes(golden[:-1])
    with pytest.raises(BodyDecodeError, match="announced"):
        RegisterSignatureMessageDmq.from_bytes(bytes.fromhex("00ff02"))
    with pytest.raises(BodyDecodeError):
        RegisterSignatureMessageDmq.from_bytes(b"\x00")
    with pytest.raises(BodyDecodeError, match="CardanoDatabase.immutable_file_number"):
        RegisterSignatureMessageDmq.from_bytes(bytes.fromhex("0003020afb") + bytes.fromhex("0000000101"))
