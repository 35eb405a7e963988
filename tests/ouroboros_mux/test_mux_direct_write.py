"""Direct writes: a reply leaves from the sending task, the writer task starts only when needed.

The reference for every wire comparison is the same mux over the same kind of socket seen
through a stream that is not a socket, which keeps the writer-task path for every byte.
"""

from __future__ import annotations

import contextlib
import socket

import pytest
import trio
import trio.testing

from ouroboros_mux.bearer import Bearer
from ouroboros_mux.channel import ChannelClosed
from ouroboros_mux.errors import BearerClosed
from ouroboros_mux.mux import SEND_BUFFER_LIMIT, Mode, Mux, Provenance
from ouroboros_mux.sdu import EGRESS_SDU_SIZE, SDU_HEADER_SIZE, decode_header

from .cbor_messages import big_bytes
from .streams import drain_until_closed, raw_sdu

STAMP = 0x0A0B0C0D
PROTOCOLS = (2, 3, 5)


def small_socket_pair() -> tuple[trio.SocketStream, trio.SocketStream]:
    """A Unix stream socket pair whose buffers hold only a few kilobytes: (ours, peer)."""
    ours, peer = trio.socket.socketpair()
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    return trio.SocketStream(ours), trio.SocketStream(peer)


def split_sdus(wire: bytes, stamp: int | None = STAMP) -> list[tuple[int, bool, bytes]]:
    """``(protocol_num, from_responder, payload)`` of every SDU in ``wire`` (all whole, all stamped ``stamp``)."""
    sdus = []
    at = 0
    while at < len(wire):
        timestamp, num, from_responder, length = decode_header(wire[at:at + SDU_HEADER_SIZE])
        assert stamp is None or timestamp == stamp
        at += SDU_HEADER_SIZE + length
        assert at <= len(wire)
        sdus.append((num, from_responder, wire[at - length:at]))
    return sdus


class Peer:
    """The far end: reads only when told to, so our socket buffer fills and writes go out in part."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.wire = bytearray()

    def payload_bytes(self) -> int:
        return sum(len(payload) for _, _, payload in split_sdus(bytes(self.wire[:self._whole()])))

    def _whole(self) -> int:
        at = 0
        while len(self.wire) - at >= SDU_HEADER_SIZE:
            length = int.from_bytes(self.wire[at + 6:at + 8], "big")
            if len(self.wire) - at < SDU_HEADER_SIZE + length:
                break
            at += SDU_HEADER_SIZE + length
        return at

    async def read_until(self, payload_total: int) -> None:
        with trio.fail_after(10):
            while self.payload_bytes() < payload_total:
                self.wire += await self.stream.receive_some()


class NowaitStream(trio.abc.Stream):
    """A stream that is not a socket but takes bytes without waiting, as an in-memory link does
    (``lab/simnet/links.py``): here a socket's non-blocking gathered send."""

    def __init__(self, inner: trio.SocketStream) -> None:
        self.inner = inner

    def send_parts_nowait(self, parts: list) -> int:
        return self.inner.socket._sock.sendmsg(parts)

    async def send_all(self, data) -> None:
        await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes=None) -> bytes:
        return await self.inner.receive_some(max_bytes)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def play(script: list, *, direct: bool, nowait_stream: bool = False) -> tuple[bytes, Mux, list[int]]:
    """Run ``script`` against a mux; return the bytes the peer got, the mux, and per send the
    bytes the kernel had taken when ``send`` returned (before the sending task yielded).

    Steps: ``("send", protocol, data)`` several in a row form one scheduler step;
    ``"settle"`` lets every task run until blocked; ``"ping"`` has the peer send one SDU
    (which re-arms the direct path); ``"drain"`` has the peer read all that was sent so far.
    """
    ours, peer_stream = small_socket_pair()
    stream = NowaitStream(ours) if nowait_stream else ours if direct else trio.StapledStream(ours, ours)
    mux = Mux(Bearer(stream, timestamp=lambda: STAMP), Provenance.OUTBOUND)
    channels = {n: mux.register(n, Mode.INITIATOR, 1 << 20) for n in PROTOCOLS}
    peer = Peer(peer_stream)
    sent_payload = 0
    taken_at_return = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(mux.run)
        await trio.testing.wait_all_tasks_blocked()
        for step in script:
            if step == "settle":
                await trio.testing.wait_all_tasks_blocked()
            elif step == "ping":
                await peer.stream.send_all(raw_sdu(PROTOCOLS[0], True, b"\x80"))
                await trio.testing.wait_all_tasks_blocked(0.01)
            elif step == "drain":
                await peer.read_until(sent_payload)
                await trio.testing.wait_all_tasks_blocked()
            else:
                _, protocol, data = step
                before = mux.bearer.bytes_out
                await channels[protocol].send(data)
                taken_at_return.append(mux.bearer.bytes_out - before)
                sent_payload += len(data)
        mux.stop()
        with trio.fail_after(10):
            peer.wire += await drain_until_closed(peer.stream)
    await peer.stream.aclose()
    assert mux.error is None
    return bytes(peer.wire), mux, taken_at_return


