"""Caps on what local clients make the node hold (``TopicSubscriptionLimits``), through the
real local service on a real Unix socket over a real LMDB environment.

Every cap refuses a client that tries to pass it with one line naming the cap (``limit_reached``,
code 21), traced; byte caps and the disk share drop new durable items (reported by ``[4, n]``)
without touching what is queued; an event queued for many durable subscriptions is stored once.
"""

from __future__ import annotations

import os

import pytest

from clients.topics import Durable, TopicRequestRefused, decode_item, open_topic_connection
from topics import cbor
from topics.adapter import ITEM_DROPPED
from topics.disk import DiskGuard, database_bytes
from topics.ingress import HUB_OWNER
from topics.subscriptions import ITEM_DB, QUEUE_DB, SubscriptionCaps
from topics.trace import TopicSubscriptionRefused

from .harness import EXP_OFFSET, NOW, TOPIC_MAGIC, sign
from .kv_adapter import kv_body
from .service_harness import served

pytestmark = pytest.mark.trio
KV = 2
#: An event of about 1 KB, as in the audit that found the per-subscription copies.
KILOBYTE = b"e" * 1000


def _caps(**changed) -> SubscriptionCaps:
    return SubscriptionCaps(**changed)


async def _publish(inst, key: bytes, seq: int, value: bytes = b"v") -> None:
    outcome = await inst.ingress.submit_local(sign(kv_body(key, seq, value), int(NOW) + EXP_OFFSET).raw)
    assert outcome is None, outcome


def _refusals(inst) -> list[TopicSubscriptionRefused]:
    return [e for e in inst.events if isinstance(e, TopicSubscriptionRefused)]


async def _items(conn, max_items: int = 1000) -> list:
    reply = await conn.topics.next(blocking=False, max_items=max_items)
    return [decode_item(raw) for raw in reply.items]


async def test_durable_subscriptions_per_connection(tmp_path):
    async with served(tmp_path) as inst:
        inst.hub.caps = _caps(durable_per_connection=2)
        async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
            for name in (b"a", b"b"):
                await conn.ask(conn.topics.subscribe([{0: KV}], 0, Durable(name)))
            await conn.ask(conn.topics.subscribe([{0: KV}]))         # ephemeral ones are not counted here
            with pytest.raises(TopicRequestRefused) as refused:
                await conn.ask(conn.topics.subscribe([{0: KV}], 0, Durable(b"c")))
            assert str(refused.value) == ("refused: limit_reached: durable subscriptions per connection (2) "
                                          "(code 21)")
        async with open_topic_connection(inst.socket, TOPIC_MAGIC) as other:
            await other.ask(other.topics.subscribe([{0: KV}], 0, Durable(b"c")))
        assert [(e.limit, e.value) for e in _refusals(inst)] == [("durable subscriptions per connection", 2)]
        assert set(inst.hub.durable) == {b"a", b"b", b"c"}


async def test_durable_subscriptions_in_total(tmp_path):
    async with served(tmp_path) as inst:
        inst.hub.caps = _caps(durable_per_connection=2, durable=3)
        for pair in ((b"a", b"b"), (b"c",)):
            async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
                for name in pair:
                    await conn.ask(conn.topics.subscribe([{0: KV}], 0, Durable(name)))
        async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
            with pytest.raises(TopicRequestRefused, match=r"limit_reached: durable subscriptions in total \(3\)"):
                await conn.ask(conn.topics.subscribe([{0: KV}], 0, Durable(b"d")))
            # An existing one may still be attached, and forgetting one makes room.
            sub = await conn.ask(conn.topics.subscribe([{0: KV}], 0, Durable(b"a")))
            await conn.ask(conn.topics.unsubscribe(sub.sub_id, forget=True))
            await conn.ask(conn.topics.subscribe([{0: KV}], 0, Durable(b"d")))
        assert set(inst.hub.durable) == {b"b", b"c", b"d"}
        assert [e.limit for e in _refusals(inst)] == ["durable subscriptions in total"]


