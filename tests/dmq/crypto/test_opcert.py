"""Operational certificates and pool ids against the Mithril vector (docs/protocol/validation.md 6.6)."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings, strategies as st
from pycardano import StakePoolSigningKey

from dmq.message import OperationalCertificate, pool_id_of
from dmq.opcert import (
    OpcertDecodeError,
    cold_verification_key,
    decode_opcert,
    encode_opcert,
    issue_opcert,
    pool_id_bech32,
    pool_id_from_bech32,
    verify_opcert,
)

COLD_SEED = hashlib.blake2b(b"opcert tests cold key", digest_size=32).digest()
HOT_VK = hashlib.blake2b(b"opcert tests hot key", digest_size=32).digest()


@pytest.fixture(scope="module")
def vector(vectors: dict) -> dict:
    return vectors["opcert"]


def test_mithril_vector_decodes_and_verifies(vector):
    raw = bytes.fromhex(vector["opcert_cbor"])
    cold_vk = bytes.fromhex(vector["cold_vk"])
    opcert = decode_opcert(raw)
    assert opcert.issue_number == 0 and opcert.start_kes_period == 0
    assert opcert.signable().hex() == vector["signed_bytes"]
    assert len(opcert.signable()) == 48
    assert verify_opcert(opcert, cold_vk)
    assert encode_opcert(opcert) == raw


def test_mithril_vector_pool_id_and_bech32(vector, vectors):
    cold_vk = bytes.fromhex(vector["cold_vk"])
    pool_id = pool_id_of(cold_vk)
    assert pool_id.hex() == vector["pool_id"]
    assert pool_id_bech32(pool_id) == vector["pool_id_bech32"]
    assert pool_id_from_bech32(vector["pool_id_bech32"]) == pool_id
    # The hot key of the vector is the Mithril test KES key grown from seed 00..00.
    assert decode_opcert(bytes.fromhex(vector["opcert_cbor"])).hot_vk.hex() == (
        vectors["kes_sum6"]["mithril_test_kes_vk_seed_00"]
    )


def test_issue_then_verify_and_pycardano_agrees_on_the_cold_key():
    opcert = issue_opcert(COLD_SEED, HOT_VK, 7, 123)
    cold_vk = cold_verification_key(COLD_SEED)
    assert verify_opcert(opcert, cold_vk)
    assert not verify_opcert(opcert, cold_verification_key(bytes(32)))
    pycardano_key = StakePoolSigningKey(COLD_SEED)
    assert pycardano_key.to_verification_key().payload == cold_vk
    assert pycardano_key.to_verification_key().hash().payload == pool_id_of(cold_vk)
    # The cold signature is a plain Ed25519 signature over the 48-byte signable.
    assert pycardano_key.sign(opcert.signable()) == opcert.cold_signature


def test_signable_uses_big_endian_u64():
    opcert = OperationalCertificate(HOT_VK, 0x0102030405060708, 2**64 - 1, bytes(64))
    assert opcert.signable() == HOT_VK + bytes.fromhex("0102030405060708") + b"\xff" * 8


def test_encode_uses_shortest_integers_and_decode_accepts_longer_ones():
    opcert = issue_opcert(COLD_SEED, HOT_VK, 24, 2**32)
    raw = encode_opcert(opcert)
    assert raw[:3] == b"\x84\x58\x20" and raw[35:37] == b"\x18\x18"
    assert raw[37:46] == b"\x1b" + (2**32).to_bytes(8, "big")
    assert decode_opcert(raw) == opcert
    long_form = b"\x84\x58\x20" + HOT_VK + b"\x1b" + (24).to_bytes(8, "big") + raw[37:]
    assert decode_opcert(long_form) == opcert


@pytest.mark.parametrize(
    "mutate, reason",
    [
        (lambda raw: raw[:-1], "premature end"),
        (lambda raw: raw + b"\x00", "trailing"),
        (lambda raw: b"\x83" + raw[1:], "4 items"),
        (lambda raw: b"\x9f" + raw[1:] + b"\xff", "definite"),
        (lambda raw: b"\x84\x58\x1f" + raw[3:34] + raw[35:], "32 bytes"),
        (lambda raw: raw[:35] + b"\x20" + raw[36:], "unsigned"),
    ],
)
def test_decode_refuses_other_shapes(mutate, reason):
    raw = encode_opcert(issue_opcert(COLD_SEED, HOT_VK, 0, 0))
    with pytest.raises(OpcertDecodeError, match=reason):
        decode_opcert(mutate(raw))


def test_verify_is_false_on_malformed_fields():
    opcert = issue_opcert(COLD_SEED, HOT_VK, 1, 2)
    cold_vk = cold_verification_key(COLD_SEED)
    assert not verify_opcert(opcert, cold_vk[:31])
    assert not verify_opcert(OperationalCertificate(HOT_VK[:31], 1, 2, opcert.cold_signature), cold_vk)
    assert not verify_opcert(OperationalCertificate(HOT_VK, 1, 2, opcert.cold_signature[:63]), cold_vk)
    assert not verify_opcert(OperationalCertificate(HOT_VK, 2**64, 2, opcert.cold_signature), cold_vk)
    assert not verify_opcert(OperationalCertificate(HOT_VK, -1, 2, opcert.cold_signature), cold_vk)


def test_bech32_refuses_what_is_not_a_pool_id(vector):
    with pytest.raises(ValueError):
        pool_id_bech32(bytes(27))
    with pytest.raises(ValueError):
        pool_id_from_bech32("stake1uyehkck0lajq8gr28t9uxnuvgcqrc6070x3k9r8048z8y5gh6ffgw")
    with pytest.raises(ValueError):
        pool_id_from_bech32(vector["pool_id_bech32"][:-1] + "x")


@settings(max_examples=50, deadline=None)
@given(bit=st.integers(min_value=0, max_value=(48 + 64 + 32) * 8 - 1))
def test_any_bit_flip_in_the_certificate_or_cold_key_fails(bit):
    opcert = issue_opcert(COLD_SEED, HOT_VK, 5, 9)
    material = bytearray(opcert.signable() + opcert.cold_signature + cold_verification_key(COLD_SEED))
    material[bit // 8] ^= 1 << (bit % 8)
    flipped = OperationalCertificate(
        bytes(material[:32]),
        int.from_bytes(material[32:40], "big"),
        int.from_bytes(material[40:48], "big"),
        bytes(material[48:112]),
    )
    assert not verify_opcert(flipped, bytes(material[112:]))
