"""Blocklace history on real ``dmq-node`` processes (docs/topics-design.md 5.7, 5.8).

Three nodes sign as pools 0, 1 and 2, the electors of a topic whose epoch interval is two
seconds. Nobody hand-crafts an Epoch block: the nodes propose and acknowledge by
themselves. Pool 4, a publisher of events only and no node's signer, writes short-lived
events (protocol 14, six seconds of network lifetime) the way an honest creator does,
following the topic through protocol 1000. Once epochs have gone by and the nodes have
pruned the oldest events, a fourth node starts with an empty database: everything it
receives points into pruned history, so it asks for anchors, checks the certificate its
peers carry, starts from it, and delivers every block its peers kept from there on.
"""

from __future__ import annotations

import json
import time

import pytest
import trio

from dmq.codec import decode_message
from lab.devnet.topology import topology_document
from clients.topics import decode_item, draft_block, open_topic_connection
from tests.e2e.raw_n2c import ACCEPT, RawN2CClient
from tests.topics.blocklace.world import ALL, TOPIC, ad_payload, advertisement, pool
from topics.adapter import ITEM_EPOCH_FINAL, ITEM_MESSAGE
from clients.topics.blocklace import PoolCreator
from topics.blocklace.codec import EVENT, PERM_EVENT, Payload, TopicParams, decode_body
from topics.blocklace.lace import Lace

from .topic_node import TOPIC_MAGIC, n2n_port, topic_nodes  # noqa: F401 (a fixture)

pytestmark = pytest.mark.trio

BLOCKLACE = 2
ELECTORS = (0, 1, 2)
AUTHOR, JOINER = 4, 3
INTERVAL, TIMEOUT = 2, 4
EVENT_LIFETIME = 6


class Follower:
    """A protocol 1000 client of one node, reading every block of the topic in delivery order."""

    def __init__(self, node) -> None:
        self.node = node
        self.lace = Lace()                     # the blocks delivered, for an author's pointers
        self.delivered: list[bytes] = []
        self.epochs: dict[bytes, int] = {}
        self.finals: list[int] = []
        #: pools building their own blocks over what this client reads
        self.creators: list[PoolCreator] = []

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with open_topic_connection(self.node.socket_path, TOPIC_MAGIC) as conn:
            sub = await conn.ask(conn.topics.subscribe([{0: BLOCKLACE, 3: [TOPIC]}], 1))
            task_status.started()
            acks: list = []
            while True:
                reply = await conn.topics.next(blocking=True, acks=acks)
                items = [decode_item(raw) for raw in reply.items]
                for item in items:
                    self._take(item)
                acks = [(sub.sub_id, items[-1].dseq)] if items else []

    def _take(self, item) -> None:
        for creator in self.creators:
            creator.follow(item)
        if item.kind == ITEM_EPOCH_FINAL:
            self.finals.append(item.payload[1])
        elif item.kind == ITEM_MESSAGE:
            message = decode_message(item.payload)
            _, block = decode_body(message.body)
            self.delivered.append(message.message_id)
            self.epochs[message.message_id] = block.epoch
            if message.message_id not in self.lace.blocks:
                self.lace.accept(message, block, int(time.time()))


class Author:
    """Pool 4 writing events as an honest creator that signs its own blocks: the library's
    :class:`~clients.topics.blocklace.PoolCreator` over what its follower reads."""

    def __init__(self, follower: Follower) -> None:
        self.follower = follower
        self.pool = pool(AUTHOR)
        self.creator = PoolCreator(self.pool.id, TOPIC)
        follower.creators.append(self.creator)
        self.written: list[bytes] = []

    async def write(self, data: bytes) -> None:
        if not self.creator.ready:
            return                              # its previous block is not back yet
        body = self.creator.next_block(Payload(EVENT, event=data))
        message = self.pool.sign(body, int(time.time()) + EVENT_LIFETIME)
        async with await RawN2CClient.connect(self.follower.node.socket_path) as client:
            await client.handshake(TOPIC_MAGIC)
            if await client.submit(message.raw) == ACCEPT:
                self.creator.published(message.message_id)
                self.written.append(message.message_id)


async def retained(node) -> dict[bytes, int]:
    """The blocks the node holds now (``start = retained``), with their epochs."""
    async with open_topic_connection(node.socket_path, TOPIC_MAGIC) as conn:
        await conn.ask(conn.topics.subscribe([{0: BLOCKLACE, 3: [TOPIC]}], 1))
        reply = await conn.ask(conn.topics.next(blocking=False))
    out = {}
    for item in map(decode_item, reply.items):
        if item.kind == ITEM_MESSAGE:
            message = decode_message(item.payload)
            out[message.message_id] = decode_body(message.body)[1].epoch
    return out


async def until(condition, timeout: float, what: str, *, each=None) -> None:
    deadline = trio.current_time() + timeout
    while not await condition():
        if trio.current_time() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        if each is not None:
            await each()
        await trio.sleep(0.3)


def start(topic_nodes, tmp_path, name: str, signer: int, peers: list) -> object:
    """A node signing as ``signer``, dialling ``peers``; pools 0..4 hold stake."""
    (tmp_path / name).mkdir()
    document = topology_document([("127.0.0.1", n2n_port(p)) for p in peers])
    (tmp_path / name / "dmq.topology.json").write_text(json.dumps(document))
    return topic_nodes(name, carried=["raw", "blocklace"], signer=signer, pools=5)