async def test_ephemeral_subscriptions_in_total(tmp_path):
    async with served(tmp_path) as inst:
        inst.hub.caps = _caps(ephemeral=5)
        async with open_topic_connection(inst.socket, TOPIC_MAGIC) as one:
            async with open_topic_connection(inst.socket, TOPIC_MAGIC) as two:
                for conn in (one, two, one, two, one):
                    await conn.ask(conn.topics.subscribe([{0: KV}]))
                with pytest.raises(TopicRequestRefused,
                                   match=r"limit_reached: ephemeral subscriptions in total \(5\) \(code 21\)"):
                    await conn.ask(two.topics.subscribe([{0: KV}]))
            # The second connection's subscriptions ended with it: room again.
            await one.ask(one.topics.subscribe([{0: KV}]))
        assert [e.limit for e in _refusals(inst)] == ["ephemeral subscriptions in total"]


async def test_bytes_per_durable_queue(tmp_path):
    async with served(tmp_path) as inst:
        inst.hub.caps = _caps(durable_queue_bytes=4000)
        async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
            sub = await conn.ask(conn.topics.subscribe([{0: KV}], 0, Durable(b"small")))
            watcher = await conn.ask(conn.topics.subscribe([{0: KV}]))
            for n in range(8):
                await _publish(inst, bytes([n + 1]), 1, KILOBYTE)
            items = await _items(conn)
        durable = [i for i in items if i.sub_id == sub.sub_id]
        kinds = [i.kind for i in durable]
        # Two items of about 1.5 KB (the DMQ message and its metadata) fit, the rest is
        # reported as dropped; the ephemeral subscription beside it (under the per-queue cap of
        # TopicQueueLimits only) got all eight.
        assert kinds == [0, 0, ITEM_DROPPED]
        assert inst.hub.durable[b"small"].queued_bytes <= 4000
        assert len([i for i in items if i.sub_id == watcher.sub_id]) == 8


async def test_bytes_of_every_durable_queue(tmp_path):
    async with served(tmp_path) as inst:
        inst.hub.caps = _caps(durable_queue_bytes=64_000, durable_bytes=64_000)
        async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
            for name in (b"a", b"b", b"c", b"d"):
                await conn.ask(conn.topics.subscribe([{0: KV}], 0, Durable(name)))
            for n in range(20):
                await _publish(inst, bytes([n + 1]), 1, KILOBYTE)
            assert inst.hub.durable_bytes <= 64_000
            held = sum(len(s.queue) for s in inst.hub.durable.values())
            assert 20 < held < 4 * 20         # items of about 1.5 KB: some kept, the rest dropped
            with pytest.raises(TopicRequestRefused, match=r"limit_reached: bytes queued for durable subscriptions"):
                async with open_topic_connection(inst.socket, TOPIC_MAGIC) as other:
                    await other.ask(other.topics.subscribe([{0: KV}], 0, Durable(b"e")))
            # Acknowledging frees room for new items and subscriptions.
            items = await _items(conn)
            last = {}
            for item in items:
                last[item.sub_id] = item.dseq
            await conn.topics.next(blocking=False, acks=sorted(last.items()))
            assert inst.hub.durable_bytes == 0
            await conn.ask(conn.topics.subscribe([{0: KV}], 0, Durable(b"e")))


def _share_for(inst, extra: int) -> float:
    """The disk share that lets the database grow ``extra`` bytes past its size now."""
    st = os.statvfs(inst.mempool.store.path)
    return (database_bytes(inst.mempool.store.env, inst.mempool.store.open_db) + extra) / (st.f_blocks * st.f_frsize)


