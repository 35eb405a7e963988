"""Blocklace history on real ``dmq-node`` processes (docs/topics-design.md 5.7, 5.8).

Three nodes sign as pools 0, 1 and 2, the electors of a topic whose epoch interval is two
seconds. Nobody hand-crafts an Epoch block: the nodes propose and acknowledge by
themselves. Pools 4 to 7, publishers of events only and no node's signers, write short-lived
events (protocol 14, six seconds of network lifetime) the way an honest creator does,
following the topic through protocol 1000. Once epochs have gone by and the nodes have
pruned the oldest events, a fourth node starts with an empty database: everything it
receives points into pruned history, so it asks for anchors, checks the certificate its
peers carry, starts from it, and delivers every block its peers kept from there on.

Two more catch-ups on the same topic: a node with an empty database dialling a peer that holds
a pool's history (more blocks than a budget's burst), and two sides of a partition, each of
which received a pool's history, healing through a bridge that restarts on its database.

Every node runs the default configuration, budgets included (a pool's Blocklace budget is 8
blocks at once, one more per 25 s): the author stays within its pool's budget as an honest
creator does, and the late joiner receives its peers' kept blocks all at once, which the
budgets admit because they count the times the pools signed, not arrivals
(docs/topics-design.md 2.1). Nobody is disconnected and nothing is logged at error level.
"""

from __future__ import annotations

import json
import signal
import time

import pytest
import trio

from dmq.codec import decode_message
from lab.devnet.topology import topology_document
from clients.topics import decode_item, draft_block, open_topic_connection
from clients.topics.blocklace import PoolCreator
from tests.e2e.raw_n2c import ACCEPT, RawN2CClient
from tests.topics.blocklace.world import ALL, TOPIC, ad_payload, advertisement, pool
from topics.adapter import ITEM_EPOCH_FINAL, ITEM_MESSAGE
from topics.blocklace.codec import EVENT, PERM_EVENT, Block, Payload, TopicParams, decode_body, encode_block
from topics.blocklace.creator import complete_block
from topics.blocklace.lace import Lace
from topics.bucket import DEFAULT_BUCKET, DEFAULT_BUDGETS, TokenBucket

from .catch_up import assert_caught_up_cleanly
from .node_process import start_in_threads
from .topic_node import TOPIC_MAGIC, n2n_port, topic_nodes  # noqa: F401 (a fixture)

pytestmark = pytest.mark.trio

BLOCKLACE = 2
ELECTORS = (0, 1, 2)
AUTHORS, JOINER = (4, 5, 6, 7), 3
INTERVAL, TIMEOUT = 2, 4
EVENT_LIFETIME = 6
#: A pool's history for a fresh node: more blocks than its budget's burst (8), signed 25 s apart.
HISTORY, HISTORY_SPACING = 22, 25
#: Each side's history during a partition: past the burst too.
SIDE_HISTORY = 11


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
    """Pools 4 to 7 writing events as honest creators: each its chain, the leaves and the epoch
    of what it has seen (``complete_block`` over the blocks its follower delivered), and each
    within its pool's default Blocklace budget, asked of the budget code itself."""

    def __init__(self, follower: Follower, authors: tuple[int, ...] = AUTHORS, pace: float = 1.0) -> None:
        self.follower = follower
        self.pace = pace
        self.pools = [pool(i) for i in authors]
        self.chains: dict[bytes, tuple[int, bytes | None]] = {p.id: (0, None) for p in self.pools}
        self.budget = TokenBucket(DEFAULT_BUCKET, DEFAULT_BUDGETS)
        self.written: list[bytes] = []
        self.next_at = 0.0

    async def write(self, data: bytes, expires_at: int | None = None) -> None:
        """One event of the first author whose previous block is back and whose budget has room
        for it (``expires_at``: its signed expiry, by default ``EVENT_LIFETIME`` from now)."""
        now = time.time()
        if now < self.next_at:
            return                              # one event per ``pace`` seconds
        if expires_at is None:
            expires_at = int(now) + EVENT_LIFETIME
        for author in self.pools:
            seq, last = self.chains[author.id]
            if last is not None and last not in self.follower.lace.blocks:
                continue                        # its previous block is not back yet
            if self.budget.available(author.id, expires_at, "blocklace", now):
                break
        else:
            return                              # every author waits for its budget
        draft = Block(TOPIC, 0, 0, (), 0, Payload(EVENT, event=data), ())
        block = complete_block(self.follower.lace, author.id, seq, last, draft)
        message = author.sign(encode_block(block), expires_at)
        async with await RawN2CClient.connect(self.follower.node.socket_path) as client:
            await client.handshake(TOPIC_MAGIC)
            reply = await client.submit(message.raw)
        assert reply == ACCEPT, reply           # within its budget: never refused
        self.budget.charge(author.id, expires_at, "blocklace", now)
        self.chains[author.id] = (seq + 1, message.message_id)
        self.written.append(message.message_id)
        self.next_at = now + self.pace