def check_counters(mux: Mux, wire: bytes) -> None:
    sdus = split_sdus(wire)
    assert (mux.bearer.bytes_out, mux.bearer.sdus_out) == (len(wire), len(sdus))
    for n in PROTOCOLS:
        mine = [payload for num, _, payload in sdus if num == n]
        counters = mux.counters()[(n, Mode.INITIATOR)]
        assert (counters.bytes_out, counters.sdus_out) == (sum(map(len, mine)) + SDU_HEADER_SIZE * len(mine),
                                                             len(mine))


def send(protocol: int, size: int) -> tuple[str, int, bytes]:
    return ("send", protocol, big_bytes(size) if size > 24 else bytes([0x80 | (size - 1)]) + bytes(size - 1))


SCENARIOS = {
    # Request / reply: every reply is small, follows a ping, and is read before the next one.
    "small replies": [send(2, 3), "drain", "ping", send(3, 20), "drain", "ping", send(5, 200), "drain",
                      "ping", send(2, 9), send(3, 9), send(5, 9), "drain"],
    # Multi-SDU and over-the-limit messages, other channels sending while the big one is stuck.
    "mixed sizes": [send(2, 40_000), "settle", "drain", "ping", send(3, SEND_BUFFER_LIMIT + 70_000), "settle",
                    send(5, 30), "settle", send(2, 5000), "settle", "ping", send(5, 12), "settle", "drain",
                    "ping", send(5, 2 * EGRESS_SDU_SIZE), "settle", "drain", send(2, 7), "drain"],
    # The peer never reads until the end: direct writes stop in the middle of an SDU.
    # A ping while a write is stuck (the tail of a direct write, then a writer batch) must not
    # let the next send cut in.
    "partial writes": ["ping", send(2, 20_000), "settle", "ping", send(3, 100), "settle", send(5, 6000),
                       "settle", send(3, 50_000), "settle", "ping", send(2, 10), "settle", "drain"],
}


@pytest.mark.parametrize("name", SCENARIOS)
async def test_the_wire_is_the_same_with_and_without_direct_writes(name):
    script = SCENARIOS[name]
    direct_wire, direct_mux, direct_taken = await play(script, direct=True)
    writer_wire, writer_mux, writer_taken = await play(script, direct=False)
    assert direct_wire == writer_wire
    check_counters(direct_mux, direct_wire)
    check_counters(writer_mux, writer_wire)
    sizes = [len(step[2]) for step in script if isinstance(step, tuple)]
    # Through a stream that is not a socket nothing is written before the sender yields;
    # through the socket the first send after a ping or at the start goes out at once.
    assert writer_taken == [0] * len(sizes)
    assert direct_taken[0] > 0
    if name == "small replies":
        assert direct_taken == [size + SDU_HEADER_SIZE for size in sizes[:4]] + [0, 0]
    if name == "partial writes":
        assert 0 < direct_taken[0] < 20_000 + 2 * SDU_HEADER_SIZE  # cut short by the full socket buffer


