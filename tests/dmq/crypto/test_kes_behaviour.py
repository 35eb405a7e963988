"""Sum6KES behaviour beyond the fixed vectors: every period, erasure, limits, hostile input."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings, strategies as st

from dmq.kes import (
    KesError,
    KesKeyExhausted,
    KesPeriodError,
    KesSigningKey,
    kes_sign_at,
    kes_signature_size,
    kes_signing_key_size,
    kes_verify,
)

SEED = hashlib.blake2b(b"kes behaviour tests", digest_size=32).digest()
MESSAGE = b"a payload to sign"


@pytest.fixture(scope="module")
def base_key() -> KesSigningKey:
    return KesSigningKey.generate(SEED)


def _right_seed(raw: bytes, level: int) -> bytes:
    offset = 32 + 96 * (level - 1)
    return raw[offset:offset + 32]


def test_sizes():
    assert kes_signing_key_size() == 608 and kes_signature_size() == 448
    assert kes_signing_key_size(1) == 128 and kes_signature_size(0) == 64


def test_every_period_signs_alike_from_period_0_and_from_an_evolved_key(base_key):
    vk = base_key.verification_key()
    evolving = base_key.copy()
    for t in range(64):
        if t:
            evolving.evolve()
        signature = evolving.sign(MESSAGE)
        assert kes_sign_at(base_key, t, MESSAGE) == signature, t
        assert kes_verify(vk, t, MESSAGE, signature), t
        assert not kes_verify(vk, t ^ 1, MESSAGE, signature), t
    assert base_key.period == 0


def test_sign_at_from_a_middle_period_matches_period_0(base_key):
    middle = base_key.copy()
    middle.evolve_to(20)
    before = middle.to_bytes()
    for t in (20, 21, 31, 32, 47, 63):
        assert kes_sign_at(middle, t, MESSAGE) == kes_sign_at(base_key, t, MESSAGE)
    assert middle.to_bytes() == before and middle.period == 20


def test_evolution_erases_the_consumed_right_seed(base_key):
    key = base_key.copy()
    raw0 = key.to_bytes()
    assert _right_seed(raw0, 6) != bytes(32)
    key.evolve()  # 0 -> 1 consumes the level-1 right seed
    assert _right_seed(key.to_bytes(), 1) == bytes(32)
    key.evolve_to(32)  # crossing the root half consumes the level-6 right seed
    raw32 = key.to_bytes()
    assert _right_seed(raw32, 6) == bytes(32)
    # The top pair is kept, so the key still verifies as the same root.
    assert raw32[-64:] == raw0[-64:]
    # Nothing of the period-0 leaf seed survives.
    assert raw0[:32] not in raw32


def test_an_evolved_key_cannot_sign_for_its_past(base_key):
    key = base_key.copy()
    key.evolve_to(10)
    with pytest.raises(KesPeriodError):
        kes_sign_at(key, 9, MESSAGE)
    with pytest.raises(KesPeriodError):
        key.evolve_to(3)


def test_the_last_period_is_63(base_key):
    key = base_key.copy()
    key.evolve_to(63)
    assert kes_verify(key.verification_key(), 63, MESSAGE, key.sign(MESSAGE))
    with pytest.raises(KesKeyExhausted):
        key.evolve()
    with pytest.raises(KesPeriodError):
        key.evolve_to(64)
    with pytest.raises(KesPeriodError):
        kes_sign_at(base_key, 64, MESSAGE)


def test_from_bytes_checks_size_and_period(base_key):
    with pytest.raises(KesError, match="608 bytes"):
        KesSigningKey.from_bytes(base_key.to_bytes()[:-1])
    with pytest.raises(KesPeriodError):
        KesSigningKey.from_bytes(base_key.to_bytes(), period=64)
    with pytest.raises(KesError, match="32 bytes"):
        KesSigningKey.generate(b"short")


def test_repr_does_not_show_secret_material(base_key):
    text = repr(base_key)
    assert base_key.to_bytes()[:32].hex() not in text and base_key.verification_key().hex() in text


def test_erase_zeroes_the_key(base_key):
    key = base_key.copy()
    key.erase()
    assert key.to_bytes() == bytes(608)
    assert base_key.to_bytes() != bytes(608)


def test_small_depths_work_end_to_end():
    for depth in (0, 1, 2, 3):
        key = KesSigningKey.generate(SEED, depth=depth)
        vk = key.verification_key()
        for t in range(1 << depth):
            signature = kes_sign_at(key, t, MESSAGE)
            assert len(signature) == kes_signature_size(depth)
            assert kes_verify(vk, t, MESSAGE, signature, depth=depth)
            assert not kes_verify(vk, t, MESSAGE, signature, depth=depth + 1)


def test_malformed_inputs_are_false_not_exceptions(base_key):
    vk = base_key.verification_key()
    signature = base_key.sign(MESSAGE)
    assert kes_verify(vk, 0, MESSAGE, signature)
    assert kes_verify(memoryview(vk), 0, bytearray(MESSAGE), memoryview(signature))
    cases = [
        (vk[:31], 0, MESSAGE, signature),
        (vk + b"\x00", 0, MESSAGE, signature),
        (vk, -1, MESSAGE, signature),
        (vk, 64, MESSAGE, signature),
        (vk, 2**70, MESSAGE, signature),
        (vk, 0.0, MESSAGE, signature),
        (vk, None, MESSAGE, signature),
        (vk, 0, MESSAGE, signature[:-1]),
        (vk, 0, MESSAGE, signature + b"\x00"),
        (vk, 0, MESSAGE, b""),
        (vk, 0, "text", signature),
        (None, 0, MESSAGE, signature),
        (vk, 0, MESSAGE, None),
        (vk, 0, MESSAGE, 448),
        (vk, 0, MESSAGE, 2**80),
        (32, 0, MESSAGE, signature),
        (bytes(32), 0, MESSAGE, bytes(448)),
    ]
    for args in cases:
        assert kes_verify(*args) is False, args
    assert kes_verify(vk, 0, MESSAGE, signature, depth=-1) is False


@settings(max_examples=60, deadline=None)
@given(bit=st.integers(min_value=0, max_value=448 * 8 - 1), period=st.integers(min_value=0, max_value=63))
def test_any_bit_flip_in_a_signature_fails(base_key, bit, period):
    signature = bytearray(kes_sign_at(base_key, period, MESSAGE))
    signature[bit // 8] ^= 1 << (bit % 8)
    assert not kes_verify(base_key.verification_key(), period, MESSAGE, bytes(signature))


@settings(max_examples=40, deadline=None)
@given(vk=st.binary(min_size=0, max_size=40), period=st.integers(min_value=-5, max_value=70),
       message=st.binary(max_size=64), signature=st.binary(min_size=440, max_size=456))
def test_random_input_never_raises(vk, period, message, signature):
    assert kes_verify(vk, period, message, signature) is False