class LibraryAuthor:
    """Pool 4 writing events as an honest creator that signs its own blocks: the library's
    :class:`~clients.topics.blocklace.PoolCreator` over what its follower reads, one event per
    ``pace`` seconds at most: its budget's burst of 8 then spans several epochs, as a pool
    writing steadily would, instead of going in the first few seconds and leaving the next
    event 25 s later."""

    def __init__(self, follower: Follower, pace: float = 1.0) -> None:
        self.follower = follower
        self.pace = pace
        self.pool = pool(AUTHORS[0])
        self.creator = PoolCreator(self.pool.id, TOPIC)
        follower.creators.append(self.creator)
        self.written: list[bytes] = []
        self.next_at = 0.0

    async def write(self, data: bytes) -> None:
        now = time.time()
        if now < self.next_at or not self.creator.ready:
            return                              # too soon, or its previous block is not back yet
        body = self.creator.next_block(Payload(EVENT, event=data))
        message = self.pool.sign(body, int(now) + EVENT_LIFETIME)
        async with await RawN2CClient.connect(self.follower.node.socket_path) as client:
            await client.handshake(TOPIC_MAGIC)
            if await client.submit(message.raw) == ACCEPT:
                self.creator.published(message.message_id)
                self.written.append(message.message_id)
                self.next_at = now + self.pace


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


async def until(condition, timeout: float, what: str, *, each=None, detail=None) -> None:
    deadline = trio.current_time() + timeout
    while not await condition():
        if trio.current_time() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}" + ("" if detail is None else f" ({detail()})"))
        if each is not None:
            await each()
        await trio.sleep(0.3)


def start(topic_nodes, tmp_path, name: str, signer: int, peers: list) -> object:
    """A node signing as ``signer``, dialling ``peers``; pools 0..7 hold stake."""
    (tmp_path / name).mkdir()
    document = topology_document([("127.0.0.1", n2n_port(p)) for p in peers])
    (tmp_path / name / "dmq.topology.json").write_text(json.dumps(document))
    return topic_nodes(name, carried=["raw", "blocklace"], signer=signer, pools=8)


async def test_epochs_advance_pruning_runs_and_a_late_joiner_syncs(topic_nodes, tmp_path):
    first = start(topic_nodes, tmp_path, "n0", 0, [])
    others = await start_in_threads([lambda i=i: start(topic_nodes, tmp_path, f"n{i}", i, [first])
                                     for i in ELECTORS[1:]])
    nodes = [first, *others]
    async with trio.open_nursery() as nursery:
        watcher = Follower(nodes[0])
        await nursery.start(watcher.run)
        author = Author(watcher)
        publishers = {pool(i).id: ALL for i in ELECTORS} | {pool(i).id: PERM_EVENT for i in AUTHORS}
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
        # Then the authors pause: epochs need new blocks to go by, and the electors keep their
        # budgets (one block per 25 s after a burst of 8) for what a late joiner asks of them.
        await until(lambda: _absent(nodes, oldest), 20, "the first event pruned everywhere")

        # a node with an empty database joins, receives its peers' kept blocks all at once and
        # asks for the anchors of the history they point into
        started: list = []

        async def join() -> None:
            started.extend(await start_in_threads([lambda: start(topic_nodes, tmp_path, "late", JOINER, nodes)]))

        nursery.start_soon(join)
        await until(lambda: _true(started), 60, "the late joiner started")
        joiner = started[0]
        late = Follower(joiner)
        await nursery.start(late.run)
        await until(lambda: _true(late.finals), 25, "the late joiner's checkpoint")
        checkpoint = late.finals[0]
        assert checkpoint >= 1             # a certificate, not genesis: the first epoch was pruned
        written = len(author.written)
        await until(lambda: _true(len(author.written) >= written + 3), 30, "events after the checkpoint", each=write)

        missing: list = []

        async def synced() -> bool:
            kept = {i for i, epoch in (await retained(nodes[0])).items() if epoch >= checkpoint}
            missing[:] = sorted(i.hex() for i in kept - set(late.delivered))
            return bool(kept) and not missing

        await until(synced, 25, "every block kept from the checkpoint on delivered by the late joiner",
                    detail=lambda: f"checkpoint {checkpoint}, not delivered: {missing}")
        assert len(late.delivered) == len(set(late.delivered)), "a block delivered twice"
        events = [i for i in author.written if i in late.delivered]
        assert events and all(late.epochs[i] >= checkpoint for i in events)
        assert oldest not in late.delivered
        # delivery starts at the checkpoint: below it only the anchors (an ad, a certificate)
        below = [i for i in late.delivered if late.epochs[i] < checkpoint]
        assert below and not set(below) & set(author.written)
        for node in (*nodes, joiner):
            node.check_running()
            assert_caught_up_cleanly(node)
        nursery.cancel_scope.cancel()


async def test_the_stake_rule_moves_on_with_blocks_a_pool_builds_itself(topic_nodes, tmp_path):
    """Under the stake rule a client cannot weigh a quorum (it has no stake snapshot): its
    PoolCreator takes the final epochs the node reports, so its events are in the current
    epoch, and the electors keep finding blocks of it to cut. Without that, the author's
    events stayed in epoch 0 and no epoch after the first became final."""
    first = start(topic_nodes, tmp_path, "n0", 0, [])
    others = await start_in_threads([lambda i=i: start(topic_nodes, tmp_path, f"n{i}", i, [first])
                                     for i in ELECTORS[1:]])
    async with trio.open_nursery() as nursery:
        watcher = Follower(first)
        await nursery.start(watcher.run)
        author = LibraryAuthor(watcher)
        publishers = {pool(i).id: ALL for i in ELECTORS} | {author.pool.id: PERM_EVENT}
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