@pytest.mark.parametrize("name", SCENARIOS)
async def test_a_stream_that_takes_bytes_without_waiting_gets_the_direct_path(name):
    # What the mux does over such a stream is what it does over a socket: the same bytes, and
    # each send's bytes handed over (or not) before the sending task yields, exactly as there.
    script = SCENARIOS[name]
    socket_wire, _, socket_taken = await play(script, direct=True)
    stream_wire, stream_mux, stream_taken = await play(script, direct=False, nowait_stream=True)
    assert stream_mux.bearer.writes_without_waiting
    assert stream_wire == socket_wire
    assert stream_taken == socket_taken
    check_counters(stream_mux, stream_wire)


async def test_a_burst_after_a_direct_write_is_packed_by_the_writer():
    message = bytes.fromhex("83010203")
    script = ["ping"] + [("send", 2, message)] * 10 + ["drain"]
    wire, mux, taken = await play(script, direct=True)
    assert [len(payload) for _, _, payload in split_sdus(wire)] == [4, 36]
    assert taken == [4 + 8] + [0] * 9
    check_counters(mux, wire)


class SpawnCounter(trio.abc.Instrument):
    def __init__(self) -> None:
        self.spawned: list[str] = []

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.spawned.append(task.name)


@contextlib.contextmanager
def counting_spawns():
    """The names of the tasks spawned inside the block."""
    counter = SpawnCounter()
    trio.lowlevel.add_instrument(counter)
    try:
        yield counter
    finally:
        trio.lowlevel.remove_instrument(counter)


async def serve_one_request(reply: bytes, client) -> tuple[Mux, SpawnCounter]:
    """A responder mux answering one request with ``reply`` while ``client`` drives the far end."""
    ours, theirs = trio.socket.socketpair()
    mux = Mux(Bearer(trio.SocketStream(ours)), Provenance.INBOUND)
    channel = mux.register(9, Mode.RESPONDER, 1 << 20)

    async def responder():
        await channel.recv_message()
        await channel.send(reply)
        channel.finish()

    with counting_spawns() as counter, trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client, trio.SocketStream(theirs))
            nursery.start_soon(responder)
            await mux.run(nursery=nursery)
    return mux, counter


async def test_a_connection_answering_one_small_request_starts_no_writer_task():
    got = {}

    async def client(stream):
        await stream.send_all(raw_sdu(9, False, b"\x82\x00\x43abc"))
        got["reply"] = await stream.receive_some()
        await stream.aclose()

    mux, counter = await serve_one_request(b"\x81\x01", client)
    assert got["reply"][4:] == b"\x80\x09\x00\x02\x81\x01"  # one SDU: M = 1, protocol 9, 2 bytes
    assert len(counter.spawned) == 2, counter.spawned  # the client and the responder: no writer
    assert mux.error is None
    assert mux.counters()[(9, Mode.RESPONDER)].sdus_out == 1 and mux.bearer.bytes_out == 10


