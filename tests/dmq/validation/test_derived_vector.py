"""docs/protocol/README.md 12.2: the derived end-to-end vector, byte for byte, then through the validator.

The message is built from the KES seed 32 x 00 and the Mithril opcert of vectors.json (which
certifies exactly that key), body 00..63, kesPeriod 5, expiresAt 1800000000.
"""

from __future__ import annotations

import hashlib

import pytest

from dmq.clock import ManualClock
from dmq.codec import build_message, decode_message
from dmq.kes import KesSigningKey, kes_verify
from dmq.opcert import decode_opcert
from dmq.stake import PoolStake, StakeView
from dmq.validation import (
    NotInitialized,
    SigExpired,
    SigExpiresAtTooFarInTheFuture,
    SigTooFrequent,
    UnrecognizedPool,
    Validator,
)

from .support import never_known

EXPIRES_AT = 1_800_000_000
BODY = bytes(range(100))


@pytest.fixture(scope="module")
def vector(vectors):
    opcert_vector = vectors["opcert"]
    opcert = decode_opcert(bytes.fromhex(opcert_vector["opcert_cbor"]))
    cold_vk = bytes.fromhex(opcert_vector["cold_vk"])
    kes_key = KesSigningKey.generate(bytes(32))
    assert kes_key.verification_key().hex() == vectors["kes_sum6"]["mithril_test_kes_vk_seed_00"]
    assert opcert.hot_vk == kes_key.verification_key()
    msg = build_message(BODY, 5, EXPIRES_AT, kes_key, opcert, cold_vk)
    return {"msg": decode_message(msg.raw), "kes_key": kes_key, "opcert": opcert, "cold_vk": cold_vk,
            "pool_id": bytes.fromhex(opcert_vector["pool_id"])}


def _validator(vector, now: float, *, ready: bool = True) -> Validator:
    clock = ManualClock(now=now, monotonic=5_000.0)
    view = StakeView(clock, max_kes_evolutions=62)
    if ready:
        view.update({vector["pool_id"]: PoolStake(0, 1, 0)}, 600)
    return Validator(view, clock)


def test_vector_bytes(vector):
    msg = vector["msg"]
    assert msg.signed_bytes == bytes.fromhex("835864") + BODY + bytes.fromhex("051a6b49d200")
    assert msg.message_id.hex() == "f7ebbbce75193f05786580f431652571a56b42b07e8f55af2dd56361d92718a0"
    assert msg.kes_signature[:16].hex() == "dbcefb58f15cc96bf95763e0008383df"
    assert len(msg.raw) == 732
    assert msg.raw.startswith(bytes.fromhex("855820f7ebbbce"))
    assert hashlib.sha256(msg.raw).hexdigest() == "3507af221b442ed2d4564e5c61caf8f8f6ba6dfc997a2f065d6753d10ee9a7f7"
    assert msg.pool_id == vector["pool_id"]
    assert msg.pool_id.hex().startswith("d9899c57") and msg.pool_id.hex().endswith("c5c8b")
    hot_vk = vector["opcert"].hot_vk
    assert kes_verify(hot_vk, 5, msg.signed_bytes, msg.kes_signature)
    assert not kes_verify(hot_vk, 4, msg.signed_bytes, msg.kes_signature)


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        (1_799_999_000.0, None),
        (1_799_998_200.0, SigExpiresAtTooFarInTheFuture()),
        (1_799_998_200.001, None),
        (1_800_000_000.0, None),
        (1_800_000_000.5, SigExpired()),
    ],
)
def test_vector_expiry_window(vector, now, expected):
    validator = _validator(vector, now)
    outcome = validator.process_one(vector["msg"], never_known)
    assert outcome.error == expected


def test_vector_second_message_signed_within_60_s_is_too_frequent(vector):
    validator = _validator(vector, 1_799_999_000.0)
    assert validator.process_one(vector["msg"], never_known).accepted
    validator.clock.advance(300.0)
    other = build_message(BODY[::-1], 5, EXPIRES_AT - 59, vector["kes_key"], vector["opcert"], vector["cold_vk"])
    error = validator.process_one(other, never_known).error
    assert error == SigTooFrequent(vector["pool_id"], 59.0)
    assert str(error) == (
        'SigTooFrequent (KeyHash {unKeyHash = "d9899c574fd7a710732391706b59e878bfd416214c49d2b3841c5c8b"}) 59s'
    )


def test_vector_readiness(vector):
    validator = _validator(vector, 1_799_999_000.0, ready=False)
    assert validator.check(vector["msg"]) == NotInitialized()
    validator.stake_view.update({}, 600)   # the first stake query came back empty
    assert validator.check(vector["msg"]) == UnrecognizedPool()
