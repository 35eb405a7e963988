"""What the client puts on the wire, byte for byte, captured by a stand-in node on a Unix
socket: the handshake Pallas proposes, then exactly the local submission and notification
messages of docs/protocol/local-protocols.md 7 and 8 (and of ``vectors.json`` → ``wire_small``)."""

from __future__ import annotations

import pytest
import trio

from dmq.codec import build_message
from dmq.opcert import pool_id_bech32
from handshake.driver import run_server
from handshake.links import DMQ_NODE_TO_CLIENT, dmq_node_to_client_versions
from clients.mithril import (
    ConnectionLost,
    Consumer,
    HandshakeFailed,
    NodeUnreachable,
    Publisher,
    RegisterSignatureMessageDmq,
    UnreadableMessage,
    describe_result,
)
from miniprotocols.local_msg_submission import ACCEPTED, RejectInvalid, RejectOther
from ouroboros_mux.bearer import Bearer

from .support import DEVNET_MAGIC, at_eof, devnet_credentials, read_sdu, unix_listener, write_sdu

MAINNET_MAGIC = 2912307721
SUBMISSION, NOTIFICATION = 14, 15


def _propose(magic: int) -> bytes:
    return bytes.fromhex("8200a1191001821a") + magic.to_bytes(4, "big") + b"\xf4"


def _accept(magic: int) -> bytes:
    return bytes.fromhex("8301191001821a") + magic.to_bytes(4, "big") + b"\xf4"


@pytest.fixture(scope="module")
def messages(vectors):
    first, second = devnet_credentials()
    body = bytes.fromhex(vectors["mithril_body"]["body"])
    return [
        build_message(body, 0, 1_900_000_000, first.kes_key, first.opcert, first.cold_vk),
        build_message(bytes(range(120)), 3, 1_900_000_000, second.kes_key, second.opcert, second.cold_vk),
        build_message(body[:-1] + b"\x03", 1, 1_900_000_000, second.kes_key, second.opcert, second.cold_vk),
    ]


def test_the_handshake_bytes_are_the_vectors(vectors):
    assert _propose(MAINNET_MAGIC).hex() == vectors["wire_small"]["n2c_handshake_propose_mainnet"]
    assert _accept(MAINNET_MAGIC).hex() == vectors["wire_small"]["n2c_handshake_accept_mainnet"]
    assert _propose(DEVNET_MAGIC).hex() == "8200a1191001821a8000002af4"  # docs/protocol/handshake.md 4.8, devnet


async def _handshake(stream, magic: int) -> None:
    assert await read_sdu(stream) == (0x0000, _propose(magic))
    await write_sdu(stream, 0, _accept(magic))


@pytest.mark.parametrize("magic", [MAINNET_MAGIC, DEVNET_MAGIC])
async def test_publisher_sends_exactly_what_pallas_sends(tmp_path, vectors, messages, magic):
    path = tmp_path / "node.socket"
    listener = await unix_listener(path)
    message = messages[0]
    wire = vectors["wire_small"]
    verdict = []

    async def client():
        verdict.append(await Publisher(path, magic).submit(message.raw))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(client)
        stream = await listener.accept()
        await _handshake(stream, magic)
        assert await read_sdu(stream) == (SUBMISSION, b"\x82\x00" + message.raw)
        await write_sdu(stream, SUBMISSION, bytes.fromhex(wire["local_submission_accept"]))
        assert await read_sdu(stream) == (SUBMISSION, bytes.fromhex(wire["local_submission_done"]))
        assert await at_eof(stream)  # one connection per message: closed after MsgDone
    await listener.aclose()
    assert verdict == [ACCEPTED]


@pytest.mark.parametrize("reply, expected, text", [
    ("reject_invalid_InvalidSigId", RejectInvalid("InvalidSigId"), "rejected: invalid: InvalidSigId"),
    ("reject_already_received", None, "rejected: already received"),
    ("reject_expired", None, "rejected: expired"),
    ("reject_other_custom_error", RejectOther("custom error"), "rejected: other: custom error"),
])
async def test_publisher_returns_the_typed_reject_reason(tmp_path, vectors, messages, reply, expected, text):
    path = tmp_path / "node.socket"
    listener = await unix_listener(path)
    verdict = []

    async def client():
        verdict.append(await Publisher(path, DEVNET_MAGIC).submit(messages[1].raw))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(client)
        stream = await listener.accept()
        await _handshake(stream, DEVNET_MAGIC)
        await read_sdu(stream)
        await write_sdu(stream, SUBMISSION, bytes.fromhex(vectors["wire_small"][reply]))
        assert await read_sdu(stream) == (SUBMISSION, b"\x81\x03")
    await listener.aclose()
    assert describe_result(verdict[0]) == text
    if expected is not None:
        assert verdict[0] == expected


