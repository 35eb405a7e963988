"""One test per validation rule, in the order of docs/protocol/validation.md 6.2, with the exact error and text.

Each message passes every check before the rule under test and, where it can, also breaks a
later one: the first failing check must be the one reported.
"""

from __future__ import annotations

import hashlib

from dmq.stake import PoolStake
from dmq.validation import (
    InvalidKESSignature,
    InvalidOCertCounter,
    InvalidSigId,
    InvalidSignatureOCERT,
    KESAfterEndOCERT,
    KESBeforeStartOCERT,
    NotInitialized,
    PoolNotEligible,
    SigExpired,
    SigExpiresAtTooFarInTheFuture,
    SigTooFrequent,
    UnrecognizedPool,
    Validator,
)
from dmq.message import OperationalCertificate
from dmq.opcert import issue_opcert
from dmq.stake import StakeView

from .support import NOW, TTL, flip_bit, never_known, pool, validator_for, with_message_id, with_parts

P = pool(1)
OTHER = pool(2)


def _accept(validator: Validator, msg) -> None:
    outcome = validator.process_one(msg, never_known)
    assert outcome.accepted, outcome.error


# -- 1. expiry ------------------------------------------------------------------------------

def test_1_expired_wins_over_every_later_failure():
    validator, _ = validator_for(P)
    msg = with_message_id(P.message(expires_at=int(NOW) - 1, period=200, sign_period=0), bytes(32))  # also bad id and window
    error = validator.check(msg)
    assert error == SigExpired()
    assert str(error) == "SigExpired"


def test_1_expiry_bound_is_inclusive():
    validator, clock = validator_for(P)
    msg = P.message(expires_at=int(NOW) + 10)
    clock.set_wall(NOW + 10)
    assert validator.check(msg) is None
    clock.set_wall(NOW + 10.000001)
    assert validator.check(msg) == SigExpired()


# -- 2. expiresAt too far ---------------------------------------------------------------------

def test_2_expires_at_too_far_in_the_future():
    validator, _ = validator_for(P)
    msg = with_message_id(P.message(expires_at=int(NOW) + 1800), bytes(32))  # also bad id
    error = validator.check(msg)
    assert error == SigExpiresAtTooFarInTheFuture()
    assert str(error) == "SigExpiresAtTooFarInTheFuture"
    assert validator.check(P.message(expires_at=int(NOW) + 1799)) is None


def test_2_uses_the_configured_ttl():
    validator, _ = validator_for(P, max_ttl=100)
    assert validator.check(P.message(expires_at=int(NOW) + 100)) == SigExpiresAtTooFarInTheFuture()
    assert validator.check(P.message(expires_at=int(NOW) + 99)) is None


# -- 3. rate limit ----------------------------------------------------------------------------

def test_3_too_frequent_with_pool_id_and_the_signed_gap():
    validator, clock = validator_for(P)
    _accept(validator, P.message(nonce=1))
    clock.advance(120)                 # arrival does not matter: the pool signed 12.5 s apart
    second = with_message_id(P.message(nonce=2, expires_at=int(NOW) + TTL + 12), bytes(32))  # also bad id
    error = validator.check(second)
    assert error == SigTooFrequent(P.pool_id, 12.0)
    assert str(error) == f'SigTooFrequent (KeyHash {{unKeyHash = "{P.pool_id.hex()}"}}) 12s'


def test_3_exactly_min_sig_delay_apart_in_signed_time_is_accepted():
    validator, _ = validator_for(P)
    _accept(validator, P.message(nonce=1))
    # Both arrive at once: only the signed times count, before or after the accepted one.
    assert isinstance(validator.check(P.message(nonce=2, expires_at=int(NOW) + TTL + 59)), SigTooFrequent)
    assert isinstance(validator.check(P.message(nonce=2, expires_at=int(NOW) + TTL - 59)), SigTooFrequent)
    assert validator.check(P.message(nonce=2, expires_at=int(NOW) + TTL + 60)) is None
    assert validator.check(P.message(nonce=2, expires_at=int(NOW) + TTL - 60)) is None


def test_3_a_history_replayed_at_once_in_any_order_passes():
    validator, _ = validator_for(P)
    history = [P.message(nonce=n, expires_at=int(NOW) + 60 * n) for n in range(1, 25)]
    shuffled = history[1::2] + history[::2][::-1]
    outcomes = validator.process_batch(shuffled, never_known)
    assert [o.error for o in outcomes] == [None] * len(history)
    # ... and a message the pool signed between two of them is still too frequent.
    squeezed = P.message(nonce=99, expires_at=int(NOW) + 60 * 5 + 30)
    assert validator.process_one(squeezed, never_known).error == SigTooFrequent(P.pool_id, 30.0)


