"""Batches (docs/protocol/validation.md 6.1), per-pool state committed only on success, its persistence, the opcert cache."""

from __future__ import annotations

import json

import pytest

from dmq.clock import ManualClock
from dmq.codec import build_legacy_message, decode_message
from dmq.message import OperationalCertificate
from dmq.opcert import verify_opcert
from dmq.validation import (
    InvalidOCertCounter,
    OpcertCache,
    PoolState,
    SigDuplicate,
    SigExpired,
    SigTooFrequent,
    Validator,
)

from .support import MONO, NOW, TTL, flip_bit, never_known, pool, ready_view, validator_for, with_message_id, with_parts

P = pool(11)
Q = pool(12)
R = pool(13)


def test_ids_in_the_mempool_are_duplicates_and_not_validated():
    validator, _ = validator_for(P)
    expired = P.message(expires_at=int(NOW) - 5)
    known = {expired.message_id}
    outcome = validator.process_one(expired, known.__contains__)
    assert outcome.error == SigDuplicate()          # not SigExpired: it was never validated
    assert str(outcome.error) == "SigDuplicate"
    assert len(validator.state) == 0


def test_second_copy_in_a_batch_is_a_duplicate():
    validator, _ = validator_for(P, Q)
    a, b = P.message(nonce=1), Q.message(nonce=1)
    outcomes = validator.process_batch([a, b, a], never_known)
    assert [o.message for o in outcomes] == [a, b, a]
    assert [o.error for o in outcomes] == [None, None, SigDuplicate()]
    assert [o.accepted for o in outcomes] == [True, True, False]


def test_second_message_of_a_pool_in_one_batch_is_too_frequent():
    validator, _ = validator_for(P)
    outcomes = validator.process_batch([P.message(nonce=1), P.message(nonce=2)], never_known)
    assert outcomes[0].accepted
    assert outcomes[1].error == SigTooFrequent(P.pool_id, 0.0)
    assert str(outcomes[1].error).endswith('"}) 0s')


def test_a_rejected_message_changes_no_state():
    validator, clock = validator_for(P)
    # Passes checks 1..9 (counter 7 would be recorded) and fails the KES check.
    bad = P.message(issue=7, nonce=1, sign_period=4)
    outcome = validator.process_one(bad, never_known)
    assert not outcome.accepted
    assert validator.state.opcert_counter(P.pool_id) is None
    assert validator.state.last_accepted(P.pool_id) is None
    # So a lower counter, right away, is still fine.
    assert validator.process_one(P.message(issue=3, nonce=2), never_known).accepted
    assert validator.state.opcert_counter(P.pool_id) == 3
    assert validator.state.last_accepted(P.pool_id) == MONO
    assert validator.state.last_accepted_wall(P.pool_id) == NOW


def test_a_failed_message_does_not_block_the_next_in_the_batch():
    validator, _ = validator_for(P)
    bad = P.message(nonce=1, sign_period=4)
    good = P.message(nonce=2)
    outcomes = validator.process_batch([bad, good], never_known)
    assert not outcomes[0].accepted and outcomes[1].accepted


def test_a_batch_reads_the_clock_once():
    validator, clock = validator_for(P, Q)
    outcomes = validator.process_batch([P.message(nonce=1), Q.message(expires_at=int(NOW))], never_known)
    assert all(o.accepted for o in outcomes)  # the second would expire a moment later; same "now"


def test_a_batch_records_its_acceptances_at_its_one_reading_of_the_clock():
    """The pools accepted in a batch are recorded at the wall time the batch was checked at,
    however long the batch takes: a clock that moves on every reading shows it."""

    readings: list[float] = []

    class Moving(ManualClock):
        def now(self) -> float:
            readings.append(super().now())
            self.advance(1.0)
            return readings[-1]

    clock = Moving(NOW, MONO)
    validator = Validator(ready_view(P, Q, clock=clock), clock)
    readings.clear()
    outcomes = validator.process_batch([P.message(nonce=1), Q.message(nonce=1)], never_known)
    assert all(o.accepted for o in outcomes)
    assert validator.state.last_accepted_wall(P.pool_id) == validator.state.last_accepted_wall(Q.pool_id) == readings[0]


