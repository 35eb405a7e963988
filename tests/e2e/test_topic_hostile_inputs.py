"""No client or peer input ends a topic node: hostile bodies on every adapter path of a real
``dmq-node`` process, through protocols 1000 (publication), 14 (local submission) and 11
(node-to-node), each followed by a check that the process is alive and still serving.

The bodies are truncated, mistyped, huge, deeply nested, wrongly tagged, or well formed with
contents that reach far into an adapter (a stake-rule epoch proposal, a block pointing at an
unknown self-parent, blocks of creators that are not publishers or have no stake, carries of
garbage and of carries, JSON nested past Python's recursion limit). Whether each is accepted
or refused does not matter here (the adapters' own tests say which); what matters is that it
ends at most its own message or connection, and that a valid Mithril message is accepted and
delivered right after it.
"""

from __future__ import annotations

import time

import cbor2
import pytest
import trio

from clients.mithril import DmqClientError
from clients.topics import draft_block, open_topic_connection
from miniprotocols.sig_submission import Side
from dmq.diffusion.sig_submission import ServingPeer
from tests.dmq.diffusion.rogue import Rogue, open_side
from tests.e2e.raw_n2c import ACCEPT, ConnectionLost, RawN2CClient
from tests.miniprotocols.sig_submission.helpers import ListSigSource
from tests.topics.blocklace.world import ALL, TOPIC, ad_payload, advertisement, epoch_payload, event, pool
from topics.blocklace.codec import ACK, Block, Carry, Payload, TopicParams, encode_block, encode_carry
from topics.classify import TAG_RANGE, tag_head

from .topic_node import OPEN_BUDGETS, STAKE_EPOCH, TOPIC_MAGIC, n2n_port, topic_nodes  # noqa: F401 (a fixture)

pytestmark = pytest.mark.trio

RAW = 0
PEER_VERSION = 2
PROCESSED = {"MessageAccepted", "MessageRejected", "TopicDeferred", "TopicFailureContained"}


def expires() -> int:
    return int(time.time()) + 1700


def _padded(head: bytes, item: bytes, size: int = 120) -> bytes:
    body = head + item
    return body + bytes(max(0, size - len(body)))


def shapeless(tag: int) -> dict[str, bytes]:
    """Bodies with an adapter tag whose CBOR is broken or absurd, for every tag."""
    head = tag_head(tag)
    return {
        "truncated": head + b"\x84\x01\x00\x5a\xff\xff\xff\xff" + bytes(100),
        "wrong types": _padded(head, cbor2.dumps(["one", -1, {"a": [1.5]}, b"\0" * 100])),
        "huge array count": head + b"\x9b" + b"\xff" * 8 + bytes(100),
        "huge map count": head + b"\xbb" + b"\xff" * 8 + bytes(100),
        "deep nesting": head + b"\x81" * 1900 + b"\x00",
        "indefinite without break": head + b"\x9f" + b"\x01" * 100,
        "tags within tags": head + head * 600 + b"\x00",
        "big integers": _padded(head, cbor2.dumps([1, 2**64 - 1, [2**64 - 1] * 10, -2**64])),
        "unknown version and kind": _padded(head, cbor2.dumps([2, 99, b"x" * 100])),
        "trailing bytes": head + cbor2.dumps([1, 0, [], b"\0" * 100]) + b"\xff",
    }


