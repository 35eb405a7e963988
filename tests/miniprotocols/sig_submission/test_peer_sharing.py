"""Peer sharing (13): the docs/protocol/node-to-node.md 9.6 bytes, the address encodings, limits, client and server."""

from __future__ import annotations

import ipaddress

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from miniprotocols.framework import CodecError, Driver, ExceededSizeLimit, ExceededTimeLimit, Role
from miniprotocols.peer_sharing import (
    BUSY_TIME_LIMIT,
    BYTE_LIMIT,
    INGRESS_LIMIT,
    MAX_PEERS_PER_REPLY,
    PEER_SHARING,
    PROTOCOL_NUM,
    MsgDone,
    MsgSharePeers,
    MsgShareRequest,
    PeerAddress,
    PeerSharingClient,
    PeerSharingState,
    serve,
)
from ouroboros_mux.cbor import CborError
from ouroboros_mux.channel import memory_channel_pair

from .helpers import h, run_together

codec = PEER_SHARING.codec
ANY = PeerSharingState.IDLE


def test_constants_match_the_reference():
    assert (PROTOCOL_NUM, INGRESS_LIMIT, BYTE_LIMIT, MAX_PEERS_PER_REPLY) == (13, 5760, 5760, 10)
    assert PEER_SHARING.states[PeerSharingState.BUSY].time_limit == BUSY_TIME_LIMIT == 60.0
    assert PEER_SHARING.states[PeerSharingState.IDLE].time_limit is None
    assert PEER_SHARING.states[PeerSharingState.IDLE].byte_limit == 5760


@pytest.mark.parametrize("message, wire", [
    (MsgShareRequest(5), "820005"),
    (MsgShareRequest(255), "820018ff"),
    (MsgSharePeers(()), "820180"),
    (MsgDone(), "8102"),
    # 127.0.0.1 is the uint 0x0100007f: the address bytes read little-endian, as the reference writes it.
    (MsgSharePeers((PeerAddress.of("127.0.0.1", 3141),)), "82019f 83001a0100007f190c45 ff"),
    (MsgSharePeers((PeerAddress.of("10.0.0.2", 1),)), "82019f 83001a0200000a01 ff"),
    (MsgSharePeers((PeerAddress.of("2001:db8::1", 3141),)), "82019f 8601 1a20010db8 00 00 01 190c45 ff"),
    (MsgSharePeers((PeerAddress.of("1.2.3.4", 80), PeerAddress.of("::ffff:1.2.3.4", 443))),
     "82019f 83001a040302011850 8601 00 00 19ffff 1a01020304 1901bb ff"),
])
def test_wire_bytes(message, wire):
    assert codec.encode(message) == h(wire)
    assert codec.decode(ANY, h(wire)) == message


def test_a_definite_non_empty_list_is_accepted():
    assert codec.decode(ANY, h("820181 83001a0100007f190c45")) == MsgSharePeers((PeerAddress.of("127.0.0.1", 3141),))
    assert codec.decode(ANY, h("82019fff")) == MsgSharePeers(())


@pytest.mark.parametrize("wire", [
    "82001901ff",  # amount above word8
    "820020",  # negative amount
    "820183001a0100007f190c45",  # the address without a list around it
    "82019f83021a0100007f190c45ff",  # unknown address kind
    "82019f84001a0100007f190c4500ff",  # IPv4 address of four items
    "82019f83001a0100007f1a00010000ff",  # port above word16
    "82019f83001b00000001000000001901ff",  # IPv4 word above word32
    "8103",  # unknown tag
    "820200",  # done with an item
    "8102 00",  # trailing bytes
])
def test_decoder_rejects(wire):
    with pytest.raises((CodecError, CborError)):
        codec.decode(ANY, h(wire))


addresses = st.one_of(
    st.integers(0, 2**32 - 1).map(ipaddress.IPv4Address),
    st.integers(0, 2**128 - 1).map(ipaddress.IPv6Address),
)


@given(st.lists(st.builds(PeerAddress, addresses, st.integers(0, 0xFFFF)), max_size=20))
def test_round_trip(peers):
    message = MsgSharePeers(tuple(peers))
    assert codec.decode(ANY, codec.encode(message)) == message


def test_only_addresses_travel():
    with pytest.raises(ValueError, match="IP addresses"):
        PeerAddress.of("relay.example.org", 3001)
    with pytest.raises(ValueError, match="word16"):
        PeerAddress.of("127.0.0.1", 65536)
    with pytest.raises(ValueError, match="word8"):
        MsgShareRequest(256)


KNOWN = [(f"10.0.0.{n}", 3000 + n) for n in range(1, 30)] + [("2001:db8::7", 3141)]


async def test_client_and_server(autojump_clock):
    a, b = memory_channel_pair(PROTOCOL_NUM)
    client = PeerSharingClient(a)
    asked = []

    def peers_for(amount):
        asked.append(amount)
        return KNOWN

    async def use():
        assert await client.request(3) == KNOWN[:3]
        assert await client.request(255) == KNOWN[:10]  # the reference shares at most 10
        assert await client.request(0) == []
        await client.done()

    await run_together(lambda: serve(b, peers_for), use)
    assert asked == [3, 10, 0]
    assert client.driver.done


async def test_the_server_may_look_peers_up_asynchronously(autojump_clock):
    a, b = memory_channel_pair(PROTOCOL_NUM)
    client = PeerSharingClient(a)

    async def peers_for(amount):
        await trio.sleep(1)
        return [("::1", 1)]

    async def use():
        assert await client.request(5) == [("::1", 1)]
        await client.done()

    await run_together(lambda: serve(b, peers_for), use)


async def test_the_client_waits_60_seconds_for_the_reply(autojump_clock):
    a, b = memory_channel_pair(PROTOCOL_NUM)
    client = PeerSharingClient(a)
    server = Driver(b, PEER_SHARING, Role.SERVER)

    async def slow_server():
        await server.recv()
        await trio.sleep_forever()

    with pytest.raises(ExceededTimeLimit) as info:
        await run_together(slow_server, lambda: client.request(5))
    assert info.value.limit == 60.0 and trio.current_time() == 60.0


async def test_a_reply_over_5760_bytes_is_refused():
    a, b = memory_channel_pair(PROTOCOL_NUM)
    client = PeerSharingClient(a)
    server = Driver(b, PEER_SHARING, Role.SERVER)
    many = tuple(PeerAddress(ipaddress.IPv6Address(bytes([0xF0 | n % 16]) * 16), 3141) for n in range(300))

    async def oversharing_server():
        await server.recv()
        await server.send(MsgSharePeers(many))

    assert len(codec.encode(MsgSharePeers(many))) > 5760
    with pytest.raises(ExceededSizeLimit) as info:
        await run_together(oversharing_server, lambda: client.request(255))
    assert info.value.limit == 5760
