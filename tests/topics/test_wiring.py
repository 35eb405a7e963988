"""What the topic service adds around the adapters: publication priorities, temporary
refusals that are not remembered, and carried blocks put back into the DMQ store."""

from __future__ import annotations

import pytest
import trio

from dmq.clock import ManualClock
from topics.adapter import Priority
from topics.blocklace.adapter import BlocklaceAdapter
from topics.blocklace.codec import Need, encode_need
from topics.dmsg.adapter import DmsgAdapter
from topics.upsycle import UpsycleAdapter
from topics.upsycle.wire import encode_advertisement

from .blocklace.cluster import open_node, pools_for
from .blocklace.world import ALL, NOW, TOPIC, Author, ad_payload, advertisement, epoch_payload, event, pool
from .upsycle.harness import advert_body, exp_minutes, key, multicast, pull_body, reissue_body, routed_body

pytestmark = pytest.mark.trio


def _priority(adapter, body: bytes):
    return adapter.publication_priority(adapter.decode(body))


async def test_publication_priorities_follow_the_order_of_2_7():
    blocklace = BlocklaceAdapter()
    author = Author(pool(0))
    ad = author.block(ad_payload(advertisement(0, {pool(0).id: ALL})))
    epoch = author.block(epoch_payload(number=1, attempt=0, ad_version=0, cut=(ad.message_id,)))
    assert _priority(blocklace, epoch.body) is Priority.EPOCH
    assert _priority(blocklace, author.block(event(b"e")).body) is None          # a client's block
    assert _priority(blocklace, encode_need(Need(TOPIC, (bytes(32),)))) is Priority.REQUEST
    upsycle = UpsycleAdapter()
    group, peer = key(1), key(7)
    message = multicast(group)
    assert _priority(upsycle, routed_body(message)) is None
    assert _priority(upsycle, pull_body(group.public, [message.id])) is Priority.REQUEST
    assert _priority(upsycle, reissue_body(bytes(32), message)) is Priority.ANSWER
    ad_raw = encode_advertisement(peer.sign, peer.public, (1, b"\x7f\x00\x00\x01", 1), {}, [], 1, 600,
                                  exp_minutes(NOW + 3600)).raw
    assert _priority(upsycle, advert_body(ad_raw)) is Priority.REFRESH
    assert DmsgAdapter().publication_priority(None) is Priority.REFRESH


async def test_a_rate_limited_message_is_not_remembered_and_may_come_back(tmp_path):
    """``rate_limited`` depends on the moment: the same message offered later is judged again."""
    clock = ManualClock(NOW)
    node = open_node(tmp_path / "n", "n", pool(0), clock, pools_for(3))
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(node.mempool.run)
            asker = pool(1)
            for i in range(6):
                need = asker.sign(encode_need(Need(TOPIC, (bytes([i + 1]) * 32,))), NOW + 120)
                assert await node.submit_local(need.raw) is None
            seventh = asker.sign(encode_need(Need(TOPIC, (bytes([9]) * 32,))), NOW + 150)
            refused = await node.submit_local(seventh.raw)
            assert refused is not None and refused.reason == "rate_limited"
            assert not node.ingress.rejected.holds(seventh.message_id, clock.now())
            clock.advance(125)              # the six expire and are pruned: room again
            await node.ingress.prune()
            assert await node.submit_local(seventh.raw) is None
            assert node.mempool.contains(seventh.message_id)
            nursery.cancel_scope.cancel()
    finally:
        node.mempool.close()
