"""Egress: round-robin fairness, SDU sizes, batching into socket writes, back-pressure, counters."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from ouroboros_mux.bearer import Bearer
from ouroboros_mux.mux import MAX_BYTES_PER_WRITE, MAX_SDUS_PER_WRITE, SEND_BUFFER_LIMIT, Mode, Mux, Provenance
from ouroboros_mux.sdu import EGRESS_SDU_SIZE

from .cbor_messages import big_bytes
from .streams import read_until_closed, tcp_stream_pair


async def _egress_of(sends: list[tuple[tuple[int, Mode], bytes]]):
    """Queue ``sends`` before the mux runs, let it write them all, return the SDUs seen by the peer."""
    peer_stream, ours = await tcp_stream_pair()
    mux = Mux(Bearer(ours, timestamp=lambda: 0x01020304), Provenance.INBOUND)
    channels = {}
    for key, _ in sends:
        if key not in channels:
            channels[key] = mux.register(*key, 1000)
    for key, data in sends:
        await channels[key].send(data)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(mux.run)
        mux.stop()
        sdus = await read_until_closed(Bearer(peer_stream))
    await peer_stream.aclose()
    return mux, channels, sdus


async def test_two_busy_protocols_alternate_sdu_by_sdu():
    a, b = big_bytes(100_000), big_bytes(60_000)
    mux, _, sdus = await _egress_of([((11, Mode.INITIATOR), a), ((12, Mode.RESPONDER), b)])
    labels = [(s.protocol_num, s.from_responder) for s in sdus]
    count_b = -(-len(b) // EGRESS_SDU_SIZE)
    count_a = -(-len(a) // EGRESS_SDU_SIZE)
    assert labels == [(11, False), (12, True)] * count_b + [(11, False)] * (count_a - count_b)
    assert all(0 < len(s.payload) <= EGRESS_SDU_SIZE for s in sdus)
    assert b"".join(s.payload for s in sdus if s.protocol_num == 11) == a
    assert b"".join(s.payload for s in sdus if s.protocol_num == 12) == b
    assert {s.timestamp for s in sdus} == {0x01020304}


async def test_many_protocols_take_turns_and_small_messages_are_not_stuck_behind_big_ones():
    big = big_bytes(200_000)
    sends = [((11, Mode.INITIATOR), big)] + [((n, Mode.RESPONDER), bytes.fromhex("8100")) for n in (12, 13, 14)]
    _, _, sdus = await _egress_of(sends)
    # The three small messages go out in the first round, right after the first SDU of the big one.
    assert [s.protocol_num for s in sdus[:4]] == [11, 12, 13, 14]
    assert [len(s.payload) for s in sdus[1:4]] == [2, 2, 2]


async def test_message_boundaries_do_not_shape_sdus():
    # Many small messages on one channel are packed into full SDUs, spanning message boundaries.
    message = bytes.fromhex("83010203")
    _, _, sdus = await _egress_of([((12, Mode.INITIATOR), message)] * 10_000)
    assert [len(s.payload) for s in sdus] == [EGRESS_SDU_SIZE] * 3 + [40_000 - 3 * EGRESS_SDU_SIZE]
    assert b"".join(s.payload for s in sdus) == message * 10_000


async def test_empty_sends_never_make_an_sdu():
    _, channels, sdus = await _egress_of([((12, Mode.INITIATOR), b""), ((13, Mode.INITIATOR), b"\x80")])
    assert [(s.protocol_num, s.payload) for s in sdus] == [(13, b"\x80")]
    assert channels[(12, Mode.INITIATOR)].counters().sdus_out == 0


async def test_writes_batch_at_most_100_sdus_or_131072_bytes():
    sizes = []
    peer, ours = trio.testing.memory_stream_pair()

    class RecordingStream(trio.abc.Stream):
        """A real memory stream, with each send_all's size noted."""

        async def send_all(self, data):
            sizes.append(len(data))
            await ours.send_all(data)

        async def wait_send_all_might_not_block(self):
            await ours.wait_send_all_might_not_block()

        async def receive_some(self, max_bytes=None):
            return await ours.receive_some(max_bytes)

        async def aclose(self):
            await ours.aclose()

    mux = Mux(Bearer(RecordingStream()), Provenance.OUTBOUND)
    small = [mux.register(n, Mode.INITIATOR, 10) for n in range(150)]
    big = mux.register(200, Mode.INITIATOR, 10)
    for channel in small:
        await channel.send(b"\x00")
    await big.send(bytes(400_000))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(mux.run)
        mux.stop()
        sdus = await read_until_closed(Bearer(peer))
    full = EGRESS_SDU_SIZE + 8
    # First write: 100 one-byte SDUs (the count limit). Second: the other 50, then full SDUs of
    # the big message until the write reaches 131072 bytes. Then 11 full SDUs per write.
    assert sizes[:3] == [100 * 9, 50 * 9 + 11 * full, 11 * full]
    assert 50 * 9 + 10 * full < MAX_BYTES_PER_WRITE <= 50 * 9 + 11 * full and 10 * full < MAX_BYTES_PER_WRITE
    assert [s.protocol_num for s in sdus[:MAX_SDUS_PER_WRITE]] == list(range(100))
    assert [s.protocol_num for s in sdus[149:152]] == [149, 200, 200]
    assert sum(sizes) == mux.bearer.bytes_out == 150 * 9 + 400_000 + 8 * -(-400_000 // EGRESS_SDU_SIZE)


async def test_a_full_send_buffer_blocks_the_sender_until_the_writer_drains_it(autojump_clock):
    peer, ours = trio.testing.lockstep_stream_pair()  # nothing moves until the peer reads
    mux = Mux(Bearer(ours), Provenance.OUTBOUND)
    channel = mux.register(11, Mode.INITIATOR, 10)
    await channel.send(bytes(SEND_BUFFER_LIMIT - 1))  # below the limit: returns at once
    await channel.send(b"\x01")  # reaches the limit, still accepted
    assert channel.queued_out == SEND_BUFFER_LIMIT
    with trio.move_on_after(60) as blocked:
        await channel.send(b"\x02")
    assert blocked.cancelled_caught
    async with trio.open_nursery() as nursery:
        nursery.start_soon(mux.run)
        peer_bearer = Bearer(peer)
        received = 0
        with trio.fail_after(1):
            while received < EGRESS_SDU_SIZE:
                received += len((await peer_bearer.read_sdu()).payload)
        # One SDU left the buffer, so there is room again.
        await channel.send(b"\x02")
        assert channel.queued_out <= SEND_BUFFER_LIMIT + 1
        nursery.cancel_scope.cancel()


async def test_counters_include_headers_per_protocol_and_direction():
    payload = big_bytes(30_000)
    mux, channels, sdus = await _egress_of([((11, Mode.INITIATOR), payload), ((11, Mode.RESPONDER), b"\x80")])
    counters = mux.counters()
    assert counters[(11, Mode.INITIATOR)].bytes_out == len(payload) + 8 * 3
    assert counters[(11, Mode.INITIATOR)].sdus_out == 3
    assert counters[(11, Mode.RESPONDER)].bytes_out == 1 + 8
    assert counters[(11, Mode.RESPONDER)].bytes_in == 0
    assert mux.bearer.bytes_out == sum(c.bytes_out for c in counters.values())
    assert [s.from_responder for s in sdus if len(s.payload) == 1] == [True]


@pytest.mark.parametrize("mode, bit", [(Mode.INITIATOR, False), (Mode.RESPONDER, True)])
async def test_the_m_bit_follows_the_sending_instance(mode, bit):
    _, _, sdus = await _egress_of([((14, mode), b"\x81\x01")])
    assert [(s.protocol_num, s.from_responder) for s in sdus] == [(14, bit)]
