"""Protocol 1000 end to end over a real Unix socket, and the Mithril path beside it."""

from __future__ import annotations

import pytest
import trio

from tests.e2e.raw_n2c import ACCEPT, RawN2CClient, accept_version, non_blocking_reply
from clients.topics import (
    Durable,
    Resume,
    TopicRequestRefused,
    TopicsUnavailable,
    decode_item,
    open_topic_connection,
)
from miniprotocols.local_topic_subscription import MsgPublished, MsgSubscribed

from .harness import EXP_OFFSET, NOW, TOPIC_MAGIC, sign
from .kv_adapter import kv_body
from .service_harness import served

pytestmark = pytest.mark.trio
KV = 2


async def stored_raws(inst) -> list[bytes]:
    entries, _ = await inst.mempool.cursor().next_batch(False, 1000)
    return [e.raw for e in entries]


async def test_publish_subscribe_ack(tmp_path):
    async with served(tmp_path) as inst:
        async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
            sub = await conn.ask(conn.topics.subscribe([{0: KV}]))
            assert isinstance(sub, MsgSubscribed) and sub.next_dseq == 0
            published = await conn.ask(conn.topics.publish(kv_body(b"k", 1, b"hello")))
            assert isinstance(published, MsgPublished) and inst.mempool.contains(published.dmq_id)
            reply = await conn.topics.next(blocking=True)
            items = [decode_item(raw) for raw in reply.items]
            assert [(i.sub_id, i.dseq, i.kind) for i in items] == [(sub.sub_id, 0, 0)]
            assert items[0].meta[2] == published.inner_id
            # the item carries the exact DMQ message bytes that were stored
            assert items[0].payload in await stored_raws(inst)
            empty = await conn.topics.next(blocking=False, acks=[(sub.sub_id, 0)])
            assert empty.items == () and not empty.has_more
            with pytest.raises(TopicRequestRefused, match="stale"):
                await conn.ask(conn.topics.publish(kv_body(b"k", 1, b"again")))


async def test_durable_subscription_survives_disconnection(tmp_path):
    async with served(tmp_path) as inst:
        durable = Durable(b"app-1")
        async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
            await conn.ask(conn.topics.subscribe([{0: KV}], 0, durable))
            with pytest.raises(TopicRequestRefused, match="busy"):
                async with open_topic_connection(inst.socket, TOPIC_MAGIC) as other:
                    await other.ask(other.topics.subscribe([{0: KV}], 0, durable))
        for n in range(3):
            await inst.ingress.submit_local(sign(kv_body(bytes([n + 1]), 1), int(NOW) + EXP_OFFSET).raw)
        async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
            sub = await conn.ask(conn.topics.subscribe([{0: KV}], 0, durable))
            reply = await conn.topics.next(blocking=False, max_items=2)
            assert [decode_item(r).dseq for r in reply.items] == [0, 1] and reply.has_more
            reply = await conn.topics.next(blocking=False, acks=[(sub.sub_id, 1)])
            assert [decode_item(r).dseq for r in reply.items] == [2]
        async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
            sub = await conn.ask(conn.topics.subscribe([{0: KV}], Resume(0), durable))
            assert sub.next_dseq == 2          # 0 and 1 were acknowledged
            reply = await conn.topics.next(blocking=False)
            assert [decode_item(r).dseq for r in reply.items] == [2]


async def test_blocking_request_wakes_on_a_new_item(tmp_path):
    async with served(tmp_path) as inst:
        async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
            await conn.ask(conn.topics.subscribe([{0: KV}]))
            got = []

            async def read():
                got.append(await conn.topics.next(blocking=True))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(read)
                await trio.sleep(0.05)
                assert not got
                await inst.ingress.submit_local(sign(kv_body(b"w", 1), int(NOW) + EXP_OFFSET).raw)
            assert len(got[0].items) == 1


async def test_ack_of_an_undelivered_item_closes_the_connection(tmp_path):
    async with served(tmp_path) as inst:
        with pytest.raises(Exception, match="connection lost"):
            async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
                sub = await conn.ask(conn.topics.subscribe([{0: KV}]))
                await conn.ask(conn.topics.next(blocking=False, acks=[(sub.sub_id, 5)]))


async def test_no_signer(tmp_path):
    async with served(tmp_path, signer=False) as inst:
        async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
            with pytest.raises(TopicRequestRefused, match=r"no_signer \(code 15\)"):
                await conn.ask(conn.topics.publish(kv_body(b"k", 1)))


async def test_node_without_topics_agrees_on_4097_only(tmp_path):
    async with served(tmp_path, topics=False) as inst:
        with pytest.raises(TopicsUnavailable):
            async with open_topic_connection(inst.socket, TOPIC_MAGIC):
                pass


async def _mithril_view(tmp_path, topics: bool) -> list[bytes]:
    """Every byte a Mithril signer and aggregator read back from the node, for the same input."""
    async with served(tmp_path, topics=topics) as inst:
        raw = sign(b"\x00\x70" + b"m" * 112, int(NOW) + EXP_OFFSET)
        tagged = sign(kv_body(b"t", 1), int(NOW) + EXP_OFFSET)
        async with await RawN2CClient.connect(inst.socket) as client:
            seen = [await client.handshake(TOPIC_MAGIC), await client.submit(raw.raw)]
            tagged_reply = await client.submit(tagged.raw)
            seen.append(await client.request(False))
        return seen, tagged_reply, raw.raw, tagged.raw


async def test_mithril_client_sees_identical_bytes_on_a_topic_node(tmp_path):
    """C2: handshake and verdict bytes are the same on a topic instance and a raw-only one.
    Protocol 15 of a topic instance never returns the tagged message; a raw-only instance
    classifies nothing and returns it, as the reference does (docs/topics-design.md 2.1)."""
    on_topics, tagged_on_topics, raw, tagged = await _mithril_view(tmp_path / "a", topics=True)
    on_raw_only, tagged_on_raw_only, _, tagged_b = await _mithril_view(tmp_path / "b", topics=False)
    assert on_topics[:2] == on_raw_only[:2]
    assert on_topics[0] == accept_version(TOPIC_MAGIC)
    assert on_topics[2] == non_blocking_reply([raw], False)
    assert tagged_on_topics == ACCEPT and tagged_on_raw_only == ACCEPT
    assert on_raw_only[2] == non_blocking_reply([raw, tagged_b], False)