def test_3_a_pool_signing_too_often_is_refused_in_any_arrival_order():
    validator, clock = validator_for(P)
    dense = [P.message(nonce=n, expires_at=int(NOW) + 1000 + 20 * n) for n in range(9)]
    accepted = []
    for message in dense[::-1]:
        clock.advance(61)              # each arrives more than a minute after the last
        if validator.process_one(message, never_known).accepted:
            accepted.append(message.expires_at)
    # 160 s of signed time hold 3 messages 60 s apart, whatever the arrival pace.
    assert sorted(accepted) == [int(NOW) + 1000 + 20 * n for n in (2, 5, 8)]


def test_3_rate_limit_reads_the_signed_times_not_the_clocks():
    validator, clock = validator_for(P)
    _accept(validator, P.message(nonce=1))
    clock.set_wall(NOW + 120)          # the wall clock jumps, monotonic time does not move
    error = validator.check(P.message(nonce=2, expires_at=int(NOW) + TTL))
    assert error == SigTooFrequent(P.pool_id, 0.0)
    assert str(error).endswith(" 0s")
    assert validator.check(P.message(nonce=2, expires_at=int(NOW) + 700)) is None


def test_3_settled_times_still_count_after_they_expire():
    validator, clock = validator_for(P)
    _accept(validator, P.message(nonce=1, expires_at=int(NOW) + 100))
    clock.advance(120)                 # the first expired and was folded into the level
    assert isinstance(validator.check(P.message(nonce=2, expires_at=int(NOW) + 130)), SigTooFrequent)
    assert validator.check(P.message(nonce=2, expires_at=int(NOW) + 160)) is None


def test_3_rate_limit_is_per_pool_and_configurable():
    validator, _ = validator_for(P, OTHER, min_sig_delay=5.0)
    _accept(validator, P.message(nonce=1))
    assert validator.check(OTHER.message(nonce=1)) is None
    assert validator.check(P.message(nonce=2, expires_at=int(NOW) + TTL + 4)) is not None
    assert validator.check(P.message(nonce=2, expires_at=int(NOW) + TTL + 5)) is None


def test_3_a_zero_delay_is_no_rate_limit():
    validator, _ = validator_for(P, min_sig_delay=0)
    _accept(validator, P.message(nonce=1))
    assert validator.check(P.message(nonce=2)) is None


# -- 4. message id ----------------------------------------------------------------------------

def test_4_invalid_sig_id():
    validator, _ = validator_for(P)
    msg = P.message(period=200, sign_period=0)  # also outside the KES window
    wrong = with_message_id(msg, hashlib.blake2b(msg.signed_bytes + b"x", digest_size=32).digest())
    error = validator.check(wrong)
    assert error == InvalidSigId()
    assert str(error) == "InvalidSigId"


# -- 5, 6. KES window -------------------------------------------------------------------------

def test_5_kes_after_end_of_opcert():
    validator, _ = validator_for(P)
    msg = P.message(period=62)  # start 0 + 62 evolutions: 62 is the first period outside
    error = validator.check(msg)
    assert error == KESAfterEndOCERT(62, 62)
    assert str(error) == "KESAfterEndOCERT (KESPeriod 62) (KESPeriod 62)"
    assert validator.check(P.message(period=61)) is None


def test_5_end_is_start_plus_max_kes_evolutions():
    validator, _ = validator_for(P, max_kes_evolutions=60)
    error = validator.check(P.message(start=10, period=70, sign_period=59))
    assert str(error) == "KESAfterEndOCERT (KESPeriod 70) (KESPeriod 70)"
    assert validator.check(P.message(start=10, period=69)) is None


def test_5_end_period_wraps_like_a_machine_word():
    validator, _ = validator_for(P)
    start = 2**64 - 10
    msg = P.message(start=start, period=start + 5)  # unbounded ints would accept this one
    error = validator.check(msg)
    assert error == KESAfterEndOCERT(52, start + 5)
    assert str(error) == f"KESAfterEndOCERT (KESPeriod 52) (KESPeriod {start + 5})"


def test_6_kes_before_start_of_opcert():
    validator, _ = validator_for(P)
    msg = P.message(start=10, period=9, sign_period=0)
    error = validator.check(msg)
    assert error == KESBeforeStartOCERT(10, 9)
    assert str(error) == "KESBeforeStartOCERT (KESPeriod 10) (KESPeriod 9)"


# -- 7. stake ---------------------------------------------------------------------------------

def test_7_not_initialized_before_the_first_snapshot():
    validator, clock = validator_for(P)
    validator.stake_view = StakeView(clock, max_kes_evolutions=62)
    error = validator.check(P.message(sign_period=4))  # also a bad KES signature
    assert error == NotInitialized()
    assert str(error) == "NotInitialized"


def test_7_unrecognized_pool_once_a_snapshot_is_installed():
    validator, _ = validator_for(OTHER)
    error = validator.check(P.message(sign_period=4))
    assert error == UnrecognizedPool()
    assert str(error) == "UnrecognizedPool"


