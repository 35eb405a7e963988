"""Local message notification (15): the bytes of docs/protocol/local-protocols.md 8, the server's batching over a
message source, and the client."""

from __future__ import annotations

import cbor2
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from miniprotocols.framework import DecoderFailure, ProtocolViolation
from miniprotocols.local_msg_notification import (
    LOCAL_MSG_NOTIFICATION,
    MAX_MESSAGES_PER_REPLY,
    PROTOCOL_NUM,
    LocalMsgNotificationClient,
    LocalNotificationState,
    MsgClientDone,
    MsgReplyMessagesBlocking,
    MsgReplyMessagesNonBlocking,
    MsgRequestMessages,
    SourceContractError,
    serve,
)
from ouroboros_mux.channel import memory_channel_pair

from .helpers import ListSource, h, raw_messages

codec = LOCAL_MSG_NOTIFICATION.codec
IDLE = LocalNotificationState.IDLE
BLOCKING = LocalNotificationState.BUSY_BLOCKING
NON_BLOCKING = LocalNotificationState.BUSY_NON_BLOCKING


@pytest.fixture
def message(vectors) -> bytes:
    return h(vectors["pallas_real_bytes_negative"]["new_format"])


def numbered(n: int) -> list[bytes]:
    """Distinct small CBOR items: [i] for i in range(n)."""
    return [cbor2.dumps([i]) for i in range(n)]


def test_no_limits_on_node_to_client():
    assert PROTOCOL_NUM == 15 and MAX_MESSAGES_PER_REPLY == 1000
    for state in LOCAL_MSG_NOTIFICATION.states.values():
        assert state.byte_limit is None and state.time_limit is None


def test_wire_small_vectors(vectors):
    small = vectors["wire_small"]
    cases = [
        ("notification_request_nonblocking", IDLE, MsgRequestMessages(False)),
        ("notification_request_blocking", IDLE, MsgRequestMessages(True)),
        ("notification_reply_nonblocking_empty", NON_BLOCKING, MsgReplyMessagesNonBlocking((), False)),
        ("notification_client_done", IDLE, MsgClientDone()),
    ]
    for key, state, msg in cases:
        assert codec.encode(msg) == h(small[key]), key
        assert codec.decode(state, h(small[key])) == msg, key


def test_one_message_replies_splice_the_raw_bytes(message):
    blocking = codec.encode(MsgReplyMessagesBlocking((message,)))
    assert blocking == h("82029f") + message + h("ff")
    non_blocking = codec.encode(MsgReplyMessagesNonBlocking((message,), False))
    assert non_blocking == h("83019f") + message + h("fff4")
    assert codec.encode(MsgReplyMessagesNonBlocking((message,), True)) == h("83019f") + message + h("fff5")
    assert codec.decode(BLOCKING, blocking) == MsgReplyMessagesBlocking((message,))
    assert codec.decode(NON_BLOCKING, non_blocking) == MsgReplyMessagesNonBlocking((message,), False)


def test_definite_lists_in_replies_are_accepted_leniently(message):
    assert codec.decode(BLOCKING, h("820281") + message) == MsgReplyMessagesBlocking((message,))
    assert codec.decode(NON_BLOCKING, h("830182") + message + message + h("f5")) == \
        MsgReplyMessagesNonBlocking((message, message), True)
    assert codec.decode(NON_BLOCKING, h("830180f4")) == MsgReplyMessagesNonBlocking((), False)


@pytest.mark.parametrize("wire", ["82029fff", "820280"])
def test_empty_blocking_reply_does_not_decode(wire):
    with pytest.raises(ValueError, match="empty"):
        codec.decode(BLOCKING, h(wire))
    with pytest.raises(ValueError):
        MsgReplyMessagesBlocking(())


@pytest.mark.parametrize("wire", [
    "820001",  # isBlocking not a bool
    "9f00f5ff",  # indefinite outer array
    "8300f500",  # request with three items
    "8100",  # request without the flag
    "83029f01fff4",  # blocking reply with hasMore (the reference dropped it)
    "82019fff",  # non-blocking reply without hasMore
    "83019ffff6",  # hasMore not a bool
    "8203",  # truncated
    "820300",  # client done with two items
    "8104",  # unknown tag
])
def test_malformed_messages_do_not_decode(wire):
    with pytest.raises(ValueError):
        codec.decode(IDLE, h(wire))


@given(st.one_of(
    st.booleans().map(MsgRequestMessages),
    st.builds(MsgReplyMessagesNonBlocking, st.lists(raw_messages, max_size=5).map(tuple), st.booleans()),
    st.lists(raw_messages, min_size=1, max_size=5).map(tuple).map(MsgReplyMessagesBlocking),
    st.just(MsgClientDone()),
))
def test_round_trip(msg):
    assert codec.decode(IDLE, codec.encode(msg)) == msg


