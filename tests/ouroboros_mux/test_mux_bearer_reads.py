"""The bearer's socket reads: a short read means the socket was empty, so the next read waits first.

Over real socket pairs. The socket under the bearer is wrapped in a recorder that passes every
call through to it and notes what happened: each read with what it returned (or ``EAGAIN``), and
each wait for readability (trio asks the waited-on object for its ``fileno``).
"""

from __future__ import annotations

import socket

import pytest
import trio
import trio.testing

from ouroboros_mux import bearer as bearer_module
from ouroboros_mux.bearer import Bearer
from ouroboros_mux.errors import BearerClosed, SDUDecodeError, SDUReadTimeout

from .streams import raw_sdu

EAGAIN = "EAGAIN"
WAIT = "wait"


class RecordingSocket:
    """The real socket under a bearer, with a record of its reads and of trio's waits on it."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.events: list = []

    def recv(self, size: int) -> bytes:
        try:
            data = self._sock.recv(size)
        except BlockingIOError:
            self.events.append(EAGAIN)
            raise
        self.events.append(len(data))
        return data

    def fileno(self) -> int:
        self.events.append(WAIT)
        return self._sock.fileno()

    def take(self) -> list:
        events, self.events = self.events, []
        return events


def socket_bearer(**kwargs) -> tuple[Bearer, RecordingSocket, trio.SocketStream]:
    """A bearer over one end of a real Unix socket pair, its recorder, and the peer's end."""
    ours, theirs = trio.socket.socketpair()
    bearer = Bearer(trio.SocketStream(ours), **kwargs)
    recorder = bearer._socket = RecordingSocket(bearer._socket)
    return bearer, recorder, trio.SocketStream(theirs)


async def test_a_short_read_is_followed_by_a_wait_not_a_read_that_finds_nothing():
    bearer, recorder, peer = socket_bearer()
    await peer.send_all(raw_sdu(11, False, b"\x01"))
    assert await bearer.read_frames() == [(11, b"\x01")]
    assert recorder.take() == [9]  # the first read reads at once, and it was short

    async def later():
        await trio.testing.wait_all_tasks_blocked()
        await peer.send_all(raw_sdu(11, False, b"\x02"))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(later)
        assert await bearer.read_frames() == [(11, b"\x02")]
    assert recorder.take() == [WAIT, 9]

    # Bytes that came between the short read and the next call: the wait returns at once.
    await peer.send_all(raw_sdu(11, False, b"\x03"))
    with trio.move_on_after(5) as scope:
        assert await bearer.read_frames() == [(11, b"\x03")]
    assert not scope.cancelled_caught
    assert recorder.take() == [WAIT, 9]
    assert EAGAIN not in recorder.events


async def test_a_full_read_reads_again_at_once_and_a_burst_arrives_whole_and_in_order(monkeypatch):
    # Reads of 4 KiB, so that a burst fills many of them whatever the socket buffers' sizes.
    monkeypatch.setattr(bearer_module, "_RECEIVE_SIZE", 4096)
    bearer, recorder, peer = socket_bearer()
    payloads = [bytes([n]) * (1000 + 997 * n) for n in range(12)] + [b"\xff"]
    wire = b"".join(raw_sdu(11, False, p) for p in payloads)

    received = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.send_all, wire)
        await trio.testing.wait_all_tasks_blocked()  # the kernel holds as much of the burst as it takes
        while len(received) < len(payloads):
            received += [bytes(payload) for _, payload in await bearer.read_frames()]
    assert received == payloads
    events = recorder.take()
    reads = [e for e in events if isinstance(e, int)]
    assert sum(reads) == len(wire)
    assert reads.count(4096) >= 5  # (19 when the kernel holds the whole burst)
    for before, after in zip(events, events[1:]):
        if before == 4096:
            assert after != WAIT  # a full read: more may be there, read again before waiting
        elif isinstance(before, int):
            assert after == WAIT  # a short read: the socket was empty, wait before reading
        elif before == EAGAIN:
            assert after == WAIT
    # A read finds nothing only right after a full read that happened to take the last byte.
    assert all(events[i - 1] == 4096 for i, event in enumerate(events) if event == EAGAIN)