async def test_epochs_advance_pruning_runs_and_a_late_joiner_syncs(topic_nodes, tmp_path):
    first = start(topic_nodes, tmp_path, "n0", 0, [])
    others = await _together([lambda i=i: start(topic_nodes, tmp_path, f"n{i}", i, [first]) for i in ELECTORS[1:]])
    nodes = [first, *others]
    async with trio.open_nursery() as nursery:
        watcher = Follower(nodes[0])
        await nursery.start(watcher.run)
        author = Author(watcher)
        publishers = {pool(i).id: ALL for i in ELECTORS} | {pool(AUTHOR).id: PERM_EVENT}
        ad = advertisement(0, publishers, TopicParams(epoch_interval=INTERVAL, attempt_timeout=TIMEOUT))
        async with open_topic_connection(nodes[0].socket_path, TOPIC_MAGIC) as conn:
            await conn.ask(conn.topics.publish(draft_block(TOPIC, ad_payload(ad))))
        await until(lambda: _true(watcher.delivered), 10, "the advertisement back")

        # epochs go by on their own while events flow, and the oldest events are pruned
        counter = iter(range(10**6))

        async def write() -> None:
            await author.write(b"event %d" % next(counter))

        await until(lambda: _true(watcher.finals and watcher.finals[-1] >= 2), 30, "two epochs", each=write)
        oldest = author.written[0]
        await until(lambda: _absent(nodes, oldest), 20, "the first event pruned everywhere", each=write)

        # a node with an empty database joins; events go on until it has a checkpoint
        started: list = []

        async def join() -> None:
            started.extend(await _together([lambda: start(topic_nodes, tmp_path, "late", JOINER, nodes)]))

        nursery.start_soon(join)
        await until(lambda: _true(started), 60, "the late joiner started", each=write)
        joiner = started[0]
        late = Follower(joiner)
        await nursery.start(late.run)
        await until(lambda: _true(late.finals), 25, "the late joiner's checkpoint", each=write)
        checkpoint = late.finals[0]
        assert checkpoint >= 2
        for _ in range(5):
            await write()
            await trio.sleep(0.3)

        async def synced() -> bool:
            kept = {i for i, epoch in (await retained(nodes[0])).items() if epoch >= checkpoint}
            return bool(kept) and kept <= set(late.delivered)

        await until(synced, 25, "every block kept from the checkpoint on delivered by the late joiner")
        events = [i for i in author.written if i in late.delivered]
        assert events and all(late.epochs[i] >= checkpoint for i in events)
        assert oldest not in late.delivered
        # delivery starts at the checkpoint: below it only the anchors (an ad, a certificate)
        below = [i for i in late.delivered if late.epochs[i] < checkpoint]
        assert below and not set(below) & set(author.written)
        for node in (*nodes, joiner):
            node.check_running()
        nursery.cancel_scope.cancel()


async def test_the_stake_rule_moves_on_with_blocks_a_pool_builds_itself(topic_nodes, tmp_path):
    """Under the stake rule a client cannot weigh a quorum (it has no stake snapshot): its
    PoolCreator takes the final epochs the node reports, so its events are in the current
    epoch, and the electors keep finding blocks of it to cut. Without that, the author's
    events stayed in epoch 0 and no epoch after the first became final."""
    first = start(topic_nodes, tmp_path, "n0", 0, [])
    others = await _together([lambda i=i: start(topic_nodes, tmp_path, f"n{i}", i, [first]) for i in ELECTORS[1:]])
    async with trio.open_nursery() as nursery:
        watcher = Follower(first)
        await nursery.start(watcher.run)
        author = Author(watcher)
        publishers = {pool(i).id: ALL for i in ELECTORS} | {pool(AUTHOR).id: PERM_EVENT}
        params = TopicParams(quorum=(1, 2, 3), epoch_interval=INTERVAL, attempt_timeout=TIMEOUT)
        async with open_topic_connection(first.socket_path, TOPIC_MAGIC) as conn:
            await conn.ask(conn.topics.publish(draft_block(TOPIC, ad_payload(advertisement(0, publishers, params)))))
        counter = iter(range(10**6))

        async def write() -> None:
            await author.write(b"event %d" % next(counter))

        await until(lambda: _true(watcher.finals and watcher.finals[-1] >= 3), 60, "three epochs", each=write)
        assert [watcher.epochs[i] for i in author.written][-1] >= 2
        for node in (first, *others):
            node.check_running()
        nursery.cancel_scope.cancel()


async def _together(starts: list) -> list:
    """Start nodes at once (each start waits for its socket in a thread)."""
    results: list = [None] * len(starts)

    async def one(i: int) -> None:
        results[i] = await trio.to_thread.run_sync(starts[i])

    async with trio.open_nursery() as nursery:
        for i in range(len(starts)):
            nursery.start_soon(one, i)
    return results


async def _true(value) -> bool:
    return bool(value)


async def _absent(nodes, ident: bytes) -> bool:
    for node in nodes:
        node.check_running()
        if ident in await retained(node):
            return False
    return True