def test_check_is_pure():
    validator, _ = validator_for(P)
    msg = P.message(issue=5)
    assert validator.check(msg) is None
    assert validator.check(msg) is None
    assert len(validator.state) == 0 and P.pool_id not in validator.state


def test_pool_state_survives_a_restart_through_plain_values():
    validator, clock = validator_for(P, Q)
    assert validator.process_one(P.message(issue=4, nonce=1), never_known).accepted
    clock.advance(10)
    assert validator.process_one(Q.message(issue=1, nonce=1), never_known).accepted
    exported = json.loads(json.dumps(validator.state.export()))
    signed = int(NOW) + TTL
    assert exported == {
        P.pool_id.hex(): {"last_accepted_wall": NOW, "opcert_counter": 4, "signed_times": [None, None, [signed]]},
        Q.pool_id.hex(): {"last_accepted_wall": NOW + 10, "opcert_counter": 1, "signed_times": [None, None, [signed]]},
    }

    # A new process: another monotonic origin, 20 s of wall time later.
    new_clock = ManualClock(now=NOW + 30, monotonic=7.0)
    restored = PoolState.restore(exported, new_clock)
    assert restored.last_accepted(P.pool_id) == 7.0 - 30
    reborn = Validator(ready_view(P, Q, clock=new_clock), new_clock, state=restored)
    # The signed times came back: 30 s after the pool's accepted one is too soon, 60 s is not.
    error = reborn.check(P.message(issue=4, nonce=2, expires_at=signed + 30))
    assert error == SigTooFrequent(P.pool_id, 30.0)
    assert reborn.check(P.message(issue=3, nonce=2, expires_at=signed + 60)) == InvalidOCertCounter(4, 3)
    assert reborn.check(P.message(issue=4, nonce=2, expires_at=signed + 60)) is None


def test_restore_refuses_malformed_signed_times():
    clock = ManualClock(now=NOW, monotonic=50.0)
    for bad in ("soon", [None, None], [None, None, ["x"]], [True, 1.0, []]):
        with pytest.raises(ValueError, match="signed_times"):
            PoolState.restore({P.pool_id.hex(): {"signed_times": bad}}, clock)


def test_restore_treats_a_future_wall_time_as_just_now():
    clock = ManualClock(now=NOW, monotonic=50.0)
    state = PoolState.restore({P.pool_id.hex(): {"last_accepted_wall": NOW + 500, "opcert_counter": None}}, clock)
    assert state.last_accepted(P.pool_id) == 50.0
    assert state.opcert_counter(P.pool_id) is None


def test_restore_rejects_malformed_records():
    clock = ManualClock()
    for bad in ({"zz": {}}, {"00" * 27: {}}, {P.pool_id.hex(): {"opcert_counter": -1}},
                {P.pool_id.hex(): {"last_accepted_wall": "yesterday"}}):
        try:
            PoolState.restore(bad, clock)
        except ValueError as exc:
            assert "pool state" in str(exc)
        else:
            raise AssertionError(f"accepted {bad!r}")


def test_opcert_cache_pays_one_cold_verification_per_pool():
    validator, clock = validator_for(P, Q)
    cache = validator.opcert_cache
    for n in range(3):
        signed = int(NOW) + TTL + 60 * n
        assert validator.process_batch([P.message(nonce=n, expires_at=signed), Q.message(nonce=n, expires_at=signed)],
                                       never_known)[0].accepted
        clock.advance(60)
    assert (cache.misses, cache.hits, len(cache)) == (2, 4, 2)
    assert (P.opcert(), P.cold_vk) in cache


def test_opcert_cache_never_remembers_a_failure():
    validator, _ = validator_for(P)
    msg = P.message()
    forged = OperationalCertificate(msg.opcert.hot_vk, 0, 0, flip_bit(msg.opcert.cold_signature, 0))
    bad = with_parts(msg, opcert=forged)
    for _ in range(3):
        assert validator.check(bad) is not None
    assert validator.opcert_cache.misses == 3 and len(validator.opcert_cache) == 0