async def test_consumer_requests_blocking_deduplicates_and_reconnects(tmp_path, messages):
    path = tmp_path / "node.socket"
    listener = await unix_listener(path)
    m1, m2, m3 = messages
    pool_ids = [pool_id_bech32(m.pool_id) for m in messages]

    async with Consumer(path, DEVNET_MAGIC, reconnect_delay=0.2) as consumer:
        async with trio.open_nursery() as nursery:
            got: list = []

            async def consume():
                got.append(await consumer.consume())

            nursery.start_soon(consume)
            stream = await listener.accept()
            await _handshake(stream, DEVNET_MAGIC)
            assert await read_sdu(stream) == (NOTIFICATION, bytes.fromhex("8200f5"))
            await write_sdu(stream, NOTIFICATION, b"\x82\x02\x9f" + m1.raw + m2.raw + b"\xff")
        assert [(r.message.raw, r.party_id) for r in got[0]] == [(m1.raw, pool_ids[0]), (m2.raw, pool_ids[1])]

        # The node replays m1 (a reconnect or the reference's cursor): it is not delivered twice.
        async with trio.open_nursery() as nursery:
            got.clear()
            nursery.start_soon(consume)
            assert await read_sdu(stream) == (NOTIFICATION, bytes.fromhex("8200f5"))
            await write_sdu(stream, NOTIFICATION, b"\x82\x02\x9f" + m1.raw + m3.raw + b"\xff")
        assert [r.message.raw for r in got[0]] == [m3.raw]

        # The node goes away: the call fails, the connection is dropped, the next call
        # reconnects after the delay and handshakes again.
        async with trio.open_nursery() as nursery:
            nursery.start_soon(stream.aclose)
            with pytest.raises(ConnectionLost, match="connection lost"):
                await consumer.consume()
        failed_at = trio.current_time()
        async with trio.open_nursery() as nursery:
            got.clear()
            nursery.start_soon(consume)
            stream = await listener.accept()
            assert trio.current_time() - failed_at >= 0.2
            await _handshake(stream, DEVNET_MAGIC)
            assert await read_sdu(stream) == (NOTIFICATION, bytes.fromhex("8200f5"))
            await write_sdu(stream, NOTIFICATION, b"\x82\x02\x9f" + m1.raw + m2.raw + m3.raw + b"\xff")
        assert got[0] == []
        assert consumer.connections_opened == 2
    # Leaving the block ends the protocol politely: MsgClientDone, then the socket closes.
    assert await read_sdu(stream) == (NOTIFICATION, bytes.fromhex("8103"))
    assert await at_eof(stream)
    await listener.aclose()


async def test_a_cancelled_request_stays_outstanding(tmp_path, messages):
    path = tmp_path / "node.socket"
    listener = await unix_listener(path)
    async with Consumer(path, DEVNET_MAGIC) as consumer:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(consumer.consume)
            stream = await listener.accept()
            await _handshake(stream, DEVNET_MAGIC)
            assert await read_sdu(stream) == (NOTIFICATION, bytes.fromhex("8200f5"))
            nursery.cancel_scope.cancel()

        # The next call does not ask again (that would break the protocol): it takes the reply.
        async def node_replies_late():
            await trio.sleep(0.05)
            await write_sdu(stream, NOTIFICATION, b"\x82\x02\x9f" + messages[0].raw + b"\xff")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(node_replies_late)
            got = await consumer.consume()
        assert [r.message.raw for r in got] == [messages[0].raw]
    # Nothing else was sent in between: the next bytes are the goodbye.
    assert await read_sdu(stream) == (NOTIFICATION, bytes.fromhex("8103"))
    await listener.aclose()


async def test_a_body_that_does_not_parse_fails_the_batch(tmp_path, messages):
    path = tmp_path / "node.socket"
    listener = await unix_listener(path)
    streams = []

    async def node_sends(message):
        stream = await listener.accept()
        streams.append(stream)
        await _handshake(stream, DEVNET_MAGIC)
        assert await read_sdu(stream) == (NOTIFICATION, bytes.fromhex("8200f5"))
        await write_sdu(stream, NOTIFICATION, b"\x82\x02\x9f" + message.raw + b"\xff")

    async with Consumer(path, DEVNET_MAGIC, parse_body=RegisterSignatureMessageDmq.from_bytes,
                        reconnect_delay=0) as consumer:
        # messages[1] carries a body that is not a Mithril signature message.
        async with trio.open_nursery() as nursery:
            nursery.start_soon(node_sends, messages[1])
            with pytest.raises(UnreadableMessage, match="body does not parse"):
                await consumer.consume()
        assert not consumer.connected
        assert await at_eof(streams[0])  # dropped, as Mithril drops it
        async with trio.open_nursery() as nursery:
            nursery.start_soon(node_sends, messages[0])
            got = await consumer.consume()
        assert got[0].payload == RegisterSignatureMessageDmq.from_bytes(messages[0].body)
        assert consumer.connections_opened == 2
    await listener.aclose()


async def test_no_node_and_refused_handshakes(tmp_path):
    with pytest.raises(NodeUnreachable, match="absent.socket"):
        await Publisher(tmp_path / "absent.socket", DEVNET_MAGIC).submit(b"\x80")
    path = tmp_path / "node.socket"
    listener = await unix_listener(path)

    async def mainnet_node():
        stream = await listener.accept()
        with pytest.raises(Exception):
            await run_server(Bearer(stream), dmq_node_to_client_versions(MAINNET_MAGIC), DMQ_NODE_TO_CLIENT)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(mainnet_node)
        with pytest.raises(HandshakeFailed, match="mismatch.*proposed magic 2147483690"):
            await Publisher(path, DEVNET_MAGIC).submit(b"\x80")
    await listener.aclose()
