"""Keep-alive (12): bytes, limits, and the two peers."""

from __future__ import annotations

import random

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from miniprotocols.framework import DecoderFailure, Driver, ExceededSizeLimit, ExceededTimeLimit, ProtocolError, Role
from miniprotocols.framework import cbor_write as w
from miniprotocols.keep_alive import (
    INGRESS_LIMIT,
    KEEP_ALIVE,
    PROTOCOL_NUM,
    KeepAliveClient,
    KeepAliveCookieMismatch,
    KeepAliveState,
    MsgDone,
    MsgKeepAlive,
    MsgKeepAliveResponse,
    serve,
)
from ouroboros_mux.channel import ChannelClosed, memory_channel_pair

from .helpers import h

codec = KEEP_ALIVE.codec
ANY = KeepAliveState.CLIENT  # the keep-alive codec does not depend on the state


def test_constants_match_the_reference():
    assert PROTOCOL_NUM == 12 and INGRESS_LIMIT == 1408
    client_state, server_state = KEEP_ALIVE.states[KeepAliveState.CLIENT], KEEP_ALIVE.states[KeepAliveState.SERVER]
    assert (client_state.byte_limit, client_state.time_limit) == (65535, 97.0)
    assert (server_state.byte_limit, server_state.time_limit) == (65535, 60.0)


def test_wire_small_vectors(vectors):
    small = vectors["wire_small"]
    assert codec.encode(MsgKeepAlive(42)) == h(small["keep_alive_42"]) == h("8200182a")
    assert codec.encode(MsgKeepAliveResponse(42)) == h(small["keep_alive_response_42"]) == h("8201182a")
    assert codec.decode(ANY, h(small["keep_alive_42"])) == MsgKeepAlive(42)
    assert codec.decode(ANY, h(small["keep_alive_response_42"])) == MsgKeepAliveResponse(42)
    assert codec.encode(MsgDone()) == h("8102")
    assert codec.decode(ANY, h("8102")) == MsgDone()


@pytest.mark.parametrize("cookie, wire", [(0, "820000"), (23, "820017"), (24, "82001818"),
                                          (255, "820018ff"), (256, "8200190100"), (65535, "820019ffff")])
def test_cookie_encodings(cookie, wire):
    assert codec.encode(MsgKeepAlive(cookie)) == h(wire)
    assert codec.decode(ANY, h(wire)) == MsgKeepAlive(cookie)


@given(st.integers(0, 0xFFFF), st.sampled_from([MsgKeepAlive, MsgKeepAliveResponse]))
def test_round_trip(cookie, cls):
    message = cls(cookie)
    assert codec.decode(ANY, codec.encode(message)) == message


def test_cookie_is_a_word16():
    for bad in (-1, 0x10000):
        with pytest.raises(ValueError, match="word16"):
            MsgKeepAlive(bad)


@pytest.mark.parametrize("wire", [
    "8200",  # truncated
    "83000102",  # keep-alive with three items
    "82001a00010000",  # cookie above word16
    "820020",  # negative cookie
    "8200f5",  # cookie not an integer
    "820200",  # done with two items
    "8101",  # response without a cookie
    "8103",  # unknown tag
    "9f00182aff",  # indefinite outer array
    "8200182a00",  # trailing bytes
])
def test_malformed_messages_do_not_decode(wire):
    with pytest.raises(ValueError):
        codec.decode(ANY, h(wire))


# -- the two peers ----------------------------------------------------------------------
async def test_client_and_server_talk_over_memory_channels(autojump_clock):
    a, b = memory_channel_pair(PROTOCOL_NUM)
    seen = []
    server = Driver(b, KEEP_ALIVE, Role.SERVER, trace=seen.append)
    samples = []
    client = KeepAliveClient(a, interval=10.0, rng=random.Random(7), on_rtt=samples.append)
    expected_rng = random.Random(7)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve, server)
        nursery.start_soon(client.run)
        await trio.sleep(35)
        client.stop()
    # Pings at 0, 10, 20 and 30 s, then MsgDone at the stop.
    received = [e.message for e in seen if e.direction.value == "received"]
    assert received == [MsgKeepAlive(expected_rng.randrange(0x10000)) for _ in range(4)] + [MsgDone()]
    assert samples == [0.0] * 4 and client.rtt == 0.0
    assert server.done and client.driver.done