def test_opcert_cache_is_a_bounded_lru():
    cache = OpcertCache(verify_opcert, capacity=2)
    p, q, r = (x.opcert() for x in (P, Q, R))
    assert cache.verify(p, P.cold_vk) and cache.verify(q, Q.cold_vk)
    assert cache.verify(p, P.cold_vk)          # P is now the most recent
    assert cache.verify(r, R.cold_vk)          # evicts Q
    assert (p, P.cold_vk) in cache and (r, R.cold_vk) in cache and (q, Q.cold_vk) not in cache
    assert len(cache) == 2
    # The key is the cold key with every field: the same opcert under another cold key misses.
    assert not cache.verify(p, Q.cold_vk)


def test_expired_messages_fail_before_the_cache_is_consulted():
    validator, _ = validator_for(P)
    assert validator.check(P.message(expires_at=int(NOW) - 1)) == SigExpired()
    assert validator.opcert_cache.misses == 0


def test_the_id_covers_the_payload_only():
    # Two pools signing the same [body, kesPeriod, expiresAt] produce one id: the second copy
    # is a duplicate, as in the reference (the id is not bound to the signer).
    validator, _ = validator_for(P, Q)
    body = b"same payload " * 8
    a, b = P.message(body=body), Q.message(body=body)
    assert a.message_id == b.message_id and a.raw != b.raw
    outcomes = validator.process_batch([a, b], never_known)
    assert [o.error for o in outcomes] == [None, SigDuplicate()]


def test_legacy_messages_are_checked_with_their_own_id_rule():
    validator, _ = validator_for(P)
    legacy = build_legacy_message(b"L" * 120, 5, int(NOW) + 60, P.kes, P.opcert(), P.cold_vk)
    decoded = decode_message(legacy.raw, allow_legacy=True)
    assert validator.check(decoded) is None


# -- stages an ingress declares (dmq.ingress.IngressStages) --------------------------------


class _Refusing:
    """A declared check 3 that refuses everything and remembers what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[bytes, float]] = []

    def refusal(self, message, now):
        self.asked.append((message.message_id, now))
        return SigTooFrequent(message.pool_id, 1.5)

    def charge(self, message, now):
        raise AssertionError("a refused message is never charged")


class _Open:
    def refusal(self, message, now):
        return None

    def charge(self, message, now):
        pass


def test_a_declared_rate_is_check_3_after_the_clock_checks_and_before_the_id():
    validator, _ = validator_for(P)
    rate = _Refusing()
    expired = P.message(expires_at=int(NOW) - 5, nonce=1)
    bad_id = with_message_id(P.message(nonce=2), bytes(32))
    outcomes = validator.process_batch([expired, bad_id], never_known, rate=rate)
    # Check 1 refuses before the rule is asked; the rule refuses before check 4 (the id).
    assert [o.error for o in outcomes] == [SigExpired(), SigTooFrequent(P.pool_id, 1.5)]
    assert rate.asked == [(bad_id.message_id, NOW)]


def test_a_declared_rate_replaces_the_spacing():
    validator, _ = validator_for(P)
    outcomes = validator.process_batch([P.message(nonce=1), P.message(nonce=2)], never_known, rate=_Open())
    assert [o.accepted for o in outcomes] == [True, True]


def test_without_record_validation_leaves_the_pool_state_to_the_commit():
    validator, _ = validator_for(P)
    first = validator.process_batch([P.message(nonce=1)], never_known, record=False)
    assert first[0].accepted and len(validator.state) == 0
    # Nothing recorded, so a second message of the pool is not too frequent.
    assert validator.process_batch([P.message(nonce=2)], never_known, record=False)[0].accepted


def test_a_shared_seen_set_spans_the_rounds_of_one_batch():
    validator, _ = validator_for(P, Q)
    a, b = P.message(nonce=1), Q.message(nonce=1)
    seen: set[bytes] = set()
    assert validator.process_batch([a], never_known, seen=seen)[0].accepted
    assert [o.error for o in validator.process_batch([b, a], never_known, seen=seen)] == [None, SigDuplicate()]
