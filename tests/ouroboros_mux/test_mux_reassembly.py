"""Any segmentation of any message sequence, on any interleaving of channels, reassembles exactly."""

from __future__ import annotations

import cbor2
import pytest
import trio
import trio.testing
from hypothesis import given, settings, strategies as st

from ouroboros_mux.bearer import Bearer
from ouroboros_mux.channel import ChannelClosed, MalformedMessage, MessageTooLarge
from ouroboros_mux.errors import IngressQueueOverRun
from ouroboros_mux.mux import Mode, Mux, Provenance
from ouroboros_mux.sdu import MAX_SDU_PAYLOAD

from .cbor_messages import big_bytes, messages
from .streams import raw_sdu, tcp_stream_pair, unix_stream_pair

#: Our side's channels: duplex 11, responder 12, initiator 13.
CHANNELS = [(11, Mode.INITIATOR), (11, Mode.RESPONDER), (12, Mode.RESPONDER), (13, Mode.INITIATOR)]
LIMIT = 4_000_000


def _split(data: st.DataObject, blob: bytes, max_size: int) -> list[bytes]:
    """Cut ``blob`` at random points into pieces of 1..max_size bytes."""
    if not blob:
        return []
    cuts = set(data.draw(st.lists(st.integers(1, max(1, len(blob) - 1)), max_size=12)))
    cuts.update(range(max_size, len(blob), max_size))
    points = [0, *sorted(c for c in cuts if 0 < c < len(blob)), len(blob)]
    pieces = [blob[a:b] for a, b in zip(points, points[1:])]
    # A random cut may still leave a piece above the limit next to a forced one: split again.
    return [p[i:i + max_size] for p in pieces for i in range(0, len(p), max_size)]


@settings(max_examples=40, deadline=None)
@given(st.data())
async def test_any_segmentation_and_interleaving_reassembles(data):
    streams = {key: data.draw(st.lists(messages, max_size=5), label=f"messages {key}") for key in CHANNELS}
    for sequence in streams.values():
        for message in sequence:
            cbor2.loads(message)  # the generator only makes well-formed CBOR
    payloads = {key: _split(data, b"".join(msgs), MAX_SDU_PAYLOAD) for key, msgs in streams.items()}
    order = data.draw(st.permutations([key for key in CHANNELS for _ in payloads[key]]), label="interleaving")
    cursor = {key: iter(payloads[key]) for key in CHANNELS}
    # Our initiator instances receive M = 1 SDUs, our responder instances M = 0.
    wire = b"".join(raw_sdu(num, mode is Mode.INITIATOR, next(cursor[(num, mode)])) for num, mode in order)
    socket_writes = _split(data, wire, 200_000)

    peer, ours = trio.testing.memory_stream_pair()
    mux = Mux(Bearer(ours), Provenance.OUTBOUND)
    channels = {key: mux.register(*key, LIMIT) for key in CHANNELS}
    received = {}

    async def protocol(key):
        channel = channels[key]
        got = []
        for _ in streams[key]:
            got.append(await channel.recv_message())
        received[key] = got
        channel.finish()

    async def peer_sends():
        for chunk in socket_writes:
            await peer.send_all(chunk)
        async with trio.open_nursery() as waiting:
            for key in CHANNELS:
                waiting.start_soon(protocol, key)
        await peer.aclose()

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer_sends)
            await mux.run()  # clean: every protocol finished before the peer closed

    assert received == streams
    for key, channel in channels.items():
        assert channel.queued_in == 0
        sizes = [len(p) for p in payloads[key]]
        assert channel.counters().bytes_in == sum(sizes) + 8 * len(sizes)
        assert channel.counters().sdus_in == len(sizes)
    assert sum(c.bytes_in for c in mux.counters().values()) == len(wire) == mux.bearer.bytes_in


async def test_one_sdu_holds_the_tail_of_one_message_and_the_head_of_the_next():
    first, second, third = bytes.fromhex("820102"), bytes.fromhex("9f0102ff"), bytes.fromhex("a1016161")
    stream = first + second + third
    peer, ours = trio.testing.memory_stream_pair()
    mux = Mux(Bearer(ours), Provenance.INBOUND)
    channel = mux.register(11, Mode.RESPONDER, 100)
    await peer.send_all(raw_sdu(11, False, stream[:2]) + raw_sdu(11, False, stream[2:5])
                        + raw_sdu(11, False, stream[5:]))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(mux.run)
        assert [await channel.recv_message() for _ in range(3)] == [first, second, third]
        channel.finish()
        mux.stop()