def test_7_only_the_set_snapshot_counts():
    validator, _ = validator_for()
    validator.stake_view.update({P.pool_id: PoolStake(mark=5, set=0, go=5), OTHER.pool_id: PoolStake(0, 1, 0)}, 7)
    error = validator.check(P.message(sign_period=4))
    assert error == PoolNotEligible()
    assert str(error) == "PoolNotEligible"
    assert validator.check(OTHER.message()) is None


# -- 8. opcert counter ------------------------------------------------------------------------

def test_8_opcert_counter_may_not_go_down():
    validator, clock = validator_for(P)
    _accept(validator, P.message(issue=3, nonce=1))
    bad_sig = P.message(issue=2, nonce=2, sign_period=4, expires_at=int(NOW) + TTL + 60)  # also a bad KES signature
    error = validator.check(bad_sig)
    assert error == InvalidOCertCounter(3, 2)
    assert str(error) == "InvalidOCertCounter 3 2"


def test_8_equal_and_higher_counters_pass():
    validator, clock = validator_for(P)
    _accept(validator, P.message(issue=3, nonce=1))
    _accept(validator, P.message(issue=3, nonce=2, expires_at=int(NOW) + TTL + 60))
    _accept(validator, P.message(issue=9, nonce=3, expires_at=int(NOW) + TTL + 120))
    assert validator.state.opcert_counter(P.pool_id) == 9


# -- 9. opcert signature ----------------------------------------------------------------------

def test_9_opcert_cold_signature_must_verify():
    validator, _ = validator_for(P)
    msg = P.message(sign_period=4)  # also a bad KES signature
    opcert = msg.opcert
    forged = OperationalCertificate(opcert.hot_vk, opcert.issue_number, opcert.start_kes_period,
                                    flip_bit(opcert.cold_signature, 3))
    error = validator.check(with_parts(msg, opcert=forged))
    assert error == InvalidSignatureOCERT(0, 5, "Verification failed")
    assert str(error) == 'InvalidSignatureOCERT 0 (KESPeriod 5) "Verification failed"'


def test_9_opcert_signed_by_another_cold_key():
    validator, _ = validator_for(P)
    msg = P.message(issue=4, start=2, period=7)
    foreign = OTHER.opcert(issue=4, start=2)
    error = validator.check(with_parts(msg, opcert=OperationalCertificate(
        msg.opcert.hot_vk, 4, 2, foreign.cold_signature)))
    assert str(error) == 'InvalidSignatureOCERT 4 (KESPeriod 7) "Verification failed"'


# -- 10. KES signature ------------------------------------------------------------------------

def test_10_kes_signature_at_the_wrong_evolution():
    validator, _ = validator_for(P)
    error = validator.check(P.message(period=5, sign_period=4))
    assert error == InvalidKESSignature(0, 5, "Verification failed")
    assert str(error) == 'InvalidKESSignature (KESPeriod 0) (KESPeriod 5) "Verification failed"'


def test_10_kes_signature_whose_key_pairs_do_not_hash_to_the_hot_key():
    validator, _ = validator_for(P)
    msg = P.message(start=3, period=8)
    # An opcert (validly signed by P's cold key) for another pool's KES key: the root pair of
    # the signature no longer hashes to the certified hot key.
    foreign_hot = OTHER.kes.verification_key()
    opcert = issue_opcert(P.cold_seed, foreign_hot, 0, 3)
    error = validator.check(with_parts(msg, opcert=opcert))
    assert error == InvalidKESSignature(3, 8, "Reject")
    assert str(error) == 'InvalidKESSignature (KESPeriod 3) (KESPeriod 8) "Reject"'


def test_10_corrupted_inner_key_pair_is_rejected():
    validator, _ = validator_for(P)
    msg = P.message(period=5)
    corrupted = flip_bit(msg.kes_signature, 8 * 100)  # inside the innermost key pair
    assert str(validator.check(with_parts(msg, kes_signature=corrupted))).endswith('"Reject"')
    corrupted_leaf = flip_bit(msg.kes_signature, 8 * 10)  # inside the Ed25519 signature
    assert str(validator.check(with_parts(msg, kes_signature=corrupted_leaf))).endswith('"Verification failed"')


def test_10_evolutions_past_the_last_one_verify_as_the_last_one():
    # With maxKESEvolutions above 64, the reference's Sum6 verifier walks right at every level
    # for t >= 64, which is evolution 63.
    validator, _ = validator_for(P, max_kes_evolutions=120)
    assert validator.check(P.message(period=70, sign_period=63)) is None
    error = validator.check(P.message(period=70, sign_period=62))
    assert error == InvalidKESSignature(0, 70, "Verification failed")


def test_a_fully_valid_message_is_accepted():
    validator, _ = validator_for(P)
    assert validator.check(P.message()) is None
    assert validator.check(P.message(issue=2**64 - 1, start=100, period=161)) is None
    assert len(validator.state) == 0  # check() never changes state
