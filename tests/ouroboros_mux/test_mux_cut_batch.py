"""The mux's cutting of SDUs, with its path for the usual SDU, against the rule it implements.

``Mux._cut_batch`` takes a one-message SDU (one queued piece smaller than an SDU) without its
general loop; whatever mix of pieces is queued, the SDUs must be those of the rule: channels served
round-robin in the order they got bytes, one SDU each per turn, each SDU the next at most
``EGRESS_SDU_SIZE`` bytes of that channel's stream, at most ``MAX_SDUS_PER_WRITE`` SDUs or about
``MAX_BYTES_PER_WRITE`` bytes a write. ``MuxChannel.take_message``'s and ``take_decoded``'s early
"nothing complete" answer is held to the framer's own.
"""

from __future__ import annotations

import struct

import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from ouroboros_mux.cbor import CborError, item_end
from ouroboros_mux.bearer import Bearer
from ouroboros_mux.channel import CborFramer, MessageTooLarge
from ouroboros_mux.mux import MAX_BYTES_PER_WRITE, MAX_SDUS_PER_WRITE, Mode, Mux, Provenance
from ouroboros_mux.sdu import EGRESS_SDU_SIZE, SDU_HEADER_SIZE

STAMP = 0x01020304


def _mux(count: int):
    stream, _ = trio.testing.memory_stream_pair()
    mux = Mux(Bearer(stream, timestamp=lambda: STAMP), Provenance.OUTBOUND)
    return mux, [mux.register(n, Mode.INITIATOR, 1 << 24) for n in range(count)]


def _expected_writes(sends: list[tuple[int, bytes]], count: int) -> list[bytes]:
    """The writes the rule gives for ``sends`` (channel index, bytes) queued in this order."""
    streams = {n: b"" for n in range(count)}
    order: list[int] = []
    for n, data in sends:
        if data and not streams[n]:
            order.append(n)
        streams[n] += data
    writes = []
    while order:
        out, sdus, total = b"", 0, 0
        while order and sdus < MAX_SDUS_PER_WRITE and total < MAX_BYTES_PER_WRITE:
            n = order.pop(0)
            payload, streams[n] = streams[n][:EGRESS_SDU_SIZE], streams[n][EGRESS_SDU_SIZE:]
            out += struct.pack(">IHH", STAMP, n, len(payload)) + payload
            sdus += 1
            total += len(payload) + SDU_HEADER_SIZE
            if streams[n]:
                order.append(n)
        writes.append(out)
    return writes


sizes = st.one_of(st.integers(1, 40), st.integers(EGRESS_SDU_SIZE - 3, EGRESS_SDU_SIZE + 3),
                  st.integers(1, 3 * EGRESS_SDU_SIZE))


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 4).flatmap(lambda count: st.tuples(
    st.just(count), st.lists(st.tuples(st.integers(0, count - 1), sizes), min_size=1, max_size=12))))
def test_batches_are_the_rules_sdus(case):
    count, plan = case
    sends = [(n, bytes([n + 1]) * size) for n, size in plan]

    queued = []

    async def run():
        mux, channels = _mux(count)
        for n, data in sends:
            if channels[n].send_nowait(data):  # refused once a channel holds a full send buffer
                queued.append((n, data))
        writes = []
        while mux._ready:
            parts, sent, total = mux._cut_batch()
            data = b"".join(bytes(p) for p in parts)
            assert total == len(data) == sum(size + SDU_HEADER_SIZE for _, size in sent)
            writes.append(data)
        assert all(ch.queued_out == 0 and not ch._scheduled for ch in channels)
        return writes

    writes = trio.run(run)
    assert writes == _expected_writes(queued, count)


@pytest.mark.parametrize("fed, max_size", [(b"", None), (b"\x82\x01", None), (b"\x82\x01", 2), (b"\x82\x01", 1),
                                           (b"\x59\x01\x00" + b"x" * 10, 12), (b"\x59\x01\x00" + b"x" * 10, 20),
                                           (b"\x82\x01\x02", None), (b"\x82\x01\x02\x03", 3)])
def test_take_message_answers_as_the_framer(fed, max_size):
    def outcome(take):
        try:
            return "item", take(max_size)
        except MessageTooLarge as exc:
            return "too large", exc.limit, exc.buffered

    def read_pairs(context, buf):  # a reader framing the arrays of two items itself
        if buf[0] != 0x82:
            return None
        try:
            return "read", item_end(buf)
        except CborError:
            return None

    async def run():
        mux, (channel, decoding) = _mux(2)
        framer, decoding_framer = CborFramer(), CborFramer()
        for piece in (fed[:1], fed[1:]):
            framer.feed(piece)
            channel._framer.feed(piece)
            decoding_framer.feed(piece)
            decoding._framer.feed(piece)
            assert outcome(channel.take_message) == outcome(framer.next_message)
            assert outcome(lambda size: decoding.take_decoded(read_pairs, None, size)) == \
                outcome(lambda size: decoding_framer.next_decoded(read_pairs, None, size))

    trio.run(run)
