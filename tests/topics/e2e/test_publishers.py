"""Local publishers on a whole node (docs/topics-design.md 2.7): allow-lists and the per-key limit, from the
configuration (``TopicPublishers``, ``TopicKeyLimit``), over protocol 1000."""

from __future__ import annotations

import pytest

from dmq.config import TopicKeyLimit, TopicPublishers
from clients.topics import Durable, TopicRequestRefused, open_topic_connection
from miniprotocols.local_topic_subscription import MsgPublished

from ..upsycle.harness import key, multicast, routed_body, unicast
from .network import TOPIC_MAGIC, TopicNetwork
from .test_upsycle_line import auth

pytestmark = pytest.mark.trio

SERVICE = key(3)
STRANGER = key(4)
GROUP = key(1)
OTHER_GROUP = key(5)
DMSG_KEY = b"\x02" + b"\x22" * 32


async def _publish(conn, message):
    return await conn.ask(conn.topics.publish(routed_body(message)))


async def test_allow_lists_and_per_key_limit_from_the_configuration(tmp_path, nursery):
    network = TopicNetwork(nursery, tmp_path, "raw,upsycle,dmsg", 1,
                           topic_publishers=TopicPublishers(frozenset({SERVICE.public}), frozenset({DMSG_KEY})),
                           topic_key_limit=TopicKeyLimit(count=2, window_seconds=600))
    node = await network.start(0)
    adapters = node.node.topics.ingress.adapters
    assert adapters["dmsg"].allowed_keys == {DMSG_KEY}
    clock = network.clock
    async with open_topic_connection(node.socket, TOPIC_MAGIC) as conn:
        # UPSYCLE service keys: unicast sources and durable subscribers must be listed
        published = await _publish(conn, unicast(SERVICE, STRANGER.public, b"from a listed service"))
        assert isinstance(published, MsgPublished) and published.dmq_id is not None
        with pytest.raises(TopicRequestRefused, match="not_authorized"):
            await _publish(conn, unicast(STRANGER, SERVICE.public, b"from a stranger"))
        with pytest.raises(TopicRequestRefused, match="not_authorized"):
            await conn.ask(conn.topics.subscribe([{0: 1}], 0,
                                                 Durable(STRANGER.public, auth(STRANGER, "attach", None, clock))))
        # any client holding a group key publishes to it, within the per-key limit
        for n in range(2):
            assert isinstance(await _publish(conn, multicast(GROUP, b"group message %d" % n)), MsgPublished)
        with pytest.raises(TopicRequestRefused, match="rate_limited") as refused:
            await _publish(conn, multicast(GROUP, b"one too many"))
        assert 0 < refused.value.reject.retry_after <= 600
        # the limit is per key: the service's second publication and another group still pass
        assert isinstance(await _publish(conn, unicast(SERVICE, STRANGER.public, b"second")), MsgPublished)
        assert isinstance(await _publish(conn, multicast(OTHER_GROUP, b"elsewhere")), MsgPublished)
        clock.advance(601)
        assert isinstance(await _publish(conn, multicast(GROUP, b"after the window")), MsgPublished)
