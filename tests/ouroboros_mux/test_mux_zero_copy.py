"""The copy-avoiding paths: SDU payloads as views of socket reads, gathered writes, exact joins."""

from __future__ import annotations

import socket

import pytest
import trio
from hypothesis import given, settings, strategies as st

from ouroboros_mux.bearer import Bearer
from ouroboros_mux.channel import CborFramer
from ouroboros_mux.mux import Mode, Mux, Provenance

from .cbor_messages import big_bytes, messages
from .streams import tcp_stream_pair, unix_stream_pair


@settings(max_examples=60, deadline=None)
@given(st.lists(messages, min_size=1, max_size=6), st.data())
def test_views_of_shared_buffers_frame_like_bytes(items, data):
    """Pieces that are views into a few large 'socket reads' reassemble to the same items."""
    stream = b"".join(items)
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(stream)), max_size=12))))
    reads = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)]) if b > a]
    framer = CborFramer()
    got = []
    for read in reads:
        view = memoryview(read)
        step = data.draw(st.integers(1, max(1, len(read))))
        for at in range(0, len(read), step):
            framer.feed(view[at:at + step])
            while (item := framer.next_message()) is not None:
                assert type(item) is bytes
                got.append(item)
    assert got == items
    assert framer.buffered == 0


def test_a_message_split_over_views_is_joined_exactly_once_and_the_rest_stays_a_view():
    message = big_bytes(65_536)
    following = big_bytes(300)
    stream = message + following
    view = memoryview(stream)
    framer = CborFramer()
    framer.feed(view[:12_288])
    assert framer.next_message() is None
    assert framer.wanted == len(message)
    for at in range(12_288, len(stream), 12_288):
        framer.feed(view[at:at + 12_288])
    item = framer.next_message()
    assert item == message and type(item) is bytes
    assert framer.next_message() == following


def test_small_views_of_large_buffers_do_not_pin_them_without_bound():
    """A peer can make us hold a few bytes per socket read; we must not keep every read alive."""
    framer = CborFramer()
    reads = [bytes(256 * 1024) for _ in range(64)]  # 16 MiB of socket reads
    framer.feed(b"\x5a\x00\x10\x00\x00")  # a byte string announcing 1 MiB: stays incomplete
    for read in reads:
        framer.feed(memoryview(read)[:16])
        assert framer.next_message() is None
    held = [c.obj for c in framer._chunks if type(c) is memoryview]
    pinned = sum(len(b) for b in {id(b): b for b in held}.values())
    assert framer.buffered == 5 + 64 * 16
    assert pinned <= 4 * framer.buffered + (1 << 20)


@pytest.mark.parametrize("kind", ["tcp", "unix"])
async def test_gathered_writes_survive_partial_sends(kind, tmp_path):
    """A slow reader and a small send buffer force partial ``sendmsg``: every byte arrives, in order."""
    a, b = await (tcp_stream_pair() if kind == "tcp" else unix_stream_pair(tmp_path / "s"))
    a.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    sender, receiver = Mux(Bearer(a), Provenance.OUTBOUND), Mux(Bearer(b), Provenance.INBOUND)
    outs = [sender.register(n, Mode.INITIATOR, 0xFFFFFFFF) for n in (2, 3)]
    ins = [receiver.register(n, Mode.RESPONDER, 0xFFFFFFFF) for n in (2, 3)]
    sent = {n: [big_bytes(20_000 + 997 * i + n) for i in range(12)] for n in (2, 3)}
    received: dict[int, list[bytes]] = {2: [], 3: []}

    async def send(channel, items):
        for item in items:
            await channel.send(item)
        channel.finish()

    async def receive(channel, into, count):
        for _ in range(count):
            into.append(await channel.recv_message())
            await trio.sleep(0.001)  # a slow reader: the sender's socket buffer fills up
        channel.finish()

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sender.run)
            nursery.start_soon(receiver.run)
            async with trio.open_nursery() as flows:
                for out, inn, n in zip(outs, ins, (2, 3)):
                    flows.start_soon(send, out, sent[n])
                    flows.start_soon(receive, inn, received[n], len(sent[n]))
            sender.stop()
    assert received == sent
    assert sender.bearer.bytes_out == receiver.bearer.bytes_in
