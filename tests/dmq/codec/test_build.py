"""Messages the project creates: payload and message encoding, signing, the legacy layout."""

from __future__ import annotations

import cbor2
import pytest
from hypothesis import given, settings, strategies as st

from dmq.codec import (
    LegacyMessageFormat,
    build_legacy_message,
    build_message,
    decode_message,
    decode_message_structure,
    encode_legacy_payload,
    encode_message,
    encode_payload,
)
from dmq.kes import KesPeriodError, kes_verify
from dmq.message import legacy_message_id_of, message_id_of
from dmq.opcert import cold_verification_key, issue_opcert, verify_opcert

from .conftest import E2E_BODY, E2E_EXPIRES_AT


@settings(max_examples=80)
@given(
    body=st.binary(max_size=2100),
    kes_period=st.integers(min_value=0, max_value=2**64 - 1),
    expires_at=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_payload_is_definite_with_shortest_integers(body, kes_period, expires_at):
    # cbor2 writes shortest forms and definite lengths: the encoding Pallas and cborg produce.
    assert encode_payload(body, kes_period, expires_at) == cbor2.dumps([body, kes_period, expires_at])


@pytest.mark.parametrize("kes_period, expires_at", [(2**64, 0), (-1, 0), (0, 2**32), (0, -1)])
def test_payload_refuses_out_of_range_integers(kes_period, expires_at):
    with pytest.raises(ValueError):
        encode_payload(E2E_BODY, kes_period, expires_at)


def test_message_sizes_of_wire_5_4(kes_key_00, mithril_opcert, mithril_cold_vk):
    def size(body_size: int, kes_period: int, issue: int, start: int) -> int:
        opcert = issue_opcert(bytes(32), mithril_opcert.hot_vk, issue, start)
        signed = encode_payload(bytes(body_size), kes_period, E2E_EXPIRES_AT)
        return len(encode_message(signed, bytes(448), opcert, mithril_cold_vk))

    assert size(90, 5, 0, 0) == 722
    assert size(2000, 5, 0, 0) == 2633
    assert size(2000, 2**63, 2**63, 2**63) == 2657


def test_encoded_message_is_the_definite_five_array(e2e_message):
    items = cbor2.loads(e2e_message.raw)
    assert items[0] == e2e_message.message_id
    assert items[1] == [e2e_message.body, e2e_message.kes_period, e2e_message.expires_at]
    assert items[2] == e2e_message.kes_signature
    assert items[3] == [e2e_message.opcert.hot_vk, 0, 0, e2e_message.opcert.cold_signature]
    assert items[4] == e2e_message.cold_vk
    assert cbor2.dumps(items) == e2e_message.raw


def test_build_from_an_evolved_key_gives_the_same_message(kes_key_00, mithril_opcert, mithril_cold_vk, e2e_message):
    evolved = kes_key_00.copy()
    evolved.evolve_to(5)
    again = build_message(E2E_BODY, 5, E2E_EXPIRES_AT, evolved, mithril_opcert, mithril_cold_vk)
    assert again == e2e_message
    assert kes_key_00.period == 0 and evolved.period == 5
    evolved.evolve()
    with pytest.raises(KesPeriodError):
        build_message(E2E_BODY, 5, E2E_EXPIRES_AT, evolved, mithril_opcert, mithril_cold_vk)


def test_build_signs_at_the_evolution_relative_to_the_certificate(kes_key_00):
    cold_seed = bytes(range(32))
    opcert = issue_opcert(cold_seed, kes_key_00.verification_key(), 2, 100)
    cold_vk = cold_verification_key(cold_seed)
    message = build_message(E2E_BODY, 130, E2E_EXPIRES_AT, kes_key_00, opcert, cold_vk)
    decoded = decode_message(message.raw)
    assert decoded.kes_period == 130 and verify_opcert(decoded.opcert, decoded.cold_vk)
    assert kes_verify(opcert.hot_vk, 30, decoded.signed_bytes, decoded.kes_signature)
    assert not kes_verify(opcert.hot_vk, 130, decoded.signed_bytes, decoded.kes_signature)
    with pytest.raises(KesPeriodError, match="before the certificate's start period 100"):
        build_message(E2E_BODY, 99, E2E_EXPIRES_AT, kes_key_00, opcert, cold_vk)


def test_sign_period_builds_a_message_signed_at_the_wrong_evolution(kes_key_00, mithril_opcert, mithril_cold_vk):
    message = build_message(E2E_BODY, 5, E2E_EXPIRES_AT, kes_key_00, mithril_opcert, mithril_cold_vk, sign_period=4)
    assert not kes_verify(mithril_opcert.hot_vk, 5, message.signed_bytes, message.kes_signature)
    assert kes_verify(mithril_opcert.hot_vk, 4, message.signed_bytes, message.kes_signature)
    assert message.has_valid_id()


@pytest.mark.parametrize("size", [89, 2001])
def test_build_refuses_bodies_the_reference_would_not_decode(kes_key_00, mithril_opcert, mithril_cold_vk, size):
    with pytest.raises(ValueError, match=f"body of {size} bytes outside 90..2000"):
        build_message(bytes(size), 5, E2E_EXPIRES_AT, kes_key_00, mithril_opcert, mithril_cold_vk)


def test_encode_message_with_a_foreign_id_is_inconsistent(e2e_message):
    raw = encode_message(e2e_message.signed_bytes, e2e_message.kes_signature, e2e_message.opcert,
                         e2e_message.cold_vk, message_id=bytes(32))
    decoded = decode_message(raw)
    assert decoded.message_id == bytes(32) and not decoded.has_valid_id()


# -- legacy (Mithril 2543–2617) ---------------------------------------------------------------

@pytest.fixture(scope="module")
def legacy_message(kes_key_00, mithril_opcert, mithril_cold_vk):
    return build_legacy_message(E2E_BODY, 5, E2E_EXPIRES_AT, kes_key_00, mithril_opcert, mithril_cold_vk)


def test_legacy_layout(legacy_message):
    items = cbor2.loads(legacy_message.raw)
    assert len(items) == 4 and isinstance(items[0], list) and len(items[0]) == 4
    assert items[0][0] == legacy_message_id_of(E2E_BODY, 5, E2E_EXPIRES_AT)
    assert len(items[0][0]) == 64
    assert cbor2.dumps(items) == legacy_message.raw
    assert legacy_message.signed_bytes == encode_legacy_payload(E2E_BODY, 5, E2E_EXPIRES_AT)
    assert legacy_message.raw[1:1 + len(legacy_message.signed_bytes)] == legacy_message.signed_bytes


def test_legacy_is_refused_unless_allowed(legacy_message, mithril_opcert):
    with pytest.raises(LegacyMessageFormat, match="enable LegacyMessageFormat"):
        decode_message(legacy_message.raw)
    decoded = decode_message(legacy_message.raw, allow_legacy=True)
    assert decoded == legacy_message and decoded.legacy
    assert decoded.message_id == legacy_message_id_of(E2E_BODY, 5, E2E_EXPIRES_AT)
    assert decoded.has_valid_id()
    assert kes_verify(mithril_opcert.hot_vk, 5, decoded.signed_bytes, decoded.kes_signature)
    assert decode_message_structure(legacy_message.raw) == decoded


def test_legacy_id_is_checked_with_mithrils_rule(legacy_message):
    raw = bytearray(legacy_message.raw)
    raw[5] ^= 0x01  # inside the 64-byte id (after 84 84 58 40)
    decoded = decode_message(bytes(raw), allow_legacy=True)
    assert not decoded.has_valid_id()
    assert decoded.expected_message_id() == legacy_message.message_id
    # The new-format rule does not apply to legacy messages.
    assert legacy_message.message_id != message_id_of(legacy_message.signed_bytes)
