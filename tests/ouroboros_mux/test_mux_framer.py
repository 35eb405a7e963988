"""The framer's wait-for-enough-bytes hint, which keeps reassembly of big messages linear, and its
framing by a reader that frames its own messages (``next_decoded``), held to the walk's."""

from __future__ import annotations

import cbor2
import pytest
from hypothesis import given, settings, strategies as st

from ouroboros_mux.cbor import CborError, CborIncomplete, item_end
from ouroboros_mux.channel import CborFramer, MalformedMessage, MessageTooLarge

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


def _outcome(take):
    """What one question to a framer gives: its answer, or the error and its figures."""
    try:
        return "answer", take()
    except MessageTooLarge as exc:
        return "too large", exc.limit, exc.buffered
    except MalformedMessage as exc:
        return "malformed", str(exc)


def _framing_reader(reads: set[int]):
    """A reader that frames the items whose first byte is in ``reads`` itself, as a codec's
    ``decode_prefix`` does: ``(what it read, end)`` when the first item of ``buf`` is whole, else None."""
    def read(context, buf):
        assert context == "state" and type(buf) is bytes
        if buf[0] not in reads:
            return None
        try:
            end = item_end(buf, 0, len(buf))
        except CborError:
            return None
        return ("read", buf[:end]), end
    return read


@settings(max_examples=300, deadline=None)
@given(st.lists(messages, min_size=1, max_size=4), st.data())
def test_items_a_reader_frames_come_out_as_the_walk_frames_them(items, data):
    """``next_decoded`` (a reader offered the bytes first, framing what it reads by its own end)
    gives the items, the limits' errors and the malformed tail that ``next_message`` gives, at
    the same questions, whichever items the reader takes and however the stream is cut."""
    tail = data.draw(st.sampled_from([b"", b"\x1c", b"\x82\x01"]))  # nothing, not CBOR, an item cut short
    stream = b"".join(items) + tail
    cuts = sorted(data.draw(st.sets(st.integers(0, len(stream)), max_size=6)))
    views = data.draw(st.booleans())
    max_size = data.draw(st.one_of(st.none(), st.integers(1, max(map(len, items)) + 2)))
    reader = _framing_reader(set(data.draw(st.lists(st.integers(0, 255), max_size=200))))
    pieces = [memoryview(stream)[a:b] if views else stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)])]
    _frame_both_ways(pieces, reader, max_size)


def _frame_both_ways(pieces, reader, max_size, *, all_read: bool = False) -> None:
    """Feed ``pieces`` to a framer asked with ``next_message`` and to one asked with ``next_decoded``
    (``reader``), asking each after every piece until it has nothing complete: the same answers and
    errors, the same state after each item; ``all_read``: the reader read every item taken."""
    walked, read = CborFramer(), CborFramer()
    for piece in pieces:
        walked.feed(piece)
        read.feed(piece)
        while True:
            expected = _outcome(lambda: walked.next_message(max_size))
            got = _outcome(lambda: read.next_decoded(reader, "state", max_size))
            if expected[0] != "answer" or expected[1] is None:
                assert got == expected
                break
            raw, message = got[1]
            assert type(raw) is bytes and raw == expected[1]
            assert message == ("read", raw) if all_read else message in (None, ("read", raw))
            assert (read.buffered, read.wanted) == (walked.buffered, walked.wanted)
            assert b"".join(map(bytes, read._chunks)) == b"".join(map(bytes, walked._chunks))
        if expected[0] != "answer":
            break


@settings(max_examples=200, deadline=None)
@given(messages, st.data())
def test_an_item_that_is_everything_buffered_is_taken_as_the_walk_takes_it(item, data):
    """The usual read: one piece holding exactly one item the reader takes (``next_decoded``'s own
    path for it, the framer emptied without ``_take``), under every byte limit around its size,
    after pieces of other items or none: the same answer, error and state as ``next_message``."""
    before = data.draw(st.lists(messages, max_size=2))
    size = len(item)
    max_size = data.draw(st.one_of(st.none(), st.integers(max(1, size - 2), size + 2)))
    _frame_both_ways([*before, item], _framing_reader(set(range(256))), max_size, all_read=True)
