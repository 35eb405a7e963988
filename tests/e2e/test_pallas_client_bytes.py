"""Client conformance: the byte sequences Pallas writes, and the node's exact answers.

The SDUs below are written out in full (header and payload) as a Pallas ``DmqClient``
puts them on the Unix socket: transmission time, ``M = 0`` + protocol number, length,
then the CBOR of one message. The node's SDUs are read raw: the handshake answer must come
on protocol 0 with ``M = 1`` (``8000``), submission replies on ``800e``, notification
replies on ``800f``, and the payloads must equal the reference's bytes.

Then the two Mithril patterns: a signer opens a connection for every message (50 in a
row here), an aggregator keeps one connection and only makes blocking requests.
"""

from __future__ import annotations

import trio

from ouroboros_mux.cbor import item_end
from tests.e2e.messages import DMQ_DEVNET_MAGIC as MAGIC, unique_body
from tests.e2e.raw_n2c import (
    ACCEPT,
    REPLY_NOTIFICATION,
    RawN2CClient,
    accept_version,
    blocking_reply,
    non_blocking_reply,
    publish_like_mithril_signer,
)

#: ``[0, {4097: [2147483690, false]}]`` in one SDU: time 0, protocol 0 from the initiator, 13 bytes.
PALLAS_PROPOSE_SDU = bytes.fromhex("00000000" "0000" "000d" "8200a1191001821a8000002af4")
#: The reference's answer: ``[1, 4097, [2147483690, false]]`` from the responder (``M = 1``), 12 bytes.
ACCEPT_HEADER_TAIL = bytes.fromhex("8000" "000c")
ACCEPT_PAYLOAD = bytes.fromhex("8301191001821a8000002af4")


def sdu_on(word_hex: str, payload: bytes) -> bytes:
    """An SDU with time 0, the given header word, and the payload's length."""
    return bytes.fromhex("00000000" + word_hex) + len(payload).to_bytes(2, "big") + payload


async def test_handshake_submit_notify_and_done_byte_for_byte(start_node, signers):
    node = start_node(flags=("--min-sig-delay", "0"))
    first, second = signers[0].sign(), signers[1].sign()
    async with await RawN2CClient.connect(node.socket_path) as client:
        await client.send(PALLAS_PROPOSE_SDU)
        answer = await client.read_sdu()
        assert answer.header[4:] == ACCEPT_HEADER_TAIL
        assert answer.payload == ACCEPT_PAYLOAD == accept_version(MAGIC)

        # Submission (14): [0, message] and its reply [1], each one SDU.
        await client.send(sdu_on("000e", b"\x82\x00" + first.raw))
        reply = await client.read_sdu()
        assert reply.header[4:] == bytes.fromhex("800e" "0002") and reply.payload == bytes.fromhex("8101")

        # Notification (15): non-blocking [0, false], blocking [0, true].
        await client.send(sdu_on("000f", bytes.fromhex("8200f4")))
        reply = await client.read_sdu()
        expected = b"\x83\x01\x9f" + first.raw + b"\xff\xf4"
        assert reply.header[4:6] == bytes.fromhex("800f") and reply.length == len(expected).to_bytes(2, "big")
        assert reply.payload == expected

        await client.send(sdu_on("000e", b"\x82\x00" + second.raw))
        assert (await client.read_sdu()).payload == bytes.fromhex("8101")
        await client.send(sdu_on("000f", bytes.fromhex("8200f5")))
        reply = await client.read_sdu()
        assert reply.header[4:6] == bytes.fromhex("800f")
        assert reply.payload == b"\x82\x02\x9f" + second.raw + b"\xff"

        await client.send(sdu_on("000f", bytes.fromhex("8200f4")))
        assert (await client.read_sdu()).payload == bytes.fromhex("83019ffff4")

        # MsgDone on both protocols: the node answers nothing and, as the reference (whose local
        # connections have no idle timeout), leaves the connection to the client, which may
        # start either protocol again: a new notification server begins at the mempool's start.
        await client.send(sdu_on("000e", bytes.fromhex("8103")) + sdu_on("000f", bytes.fromhex("8103")))
        with trio.fail_after(5):
            await client.send(sdu_on("000f", bytes.fromhex("8200f4")))
            reply = await client.read_sdu()
        assert reply.header[4:6] == bytes.fromhex("800f")
        assert reply.payload == b"\x83\x01\x9f" + first.raw + second.raw + b"\xff\xf4"