async def test_a_reply_the_socket_cannot_take_at_once_starts_the_writer_which_finishes_it():
    reply = big_bytes(300_000)
    got = {}

    async def slow_client(stream):
        await stream.send_all(raw_sdu(9, False, b"\x80"))
        await trio.sleep(0.05)  # the reply fills our socket buffer meanwhile
        wire = bytearray()
        while len(wire) < len(reply) + SDU_HEADER_SIZE * -(-len(reply) // EGRESS_SDU_SIZE):
            wire += await stream.receive_some()
        got["wire"] = bytes(wire)
        await stream.aclose()

    mux, counter = await serve_one_request(reply, slow_client)
    sdus = split_sdus(got["wire"], stamp=None)
    assert b"".join(payload for _, _, payload in sdus) == reply
    assert all(len(p) == EGRESS_SDU_SIZE for _, _, p in sdus[:-1])
    assert len(counter.spawned) == 3  # client, responder, and the writer, once
    assert mux.bearer.bytes_out == len(got["wire"]) and mux.bearer.sdus_out == len(sdus)
    counters = mux.counters()[(9, Mode.RESPONDER)]
    assert (counters.bytes_out, counters.sdus_out) == (len(got["wire"]), len(sdus))



@pytest.mark.parametrize("how", ["peer stops reading", "peer closes"])
async def test_a_fatal_direct_write_ends_the_connection_not_the_sending_task(how):
    ours, peer = trio.socket.socketpair()
    mux = Mux(Bearer(trio.SocketStream(ours)), Provenance.OUTBOUND)
    channel = mux.register(2, Mode.INITIATOR, 1 << 20)
    outcome = {}

    async def protocol():
        await trio.testing.wait_all_tasks_blocked()
        if how == "peer closes":
            peer.close()
        else:
            peer.shutdown(socket.SHUT_RD)  # a Unix socket refuses writes towards it: EPIPE
        await channel.send(b"\x80")  # fails in the kernel, but not here
        outcome["send returned"] = True
        with pytest.raises(ChannelClosed) as closed:
            while True:
                await channel.send(b"\x80")
                await trio.sleep(0)
        outcome["closed by"] = closed.value.__cause__

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(protocol)
            with pytest.raises(BearerClosed, match="connection broken while writing") as ended:
                await mux.run()
    assert outcome == {"send returned": True, "closed by": ended.value}
    assert mux.error is ended.value and mux.bearer.closed
    assert mux.bearer.bytes_out == 0 and mux.counters()[(2, Mode.INITIATOR)].sdus_out == 0
    peer.close()


async def test_a_fatal_error_finishing_a_partial_direct_write_ends_the_connection():
    ours, peer = small_socket_pair()
    mux = Mux(Bearer(ours), Provenance.OUTBOUND)
    channel = mux.register(2, Mode.INITIATOR, 1 << 20)

    async def protocol():
        await trio.testing.wait_all_tasks_blocked()
        await channel.send(big_bytes(100_000))
        assert 0 < mux.bearer.bytes_out < 100_000  # the rest waits for the writer
        await trio.testing.wait_all_tasks_blocked()
        await peer.aclose()

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(protocol)
            with pytest.raises(BearerClosed):
                await mux.run()
    assert channel.closed and mux.counters()[(2, Mode.INITIATOR)].sdus_out == 0


async def test_stop_without_a_writer_ends_at_once_and_with_one_flushes_first():
    for size in (10, 200_000):
        ours, peer = small_socket_pair()
        mux = Mux(Bearer(ours), Provenance.OUTBOUND)
        channel = mux.register(2, Mode.INITIATOR, 1 << 20)
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(mux.run)
                await trio.testing.wait_all_tasks_blocked()
                await channel.send(big_bytes(size))
                mux.stop()
                wire = await drain_until_closed(peer)
        assert mux.error is None
        assert b"".join(payload for _, _, payload in split_sdus(wire, stamp=None)) == big_bytes(size)
        await peer.aclose()


async def test_replies_queued_while_a_read_is_delivered_leave_together_in_one_write():
    """Consumers answering from the reader (``on_bytes``) queue their replies; the reader writes them all
    at once when the read's SDUs are delivered: one write, no writer task."""
    ours, theirs = trio.socket.socketpair()
    mux = Mux(Bearer(trio.SocketStream(ours)), Provenance.INBOUND)
    numbers = (7, 8, 9)
    channels = {n: mux.register(n, Mode.RESPONDER, 1 << 20) for n in numbers}
    writes = []
    real_write = mux.bearer.try_write_parts

    def counted(parts, sdu_count, total=None):
        writes.append(sdu_count)
        return real_write(parts, sdu_count, total)

    mux.bearer.try_write_parts = counted

    def answer(n):
        def consume():
            if channels[n].closed:  # called once more when the connection ends
                return
            while (request := channels[n].take_message()) is not None:
                assert channels[n].send_nowait(b"\x82" + request[1:2] + bytes([0x40 + n]))
        return consume

    for n in numbers:
        channels[n].on_bytes(answer(n))
    peer = trio.SocketStream(theirs)
    with counting_spawns() as counter, trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(mux.run)
            await peer.send_all(b"".join(raw_sdu(n, False, b"\x81" + bytes([n])) for n in numbers))
            wire = bytearray()
            while len(wire) < 3 * (SDU_HEADER_SIZE + 3):
                wire += await peer.receive_some()
            mux.stop()
    assert [(num, payload) for num, _, payload in split_sdus(bytes(wire), stamp=None)] == [
        (n, b"\x82" + bytes([n, 0x40 + n])) for n in numbers]
    assert writes == [3]
    assert not any(name.endswith("Mux._guarded") for name in counter.spawned), counter.spawned  # no writer task
    await peer.aclose()


async def test_a_channel_answering_bytes_it_got_writes_at_once_after_another_used_the_direct_path():
    """The first reply after a read may go out directly; so may each other channel's reply to bytes it
    received since it last sent, from its own task, instead of waking a writer task."""
    ours, theirs = trio.socket.socketpair()
    mux = Mux(Bearer(trio.SocketStream(ours)), Provenance.INBOUND)
    first, second = mux.register(7, Mode.RESPONDER, 1 << 20), mux.register(8, Mode.RESPONDER, 1 << 20)
    taken = {}

    async def answer(channel, name, after=None):
        await channel.recv_message()
        if after is not None:
            await after.wait()
        before = mux.bearer.bytes_out
        await channel.send(b"\x81\x00")
        taken[name] = mux.bearer.bytes_out - before
        done[name].set()

    done = {"first": trio.Event(), "second": trio.Event()}
    peer = trio.SocketStream(theirs)
    with counting_spawns() as counter, trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(mux.run)
            nursery.start_soon(answer, first, "first")
            nursery.start_soon(answer, second, "second", done["first"])
            await peer.send_all(raw_sdu(7, False, b"\x80") + raw_sdu(8, False, b"\x80"))
            await done["second"].wait()
            assert first.send_nowait(b"\x80")  # nothing received since its last send: the writer's
            assert mux.bearer.bytes_out == 2 * (SDU_HEADER_SIZE + 2)
            wire = bytearray()
            while len(wire) < 2 * (SDU_HEADER_SIZE + 2) + SDU_HEADER_SIZE + 1:
                wire += await peer.receive_some()
            mux.stop()
    # The writer, for the last send only.
    assert sum(name.endswith("Mux._guarded") for name in counter.spawned) == 1, counter.spawned
    assert taken == {"first": SDU_HEADER_SIZE + 2, "second": SDU_HEADER_SIZE + 2}
    assert [num for num, _, _ in split_sdus(bytes(wire), stamp=None)] == [7, 8, 7]
    await peer.aclose()


@pytest.mark.parametrize("owed", [True, False], ids=["kept-request-owed", "not-owed"])
async def test_the_answer_to_a_kept_request_goes_out_at_once_when_the_channel_owes_it(owed):
    """Two requests in one read, the first answered at once and the second kept for later (a parked
    blocking request): after ``owe_reply`` the later answer is written by the sending task, as a
    reply; without it, it is left to the writer task, as the start of a burst would be."""
    ours, theirs = trio.socket.socketpair()
    mux = Mux(Bearer(trio.SocketStream(ours)), Provenance.INBOUND)
    channel = mux.register(7, Mode.RESPONDER, 1 << 20)
    peer = trio.SocketStream(theirs)
    with counting_spawns() as counter, trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(mux.run)
            await peer.send_all(raw_sdu(7, False, b"\x80\x81\x00"))  # two requests in one SDU
            assert await channel.recv_message() == b"\x80"
            assert await channel.recv_message() == b"\x81\x00"
            before = mux.bearer.bytes_out
            assert channel.send_nowait(b"\x81\x01")  # the first one's answer: the read armed the direct path
            assert mux.bearer.bytes_out - before == SDU_HEADER_SIZE + 2
            if owed:
                channel.owe_reply()
            await trio.testing.wait_all_tasks_blocked()
            before = mux.bearer.bytes_out
            assert channel.send_nowait(b"\x81\x02")  # the kept one's answer, later
            assert mux.bearer.bytes_out - before == (SDU_HEADER_SIZE + 2 if owed else 0)
            wire = bytearray()
            while len(wire) < 2 * (SDU_HEADER_SIZE + 2):
                wire += await peer.receive_some()
            mux.stop()
    assert [payload for _, _, payload in split_sdus(bytes(wire), stamp=None)] == [b"\x81\x01", b"\x81\x02"]
    writers = sum(name.endswith("Mux._guarded") for name in counter.spawned)
    assert writers == (0 if owed else 1), counter.spawned
    await peer.aclose()
