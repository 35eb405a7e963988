"""Reject reasons (docs/topics-design.md 2.10), the token bucket (2.1.4) and the carried set (2.1)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dmq.validation import PeerReaction, ReactionPolicy, TopicRejected, local_reject_reason
from topics import reasons
from topics.bucket import DEFAULT_BUCKET, BucketPolicy, TokenBucket, budgets_for
from topics.carried import TopicConfigError, carried_set

SPEC_TABLE = {
    1: "malformed", 2: "non_canonical", 3: "too_large", 4: "unknown_topic", 5: "topic_not_carried",
    6: "bad_signature", 7: "inner_expired", 8: "expiry_exceeds_inner", 9: "expiry_exceeds_bound",
    10: "duplicate_inner", 11: "unsolicited", 12: "answer_quota", 13: "rate_limited", 14: "not_authorized",
    15: "no_signer", 16: "stale", 17: "conflict", 18: "not_fresh", 19: "busy", 20: "buffer_overflow",
    21: "limit_reached", 22: "signing_stopped",
}


def test_core_reasons_are_the_specification_table():
    assert {r.code: r.name for r in reasons.CORE_REASONS} == SPEC_TABLE
    assert reasons.RATE_LIMITED.wire(30) == [13, "rate_limited", 30]
    assert reasons.STALE.wire() == [16, "stale"]
    assert reasons.BAD_SIGNATURE.submission_text("upsycle") == "topic:upsycle:bad_signature"


def test_adapter_reasons_stay_in_their_ranges():
    with pytest.raises(ValueError):
        reasons.adapter_reason("blocklace", 48, "x")
    with pytest.raises(ValueError):
        reasons.adapter_reason("upsycle", 33, "x")
    declared = reasons.adapter_reason("dmsg", 63, "test_reason_63")
    assert reasons.reason_by_code(63) is declared
    assert reasons.adapter_reason("dmsg", 63, "test_reason_63") is declared
    with pytest.raises(ValueError):
        reasons.adapter_reason("dmsg", 63, "another_name")


def test_topic_rejects_never_disconnect_and_read_as_tag_3():
    error = TopicRejected("upsycle", "bad_signature", 6)
    assert ReactionPolicy().peer_reaction(error) is PeerReaction.TRACE
    assert local_reject_reason(error) == [3, "topic:upsycle:bad_signature"]


def test_bucket_bursts_then_refills_in_signed_time():
    bucket = TokenBucket(BucketPolicy(capacity=8, refill=10.0))
    pool = b"p" * 28
    for _ in range(8):
        assert bucket.available(pool, 100.0, "raw", now=0.0)
        bucket.charge(pool, 100.0, "raw", now=0.0)
    assert not bucket.available(pool, 100.0, "raw", now=0.0)
    assert bucket.retry_after(pool, 100.0, "raw", now=0.0) == 10
    assert not bucket.available(pool, 109.9, "raw", now=0.0)
    assert bucket.available(pool, 110.0, "raw", now=0.0)
    # Signed earlier than the burst: it would starve the burst's last message.
    assert not bucket.available(pool, 95.0, "raw", now=0.0)
    assert bucket.available(pool, 20.0, "raw", now=0.0)      # far enough before it: full again
    assert not bucket.available(pool, 100.0, "raw", now=5000.0)   # arrival time changes nothing
    assert bucket.available(b"q" * 28, 100.0, "raw", now=0.0)     # pools are independent


def test_each_topic_spends_its_own_budget_under_its_own_policy():
    bucket = TokenBucket(BucketPolicy(2, 10.0), {"blocklace": BucketPolicy(3, 4.0)})
    pool = b"p" * 28
    for _ in range(3):
        bucket.charge(pool, 50.0, "blocklace", now=0.0)
    assert not bucket.available(pool, 50.0, "blocklace", now=0.0)
    assert bucket.retry_after(pool, 50.0, "blocklace", now=0.0) == 4            # its own refill
    assert bucket.available(pool, 50.0, "dmsg", now=0.0) and bucket.available(pool, 50.0, "raw", now=0.0)
    bucket.charge(pool, 50.0, "dmsg", now=0.0)
    bucket.charge(pool, 50.0, "dmsg", now=0.0)
    assert not bucket.available(pool, 50.0, "dmsg", now=0.0)
    assert bucket.retry_after(pool, 50.0, "dmsg", now=0.0) == 10
    assert bucket.available(pool, 54.0, "blocklace", now=0.0) and not bucket.available(pool, 54.0, "dmsg", now=0.0)


def test_default_budgets_split_the_designs_rate_between_the_topics():
    """docs/capacity/model.md section 6: the per-topic defaults sum to the single bucket's rate."""
    names = ["raw", "upsycle", "blocklace", "dmsg"]
    budgets = budgets_for(names)
    assert sum(p.rate for p in budgets.values()) == pytest.approx(DEFAULT_BUCKET.rate)
    assert budgets_for(names, {"dmsg": BucketPolicy(1, 1.0)})["dmsg"] == BucketPolicy(1, 1.0)
    every = BucketPolicy(100, 0.5)
    assert budgets_for(names, {"raw": BucketPolicy(1, 1.0)}, every) == {
        "raw": BucketPolicy(1, 1.0), "upsycle": every, "blocklace": every, "dmsg": every}