async def test_round_trip_time_is_measured_on_the_trio_clock(autojump_clock):
    a, b = memory_channel_pair(PROTOCOL_NUM)
    client = KeepAliveClient(a, rng=random.Random(1))

    async def slow_echo():
        raw = await b.recv_message()
        await trio.sleep(1.25)
        await b.send(h("8201") + raw[2:])  # same cookie bytes, response tag

    async with trio.open_nursery() as nursery:
        nursery.start_soon(slow_echo)
        assert await client.ping() == pytest.approx(1.25)
    assert client.rtt == pytest.approx(1.25)


async def test_cookie_mismatch_is_fatal():
    a, b = memory_channel_pair(PROTOCOL_NUM)
    client = KeepAliveClient(a, rng=random.Random(3))
    sent = random.Random(3).randrange(0x10000)
    wrong = (sent + 1) % 0x10000

    async def wrong_echo():
        await b.recv_message()
        await b.send(codec.encode(MsgKeepAliveResponse(wrong)))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wrong_echo)
        with pytest.raises(KeepAliveCookieMismatch) as info:
            await client.ping()
    assert (info.value.sent, info.value.received) == (sent, wrong)
    assert isinstance(info.value, ProtocolError)


async def test_client_waits_60_seconds_for_the_response(autojump_clock):
    a, b = memory_channel_pair(PROTOCOL_NUM)
    client = KeepAliveClient(a)
    started = trio.current_time()
    with pytest.raises(ExceededTimeLimit) as info:
        await client.ping()
    assert trio.current_time() - started == pytest.approx(60.0)
    assert info.value.state is KeepAliveState.SERVER


async def test_server_waits_97_seconds_for_the_next_keep_alive(autojump_clock):
    a, b = memory_channel_pair(PROTOCOL_NUM)
    await a.send(h("8200182a"))
    started = trio.current_time()
    with pytest.raises(ExceededTimeLimit) as info:
        await serve(b)
    assert trio.current_time() - started == pytest.approx(97.0)
    assert info.value.state is KeepAliveState.CLIENT
    assert await a.recv_message() == h("8201182a")


async def test_server_echoes_exact_bytes_and_ends_on_done():
    a, b = memory_channel_pair(PROTOCOL_NUM)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve, b)
        await a.send(h("8200182a"))
        assert await a.recv_message() == h("8201182a")
        await a.send(h("820019ffff") + h("8102"))  # two messages in one chunk
        assert await a.recv_message() == h("820119ffff")
    # serve returned after MsgDone


async def test_server_refuses_a_response_from_the_client():
    a, b = memory_channel_pair(PROTOCOL_NUM)
    await a.send(h("8201182a"))
    with pytest.raises(ProtocolError):
        await serve(b)


async def test_server_rejects_oversized_and_malformed_input():
    a, b = memory_channel_pair(PROTOCOL_NUM)
    await a.send(w.array_header(2) + w.uint(0) + w.head(2, 70_000) + bytes(70_000))
    with pytest.raises(ExceededSizeLimit) as info:
        await serve(b)
    assert info.value.limit == 65535
    a, b = memory_channel_pair(PROTOCOL_NUM)
    await a.send(h("82001a00010000"))
    with pytest.raises(DecoderFailure) as failure:
        await serve(b)
    assert failure.value.raw == h("82001a00010000")


async def test_server_end_of_stream_surfaces_as_channel_closed():
    a, b = memory_channel_pair(PROTOCOL_NUM)
    await a.aclose()
    with pytest.raises(ChannelClosed):
        await serve(b)


async def test_stop_before_the_first_ping_only_sends_done():
    a, b = memory_channel_pair(PROTOCOL_NUM)
    client = KeepAliveClient(a)
    client.stop()
    await client.run()
    assert await b.recv_message() == h("8102")
