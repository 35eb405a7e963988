"""UPSYCLE on three real nodes in a line, n0 - n1 - n2 (issue 7, "what it must show").

Publishers are protocol 1000 clients of n0, the subscriber a protocol 1000 client of n2; the
nodes wrap, sign with their pools' KES keys, diffuse over TCP and queue in LMDB.
"""

from __future__ import annotations

import pytest
import trio

from dmq.codec import decode_message
from clients.topics import Durable, TopicRequestRefused, decode_item, open_topic_connection
from miniprotocols.local_topic_subscription import Auth, MsgPublished
from topics.adapter import FLAG_ANSWER, ITEM_GAP, ITEM_MESSAGE
from topics.upsycle import PullStatus
from topics.upsycle.wire import KIND_PULL, RoutedMessage, decode_envelope, decode_routed

from ..upsycle.harness import Key, exp_minutes, key, multicast, routed_body
from .network import NOW, TOPIC_MAGIC, fast_housekeeping, running_line, wait_until  # noqa: F401

pytestmark = pytest.mark.trio

GROUP = key(1)
SUBSCRIBER = key(2)
PUBLISHER = key(3)
UPSYCLE = [{0: 1}]


def auth(member: Key, op: str, group: Key | None, clock) -> Auth:
    ts, sig = member.auth(op, None if group is None else group.public, int(clock.now()), TOPIC_MAGIC)
    return Auth(ts, sig)


async def attach(conn, member: Key, clock):
    """Attach the durable subscription named by the member's service key."""
    return await conn.ask(conn.topics.subscribe(UPSYCLE, 0, Durable(member.public, auth(member, "attach", None, clock))))


async def join(node, member: Key, clock) -> None:
    async with open_topic_connection(node.socket, TOPIC_MAGIC) as conn:
        await attach(conn, member, clock)
        ack = await conn.ask(conn.topics.join(member.public, GROUP.public, False, auth(member, "join", GROUP, clock)))
        assert (ack.result, ack.detail) == (0, None)


async def publish(node, *messages: RoutedMessage) -> list[bytes]:
    """Publish at ``node`` over protocol 1000; the DMQ ids of the wrapped messages."""
    ids = []
    async with open_topic_connection(node.socket, TOPIC_MAGIC) as conn:
        for message in messages:
            published = await conn.ask(conn.topics.publish(routed_body(message)))
            assert isinstance(published, MsgPublished) and published.inner_id == message.id
            ids.append(published.dmq_id)
    return ids


def message_ids(items) -> list[bytes]:
    return [item.meta[2] for item in items if item.kind == ITEM_MESSAGE]


async def read(conn, *, blocking: bool = False):
    reply = await conn.topics.next(blocking=blocking)
    return [decode_item(raw) for raw in reply.items]


def upsycle_kinds(node, kind: int) -> list[bytes]:
    """Bodies of the UPSYCLE envelopes of ``kind`` the node holds for diffusion."""
    out = []
    for entry in node.node.mempool.messages_after(-1, 1 << 30):
        body = decode_message(entry.raw).body
        if body[:3] == b"\xd9\x94\xf9" and decode_envelope(body).kind == kind:
            out.append(body)
    return out