async def test_an_sdu_cut_across_reads_completes_after_a_wait():
    bearer, recorder, peer = socket_bearer()
    wire = raw_sdu(12, True, bytes(range(100)))
    await peer.send_all(wire[:5])  # part of the header

    async def rest():
        await trio.testing.wait_all_tasks_blocked()
        await peer.send_all(wire[5:60])
        await trio.testing.wait_all_tasks_blocked()
        await peer.send_all(wire[60:])

    async with trio.open_nursery() as nursery:
        nursery.start_soon(rest)
        assert await bearer.read_frames() == [(0x800C, bytes(range(100)))]
    assert recorder.take() == [5, WAIT, 55, WAIT, 48]


@pytest.mark.parametrize(
    ("tail", "error", "message"),
    [
        (b"", BearerClosed, "between SDUs"),
        (bytes.fromhex("00000000000b"), SDUDecodeError, "truncated SDU header.*6 of 8"),
        (bytes.fromhex("00000000000b0005") + b"abc", BearerClosed, "inside an SDU: 11 of 13"),
    ],
)
async def test_end_of_stream_after_a_short_read(tail, error, message):
    bearer, recorder, peer = socket_bearer()
    await peer.send_all(raw_sdu(11, False, b"\x01") + tail)
    assert await bearer.read_frames() == [(11, b"\x01")]
    await peer.aclose()
    with pytest.raises(error, match=message):
        await bearer.read_frames()
    assert recorder.take() == [9 + len(tail), WAIT, 0]


async def test_the_sdu_timeout_runs_from_the_first_byte_after_a_short_read(autojump_clock):
    bearer, recorder, peer = socket_bearer(sdu_timeout=2.0)
    await peer.send_all(raw_sdu(11, False, bytes(10))[:12])
    start = trio.current_time()
    with pytest.raises(SDUReadTimeout, match="within 2 s: 12 bytes"):
        await bearer.read_frames()
    assert trio.current_time() - start == pytest.approx(2.0)
    assert recorder.take() == [12, WAIT]


async def test_a_read_that_found_nothing_without_waiting_is_followed_by_a_wait():
    bearer, recorder, peer = socket_bearer()
    assert bearer.read_sdu_nowait() is None
    assert recorder.take() == [EAGAIN]

    async def later():
        await trio.testing.wait_all_tasks_blocked()
        await peer.send_all(raw_sdu(0, False, b"\x82\x00\xa0"))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(later)
        sdu = await bearer.read_sdu()
    assert (sdu.protocol_num, sdu.payload) == (0, b"\x82\x00\xa0")
    assert recorder.take() == [WAIT, 11]


@pytest.mark.parametrize("cuts", [(), (3,), (8, 20), (1, 2, 3, 40, 41), (25,), (9,), (9, 47, 56)])
@pytest.mark.parametrize(
    ("tail", "error"),
    [(b"", BearerClosed), (bytes.fromhex("00000000000d0000"), SDUDecodeError), (b"\0\0\0\0\0\x0b\0\x09ab", BearerClosed)],
)
async def test_socket_reads_give_what_a_plain_stream_gives(cuts, tail, error):
    """The socket path (written out for speed) and the general path of any other stream agree:
    the same SDUs from the same calls, the same counters, the same error at the end."""
    wire = raw_sdu(11, False, b"\x01") + raw_sdu(11, True, bytes(30)) + raw_sdu(0x7FFF, True, b"\x04") + tail
    pieces = [wire[a:b] for a, b in zip((0, *cuts), (*cuts, len(wire))) if a < b]

    async def calls_over(bearer: Bearer, send, close) -> tuple[list, str]:
        async def sender():
            for piece in pieces:
                await trio.testing.wait_all_tasks_blocked()  # the reader waits for this piece
                await send(piece)
            await trio.testing.wait_all_tasks_blocked()
            await close()

        calls = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sender)
            try:
                while True:
                    calls.append([(word, bytes(payload)) for word, payload in await bearer.read_frames()])
            except error as exc:
                ended = str(exc)
        return calls, ended, bearer.sdus_in, bearer.bytes_in

    over_socket, _, peer = socket_bearer()
    mem_a, mem_b = trio.testing.memory_stream_pair()
    over_stream = Bearer(mem_b)
    got = await calls_over(over_socket, peer.send_all, peer.aclose)
    assert got == await calls_over(over_stream, mem_a.send_all, mem_a.aclose)
    assert [frame for frames in got[0] for frame in frames] == [
        (11, b"\x01"), (0x800B, bytes(30)), (0xFFFF, b"\x04")]