async def _true(value) -> bool:
    return bool(value)


async def _absent(nodes, ident: bytes) -> bool:
    for node in nodes:
        node.check_running()
        if ident in await retained(node):
            return False
    return True


async def test_a_fresh_node_dialling_a_peer_that_holds_a_pools_history_delivers_all_of_it(topic_nodes, tmp_path):
    """A pool's 22 events, signed 25 s apart as its default budget allows after the first burst
    (expiries spread over ten minutes, as if written over ten minutes), all still alive at the
    loaded node; a node with an empty database dials it and receives them at once. Every block
    is accepted and delivered once: the budget counts signed times, not the burst of arrivals."""
    loaded = start(topic_nodes, tmp_path, "loaded", 0, [])
    async with trio.open_nursery() as nursery:
        watcher = Follower(loaded)
        await nursery.start(watcher.run)
        publishers = {pool(0).id: ALL, pool(AUTHORS[0]).id: PERM_EVENT}
        async with open_topic_connection(loaded.socket_path, TOPIC_MAGIC) as conn:
            await conn.ask(conn.topics.publish(draft_block(TOPIC, ad_payload(advertisement(0, publishers)))))
        await until(lambda: _true(watcher.delivered), 10, "the advertisement back")
        author = Author(watcher, authors=AUTHORS[:1], pace=0.0)
        first = int(time.time()) + 60
        await until(lambda: _true(len(author.written) == HISTORY), 60, "the pool's history written",
                    each=lambda: author.write(b"event %d" % len(author.written),
                                              first + HISTORY_SPACING * len(author.written)))
        held = set(watcher.delivered)
        assert len(held) == HISTORY + 1

        fresh = (await start_in_threads([lambda: start(topic_nodes, tmp_path, "fresh", 1, [loaded])]))[0]
        follower = Follower(fresh)
        await nursery.start(follower.run)
        await until(lambda: _true(set(follower.delivered) >= held), 30, "the fresh node delivered every block")
        assert len(follower.delivered) == len(set(follower.delivered)), "a block delivered twice"
        for node in (loaded, fresh):
            node.check_running()
            assert_caught_up_cleanly(node)
        nursery.cancel_scope.cancel()


async def test_a_partition_heals_and_each_side_delivers_the_blocks_of_the_other(topic_nodes, tmp_path):
    """``left`` and ``right`` reach each other only through ``bridge``. The bridge goes down;
    pool 4 writes its history through ``left`` and pool 5 through ``right``, each more blocks
    than a budget's burst, signed 25 s apart. The bridge comes back on its database: every
    node delivers every block once, nobody is disconnected, nothing is logged as an error."""
    left = start(topic_nodes, tmp_path, "left", 0, [])
    right = start(topic_nodes, tmp_path, "right", 1, [])
    bridge = start(topic_nodes, tmp_path, "bridge", 2, [left, right])
    async with trio.open_nursery() as nursery:
        followers = {"left": Follower(left), "right": Follower(right)}
        for follower in followers.values():
            await nursery.start(follower.run)
        publishers = {pool(0).id: ALL, pool(AUTHORS[0]).id: PERM_EVENT, pool(AUTHORS[1]).id: PERM_EVENT}
        async with open_topic_connection(left.socket_path, TOPIC_MAGIC) as conn:
            await conn.ask(conn.topics.publish(draft_block(TOPIC, ad_payload(advertisement(0, publishers)))))
        await until(lambda: _true(followers["right"].delivered), 20, "the advertisement across the bridge")

        bridge.kill(signal.SIGTERM)
        first = int(time.time()) + 60
        for side, author_pool in (("left", AUTHORS[0]), ("right", AUTHORS[1])):
            author = Author(followers[side], authors=(author_pool,), pace=0.0)
            await until(lambda: _true(len(author.written) == SIDE_HISTORY), 60, f"pool {author_pool}'s blocks",
                        each=lambda: author.write(b"side %d" % len(author.written),
                                                  first + HISTORY_SPACING * len(author.written)))
        assert len(followers["left"].delivered) == len(followers["right"].delivered) == SIDE_HISTORY + 1

        await trio.to_thread.run_sync(bridge.start)
        everything = set(followers["left"].delivered) | set(followers["right"].delivered)
        assert len(everything) == 2 * SIDE_HISTORY + 1
        for side, follower in followers.items():
            await until(lambda: _true(set(follower.delivered) >= everything), 30, f"{side} healed")
            assert len(follower.delivered) == len(set(follower.delivered)), "a block delivered twice"
        assert set((await retained(bridge)).keys()) == everything
        for node in (left, right, bridge):
            node.check_running()
            assert_caught_up_cleanly(node)
        nursery.cancel_scope.cancel()
