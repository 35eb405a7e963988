"""The bearer over real sockets and trio test streams: framing, EOF, timeouts, counters."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from ouroboros_mux.bearer import HANDSHAKE_SDU_TIMEOUT, Bearer, connect_tcp, connect_unix
from ouroboros_mux.errors import BearerClosed, ConnectFailed, SDUDecodeError, SDUReadTimeout, SDUWriteTimeout
from ouroboros_mux.sdu import MAX_SDU_PAYLOAD, SDU, monotonic_timestamp

from .streams import open_unix_listener, raw_sdu, tcp_stream_pair, unix_stream_pair


async def _exchange(client: Bearer, server: Bearer) -> None:
    sdus = [SDU(0, False, b"\x82\x00\xa0"), SDU(11, True, bytes(range(256)) * 40), SDU(14, True, b"\x81\x01")]
    for sdu in sdus:
        await client.write_sdu(sdu)
    for sdu in sdus:
        got = await server.read_sdu()
        assert (got.protocol_num, got.from_responder, got.payload) == (sdu.protocol_num, sdu.from_responder,
                                                                       sdu.payload)
    await server.write_many([SDU(0, True, b"\x83\x01"), SDU(0x7FFF, False, bytes(MAX_SDU_PAYLOAD))])
    assert (await client.read_sdu()).payload == b"\x83\x01"
    last = await client.read_sdu()
    assert (last.protocol_num, last.from_responder, len(last.payload)) == (0x7FFF, False, MAX_SDU_PAYLOAD)
    assert (client.sdus_out, server.sdus_in, server.sdus_out, client.sdus_in) == (3, 3, 2, 2)
    sent = 3 * 8 + 3 + 10240 + 2
    assert client.bytes_out == server.bytes_in == sent
    assert server.bytes_out == client.bytes_in == 2 * 8 + 2 + MAX_SDU_PAYLOAD


async def test_sdus_over_tcp_loopback():
    a, b = await tcp_stream_pair()
    client, server = Bearer(a), Bearer(b)
    await _exchange(client, server)
    await client.aclose()
    with pytest.raises(BearerClosed, match="between SDUs"):
        await server.read_sdu()
    await server.aclose()


async def test_sdus_over_unix_socket(tmp_path):
    a, b = await unix_stream_pair(tmp_path / "mux.socket")
    client, server = Bearer(a), Bearer(b)
    await _exchange(client, server)
    await server.aclose()
    await client.aclose()


async def test_connect_helpers_reach_real_listeners(tmp_path):
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    client = await connect_tcp("127.0.0.1", port)
    server = Bearer(await listeners[0].accept())
    assert client.sdu_timeout == HANDSHAKE_SDU_TIMEOUT == 10.0
    await client.write_sdu(SDU(0, False, b"\x80"))
    assert (await server.read_sdu()).payload == b"\x80"
    for bearer in (client, server, *listeners):
        await bearer.aclose()

    path = tmp_path / "node.socket"
    unix_listener = await open_unix_listener(path)
    client = await connect_unix(path)
    server = Bearer(await unix_listener.accept())
    await server.write_sdu(SDU(15, True, b"\x81\x02"))
    got = await client.read_sdu()
    assert (got.protocol_num, got.from_responder, got.payload) == (15, True, b"\x81\x02")
    for closable in (client, server, unix_listener):
        await closable.aclose()


async def test_connect_failures_name_the_address(tmp_path):
    missing = tmp_path / "no-such.socket"
    with pytest.raises(ConnectFailed, match="no-such.socket"):
        await connect_unix(missing)
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    await listeners[0].aclose()
    with pytest.raises(ConnectFailed, match=f"127.0.0.1:{port}"):
        await connect_tcp("127.0.0.1", port)


async def test_many_sdus_in_one_chunk_and_one_sdu_in_many_chunks():
    a, b = trio.testing.memory_stream_pair()
    bearer = Bearer(b)
    wire = raw_sdu(11, False, b"\x01") + raw_sdu(12, True, b"\x82\x00\x01") + raw_sdu(13, False, bytes(300))
    await a.send_all(wire)
    got = [await bearer.read_sdu() for _ in range(3)]
    assert [(s.protocol_num, s.from_responder, s.payload) for s in got] == [
        (11, False, b"\x01"), (12, True, b"\x82\x00\x01"), (13, False, bytes(300))]

    one = raw_sdu(11, True, bytes(range(200)), timestamp=0xDEADBEEF)

    async def dribble():
        for i in range(len(one)):
            await a.send_all(one[i:i + 1])
            await trio.sleep(0)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(dribble)
        sdu = await bearer.read_sdu()
    assert sdu == SDU(11, True, bytes(range(200)), 0xDEADBEEF)


async def test_write_many_is_one_socket_write():
    writes = []

    async def count_write():
        writes.append(1)

    send = trio.testing.MemorySendStream(send_all_hook=count_write)
    bearer = Bearer(send, timestamp=lambda: 7)
    await bearer.write_many([SDU(11, False, b"a" * 10), SDU(12, True, b"b"), SDU(11, False, b"c" * 3)])
    assert len(writes) == 1
    data = send.get_data_nowait()
    assert data == (bytes.fromhex("00000007000b000a") + b"a" * 10 + bytes.fromhex("00000007800c0001") + b"b"
                    + bytes.fromhex("00000007000b0003") + b"ccc")
    assert (bearer.sdus_out, bearer.bytes_out) == (3, 38)


def test_the_stamp_is_the_low_32_bits_of_the_clock_given_or_of_the_default_one():
    send = trio.testing.MemorySendStream()
    assert Bearer(send, timestamp=lambda: (5 << 32) | 0xDEADBEEF).timestamp() == 0xDEADBEEF
    default = Bearer(send)
    assert default.timestamp is monotonic_timestamp  # one call per write, already masked
    assert 0 <= default.timestamp() <= 0xFFFFFFFF


async def test_write_refuses_an_empty_payload_before_touching_the_socket():
    a, b = trio.testing.memory_stream_pair()
    bearer = Bearer(a)
    with pytest.raises(ValueError, match="zero-length SDU"):
        await bearer.write_many([SDU(11, False, b"ok"), SDU(11, False, b"")])
    assert bearer.bytes_out == 0
    await bearer.aclose()
    assert await b.receive_some() == b""  # end of stream with nothing before it


@pytest.mark.parametrize(
    ("wire", "error", "message"),
    [
        (b"", BearerClosed, "between SDUs"),
        (bytes.fromhex("00000000000b"), SDUDecodeError, "truncated SDU header.*6 of 8"),
        (bytes.fromhex("00000000000b0000"), SDUDecodeError, "short SDU"),
        (bytes.fromhex("00000000000b0005") + b"abc", BearerClosed, "inside an SDU: 11 of 13"),
    ],
)
async def test_end_of_stream_and_bad_headers(wire, error, message):
    a, b = await tcp_stream_pair()
    bearer = Bearer(b)
    await a.send_all(raw_sdu(12, False, b"\x01") + wire)
    await a.aclose()
    assert (await bearer.read_sdu()).payload == b"\x01"
    with pytest.raises(error, match=message):
        await bearer.read_sdu()
    await bearer.aclose()


async def test_reading_after_local_close_is_bearer_closed():
    a, b = trio.testing.memory_stream_pair()
    bearer = Bearer(b)
    await bearer.aclose()
    await bearer.aclose()
    assert bearer.closed
    with pytest.raises(BearerClosed, match="closed locally"):
        await bearer.read_sdu()
    with pytest.raises(BearerClosed, match="closed locally"):
        await bearer.write_sdu(SDU(0, False, b"x"))


async def test_wait_for_the_first_byte_is_unbounded(autojump_clock):
    a, b = trio.testing.memory_stream_pair()
    bearer = Bearer(b, sdu_timeout=2.0)

    async def late_sender():
        await trio.sleep(3600)
        await a.send_all(raw_sdu(12, False, b"\x01"))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(late_sender)
        start = trio.current_time()
        assert (await bearer.read_sdu()).payload == b"\x01"
    assert trio.current_time() - start == pytest.approx(3600)


@pytest.mark.parametrize("cut", [1, 7, 8, 12])
async def test_sdu_read_timeout_runs_from_the_first_byte(autojump_clock, cut):
    a, b = trio.testing.memory_stream_pair()
    bearer = Bearer(b, sdu_timeout=2.0)
    wire = raw_sdu(11, True, bytes(10))
    await a.send_all(wire[:cut])
    start = trio.current_time()
    with pytest.raises(SDUReadTimeout, match=f"within 2 s: {cut} bytes") as info:
        await bearer.read_sdu()
    assert trio.current_time() - start == pytest.approx(2.0)
    assert info.value.received == cut
    assert info.value.expected == (None if cut < 8 else 18)


async def test_sdu_completed_just_in_time_passes(autojump_clock):
    a, b = trio.testing.memory_stream_pair()
    bearer = Bearer(b, sdu_timeout=2.0)
    wire = raw_sdu(11, True, bytes(10))

    async def slow_sender():
        await a.send_all(wire[:3])
        await trio.sleep(1.0)
        await a.send_all(wire[3:12])
        await trio.sleep(0.99)
        await a.send_all(wire[12:])

    async with trio.open_nursery() as nursery:
        nursery.start_soon(slow_sender)
        assert (await bearer.read_sdu()).payload == bytes(10)


async def test_sdu_write_timeout_when_the_peer_does_not_read(autojump_clock):
    a, b = trio.testing.lockstep_stream_pair()
    bearer = Bearer(a, sdu_timeout=5.0)
    start = trio.current_time()
    with pytest.raises(SDUWriteTimeout, match="not accepted within 5 s"):
        await bearer.write_sdu(SDU(11, False, b"stuck"))
    assert trio.current_time() - start == pytest.approx(5.0)


async def test_writing_to_a_reset_connection_is_bearer_closed():
    a, b = await tcp_stream_pair()
    await b.aclose()
    bearer = Bearer(a)
    with pytest.raises(BearerClosed, match="broken while writing"):
        for _ in range(200):
            await bearer.write_sdu(SDU(11, False, bytes(60000)))
            await trio.sleep(0.001)
    await bearer.aclose()


async def test_read_frames_returns_every_complete_sdu_of_one_read():
    a, b = trio.testing.memory_stream_pair()
    bearer = Bearer(b)
    await a.send_all(raw_sdu(11, False, b"\x01") + raw_sdu(11, True, b"\x02\x03") + raw_sdu(0x7FFF, True, b"\x04")
                     + raw_sdu(12, False, b"\x05\x06")[:5])
    assert await bearer.read_frames() == [(11, b"\x01"), (0x800B, b"\x02\x03"), (0xFFFF, b"\x04")]
    await a.send_all(raw_sdu(12, False, b"\x05\x06")[5:] + bytes.fromhex("00000000000d0000"))
    assert await bearer.read_frames() == [(12, b"\x05\x06")]
    with pytest.raises(SDUDecodeError, match="short SDU.*protocol 13"):
        await bearer.read_frames()
    assert (bearer.sdus_in, bearer.bytes_in) == (4, 4 * 8 + 6)


async def test_read_sdu_nowait_takes_only_what_has_arrived_and_keeps_the_rest(tmp_path):
    ours, peer = await unix_stream_pair(tmp_path / "s")
    bearer = Bearer(ours)
    assert bearer.read_sdu_nowait() is None  # nothing sent yet: no wait, no error
    wire = raw_sdu(0, False, b"\x82\x00\xa0") + raw_sdu(14, False, bytes(range(200)))
    await peer.send_all(wire[:5])  # part of a header
    await trio.testing.wait_all_tasks_blocked()
    assert bearer.read_sdu_nowait() is None
    await peer.send_all(wire[5:20])  # the first SDU whole, and part of the second
    await trio.testing.wait_all_tasks_blocked()
    first = bearer.read_sdu_nowait()
    assert (first.protocol_num, first.payload) == (0, b"\x82\x00\xa0")
    assert bearer.read_sdu_nowait() is None  # the second is not whole yet
    await peer.send_all(wire[20:])
    second = await bearer.read_sdu()  # the bytes read without waiting were kept
    assert (second.protocol_num, second.payload) == (14, bytes(range(200)))
    assert (bearer.sdus_in, bearer.bytes_in) == (2, len(wire))
    await peer.aclose()
    with pytest.raises(BearerClosed):
        bearer.read_sdu_nowait()


async def test_a_stream_read_of_exactly_one_sdu_gives_its_payload_as_bytes_as_a_socket_read_does():
    """The usual read of a round (one whole SDU) takes the same path on any stream as on a socket:
    the payload copied out of the read (bytes, or what the stream's reads are made of), nothing left
    buffered; a read of more or less is cut into views."""
    a, b = trio.testing.memory_stream_pair()
    bearer = Bearer(b)
    await a.send_all(raw_sdu(11, True, b"\x82\x01\x02"))
    (word, payload), = await bearer.read_frames()
    assert (word, payload) == (0x800B, b"\x82\x01\x02") and type(payload) is not memoryview
    await a.send_all(raw_sdu(11, False, b"\x01") + raw_sdu(12, False, b"\x02"))
    frames = await bearer.read_frames()
    assert frames == [(11, b"\x01"), (12, b"\x02")] and all(type(p) is memoryview for _, p in frames)
    assert (bearer.sdus_in, bearer.bytes_in) == (3, 3 * 8 + 5)
