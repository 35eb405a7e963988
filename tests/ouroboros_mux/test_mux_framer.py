"""The framer's wait-for-enough-bytes hint, which keeps reassembly of big messages linear."""

from __future__ import annotations

import cbor2
import pytest
from hypothesis import given, strategies as st

from ouroboros_mux.cbor import CborIncomplete, item_end
from ouroboros_mux.channel import CborFramer

from .cbor_messages import big_bytes, messages


@pytest.mark.parametrize(
    ("prefix_hex", "needed"),
    [
        ("", 1),
        ("5a", 5),              # 4-byte length argument still missing
        ("5a00010000", 65541),  # a 65536-byte string: its whole body is needed
        ("8201", 3),            # second element of a 2-array
        ("9f0102", 4),          # indefinite array: the next item or the break
        ("5f4101", 4),          # indefinite byte string: next chunk head or break
        ("5f4301", 5),          # inside a 3-byte chunk
        ("d81843", 6),          # tagged byte string
    ],
)
def test_incomplete_reports_a_lower_bound_on_the_bytes_needed(prefix_hex, needed):
    with pytest.raises(CborIncomplete) as info:
        item_end(bytes.fromhex(prefix_hex))
    assert info.value.needed == needed


@given(messages)
def test_needed_never_overshoots_the_real_end(message):
    # Waiting for ``needed`` bytes must never wait past the end of the item.
    for cut in sorted({0, 1, len(message) // 3, len(message) // 2, len(message) - 1}):
        if cut >= len(message):
            continue
        with pytest.raises(CborIncomplete) as info:
            item_end(message[:cut])
        assert cut < info.value.needed <= len(message)


def test_a_big_message_in_many_pieces_is_not_rescanned_before_its_last_byte():
    message = big_bytes(100_000)
    first, *middle, last = [message[i:i + 1000] for i in range(0, len(message), 1000)]
    framer = CborFramer()
    framer.feed(first)
    assert framer.next_message() is None
    assert framer.wanted == len(message)
    for piece in middle:
        framer.feed(piece)
        assert framer.buffered < framer.wanted  # nothing to do until the last piece
    framer.feed(last + b"\x01")
    assert framer.buffered >= framer.wanted
    assert framer.next_message() == message
    assert framer.next_message() == b"\x01" and framer.buffered == 0 and framer.wanted == 1


def test_mutable_input_is_copied_and_views_of_bytes_are_kept():
    framer = CborFramer()
    scratch = bytearray(b"\x82\x01")
    framer.feed(scratch)
    scratch[:] = b"\xff\xff"  # the caller reuses its buffer
    framer.feed(memoryview(b"\x02\x83"))
    assert framer.next_message() == b"\x82\x01\x02"
    framer.feed(memoryview(bytearray(b"\x01\x02\x03")))
    assert framer.next_message() == b"\x83\x01\x02\x03"


@given(st.lists(messages, min_size=1, max_size=4), st.data())
def test_remainders_after_an_item_frame_correctly(items, data):
    stream = b"".join(items)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(stream)), max_size=6)))
    framer = CborFramer()
    out = []
    for a, b in zip([0, *cuts], [*cuts, len(stream)]):
        framer.feed(memoryview(stream)[a:b])
        while (item := framer.next_message()) is not None:
            assert type(item) is bytes
            out.append(item)
    assert out == items
    assert [cbor2.loads(i) for i in out] == [cbor2.loads(i) for i in items]