# -- server ---------------------------------------------------------------------------
async def test_server_fed_pallas_requests_replies_exact_bytes(message):
    client_end, server_end = memory_channel_pair(PROTOCOL_NUM)
    source = ListSource([message])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve, server_end, source)
        await client_end.send(h("8200f5"))
        assert await client_end.recv_message() == h("82029f") + message + h("ff")
        await client_end.send(h("8200f4"))
        assert await client_end.recv_message() == h("83019ffff4")
        source.append(message)
        await client_end.send(h("8200f4"))
        assert await client_end.recv_message() == h("83019f") + message + h("fff4")
        await client_end.send(h("8103"))
    assert source.calls == [(True, 1000), (False, 1000), (False, 1000)]


async def test_at_most_1000_messages_per_reply():
    log = numbered(2500)
    client_end, server_end = memory_channel_pair(PROTOCOL_NUM)
    client = LocalMsgNotificationClient(client_end)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve, server_end, ListSource(log))
        first, more1 = await client.request(False)
        second, more2 = await client.request(False)
        third, more3 = await client.request(False)
        empty, more4 = await client.request(False)
        await client.done()
    assert [len(first), len(second), len(third), len(empty)] == [1000, 1000, 500, 0]
    assert [more1, more2, more3, more4] == [True, True, False, False]
    assert list(first + second + third) == log


async def test_blocking_request_waits_for_a_message(autojump_clock, message):
    client_end, server_end = memory_channel_pair(PROTOCOL_NUM)
    client = LocalMsgNotificationClient(client_end)
    source = ListSource()

    async def publish_later():
        await trio.sleep(42)
        source.append(message)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve, server_end, source)
        nursery.start_soon(publish_later)
        started = trio.current_time()
        assert await client.request(True) == ((message,), False)
        assert trio.current_time() - started == pytest.approx(42)
        await client.done()


async def test_blocking_reply_carries_up_to_the_limit():
    client_end, server_end = memory_channel_pair(PROTOCOL_NUM)
    client = LocalMsgNotificationClient(client_end)
    log = numbered(1001)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve, server_end, ListSource(log))
        batch, more = await client.request(True)
        assert (len(batch), more) == (1000, False)  # blocking replies have no flag
        assert await client.request(True) == ((log[-1],), False)
        await client.done()


async def test_source_breaking_its_contract_is_reported():
    class EmptyBlocking:
        async def next_batch(self, blocking, limit):
            return [], False

    client_end, server_end = memory_channel_pair(PROTOCOL_NUM)
    await client_end.send(h("8200f5"))
    with pytest.raises(SourceContractError, match="blocking"):
        await serve(server_end, EmptyBlocking())

    class TooMany:
        async def next_batch(self, blocking, limit):
            return numbered(limit + 1), False

    client_end, server_end = memory_channel_pair(PROTOCOL_NUM)
    await client_end.send(h("8200f4"))
    with pytest.raises(SourceContractError, match="1001"):
        await serve(server_end, TooMany())


async def test_end_of_stream_is_a_normal_end():
    client_end, server_end = memory_channel_pair(PROTOCOL_NUM)
    await client_end.send(h("8200f4"))
    await client_end.aclose()
    await serve(server_end, ListSource())


async def test_client_message_out_of_turn_is_a_violation():
    client_end, server_end = memory_channel_pair(PROTOCOL_NUM)
    await client_end.send(h("83019ffff4"))
    with pytest.raises(ProtocolViolation):
        await serve(server_end, ListSource())


# -- client ---------------------------------------------------------------------------
async def test_client_refuses_an_empty_blocking_reply():
    client_end, server_end = memory_channel_pair(PROTOCOL_NUM)
    client = LocalMsgNotificationClient(client_end)

    async def empty_reply():
        assert await server_end.recv_message() == h("8200f5")
        await server_end.send(h("82029fff"))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(empty_reply)
        with pytest.raises(DecoderFailure) as info:
            await client.request(True)
    assert info.value.raw == h("82029fff") and info.value.state is BLOCKING


async def test_client_refuses_a_reply_of_the_other_kind():
    client_end, server_end = memory_channel_pair(PROTOCOL_NUM)
    client = LocalMsgNotificationClient(client_end)

    async def wrong_reply():
        await server_end.recv_message()
        await server_end.send(h("83019ffff4"))  # a non-blocking reply to a blocking request

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wrong_reply)
        with pytest.raises(ProtocolViolation):
            await client.request(True)


async def test_client_accepts_a_definite_list_reply(message):
    client_end, server_end = memory_channel_pair(PROTOCOL_NUM)
    client = LocalMsgNotificationClient(client_end)

    async def definite_reply():
        await server_end.recv_message()
        await server_end.send(h("830181") + message + h("f5"))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(definite_reply)
        assert await client.request(False) == ((message,), True)