async def test_waiting_for_a_message_leaves_it_queued_for_the_next_receive():
    """``wait_message`` (a protocol started on demand waits so for its peer's first message) returns
    once a message is whole, leaves it queued and counted, and the next receive, waiting or not,
    returns exactly it and then what followed; a message over the limit raises as a receive would."""
    first, second = bytes.fromhex("9f0102ff"), bytes.fromhex("820304")
    peer, ours = trio.testing.memory_stream_pair()
    mux = Mux(Bearer(ours), Provenance.INBOUND)
    channel = mux.register(11, Mode.RESPONDER, 100)
    other = mux.register(12, Mode.RESPONDER, 100)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(mux.run)
        waited = []

        async def wait():
            await channel.wait_message(10)
            waited.append(channel.queued_in)

        nursery.start_soon(wait)
        await peer.send_all(raw_sdu(11, False, first[:2]))
        await trio.testing.wait_all_tasks_blocked()
        assert waited == []  # not whole yet
        await peer.send_all(raw_sdu(11, False, first[2:] + second[:1]))
        await trio.testing.wait_all_tasks_blocked()
        assert waited == [len(first) + 1]  # the message and the start of the next, still queued
        assert channel.take_message() == first
        await peer.send_all(raw_sdu(11, False, second[1:]))
        await channel.wait_message()
        assert await channel.recv_message() == second and channel.queued_in == 0

        await peer.send_all(raw_sdu(12, False, bytes.fromhex("5820") + bytes(32)))
        with pytest.raises(MessageTooLarge):
            await other.wait_message(20)
        with pytest.raises(MessageTooLarge):
            await other.recv_message(20)
        mux.stop()


async def test_undecodable_bytes_raise_malformed_and_stay_queued():
    peer, ours = trio.testing.memory_stream_pair()
    mux = Mux(Bearer(ours), Provenance.INBOUND)
    channel = mux.register(14, Mode.RESPONDER, 0xFFFFFFFF)
    other = mux.register(15, Mode.RESPONDER, 0xFFFFFFFF)
    await peer.send_all(raw_sdu(14, False, b"\x81\x01\xff\x00") + raw_sdu(15, False, b"\x80"))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(mux.run)
        assert await channel.recv_message() == b"\x81\x01"
        for _ in range(2):
            with pytest.raises(MalformedMessage, match="unexpected break"):
                await channel.recv_message()
        assert channel.queued_in == 2
        assert await other.recv_message() == b"\x80"  # the mux itself carries on: the protocol decides
        assert mux.running
        mux.stop()
    assert channel.closed and other.closed


async def _mux_to_mux(client_stream, server_stream):
    """Two real muxes: duplex 11 and 12 on both sides, messages flowing every way at once."""
    client = Mux(Bearer(client_stream), Provenance.OUTBOUND)
    server = Mux(Bearer(server_stream), Provenance.INBOUND)
    pairs = []
    for num in (11, 12):
        for mode, opposite in ((Mode.INITIATOR, Mode.RESPONDER), (Mode.RESPONDER, Mode.INITIATOR)):
            pairs.append((client.register(num, mode, LIMIT), server.register(num, opposite, LIMIT)))
    sizes = [1, 100, 12287, 12288, 12289, 70_000, 5]

    async def one_way(sender, receiver, salt):
        sent = [big_bytes(n + salt) for n in sizes]
        for message in sent:
            await sender.send(message)
        for message in sent:
            assert await receiver.recv_message() == message
        receiver.finish()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(client.run)
        nursery.start_soon(server.run)
        async with trio.open_nursery() as flows:
            for salt, (ours, theirs) in enumerate(pairs):
                flows.start_soon(one_way, ours, theirs, salt)
                flows.start_soon(one_way, theirs, ours, salt + 10)
        client.stop()
    assert client.error is None and server.error is None
    out = client.counters()
    inn = server.counters()
    for (num, mode), counters in out.items():
        peer_mode = Mode.RESPONDER if mode is Mode.INITIATOR else Mode.INITIATOR
        assert counters.bytes_out == inn[(num, peer_mode)].bytes_in > 0
        assert counters.bytes_in == inn[(num, peer_mode)].bytes_out > 0
    with pytest.raises(ChannelClosed, match="closed by this side"):
        await pairs[0][0].recv_message()


async def test_mux_to_mux_over_tcp():
    await _mux_to_mux(*await tcp_stream_pair())


async def test_mux_to_mux_over_unix_socket(tmp_path):
    await _mux_to_mux(*await unix_stream_pair(tmp_path / "dmq.socket"))


@settings(max_examples=150, deadline=None)
@given(st.lists(messages, min_size=1, max_size=5), st.data())
def test_payloads_delivered_as_bytes_are_kept_as_views_are(sequence, data):
    """A read holding one SDU delivers its payload as bytes, which the channel hands to its framer
    without ``CborFramer.feed``; views (SDUs of a read holding several) go through ``feed``. Either
    way the same bytes are queued, counted against the ingress limit, and framed into the same
    messages, whatever was already buffered when a payload came."""
    blob = b"".join(sequence)
    payloads = _split(data, blob, data.draw(st.integers(max(1, len(blob) // 40), len(blob))))
    chooser = data.draw(st.randoms(use_true_random=False))
    as_bytes = [chooser.random() < 0.5 for _ in payloads]
    limit = data.draw(st.integers(len(blob) // 2 + 1, len(blob) + 2))

    def deliver(kinds):
        mux = Mux(Bearer(trio.testing.memory_stream_pair()[0]), Provenance.OUTBOUND)
        channel = mux.register(5, Mode.INITIATOR, limit)
        trace = []
        for payload, kind in zip(payloads, kinds):
            try:
                channel._deliver(payload if kind else memoryview(payload))
            except IngressQueueOverRun as exc:
                trace.append(("over", str(exc)))
                break
            taken = []
            while (item := channel.take_message()) is not None:
                taken.append(item)
            trace.append((channel.queued_in, channel.bytes_in, channel.sdus_in, taken))
        return trace

    assert deliver(as_bytes) == deliver([False] * len(payloads))
