"""Attacker bytes: the decoder only ever answers with a message or a MessageDecodeError, and no
single-bit change of a valid message survives decoding plus the three cryptographic checks."""

from __future__ import annotations

import cbor2
import pytest
from hypothesis import given, settings, strategies as st

from dmq import codec
from dmq.codec import (
    MessageDecodeError,
    build_legacy_message,
    decode_message,
    decode_message_at,
    decode_message_structure,
)
from dmq.kes import kes_verify
from dmq.message import DmqMessage
from dmq.opcert import verify_opcert

from .conftest import E2E_BODY, E2E_EXPIRES_AT


def outcome(decode, raw):
    try:
        return decode(raw)
    except MessageDecodeError as exc:
        return exc


def passes_every_check(message: DmqMessage) -> bool:
    t = message.kes_period - message.opcert.start_kes_period
    return (
        message.has_valid_id()
        and verify_opcert(message.opcert, message.cold_vk)
        and kes_verify(message.opcert.hot_vk, t, message.signed_bytes, message.kes_signature)
    )


def general_read(raw: bytes):
    """The general reader alone (the fast path skipped), for equivalence checks."""
    return codec._read(raw, 0, len(raw), False, codec._STRICT)


@settings(max_examples=300)
@given(raw=st.binary(max_size=800))
def test_random_bytes(raw):
    for decode in (decode_message, lambda b: decode_message(b, allow_legacy=True), decode_message_structure):
        result = outcome(decode, raw)
        assert isinstance(result, (DmqMessage, MessageDecodeError))


@settings(max_examples=100)
@given(
    prefix=st.sampled_from([b"\x85\x58\x20" + bytes(32), b"\x84\x84\x58\x40", b"\x85"]),
    tail=st.binary(max_size=300),
)
def test_random_bytes_behind_a_plausible_head(prefix, tail):
    for decode in (decode_message, lambda b: decode_message(b, allow_legacy=True), decode_message_structure):
        assert isinstance(outcome(decode, prefix + tail), (DmqMessage, MessageDecodeError))


def _mutate_one_byte(e2e_message, legacy_message, data):
    original = data.draw(st.sampled_from([e2e_message.raw, legacy_message.raw]))
    position = data.draw(st.integers(min_value=0, max_value=len(original) - 1))
    value = data.draw(st.integers(min_value=0, max_value=255))
    raw = original[:position] + bytes([value]) + original[position + 1:]
    strict = outcome(decode_message, raw)
    assert isinstance(strict, (DmqMessage, MessageDecodeError))
    assert isinstance(outcome(lambda b: decode_message(b, allow_legacy=True), raw), (DmqMessage, MessageDecodeError))
    assert isinstance(outcome(decode_message_structure, raw), (DmqMessage, MessageDecodeError))
    if isinstance(strict, DmqMessage):
        assert strict.raw == raw
        general, end = general_read(raw)
        assert general == strict and end == len(raw)
        if raw != original:
            assert not passes_every_check(strict)


@settings(max_examples=300)
@given(data=st.data())
def test_single_byte_mutations_of_valid_messages(e2e_message, legacy_message, data):
    _mutate_one_byte(e2e_message, legacy_message, data)


@pytest.mark.slow
@settings(max_examples=30_000, deadline=None)
@given(data=st.data())
def test_single_byte_mutations_soak(e2e_message, legacy_message, data):
    _mutate_one_byte(e2e_message, legacy_message, data)


@settings(max_examples=100)
@given(raw=st.binary(min_size=1, max_size=400), position=st.integers(min_value=0, max_value=500))
def test_decode_at_any_offset(raw, position):
    try:
        message, end = decode_message_at(raw, position)
    except MessageDecodeError:
        return
    assert raw[position:end] == message.raw


@settings(max_examples=60, deadline=None)
@given(
    body=st.binary(min_size=90, max_size=2000),
    kes_period=st.integers(min_value=0, max_value=63),
    expires_at=st.integers(min_value=0, max_value=2**32 - 1),
    long_forms=st.booleans(),
)
def test_fast_and_general_readers_agree(kes_key_00, mithril_opcert, mithril_cold_vk, body, kes_period, expires_at,
                                        long_forms):
    message = codec.build_message(body, kes_period, expires_at, kes_key_00, mithril_opcert, mithril_cold_vk)
    raw = message.raw
    if long_forms:
        # Re-spell the body length with 4 bytes and the integers with 8: the fast path leaves
        # this spelling to the general reader.
        items = cbor2.loads(raw)
        payload = (b"\x83\x5a" + len(body).to_bytes(4, "big") + body + b"\x1b" + kes_period.to_bytes(8, "big")
                   + b"\x1b" + expires_at.to_bytes(8, "big"))
        raw = codec.encode_message(payload, items[2], message.opcert, message.cold_vk)
        assert codec._read_common(raw, 0) is None
    else:
        assert codec._read_common(raw, 0) is not None
    decoded = decode_message(raw)
    assert (decoded, len(raw)) == general_read(raw)
    assert decoded.body == body and decoded.kes_period == kes_period and decoded.expires_at == expires_at
    assert decoded.has_valid_id()


@pytest.fixture(scope="module")
def legacy_message(kes_key_00, mithril_opcert, mithril_cold_vk):
    return build_legacy_message(E2E_BODY, 5, E2E_EXPIRES_AT, kes_key_00, mithril_opcert, mithril_cold_vk)


def test_the_unmodified_messages_pass_every_check(e2e_message, legacy_message):
    assert passes_every_check(e2e_message)
    assert passes_every_check(decode_message(legacy_message.raw, allow_legacy=True))


def _every_bit_flip_is_caught(raw: bytes, allow_legacy: bool) -> None:
    survivors = []
    for bit in range(len(raw) * 8):
        flipped = bytearray(raw)
        flipped[bit // 8] ^= 1 << (bit % 8)
        try:
            message = decode_message(bytes(flipped), allow_legacy=allow_legacy)
        except MessageDecodeError:
            continue
        if passes_every_check(message):
            survivors.append(bit)
    assert survivors == []


def test_every_single_bit_flip_of_a_message_is_caught(e2e_message):
    """Exhaustive over all 5 856 bits: id, payload, KES signature, opcert fields, cold key."""
    _every_bit_flip_is_caught(e2e_message.raw, allow_legacy=False)


def test_every_single_bit_flip_of_a_legacy_message_is_caught(legacy_message):
    _every_bit_flip_is_caught(legacy_message.raw, allow_legacy=True)
