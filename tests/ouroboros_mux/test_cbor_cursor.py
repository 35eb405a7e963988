"""The CBOR cursor against cbor2: same item boundaries, strict shapes, typed errors."""

from __future__ import annotations

import io

import cbor2
import pytest
from hypothesis import given, strategies as st

from ouroboros_mux.cbor import CborError, CborIncomplete, Cursor, item_end
from ouroboros_mux.channel import CborFramer, MalformedMessage, MessageTooLarge

scalars = st.one_of(
    st.integers(min_value=-(2**64), max_value=2**64 - 1),
    st.binary(max_size=300),
    st.text(max_size=50),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False),
)
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=6),
        st.dictionaries(st.integers(min_value=0, max_value=1000), children, max_size=4),
    ),
    max_leaves=30,
)


@given(values)
def test_item_end_matches_cbor2(value):
    data = cbor2.dumps(value)
    assert item_end(data + b"\x01\x02", 0) == len(data)
    fp = io.BytesIO(data)
    cbor2.CBORDecoder(fp).decode()
    assert fp.tell() == len(data)


@given(values)
def test_every_proper_prefix_is_incomplete(value):
    data = cbor2.dumps(value)
    for cut in range(len(data)):
        with pytest.raises(CborIncomplete):
            item_end(data[:cut], 0)


def test_indefinite_containers_and_strings():
    # [_ 1, [_ ], h'01' h'0203' (indefinite), {_ 1: 2}]
    data = bytes.fromhex("9f01" "9fff" "5f41014202 03ff" "bf0102ff" "ff".replace(" ", ""))
    assert item_end(data) == len(data)
    assert cbor2.loads(data) == [1, [], b"\x01\x02\x03", {1: 2}]


@pytest.mark.parametrize(
    "hexdata",
    [
        "ff",          # lone break
        "1c",          # reserved additional information
        "9f5f4101 6101ff ff".replace(" ", ""),  # text chunk inside a byte string
        "f818",        # simple value encoded in two bytes below 32
        "1f",          # indefinite unsigned integer
    ],
)
def test_malformed_is_a_typed_error(hexdata):
    with pytest.raises(CborError) as info:
        item_end(bytes.fromhex(hexdata))
    assert not isinstance(info.value, CborIncomplete)


def test_nesting_is_bounded():
    with pytest.raises(CborError):
        item_end(b"\x81" * 1000 + b"\x00")


def test_cursor_strict_shapes_and_spans():
    payload = cbor2.dumps([b"\x01" * 4, 123, 123456])
    outer = b"\x82" + payload + b"\x58\x20" + b"\xaa" * 32
    c = Cursor(outer)
    assert c.definite_array(2) == 2
    start, end = c.skip()
    assert outer[start:end] == payload
    assert c.bytes(size=32) == b"\xaa" * 32
    c.expect_end()

    c = Cursor(payload)
    with pytest.raises(CborError):
        c.definite_array(2)
    with pytest.raises(CborError):
        Cursor(bytes.fromhex("9fff")).definite_array()
    with pytest.raises(CborError):
        Cursor(bytes.fromhex("80")).indefinite_array()
    with pytest.raises(CborError):
        Cursor(bytes.fromhex("1a00010000")).uint(maximum=0xFFFF)
    with pytest.raises(CborError):
        Cursor(bytes.fromhex("5f4101ff")).bytes()
    with pytest.raises(CborError):
        Cursor(bytes.fromhex("4101")).bytes(size=2)
    assert Cursor(bytes.fromhex("1b00000000000000ff")).uint() == 255  # non-minimal accepted
    assert Cursor(bytes.fromhex("f5")).bool() is True
    assert Cursor(bytes.fromhex("6161")).text() == "a"


@given(st.lists(values, min_size=1, max_size=8), st.data())
def test_framer_reassembles_any_segmentation(items, data):
    encoded = [cbor2.dumps(v) for v in items]
    stream = b"".join(encoded)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    framer = CborFramer()
    out = []
    prev = 0
    for cut in cuts + [len(stream)]:
        framer.feed(stream[prev:cut])
        prev = cut
        while (msg := framer.next_message()) is not None:
            out.append(msg)
    assert out == encoded
    assert framer.buffered == 0


def test_framer_limits_and_malformed():
    framer = CborFramer()
    framer.feed(b"\x59\x10\x00" + b"\x00" * 100)  # a 4096-byte string, incomplete
    with pytest.raises(MessageTooLarge):
        framer.next_message(max_size=50)
    assert framer.next_message(max_size=5000) is None
    framer = CborFramer()
    framer.feed(cbor2.dumps(b"\x00" * 100))
    with pytest.raises(MessageTooLarge):
        framer.next_message(max_size=100)  # complete, but larger than the state allows
    framer = CborFramer()
    framer.feed(b"\xff")
    with pytest.raises(MalformedMessage):
        framer.next_message()


@pytest.mark.parametrize(
    ("hexdata", "needed"),
    [
        ("18", 2),            # one-byte argument missing
        ("1901", 3),          # two-byte argument cut
        ("1a0001", 5),        # four-byte argument cut
        ("1b00000000", 9),    # eight-byte argument cut
        ("5a00000010", 21),   # byte string announcing 16 bytes, none here
        ("8201", 3),          # array of two, one item here
        ("9f01", 3),          # indefinite array without its break
        ("c2", 2),            # a tag without its item
    ],
)
def test_an_incomplete_item_says_how_far_the_input_must_reach(hexdata, needed):
    with pytest.raises(CborIncomplete) as info:
        item_end(bytes.fromhex(hexdata))
    assert info.value.needed == needed
