"""The codec against every upstream and derived byte vector (docs/protocol/message.md 5.3, docs/protocol/README.md 12.1, 12.2)."""

from __future__ import annotations

import hashlib

import pytest

from dmq.codec import (
    LEGACY_FORMAT_REASON,
    LegacyMessageFormat,
    MessageDecodeError,
    build_message,
    decode_message,
    decode_message_structure,
    encode_payload,
)
from dmq.kes import kes_verify
from dmq.message import message_id_of
from dmq.opcert import verify_opcert

from .conftest import E2E_BODY, E2E_EXPIRES_AT, E2E_KES_PERIOD


def test_cip_golden_message_id(vectors):
    vector = vectors["message_id"]
    payload = encode_payload(bytes.fromhex(vector["body"]), vector["kes_period"], vector["expires_at"])
    assert payload.hex() == vector["payload_cbor"]
    assert hashlib.blake2b(payload, digest_size=32).hexdigest() == vector["message_id"]
    assert message_id_of(payload).hex() == vector["message_id"]


def test_derived_end_to_end_vector(e2e_message, mithril_opcert, mithril_cold_vk):
    message = e2e_message
    assert message.signed_bytes == bytes.fromhex("835864") + E2E_BODY + bytes.fromhex("051a6b49d200")
    assert message.message_id.hex() == "f7ebbbce75193f05786580f431652571a56b42b07e8f55af2dd56361d92718a0"
    assert message.kes_signature.hex().startswith("dbcefb58f15cc96bf95763e0008383df")
    assert kes_verify(mithril_opcert.hot_vk, 5, message.signed_bytes, message.kes_signature)
    assert not kes_verify(mithril_opcert.hot_vk, 4, message.signed_bytes, message.kes_signature)
    assert len(message.raw) == 732 and message.size == 732
    assert message.raw.hex().startswith("855820f7ebbbce")
    assert hashlib.sha256(message.raw).hexdigest() == "3507af221b442ed2d4564e5c61caf8f8f6ba6dfc997a2f065d6753d10ee9a7f7"
    assert message.pool_id.hex() == "d9899c574fd7a710732391706b59e878bfd416214c49d2b3841c5c8b"


def test_derived_vector_decodes_to_the_same_message(e2e_message, mithril_opcert, mithril_cold_vk):
    decoded = decode_message(e2e_message.raw)
    assert decoded == e2e_message
    assert decoded.raw is e2e_message.raw or decoded.raw == e2e_message.raw
    assert (decoded.body, decoded.kes_period, decoded.expires_at) == (E2E_BODY, E2E_KES_PERIOD, E2E_EXPIRES_AT)
    assert decoded.opcert == mithril_opcert and decoded.cold_vk == mithril_cold_vk
    assert not decoded.legacy and decoded.has_valid_id()
    assert verify_opcert(decoded.opcert, decoded.cold_vk)


def test_pallas_structural_new_format(vectors):
    vector = vectors["pallas_structural"]
    raw = bytes.fromhex(vector["new_format"])
    with pytest.raises(MessageDecodeError, match="messageId: expected 32 bytes, got 3"):
        decode_message(raw)
    shape = decode_message_structure(raw)
    assert not shape.legacy
    assert shape.message_id == bytes([1, 2, 3]) and shape.body == bytes([4, 5, 6])
    assert (shape.kes_period, shape.expires_at) == (7, 8)
    assert shape.kes_signature == bytes([9, 10, 11])
    assert (shape.opcert.hot_vk, shape.opcert.issue_number, shape.opcert.start_kes_period,
            shape.opcert.cold_signature) == (bytes([12, 13, 14]), 15, 16, bytes([17]))
    assert shape.cold_vk == bytes([18, 19, 20])
    # The signed bytes are the payload slice as received ...
    assert shape.signed_bytes == raw[5:12] == bytes.fromhex("83430405060708")
    # ... and Pallas's own bytes_to_sign golden test encodes the same shape with expiresAt 14.
    assert encode_payload(bytes([4, 5, 6]), 7, 14).hex() == vector["bytes_to_sign_new"]


def test_pallas_structural_old_format_is_recognised_as_legacy(vectors):
    raw = bytes.fromhex(vectors["pallas_structural"]["old_format"])
    with pytest.raises(LegacyMessageFormat) as caught:
        decode_message(raw)
    assert str(caught.value) == LEGACY_FORMAT_REASON
    assert "Mithril 2543–2617" in str(caught.value) and "LegacyMessageFormat" in str(caught.value)
    with pytest.raises(MessageDecodeError, match="messageId: expected 64 bytes, got 3"):
        decode_message(raw, allow_legacy=True)
    shape = decode_message_structure(raw)
    assert shape.legacy and shape.message_id == bytes([1, 2, 3])
    assert shape.signed_bytes == raw[1:12] == bytes.fromhex("8443010203430405060708")
    assert (shape.body, shape.kes_period, shape.expires_at) == (bytes([4, 5, 6]), 7, 8)


def test_pallas_real_bytes_are_refused_by_the_validating_decoder(vectors):
    vector = vectors["pallas_real_bytes_negative"]
    new, old = bytes.fromhex(vector["new_format"]), bytes.fromhex(vector["old_format"])
    assert (len(new), len(old)) == (614, 676)
    with pytest.raises(MessageDecodeError, match="messageId: expected 32 bytes, got 3"):
        decode_message(new)
    with pytest.raises(LegacyMessageFormat):
        decode_message(old)
    with pytest.raises(MessageDecodeError, match="messageBody: expected 90..2000 bytes, got 13"):
        decode_message(old, allow_legacy=True)


@pytest.mark.parametrize("layout", ["new_format", "old_format"])
def test_pallas_real_bytes_crypto_layer(vectors, layout):
    """Structurally decodable, opcert VALID, KES signature NOT over the payload (the vector's `expect`)."""
    shape = decode_message_structure(bytes.fromhex(vectors["pallas_real_bytes_negative"][layout]))
    assert shape.legacy == (layout == "old_format")
    assert shape.body == b"dummy message"
    assert verify_opcert(shape.opcert, shape.cold_vk)
    assert shape.opcert.hot_vk.hex() == vectors["kes_sum6"]["mithril_test_kes_vk_seed_01"]
    assert len(shape.kes_signature) == 448
    assert not any(
        kes_verify(shape.opcert.hot_vk, t, shape.signed_bytes, shape.kes_signature) for t in range(64)
    )


def test_pallas_legacy_id_follows_mithrils_blake2b_512_rule(vectors):
    legacy = decode_message_structure(bytes.fromhex(vectors["pallas_real_bytes_negative"]["old_format"]))
    expected = hashlib.blake2b(
        b"dummy message" + (0).to_bytes(8, "big") + (0x68E3F4E3).to_bytes(4, "big"), digest_size=64
    ).digest()
    assert legacy.message_id == expected == legacy.expected_message_id()
    assert legacy.has_valid_id()
    new = decode_message_structure(bytes.fromhex(vectors["pallas_real_bytes_negative"]["new_format"]))
    assert not new.has_valid_id()


def test_mithril_body_is_carried_opaquely(vectors, kes_key_00, mithril_opcert, mithril_cold_vk):
    body = bytes.fromhex(vectors["mithril_body"]["body"])
    assert 90 <= len(body) <= 2000
    message = build_message(body, 0, E2E_EXPIRES_AT, kes_key_00, mithril_opcert, mithril_cold_vk)
    decoded = decode_message(message.raw)
    assert decoded.body == body
    assert kes_verify(mithril_opcert.hot_vk, 0, decoded.signed_bytes, decoded.kes_signature)