async def test_an_offline_subscriber_gets_its_messages_in_order_never_expired_never_after_leave(
        tmp_path, fast_housekeeping):
    async with running_line(tmp_path, "raw,upsycle", 3) as (network, (n0, n1, n2)):
        clock = network.clock
        await join(n2, SUBSCRIBER, clock)            # then the subscriber goes away

        sent = [multicast(GROUP, b"first"), multicast(GROUP, b"short-lived", exp=exp_minutes(int(NOW) + 120)),
                multicast(GROUP, b"second"), multicast(GROUP, b"third")]
        dmq_ids = await publish(n0, *sent)
        await wait_until(lambda: set(dmq_ids) <= n2.held(), 10, what="the group's messages at n2")
        clock.advance(200)                             # past the short-lived message's expiry

        async with open_topic_connection(n2.socket, TOPIC_MAGIC) as conn:
            sub = await attach(conn, SUBSCRIBER, clock)
            assert sub.next_dseq == 0
            items = await read(conn)
            assert message_ids(items) == [sent[0].id, sent[2].id, sent[3].id]
            assert [i.dseq for i in items] == [0, 1, 2] and {i.sub_id for i in items} == {sub.sub_id}
            held = {decode_message(i.payload).message_id for i in items}
            assert held == {dmq_ids[0], dmq_ids[2], dmq_ids[3]}      # the exact wrapped messages
            assert await read(conn) == []                             # handed out once per attachment
            # a second connection may not attach the same subscriber meanwhile
            with pytest.raises(TopicRequestRefused, match="busy"):
                async with open_topic_connection(n2.socket, TOPIC_MAGIC) as other:
                    await attach(other, SUBSCRIBER, clock)
            await conn.topics.next(blocking=False, acks=[(sub.sub_id, 2)])
            left = await conn.ask(conn.topics.leave(SUBSCRIBER.public, GROUP.public,
                                                    auth(SUBSCRIBER, "leave", GROUP, clock)))
            assert left.result == 0

        after = multicast(GROUP, b"after leaving")
        (after_id,) = await publish(n0, after)
        await wait_until(lambda: after_id in n2.held(), 10, what="the message sent after LEAVE at n2")
        async with open_topic_connection(n2.socket, TOPIC_MAGIC) as conn:
            sub = await attach(conn, SUBSCRIBER, clock)
            assert sub.next_dseq == 3                 # 0..2 acknowledged; nothing queued since
            assert await read(conn) == []


async def test_a_wrong_group_signature_never_leaves_the_first_node(tmp_path, fast_housekeeping):
    async with running_line(tmp_path, "raw,upsycle", 3) as (network, (n0, n1, n2)):
        genuine = multicast(GROUP, b"genuine")
        forged = decode_routed(genuine.raw[:-1] + bytes([genuine.raw[-1] ^ 1]))
        async with open_topic_connection(n0.socket, TOPIC_MAGIC) as conn:
            with pytest.raises(TopicRequestRefused, match="bad_signature"):
                await conn.ask(conn.topics.publish(routed_body(forged)))
        # the same forgery wrapped by a pool that signs itself (protocol 14) is refused too
        wrapped = network.pools[0].sign(routed_body(forged), int(NOW) + 600)
        refused = await n0.node.ingress.submit_local(wrapped.raw)
        assert refused is not None and refused.reason == "bad_signature"
        (genuine_id,) = await publish(n0, genuine)
        await wait_until(lambda: genuine_id in n2.held(), 10, what="the genuine message at n2")
        for node in (n0, n1, n2):
            assert node.held() == {genuine_id}
        assert n1.rejections() == [] and n2.rejections() == []
        assert wrapped.message_id not in n1.accepted() | n2.accepted()


async def test_a_missed_message_is_detected_from_a_seen_list_and_recovered(tmp_path, fast_housekeeping):
    async with running_line(tmp_path, "raw,upsycle", 3) as (network, (n0, n1, n2)):
        clock = network.clock
        await join(n0, PUBLISHER, clock)     # n0 has a member: it keeps the group's messages for pulls
        await join(n2, SUBSCRIBER, clock)

        await network.net.stop(n2)
        missed = multicast(GROUP, b"sent while n2 was down", ttl=120)
        (missed_dmq,) = await publish(n0, missed)
        await wait_until(lambda: missed_dmq in n1.held(), 10, what="the missed message at n1")
        clock.advance(130)                   # its network lifetime ends: nobody offers it any more
        n2 = await network.start(2, n1, port=n2.port)
        await wait_until(lambda: n2.node.diffusion.peers.hot, 10, what="n2 linked again")

        follow = multicast(GROUP, b"next one", seen=(missed.id,))
        (follow_dmq,) = await publish(n0, follow)
        await wait_until(lambda: follow_dmq in n2.held(), 10, what="the follow-up at n2")
        assert missed_dmq not in n2.held()
        clock.advance(11)                    # D passed: n2 notes the gap and asks the network
        await wait_until(lambda: upsycle_kinds(n0, KIND_PULL), 10, what="n2's pull request at n0")

        async with open_topic_connection(n2.socket, TOPIC_MAGIC) as conn:
            await attach(conn, SUBSCRIBER, clock)
            items = await read(conn)
            assert [i.kind for i in items] == [ITEM_MESSAGE, ITEM_GAP]
            assert items[0].meta[2] == follow.id
            assert items[1].payload == {0: GROUP.public, 1: [missed.id]}
            pulled = await conn.ask(conn.topics.pull(SUBSCRIBER.public, GROUP.public, [missed.id]))
            assert pulled.statuses == ((missed.id, PullStatus.REQUESTED),)
            clock.advance(6)                 # the holder's answer delay passed
            with trio.fail_after(10):
                recovered = await read(conn, blocking=True)
            assert message_ids(recovered) == [missed.id]
            assert recovered[0].meta[5] & FLAG_ANSWER
            assert decode_envelope(decode_message(recovered[0].payload).body).content.message.raw == missed.raw


