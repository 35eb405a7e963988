"""The node as its pool's Blocklace creator, on a real ``dmq-node`` process (docs/topics-design.md 5.8).

Clients hand the node drafts (topic, payload, tags); the node picks the sequence number,
pointers, epoch and floor. A pre-built block that would make the node's pool equivocate is
refused, a repeated one is answered with the block already made, and after a restart the
chain goes on where it stopped. An epoch proposal under the stake rule is weighed in the
stake snapshot it names, through the node's own stake view.
"""

from __future__ import annotations

import time

import pytest
import trio

from dmq.cli import tool
from dmq.codec import decode_message
from clients.topics import TopicRequestRefused, decode_item, draft_block, open_topic_connection
from tests.e2e.raw_n2c import ACCEPT, RawN2CClient
from tests.topics.blocklace.world import (
    ALL, TOPIC, ad_payload, advertisement, epoch_payload, event, pool,
)
from topics.blocklace.codec import Block, TopicParams, decode_body, encode_block

from .topic_node import STAKE_EPOCH, TOPIC_MAGIC, topic_nodes  # noqa: F401 (a fixture)

pytestmark = pytest.mark.trio

BLOCKLACE = 2
ITEM_PROOF, ITEM_EPOCH_FINAL = 1, 3


def expires() -> int:
    return int(time.time()) + 1700


async def publish(node, body: bytes) -> bytes:
    async with open_topic_connection(node.socket_path, TOPIC_MAGIC) as conn:
        return (await conn.ask(conn.topics.publish(body))).dmq_id


async def items(node) -> list:
    """Every retained Blocklace item of the topic, blocks decoded."""
    async with open_topic_connection(node.socket_path, TOPIC_MAGIC) as conn:
        await conn.ask(conn.topics.subscribe([{0: BLOCKLACE, 3: [TOPIC]}], 1))
        reply = await conn.ask(conn.topics.next(blocking=False))
    return [decode_item(raw) for raw in reply.items]


def blocks_of(found) -> dict[bytes, Block]:
    out = {}
    for item in found:
        if item.kind == 0:
            message = decode_message(item.payload)
            out[message.message_id] = decode_body(message.body)[1]
    return out


async def submit(node, raw: bytes) -> bytes:
    async with await RawN2CClient.connect(node.socket_path) as client:
        await client.handshake(TOPIC_MAGIC)
        return await client.submit(raw)


async def try_publish(node, body: bytes) -> bytes | str:
    """The id of the published message, or the name of the reason it was refused."""
    try:
        return await publish(node, body)
    except TopicRequestRefused as refused:
        return refused.reject.text


async def test_the_node_never_makes_its_pool_equivocate(topic_nodes, capsys):
    node = topic_nodes()
    ad = await publish(node, draft_block(TOPIC, ad_payload(advertisement(0, {pool(0).id: ALL}))))
    # A client hands the node two different blocks with sequence number 1: signing both would
    # prove the node's pool an equivocator and shut it out of the topic for good.
    ones = [await try_publish(node, encode_block(Block(TOPIC, 1, 0, (ad,), 0, event(data), ())))
            for data in (b"one", b"another")]
    assert [i for i in await items(node) if i.kind == ITEM_PROOF] == []
    # The node picks the creator's fields itself, so a pre-built block is refused.
    assert ones == ["malformed", "malformed"]

    first = await publish(node, draft_block(TOPIC, event(b"first"), (b"news",)))
    built = blocks_of(await items(node))
    assert (built[ad].seq, built[ad].ptrs) == (0, ())
    assert (built[first].seq, built[first].ptrs, built[first].tags) == (1, (ad,), (b"news",))
    # A block with a sequence number the pool used already is a conflict.
    assert await try_publish(node, encode_block(Block(TOPIC, 1, 0, (ad,), 0, event(b"second"), ()))) == "conflict"
    # The exact block again is the same publication: its id, nothing new signed.
    again = next(decode_message(i.payload).body for i in await items(node)
                 if i.kind == 0 and decode_message(i.payload).message_id == first)
    assert await publish(node, again) == first

    node.kill()
    node.start()
    # After a restart the chain goes on; this time an operator publishes with the command.
    command = ["topic", "blocklace", "event", "--socket", str(node.socket_path), "--magic", str(TOPIC_MAGIC),
               "--topic", TOPIC.hex(), "--payload-hex", b"after a restart".hex(), "--tag", b"ops".hex()]
    assert await trio.to_thread.run_sync(tool.run, command) == 0
    third = bytes.fromhex(capsys.readouterr().out.split("id=")[1].split()[0])
    found = await items(node)
    built = blocks_of(found)
    assert (built[third].seq, built[third].ptrs, built[third].tags) == (2, (first,), (b"ops",))
    assert len(built) == 3 and not [i for i in found if i.kind == ITEM_PROOF]
    node.check_running()


async def test_a_stake_rule_proposal_is_weighed_in_the_snapshot_it_names(topic_nodes):
    node = topic_nodes()
    ad_body = advertisement(0, {pool(0).id: ALL, pool(1).id: ALL}, TopicParams(quorum=(1, 2, 3)))
    ad = await publish(node, draft_block(TOPIC, ad_payload(ad_body)))
    proposal_payload = epoch_payload(number=1, attempt=0, ad_version=0, cut=(ad,), stake_epoch=STAKE_EPOCH)
    # Built by the client with the fields a node would pick: the node refuses to sign it, and
    # stays up (it used to die here, calling the stake view with the wrong arguments).
    with pytest.raises(TopicRequestRefused):
        await publish(node, encode_block(Block(TOPIC, 1, 0, (ad,), 0, proposal_payload, ())))
    node.check_running()
    proposal = await publish(node, draft_block(TOPIC, proposal_payload))
    # Pool 1 acknowledges through protocol 14: 2 of 2 equal stakes is a quorum (> 2/3).
    acknowledgement = pool(1).sign(encode_block(Block(
        TOPIC, 0, 0, (proposal,), 0, epoch_payload(number=1, attempt=0, ad_version=0, acked=proposal), ())),
        expires())
    async with open_topic_connection(node.socket_path, TOPIC_MAGIC) as conn:
        await conn.ask(conn.topics.subscribe([{0: BLOCKLACE, 3: [TOPIC]}], 0))
        assert await submit(node, acknowledgement.raw) == ACCEPT
        live: list = []
        with trio.fail_after(10):
            while len(live) < 2:
                live += [decode_item(raw) for raw in (await conn.ask(conn.topics.next(blocking=True))).items]
    assert [i.kind for i in live] == [0, ITEM_EPOCH_FINAL]
    assert live[1].payload == {0: TOPIC, 1: 1, 2: proposal}
    # In epoch 1, a proposal naming a snapshot the node does not hold is refused.
    opening = await publish(node, draft_block(TOPIC, event(b"epoch 1")))
    assert blocks_of(await items(node))[opening].epoch == 1
    stale = epoch_payload(number=2, attempt=0, ad_version=0, cut=(opening,), stake_epoch=STAKE_EPOCH - 5)
    with pytest.raises(TopicRequestRefused, match="stale_stake_snapshot"):
        await publish(node, draft_block(TOPIC, stale))
    node.check_running()
