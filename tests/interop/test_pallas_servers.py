"""The project's Mithril client library against pallas-network's own servers.

pallas-network 1.x has servers for protocols 14 and 15 (``DmqServer``; Mithril's relay builds
on them). The harness runs one on a Unix socket: whatever :class:`Publisher` and
:class:`Consumer` send is decoded by pallas's codecs, and the harness reports what pallas
decoded (field by field, and pallas's own encoding of it). The verdicts and notifications
it sends back are pallas's encodings, which the library must read.
"""

from __future__ import annotations

import pytest
import trio

from clients.mithril import Consumer, Publisher
from clients.mithril.connection import open_local_connection
from miniprotocols.local_msg_submission import (
    ACCEPTED,
    RejectAlreadyReceived,
    RejectExpired,
    RejectInvalid,
    RejectOther,
)
from tests.e2e.messages import DMQ_DEVNET_MAGIC as MAGIC
from tests.interop.pallas_harness import HarnessProcess

pytestmark = pytest.mark.interop

VERSION = "1"


def pallas_server(program, socket, *args: str) -> HarnessProcess:
    server = HarnessProcess(program, VERSION, "server", "--socket", str(socket), "--magic", str(MAGIC), *args)
    server.wait_for(lambda e: e["event"] == "listening")
    return server


def decoded_fields(message) -> dict:
    """What pallas should have decoded from ``message`` (a :class:`DmqMessage`)."""
    return {
        "layout": "current", "cbor": message.raw.hex(), "msg_id": message.message_id.hex(),
        "body": message.body.hex(), "kes_period": message.kes_period, "expires_at": message.expires_at,
        "kes_signature": message.kes_signature.hex(), "cold_vk": message.cold_vk.hex(),
        "opcert": {"kes_vk": message.opcert.hot_vk.hex(), "issue_number": message.opcert.issue_number,
                   "start_kes_period": message.opcert.start_kes_period,
                   "cert_sig": message.opcert.cold_signature.hex()},
    }


async def test_publisher_bytes_decode_in_pallas_and_every_pallas_verdict_reads_back(pallas_harness, tmp_path, signers):
    replies = ["accepted", "invalid:InvalidKESSignature (KESPeriod 0) (KESPeriod 3) \"Reject\"", "already-received",
               "expired", "other:\"custom\"", "accepted"]
    expected = [ACCEPTED, RejectInvalid('InvalidKESSignature (KESPeriod 0) (KESPeriod 3) "Reject"'),
                RejectAlreadyReceived(), RejectExpired(), RejectOther('"custom"')]
    socket = tmp_path / "pallas.socket"
    messages = [signers[i % 2].sign() for i in range(len(replies))]
    with pallas_server(pallas_harness, socket, *[arg for spec in replies for arg in ("--verdict", spec)]) as server:
        publisher = Publisher(socket, MAGIC)
        verdicts = [await publisher.submit(message.raw) for message in messages[:-1]]
        assert verdicts == expected
        # MsgDone as pallas decodes it: on the last connection the socket stays open until pallas has
        # reported it. (The publisher closes right after MsgDone, which pallas may not read first:
        # below.)
        async with open_local_connection(socket, MAGIC) as connection:
            assert await connection.submission.submit(messages[-1].raw) == ACCEPTED
            await connection.submission.done()
            await trio.to_thread.run_sync(lambda: server.wait_for(lambda e: e["event"] == "done"))
        submitted = await trio.to_thread.run_sync(
            lambda: server.wait_for(lambda e: e["event"] == "submit", count=len(messages)))
        # One connection per message, each closed with MsgDone. The publisher closes its socket right
        # after MsgDone, and pallas's demultiplexer may see the end of the stream before its
        # submission server has read the MsgDone queued ahead of it (it then reports the protocol
        # ended, not done): every connection must end one way or the other, and pallas must have
        # decoded MsgDone, the same two bytes on each, at least once. Which of the connection's
        # protocols pallas reports as ended first (submission, or the idle notification server)
        # depends on which of its agents notices the end of the stream first: the first end of
        # each connection counts.
        def first_end(event):
            if event["event"] not in ("done", "ended"):
                return False
            return event is next(e for e in server.events
                                 if e["event"] in ("done", "ended") and e.get("connection") == event.get("connection"))

        ends = await trio.to_thread.run_sync(lambda: server.wait_for(first_end, count=len(messages)))
        assert sorted(e["connection"] for e in ends) == sorted({e["connection"] for e in submitted})
    for event, message in zip(submitted, messages):
        assert {key: event[key] for key in decoded_fields(message)} == decoded_fields(message)
    assert len({event["connection"] for event in submitted}) == len(messages)
    assert server.of_kind("error") == []


async def test_consumer_reads_pallas_non_blocking_notifications(pallas_harness, tmp_path, signers):
    messages = [signers[i % 2].sign() for i in range(3)]
    socket = tmp_path / "pallas.socket"
    with pallas_server(pallas_harness, socket, *[arg for m in messages for arg in ("--notify", m.raw.hex())]) as server:
        async with Consumer(socket, MAGIC, reconnect_delay=0) as consumer:
            with trio.fail_after(20):
                polled, has_more = await consumer.poll()
                assert ([item.message.raw for item in polled], has_more) == ([m.raw for m in messages], False)
                assert await consumer.poll() == ([], False)
        replies = await trio.to_thread.run_sync(lambda: server.wait_for(lambda e: e["event"] == "replied", count=2))
    # ``[1, [_ M...], false]``: pallas writes exactly what the node writes.
    assert replies[0]["wire"] == "83019f" + "".join(m.raw.hex() for m in messages) + "fff4"
    assert [e["blocking"] for e in server.of_kind("request")] == [False, False]


async def test_pallas_blocking_reply_declares_three_items_and_the_consumer_waits_for_the_third(
        pallas_harness, tmp_path, signers):
    """pallas 1.x encodes MsgReplyMessagesBlocking as ``array(3)`` holding two items (its own
    client reads positionally and never notices). The library honours the declared length,
    as the reference's decoder does, so a blocking request to a pallas-based server (such as
    Mithril's relay) is never answered as far as the library can tell."""
    message = signers[0].sign()
    socket = tmp_path / "pallas.socket"
    with pallas_server(pallas_harness, socket, "--notify", message.raw.hex()) as server:
        async with Consumer(socket, MAGIC, reconnect_delay=0) as consumer:
            with trio.move_on_after(1.5) as waiting:
                await consumer.consume()
        assert waiting.cancelled_caught
        [reply] = await trio.to_thread.run_sync(lambda: server.wait_for(lambda e: e["event"] == "replied"))
    assert reply["blocking"] and reply["messages"] == 1
    assert reply["wire"] == "83029f" + message.raw.hex() + "ff"