def adapter_bodies() -> dict[str, bytes]:
    """Well-formed envelopes whose contents reach into each adapter."""
    key, sig = b"\x01" * 32, b"\0" * 64
    upsycle, dmsg = tag_head(38137), tag_head(38139)
    proposal = epoch_payload(number=1, attempt=0, ad_version=0, cut=(b"\x07" * 32,), stake_epoch=STAKE_EPOCH)
    inner_block = pool(1).sign(encode_block(Block(TOPIC, 0, 0, (), 0, event(b"carried"), ())), expires())
    return {
        "upsycle unicast, bad signature": upsycle + cbor2.dumps(
            [1, 0, [0, {"dst": key, "exp": 2**32 - 1, "src": key, "ttl": 2**32 - 1}, b"body" * 30, sig]]),
        "upsycle unknown message type": _padded(upsycle, cbor2.dumps([1, 0, [7, {}, b"", b""]])),
        "upsycle pull of 9 ids": upsycle + cbor2.dumps([1, 1, {0: key, 1: [b"\x02" * 32] * 9}]),
        "upsycle reissue of garbage": upsycle + cbor2.dumps([1, 2, [b"\0" * 32, b"\xff" * 200]]),
        "upsycle advertisement, absurd fields": upsycle + cbor2.dumps([1, 3, {
            "id": key, "addr": [9, b"", 70000], "svcs": {2**64 - 1: key}, "grps": [key] * 40,
            "rev": 2**64 - 1, "ttl": 0, "exp": 0, "sig": sig}]),
        "dmsg JSON nested past the recursion limit": dmsg + cbor2.dumps([1, 0, b"[" * 1790]),
        "dmsg JSON with absurd numbers": dmsg + cbor2.dumps(
            [1, 0, b'{"version":"0.0.1","sequence":1e999,"timestamp":' + b"9" * 400 + b',"static":null}']),
        "dmsg entry that is not UTF-8": dmsg + cbor2.dumps([1, 0, b"\xff\xfe" * 60]),
        "blocklace draft with a stake-rule proposal": draft_block(TOPIC, proposal),
        "blocklace pre-built stake-rule proposal": encode_block(Block(TOPIC, 1, 0, (b"\x07" * 32,), 0, proposal, ())),
        "blocklace block with an unknown self-parent": encode_block(
            Block(TOPIC, 5, 0, (b"\x09" * 32,), 1, Payload(ACK), ())),
        "blocklace proposal of attempt 15 naming no snapshot": draft_block(TOPIC, epoch_payload(
            number=1, attempt=15, ad_version=0, cut=(b"\x07" * 32,))),
        "blocklace carry of garbage": encode_carry(Carry(b"\0" * 32, b"\x82" * 200)),
        "blocklace carry of a carry": encode_carry(Carry(b"\0" * 32, pool(1).sign(
            encode_carry(Carry(b"\1" * 32, inner_block.raw)), expires()).raw)),
        "blocklace need of 17 ids": tag_head(38138) + cbor2.dumps([1, 1, {0: TOPIC, 1: [b"\x03" * 32] * 17}]),
        "blocklace proof notice of kind 9": tag_head(38138) + cbor2.dumps(
            [1, 3, {0: TOPIC, 1: 9, 2: b"x", 3: b"\0" * 32, 4: b"\1" * 32}]),
    }


def on_the_topic(ad: bytes) -> dict[str, bytes]:
    """Blocks that reach the closure checks of the topic the node holds (advertisement ``ad``)."""
    proposal = epoch_payload(number=1, attempt=0, ad_version=0, cut=(ad,), stake_epoch=STAKE_EPOCH)
    return {
        "blocklace draft of a stake-rule proposal on the advertisement": draft_block(TOPIC, proposal),
        "blocklace stake-rule proposal on the advertisement": encode_block(Block(TOPIC, 1, 0, (ad,), 0, proposal, ())),
        "blocklace first stake-rule proposal of a creator": encode_block(Block(TOPIC, 0, 0, (ad,), 0, proposal, ())),
        "blocklace block claiming the advertisement as its self-parent": encode_block(
            Block(TOPIC, 1, 0, (ad,), 0, event(b"not mine"), ())),
        "blocklace block of epoch 9 without a certificate": encode_block(
            Block(TOPIC, 0, 9, (ad,), 1, event(b"from the future"), ())),
    }


def hostile_bodies(ad: bytes) -> dict[str, bytes]:
    bodies = {f"{tag} {name}": body for tag in TAG_RANGE[:4] for name, body in shapeless(tag).items()}
    bodies.update(adapter_bodies())
    bodies.update(on_the_topic(ad))
    return bodies