@given(st.lists(st.tuples(st.integers(0, 400), st.sampled_from(["raw", "dmsg"]), st.floats(0, 5)), max_size=60))
def test_bucket_never_admits_more_than_capacity_plus_refills_in_any_signed_interval(steps):
    """Messages come in any order of signed time, as the clock runs: whatever is admitted holds at
    most ``capacity + d / refill`` messages in every interval of signed time of length ``d``."""
    policies = {"raw": BucketPolicy(capacity=3, refill=2.0), "dmsg": BucketPolicy(capacity=1, refill=7.0)}
    bucket = TokenBucket(BucketPolicy(), policies)
    now = 0.0
    admitted: dict[str, list[float]] = {"raw": [], "dmsg": []}
    for offset, topic, gap in steps:
        now += gap
        signed = now + offset
        if bucket.available(b"p", signed, topic, now):
            bucket.charge(b"p", signed, topic, now)
            admitted[topic].append(signed)
    for topic, policy in policies.items():
        times = sorted(admitted[topic])
        for i, start in enumerate(times):
            for j in range(i, len(times)):
                assert j - i + 1 <= policy.capacity + (times[j] - start) / policy.refill + 1e-9


@given(st.lists(st.integers(0, 300), max_size=40), st.randoms(use_true_random=False))
def test_a_history_the_bucket_admitted_passes_again_in_any_order(signed_times, random):
    """What one node admitted (the pool's own, as it published) passes at another node whatever
    order a peer replays it in, and all at once."""
    policy = BucketPolicy(capacity=2, refill=10.0)
    origin = TokenBucket(policy)
    history = []
    for signed in signed_times:
        if origin.available(b"p", signed, "raw", now=0.0):
            origin.charge(b"p", signed, "raw", now=0.0)
            history.append(signed)
    random.shuffle(history)
    replica = TokenBucket(policy)
    for signed in history:
        assert replica.available(b"p", signed, "raw", now=0.0)
        replica.charge(b"p", signed, "raw", now=0.0)


def test_carried_set_refuses_adapters_on_mithril_magics():
    assert carried_set(["raw"], 2912307721).adapters == frozenset()
    with pytest.raises(TopicConfigError) as refused:
        carried_set(["raw", "upsycle"], 2912307721)
    assert "\n" not in str(refused.value) and "2912307721" in str(refused.value)
    assert carried_set(["upsycle"], 424242).has_topics
    with pytest.raises(TopicConfigError, match="unknown topic"):
        carried_set(["raw", "nope"], 424242)