async def test_a_node_local_group_is_queued_at_its_node_and_never_wrapped(tmp_path, fast_housekeeping):
    async with running_line(tmp_path, "raw,upsycle", 2) as (network, (n0, n1)):
        clock = network.clock
        async with open_topic_connection(n0.socket, TOPIC_MAGIC) as conn:
            sub = await attach(conn, SUBSCRIBER, clock)
            ack = await conn.ask(conn.topics.join(SUBSCRIBER.public, GROUP.public, True,
                                                  auth(SUBSCRIBER, "join", GROUP, clock)))
            assert ack.result == 0
            local = multicast(GROUP, b"stays here")
            published = await conn.ask(conn.topics.publish(routed_body(local)))
            assert (published.dmq_id, published.inner_id) == (None, local.id)
            items = await read(conn)
            assert [(i.sub_id, i.kind, i.payload) for i in items] == [(sub.sub_id, 5, local.raw)]
            # a forged publication to the local group is refused before anything is queued
            forged = decode_routed(local.raw[:-1] + bytes([local.raw[-1] ^ 1]))
            with pytest.raises(TopicRequestRefused, match="bad_signature"):
                await conn.ask(conn.topics.publish(routed_body(forged)))
            assert await read(conn) == []
        assert n0.held() == set() and n1.held() == set()


async def test_attached_connections_get_a_ttl_zero_message_at_arrival_only(tmp_path, fast_housekeeping):
    async with running_line(tmp_path, "raw,upsycle", 2) as (network, (n0, n1)):
        clock = network.clock
        await join(n1, SUBSCRIBER, clock)
        clock.advance(0.5)                   # mid-second: arrival times are whole seconds
        async with open_topic_connection(n1.socket, TOPIC_MAGIC) as live:
            sub = await live.ask(live.topics.subscribe([{0: 1, 1: [GROUP.public]}]))
            instant = multicast(GROUP, b"now or never", ttl=0)
            (dmq_id,) = await publish(n0, instant)
            with trio.fail_after(10):
                items = await read(live, blocking=True)
            assert [(i.sub_id, i.meta[2]) for i in items] == [(sub.sub_id, instant.id)]
            assert dmq_id in n1.held()
        async with open_topic_connection(n1.socket, TOPIC_MAGIC) as conn:
            await attach(conn, SUBSCRIBER, clock)
            assert await read(conn) == []    # ttl = 0: never queued for the durable subscriber
            # the subscriber's own rules: bad auth, selectors of other adapters, unknown dseq
            with pytest.raises(TopicRequestRefused, match="not_authorized"):
                await conn.ask(conn.topics.subscribe(UPSYCLE, 0, Durable(PUBLISHER.public, auth(SUBSCRIBER, "attach",
                                                                                                None, clock))))
            with pytest.raises(TopicRequestRefused, match="malformed"):
                await conn.ask(conn.topics.subscribe([{0: 1}, {0: 0}], 0,
                                                     Durable(PUBLISHER.public, auth(PUBLISHER, "attach", None, clock))))
            bad_join = await conn.ask(conn.topics.join(PUBLISHER.public, GROUP.public, False,
                                                       auth(SUBSCRIBER, "join", GROUP, clock)))
            assert (bad_join.result, bad_join.detail) == (1, 1)