class Client:
    """The three ways in, each reconnected when the node ended its connection."""

    def __init__(self, node, nursery) -> None:
        self.node = node
        self.nursery = nursery
        self.local: RawN2CClient | None = None
        self.source = ListSigSource()
        self.peer_port = n2n_port(node)
        self.peer_ended = trio.Event()

    async def publish(self, body: bytes) -> None:
        try:
            async with open_topic_connection(self.node.socket_path, TOPIC_MAGIC) as conn:
                await conn.ask(conn.topics.publish(body))
        except DmqClientError:
            pass                                   # refused, or the node ended this connection: allowed

    async def submit(self, raw: bytes) -> bytes | None:
        for _ in range(2):
            if self.local is None:
                self.local = await RawN2CClient.connect(self.node.socket_path)
                await self.local.handshake(TOPIC_MAGIC)
            try:
                return await self.local.submit(raw)
            except ConnectionLost:
                await self.local.aclose()
                self.local = None
        return None

    async def serve_to_node(self, raw: bytes, ident: bytes) -> None:
        """Offer ``raw`` to the node over protocol 11 and wait until it has dealt with it."""
        if self.peer_ended.is_set() or not hasattr(self, "rogue"):
            await self._connect_peer()
        self.source.append(raw)
        with trio.fail_after(10):
            while not self._processed(ident):
                if self.peer_ended.is_set():
                    return                         # the node ended the connection: allowed
                await trio.sleep(0.02)

    def _processed(self, ident: bytes) -> bool:
        text = ident.hex()
        return any(e.get("message_id") == text or text in e.get("subject", "")
                   for e in self.node.trace_events() if e.get("event") in PROCESSED)

    async def _connect_peer(self) -> None:
        self.peer_ended = trio.Event()
        ended = self.peer_ended
        started = trio.Event()

        async def run() -> None:
            try:
                async with Rogue(self.peer_port, PEER_VERSION, magic=TOPIC_MAGIC) as rogue:
                    self.rogue = rogue
                    await open_side(rogue, Side.SERVING)
                    serving = ServingPeer(rogue.dialect, rogue.channel(Side.SERVING), self.source,
                                          blocking_timeout=1.0, start_position=len(self.source.entries) - 1)
                    started.set()
                    await serving.run()
            except Exception:
                pass
            finally:
                started.set()
                ended.set()

        self.nursery.start_soon(run)
        await started.wait()


async def still_serving(client: Client, conn, sub_id: int, what: str) -> None:
    """The process runs, a valid Mithril message is accepted on protocol 14 and delivered."""
    client.node.check_running()
    message = pool(3).sign(b"\x00\x70" + what.encode()[:110].ljust(112, b"."), expires())
    try:
        verdict = await client.submit(message.raw)
    except (OSError, trio.BrokenResourceError):
        for _ in range(50):                    # a node that died says so, with its last words
            await trio.sleep(0.1)
            client.node.check_running()
        raise
    assert verdict == ACCEPT, f"after {what}"
    with trio.fail_after(10):
        while True:
            reply = await conn.ask(conn.topics.next(blocking=True, max_items=10))
            if any(message.raw in raw for raw in reply.items):
                return


#: This test sends every hostile body from a few pools within seconds: what it checks is that the
#: node goes on serving, not the pools' budgets, so it opens them (OPEN_BUDGETS).


async def test_hostile_bodies_on_every_path_leave_the_node_serving(topic_nodes):
    node = topic_nodes(**OPEN_BUDGETS)
    async with trio.open_nursery() as nursery:
        client = Client(node, nursery)
        async with open_topic_connection(node.socket_path, TOPIC_MAGIC) as conn:
            sub = await conn.ask(conn.topics.subscribe([{0: RAW}], 0))
            # A topic whose quorum is weighed by stake, so that proposals reach the stake view.
            ad = advertisement(0, {pool(i).id: ALL for i in range(3)}, TopicParams(quorum=(1, 2, 3)))
            ad_id = (await conn.ask(conn.topics.publish(draft_block(TOPIC, ad_payload(ad))))).dmq_id
            await still_serving(client, conn, sub.sub_id, "the advertisement")
            for name, body in hostile_bodies(ad_id).items():
                await client.publish(body)
                await still_serving(client, conn, sub.sub_id, f"publishing {name}")
                if not 90 <= len(body) <= 2000:
                    continue                       # not a DMQ body: the core's decoder refuses it
                # Pools 1 and 2 publish on the topic, pool 3 has stake but no permission, pool 9
                # no stake at all. The DMQ id covers the body and expiresAt, not the pool: each
                # signer's copy expires at its own time, so that none duplicates another.
                for signer in (1, 3, 9):
                    await client.submit(pool(signer).sign(body, expires() - 100 * signer).raw)
                await still_serving(client, conn, sub.sub_id, f"submitting {name}")
                offered = pool(2).sign(body, expires() - 200)
                await client.serve_to_node(offered.raw, offered.message_id)
                await still_serving(client, conn, sub.sub_id, f"offering {name} from a peer")
        nursery.cancel_scope.cancel()
    node.check_running()
