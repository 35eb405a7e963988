"""Caps on local clients in a node built from its configuration (``TopicSubscriptionLimits``):
UPSYCLE subscribers' queues are durable subscriptions of the connection that attaches them."""

from __future__ import annotations

import pytest

from dmq.config import TopicSubscriptionLimits
from clients.topics import Durable, TopicRequestRefused, open_topic_connection

from ..upsycle.harness import key
from .network import TOPIC_MAGIC, TopicNetwork
from .test_upsycle_line import auth

pytestmark = pytest.mark.trio
KV_LIKE_RAW = 0


async def test_upsycle_subscribers_count_as_durable_subscriptions_of_the_connection(tmp_path, nursery):
    network = TopicNetwork(nursery, tmp_path, "raw,upsycle", 1,
                           topic_subscription_limits=TopicSubscriptionLimits(durable_per_connection=2))
    node = await network.start(0)
    hub = node.node.topics.hub
    assert hub.caps.durable_per_connection == 2 and hub.disk is not None and hub.disk.room(0)
    clock = network.clock
    members = [key(10 + i) for i in range(3)]
    async with open_topic_connection(node.socket, TOPIC_MAGIC) as conn:
        await conn.ask(conn.topics.subscribe([{0: 1}], 0, Durable(members[0].public,
                                                                   auth(members[0], "attach", None, clock))))
        await conn.ask(conn.topics.subscribe([{0: KV_LIKE_RAW}], 0, Durable(b"raw reader")))
        with pytest.raises(TopicRequestRefused, match=r"limit_reached: durable subscriptions per connection \(2\)"):
            await conn.ask(conn.topics.subscribe([{0: 1}], 0, Durable(members[1].public,
                                                                       auth(members[1], "attach", None, clock))))
    async with open_topic_connection(node.socket, TOPIC_MAGIC) as other:
        await other.ask(other.topics.subscribe([{0: 1}], 0, Durable(members[1].public,
                                                                     auth(members[1], "attach", None, clock))))
