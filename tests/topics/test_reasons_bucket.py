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


def test_bucket_bursts_then_refills():
    bucket = TokenBucket(BucketPolicy(capacity=8, refill=10.0))
    pool = b"p" * 28
    for _ in range(8):
        assert bucket.available(pool, 0.0, "raw")
        bucket.charge(pool, 0.0, "raw")
    assert not bucket.available(pool, 0.0, "raw")
    assert bucket.retry_after(pool, 0.0, "raw") == 10
    assert not bucket.available(pool, 9.9, "raw")
    assert bucket.available(pool, 10.0, "raw")
    assert bucket.tokens(pool, 1000.0, "raw") == 8
    assert bucket.available(b"q" * 28, 0.0, "raw")          # pools are independent


def test_each_topic_spends_its_own_budget_under_its_own_policy():
    bucket = TokenBucket(BucketPolicy(2, 10.0), {"blocklace": BucketPolicy(3, 4.0)})
    pool = b"p" * 28
    for _ in range(3):
        bucket.charge(pool, 0.0, "blocklace")
    assert not bucket.available(pool, 0.0, "blocklace")
    assert bucket.retry_after(pool, 0.0, "blocklace") == 4            # its own refill
    assert bucket.available(pool, 0.0, "dmsg") and bucket.available(pool, 0.0, "raw")   # untouched
    bucket.charge(pool, 0.0, "dmsg")
    bucket.charge(pool, 0.0, "dmsg")
    assert not bucket.available(pool, 0.0, "dmsg") and bucket.retry_after(pool, 0.0, "dmsg") == 10
    assert bucket.available(pool, 4.0, "blocklace") and not bucket.available(pool, 4.0, "dmsg")


def test_default_budgets_split_the_designs_rate_between_the_topics():
    """docs/capacity/model.md section 6: the per-topic defaults sum to the single bucket's rate."""
    names = ["raw", "upsycle", "blocklace", "dmsg"]
    budgets = budgets_for(names)
    assert sum(p.rate for p in budgets.values()) == pytest.approx(DEFAULT_BUCKET.rate)
    assert budgets_for(names, {"dmsg": BucketPolicy(1, 1.0)})["dmsg"] == BucketPolicy(1, 1.0)
    every = BucketPolicy(100, 0.5)
    assert budgets_for(names, {"raw": BucketPolicy(1, 1.0)}, every) == {
        "raw": BucketPolicy(1, 1.0), "upsycle": every, "blocklace": every, "dmsg": every}


@given(st.lists(st.tuples(st.floats(0, 5, allow_nan=False), st.sampled_from(["raw", "dmsg"])), max_size=60))
def test_bucket_never_admits_more_than_capacity_plus_refills(steps):
    policies = {"raw": BucketPolicy(capacity=3, refill=2.0), "dmsg": BucketPolicy(capacity=1, refill=7.0)}
    bucket = TokenBucket(BucketPolicy(), policies)
    now, admitted = 0.0, {"raw": 0, "dmsg": 0}
    for gap, topic in steps:
        now += gap
        if bucket.available(b"p", now, topic):
            bucket.charge(b"p", now, topic)
            admitted[topic] += 1
    for topic, policy in policies.items():
        assert admitted[topic] <= policy.capacity + now / policy.refill + 1e-9


def test_carried_set_refuses_adapters_on_mithril_magics():
    assert carried_set(["raw"], 2912307721).adapters == frozenset()
    with pytest.raises(TopicConfigError) as refused:
        carried_set(["raw", "upsycle"], 2912307721)
    assert "\n" not in str(refused.value) and "2912307721" in str(refused.value)
    assert carried_set(["upsycle"], 424242).has_topics
    with pytest.raises(TopicConfigError, match="unknown topic"):
        carried_set(["raw", "nope"], 424242)