async def test_version_pallas_does_not_speak_is_refused_with_the_server_versions(start_node):
    """A Cardano node-to-client proposal (what Pallas sends on Windows): VersionMismatch [4097]."""
    node = start_node()
    async with await RawN2CClient.connect(node.socket_path) as client:
        await client.send(sdu_on("0000", bytes.fromhex("8200a1198010821a0000002af4")))
        refusal = await client.read_sdu()
        assert refusal.header[4:] == bytes.fromhex("8000" "0008")
        assert refusal.payload == bytes.fromhex("8202820081191001")
        with trio.fail_after(5):
            assert await client.read_until_closed() == b""


async def test_a_reply_longer_than_one_sdu_is_segmented_at_12288_bytes(start_node, signers):
    node = start_node(flags=("--min-sig-delay", "0"))
    sent = [signers[i % 2].sign(body=unique_body(2000)) for i in range(12)]
    for message in sent:
        assert await publish_like_mithril_signer(node.socket_path, MAGIC, message.raw) == ACCEPT
    async with await RawN2CClient.connect(node.socket_path) as client:
        assert await client.handshake(MAGIC) == accept_version(MAGIC)
        reply = await client.request(blocking=True)
    assert reply == blocking_reply([m.raw for m in sent])
    segments = client.sdus[1:]  # after the handshake answer
    assert len(segments) == -(-len(reply) // 12288) >= 3
    assert all(s.word == REPLY_NOTIFICATION for s in segments)
    assert [len(s.payload) for s in segments[:-1]] == [12288] * (len(segments) - 1)
    assert b"".join(s.payload for s in segments) == reply


async def test_mithril_signer_pattern_fifty_connections_in_a_row(start_node, signers):
    """New connection, handshake, [0, msg], [3], close: 50 times, every reply exactly 8101."""
    node = start_node(flags=("--min-sig-delay", "0"))
    sent = [signers[i % 2].sign() for i in range(50)]
    for message in sent:
        assert await publish_like_mithril_signer(node.socket_path, MAGIC, message.raw) == ACCEPT
    async with await RawN2CClient.connect(node.socket_path) as aggregator:
        assert await aggregator.handshake(MAGIC) == accept_version(MAGIC)
        assert await aggregator.request(blocking=True) == blocking_reply([m.raw for m in sent])
    assert len(node.trace_events("ConnectionOpened")) == 51
    assert all(e.get("error") is None for e in node.trace_events("ConnectionClosed")[1:])


def split_blocking_reply(reply: bytes) -> list[bytes]:
    """The raw messages of ``[2, [_ msg...]]``; exactly two items, indefinite non-empty list."""
    assert reply[:3] == b"\x82\x02\x9f" and reply[-1:] == b"\xff", reply[:3].hex()
    messages, pos = [], 3
    while pos < len(reply) - 1:
        end = item_end(reply, pos, len(reply))
        messages.append(reply[pos:end])
        pos = end
    assert messages
    return messages


async def test_mithril_aggregator_pattern_gets_everything_once_in_order(start_node, signers):
    """One connection, blocking requests only, while signers publish one connection each."""
    node = start_node(flags=("--min-sig-delay", "0"))
    sent = [signers[i % 2].sign() for i in range(40)]
    received: list[bytes] = []
    replies = 0

    async with await RawN2CClient.connect(node.socket_path) as aggregator:
        assert await aggregator.handshake(MAGIC) == accept_version(MAGIC)

        async def aggregate() -> None:
            nonlocal replies
            while len(received) < len(sent):
                received.extend(split_blocking_reply(await aggregator.request(blocking=True)))
                replies += 1

        async def publish() -> None:
            for i, message in enumerate(sent):
                assert await publish_like_mithril_signer(node.socket_path, MAGIC, message.raw) == ACCEPT
                if i % 8 == 0:
                    await trio.sleep(0.05)  # let the aggregator catch up, as between Mithril rounds

        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(aggregate)
                nursery.start_soon(publish)
        assert received == [m.raw for m in sent]
        assert replies > 1
        # Nothing is delivered twice: the cursor is past everything.
        await aggregator.send(sdu_on("000f", bytes.fromhex("8200f4")))
        assert (await aggregator.read_reply(REPLY_NOTIFICATION)) == non_blocking_reply([], False)
