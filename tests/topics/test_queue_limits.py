"""Queue caps of the framework's subscriptions and the ``[4, n]`` "items dropped" notice (docs/topics-design.md 3).

A durable subscriber that stays away while more arrives than its queue holds keeps the oldest
items, learns of the overflow at once from a notice in the reserved slot, and finds the rest of
the loss counted in a notice placed where the next item that fits resumes the stream. The
notices sum to the items lost, dseqs stay gap-free, and all of it survives a restart.
"""

from __future__ import annotations

import pytest

from clients.topics import Durable, decode_item, open_topic_connection
from topics.subscriptions import DROP_NOTICE_SIZE, QueueLimits

from .harness import EXP_OFFSET, NOW, TOPIC_MAGIC, instance, sign
from .kv_adapter import kv_body
from .service_harness import served
from .vectors.cddl import protocol1000_rules

KV = 2
FILTER = [{0: KV}]
DURABLE = Durable(b"capped")


async def _submit(inst, first: int, count: int) -> None:
    for n in range(first, first + count):
        assert await inst.ingress.submit_local(sign(kv_body(n.to_bytes(2, "big"), 1), int(NOW) + EXP_OFFSET).raw) is None


async def _read_all(conn, acks=()):
    reply = await conn.topics.next(blocking=False, acks=list(acks))
    return [decode_item(raw) for raw in reply.items]


def _shape(items) -> list[tuple[int, str]]:
    """(dseq, what) per item: a message, or a drop notice with its count; each item in the CDDL."""
    out = []
    for item in items:
        assert protocol1000_rules().accepts("item", item.raw)
        if item.kind == 4:
            out.append((item.dseq, f"dropped {item.payload}"))
        else:
            out.append((item.dseq, "message"))
    return out


@pytest.mark.trio
async def test_overflow_keeps_the_oldest_and_reports_every_drop(tmp_path):
    async with served(tmp_path, queue_limits=QueueLimits(max_items=5)) as inst:
        async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
            await conn.ask(conn.topics.subscribe(FILTER, 0, DURABLE))
        await _submit(inst, 0, 10)                       # 4 fit, the 5th is the first drop
        async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
            sub = await conn.ask(conn.topics.subscribe(FILTER, 0, DURABLE))
            items = await _read_all(conn)
            assert _shape(items) == [(0, "message"), (1, "message"), (2, "message"), (3, "message"),
                                     (4, "dropped 1")]
            assert [i.meta[1] for i in items[:4]] == [n.to_bytes(2, "big") for n in range(4)]
            assert await _read_all(conn, [(sub.sub_id, 4)]) == []
        await _submit(inst, 10, 1)
        async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
            await conn.ask(conn.topics.subscribe(FILTER, 0, DURABLE))
            items = await _read_all(conn)
            # the five drops after the first notice, then the item that fitted: 1 + 5 = 6 lost
            assert _shape(items) == [(5, "dropped 5"), (6, "message")]
            assert items[1].meta[1] == (10).to_bytes(2, "big")


@pytest.mark.trio
async def test_a_queue_with_room_drops_nothing(tmp_path):
    async with served(tmp_path, queue_limits=QueueLimits(max_items=5)) as inst:
        async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
            sub = await conn.ask(conn.topics.subscribe(FILTER, 0, DURABLE))
            for n in range(12):
                await _submit(inst, n, 1)
                items = await _read_all(conn)
                assert _shape(items) == [(n, "message")]
                await _read_all(conn, [(sub.sub_id, n)])


@pytest.mark.trio
async def test_byte_cap(tmp_path):
    message_item = None
    async with served(tmp_path / "probe") as inst:
        async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
            await conn.ask(conn.topics.subscribe(FILTER, 0))
            await _submit(inst, 0, 1)
            message_item = (await _read_all(conn))[0]
    body_size = len(message_item.raw) - 3           # the item body, without the head, subId and dseq
    # two messages, and room for the notice that reports the third
    limits = QueueLimits(max_items=1000, max_bytes=2 * body_size + 2 * DROP_NOTICE_SIZE)
    async with served(tmp_path / "capped", queue_limits=limits) as inst:
        async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
            await conn.ask(conn.topics.subscribe(FILTER, 0))
            await _submit(inst, 0, 6)
            assert _shape(await _read_all(conn)) == [(0, "message"), (1, "message"), (2, "dropped 1")]


@pytest.mark.trio
async def test_drop_counts_and_queue_survive_a_restart(tmp_path):
    db = tmp_path / "db"
    limits = QueueLimits(max_items=4)
    async with served(tmp_path, queue_limits=limits) as inst:
        async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
            await conn.ask(conn.topics.subscribe(FILTER, 0, DURABLE))
        await _submit(inst, 0, 7)                          # 3 fit, notice [4, 1], 3 counted
    async with instance(db, queue_limits=limits) as inst:
        sub = inst.hub.durable[DURABLE.name]
        assert (len(sub.queue), sub.dropped, sub.overflow, sub.next_dseq) == (4, 3, True, 4)
    async with served(tmp_path, queue_limits=limits) as inst:
        async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
            sub = await conn.ask(conn.topics.subscribe(FILTER, 0, DURABLE))
            items = await _read_all(conn)
            assert _shape(items) == [(0, "message"), (1, "message"), (2, "message"), (3, "dropped 1")]
            await _read_all(conn, [(sub.sub_id, 3)])
            await _submit(inst, 7, 1)
            assert _shape(await _read_all(conn)) == [(4, "dropped 3"), (5, "message")]


@pytest.mark.parametrize("limits", [{"max_items": 2}, {"max_bytes": 40}])
def test_limits_must_leave_room_for_an_item_and_notices(limits):
    with pytest.raises(ValueError):
        QueueLimits(**limits)
