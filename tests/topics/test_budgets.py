"""Per-topic budgets of a pool (topics/bucket.py): at the ingress of a real instance and in the
node's publication queue, one topic out of budget holds back nothing of another."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from dmq.validation import TopicRejected
from topics.adapter import Priority
from topics.bucket import BucketPolicy, TokenBucket
from topics.publication import NodePublisher

from .harness import NOW, instance, sign
from .kv_adapter import kv_body
from .service_harness import node_signer

pytestmark = pytest.mark.trio
EXP = int(NOW) + 300


def _raw(n: int) -> bytes:
    return b"\x00\x60" + bytes([n]) * 96


async def test_a_pool_over_one_topics_budget_is_still_accepted_in_another(tmp_path):
    budgets = TokenBucket(BucketPolicy(1, 1000.0), {"kv": BucketPolicy(2, 50.0), "raw": BucketPolicy(3, 1000.0)})
    async with instance(tmp_path / "db", bucket=budgets) as inst:
        ingress = inst.ingress
        for key in (b"a", b"b"):
            assert await ingress.submit_local(sign(kv_body(key, 1), EXP).raw) is None
        over = await ingress.submit_local(sign(kv_body(b"c", 1), EXP).raw)
        assert isinstance(over, TopicRejected) and (over.adapter, over.reason) == ("kv", "rate_limited")
        assert "retry after 50 s" in over.detail
        for n in range(3):     # the same pool, its raw budget untouched by kv
            assert await ingress.submit_local(sign(_raw(n), EXP).raw) is None
        over = await ingress.submit_local(sign(_raw(9), EXP).raw)
        assert isinstance(over, TopicRejected) and (over.adapter, over.reason) == ("raw", "rate_limited")
        # Budgets are on signed times: signed 50 s later, kv has a token at its own refill, raw has none.
        assert await ingress.submit_local(sign(kv_body(b"c", 1), EXP + 50).raw) is None
        assert isinstance(await ingress.submit_local(sign(_raw(10), EXP + 50).raw), TopicRejected)


async def test_the_publication_queue_serves_a_topic_with_budget_past_one_without(tmp_path):
    """kv has one token and a higher-priority publication waiting for the next; a raw publication
    queued behind it is served at once, from raw's own budget."""
    budgets = TokenBucket(BucketPolicy(1, 1000.0), {"kv": BucketPolicy(1, 30.0), "raw": BucketPolicy(2, 1000.0)})
    async with instance(tmp_path / "db", bucket=budgets) as inst:
        publisher = NodePublisher(inst.ingress, node_signer(inst.clock), schedule_limit=20.0)
        outcomes = {}

        async def publish(name, body, priority):
            outcomes[name] = await publisher.publish(body, priority)

        async with trio.open_nursery() as nursery:
            await nursery.start(publisher.run)
            await publish("kv1", kv_body(b"a", 1), Priority.CLIENT)
            assert outcomes["kv1"].reject is None
            nursery.start_soon(publish, "kv2", kv_body(b"b", 1), Priority.ANSWER)
            await trio.testing.wait_all_tasks_blocked()
            await publish("raw", _raw(1), Priority.CLIENT)
            assert outcomes["raw"].reject is None and "kv2" not in outcomes
            inst.clock.advance(30)     # kv's token is back; the next publication wakes the queue
            await publish("raw2", _raw(2), Priority.CLIENT)
            assert list(outcomes) == ["kv1", "raw", "kv2", "raw2"]    # kv2 first once it could be: priority
            assert all(o.reject is None for o in outcomes.values())
            nursery.cancel_scope.cancel()
        assert all(inst.mempool.contains(o.dmq_id) for o in outcomes.values())


async def test_a_peer_replaying_a_pools_history_in_one_reply_is_accepted_and_not_punished(tmp_path):
    """22 messages of one pool, signed 5 s apart (a budget of 8 at once and one per 5 s: Blocklace's
    default shape, on the short lifetimes of the test adapter), offered by a peer in one reply: all accepted, the peer kept. Ten the
    pool signed at one instant are over the budget whatever their order: 8 pass, 2 are refused
    (trace-only), and the same ten replayed later change nothing."""
    budgets = TokenBucket(BucketPolicy(1, 1000.0), {"kv": BucketPolicy(8, 5.0)})
    async with instance(tmp_path / "db", bucket=budgets) as inst:
        ingress = inst.ingress
        start = int(NOW) + 60
        history = [sign(kv_body(b"h%d" % k, 1), start + 5 * k).raw for k in range(22)]
        verdict = await ingress.submit_from_peer(history[::-1], "peer")
        assert verdict.disconnect is None and verdict.accepted == 22, [o.error for o in verdict.outcomes if not o.accepted]
        burst = [sign(kv_body(b"b%d" % k, 1), start + 200).raw for k in range(10)]
        verdict = await ingress.submit_from_peer(burst, "peer")
        refused = [o.error for o in verdict.outcomes if not o.accepted]
        assert verdict.disconnect is None and verdict.accepted == 8
        assert [(e.adapter, e.reason) for e in refused] == [("kv", "rate_limited")] * 2
        inst.clock.advance(30)
        again = await ingress.submit_from_peer(burst[8:], "peer")
        assert again.accepted == 0 and again.disconnect is None