async def test_database_share_of_the_disk(tmp_path):
    async with served(tmp_path) as inst:
        store = inst.mempool.store
        share = _share_for(inst, 150_000)
        guard = DiskGuard(store.env, store.open_db, store.path, share, interval=0)
        inst.hub.disk = guard
        inst.hub.caps = _caps(durable_per_connection=10_000, durable=10_000, disk_share=share)
        async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
            await conn.ask(conn.topics.subscribe([{0: KV}], 0, Durable(b"reader")))
            await _publish(inst, b"first", 1, KILOBYTE)
            first = await _items(conn)
            made = 0
            with pytest.raises(TopicRequestRefused, match=r"limit_reached: share of the disk the database may use"):
                while made < 10_000:      # 64 subscriptions per connection at most
                    async with open_topic_connection(inst.socket, TOPIC_MAGIC) as other:
                        for _ in range(60):
                            await other.ask(other.topics.subscribe([{0: KV}], 0, Durable(b"s%d" % made)))
                            made += 1
            assert made > 10
            assert database_bytes(store.env, store.open_db) <= guard.limit
            # New events are still accepted (the DMQ store is the network's, bounded by expiry
            # and budgets), but durable queues take no more than the room that was left (under
            # the 4 KiB a new subscription needs: two items of about 1.5 KB) and the notices of
            # their drops.
            for k in range(5):
                await _publish(inst, b"more%d" % k, 1, KILOBYTE)
            with inst.dbs.reading(HUB_OWNER) as view:
                records = [cbor.decode(value) for _, value in view.scan(QUEUE_DB)]
                assert len(list(view.scan(ITEM_DB))) <= 2
            events = [r for r in records if len(r) == 3]
            assert 1 <= len(events) <= 1 + 3
            assert len(records) - len(events) <= len(inst.hub.durable)          # a notice each at most
            assert inst.hub.durable_bytes <= len(events) * 1600 + len(records) * 16
            assert [i.kind for i in first] == [0]
        # What was queued before stays, and is delivered again after a reattachment.
        async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
            await conn.ask(conn.topics.subscribe([{0: KV}], 0, Durable(b"reader")))
            again = await _items(conn)
            assert again[0].payload == first[0].payload and again[-1].kind == ITEM_DROPPED
        assert "share of the disk the database may use" in [e.limit for e in _refusals(inst)]


async def test_an_event_for_many_durable_subscriptions_is_stored_once(tmp_path):
    async with served(tmp_path) as inst:
        store = inst.mempool.store
        inst.hub.caps = _caps(durable_per_connection=64, durable=1000)
        for batch in range(5):
            async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
                for n in range(60):
                    await conn.ask(conn.topics.subscribe([{0: KV}], 0, Durable(b"%d-%d" % (batch, n))))
        before = database_bytes(store.env, store.open_db)
        for n in range(10):
            await _publish(inst, b"event%d" % n, 1, KILOBYTE)
        grown = database_bytes(store.env, store.open_db) - before
        with inst.dbs.reading(HUB_OWNER) as view:
            items = list(view.scan(ITEM_DB))
            queued = list(view.scan(QUEUE_DB))
        assert len(items) == 10 and len(queued) == 300 * 10
        # A copy per subscription took a page per item (about 4 KiB, 12 MiB here); references
        # take a queue record and the subscription's record per subscription.
        assert grown < 10 * 300 * 400, grown
        # Every reference released by the acknowledgements takes the item with its last one.
        for batch in range(5):
            async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
                for n in range(60):
                    await conn.ask(conn.topics.subscribe([{0: KV}], 0, Durable(b"%d-%d" % (batch, n))))
                acks: list = []
                while True:      # replies hold 256 KiB: acknowledge what each one delivered
                    reply = await conn.topics.next(blocking=False, acks=acks)
                    last = {}
                    for item in map(decode_item, reply.items):
                        last[item.sub_id] = item.dseq
                    acks = sorted(last.items())
                    if not acks:
                        break
        with inst.dbs.reading(HUB_OWNER) as view:
            assert list(view.scan(ITEM_DB)) == [] and list(view.scan(QUEUE_DB)) == []


async def test_durable_queues_come_back_after_a_restart_with_their_items_stored_once(tmp_path):
    async with served(tmp_path) as inst:
        async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
            for name in (b"a", b"b"):
                await conn.ask(conn.topics.subscribe([{0: KV}], 0, Durable(name)))
        await _publish(inst, b"before", 1, KILOBYTE)
    async with served(tmp_path) as inst:
        store = inst.mempool.store
        inst.hub.disk = DiskGuard(store.env, store.open_db, store.path, 1.0)
        # A commit queueing for the reloaded subscriptions asks the guard (which never
        # measures inside a commit) and references the stored item.
        await _publish(inst, b"after", 1, KILOBYTE)
        with inst.dbs.reading(HUB_OWNER) as view:
            counts = sorted(cbor.decode(value)[0] for _, value in view.scan(ITEM_DB))
        assert counts == [2, 2]
        for name in (b"a", b"b"):
            async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
                await conn.ask(conn.topics.subscribe([{0: KV}], 0, Durable(name)))
                got = await _items(conn)
                assert [i.kind for i in got] == [0, 0] and got[0].payload != got[1].payload
