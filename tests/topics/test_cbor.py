"""topics.cbor: the deterministic encoder and the strict decoder (RFC 8949 4.2.1)."""

from __future__ import annotations

import cbor2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topics import cbor
from topics.cbor import CborMalformed, CborNonCanonical, Tag

keys = st.one_of(st.integers(-2**63, 2**64 - 1), st.binary(max_size=8), st.text(max_size=8))
values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**64, 2**64 - 1), st.binary(max_size=40),
              st.text(max_size=20)),
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(keys, inner, max_size=5)),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(values)
def test_round_trip_and_agreement_with_cbor2_canonical(value):
    """cbor2's canonical mode orders map keys length-first (RFC 7049); RFC 8949 4.2.1 orders
    them bytewise, so the two agree exactly on values without maps, and on maps up to order."""
    encoded = cbor.encode(value)
    assert cbor.decode(encoded) == value
    assert cbor2.loads(encoded) == value
    if not _has_map(value):
        assert encoded == cbor2.dumps(value, canonical=True)


def _has_map(value) -> bool:
    if isinstance(value, dict):
        return True
    return isinstance(value, list) and any(_has_map(v) for v in value)


def test_map_keys_are_in_bytewise_order():
    assert cbor.encode({-1: None, 24: None}) == bytes.fromhex("a21818f620f6")


@given(st.integers(0, 2**64 - 1))
def test_every_longer_head_of_an_integer_is_non_canonical(n):
    shortest = cbor.encode(n)
    for info, size in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if n < 2 ** (8 * size) and len(shortest) < 1 + size:
            longer = bytes((info,)) + n.to_bytes(size, "big")
            with pytest.raises(CborNonCanonical):
                cbor.decode(longer)


@pytest.mark.parametrize(("hex_bytes", "error"), [
    ("a20102 0304".replace(" ", ""), None),                # keys in order: fine
    ("a203040102", CborNonCanonical),                      # keys out of order
    ("a201020103", CborMalformed),                         # duplicate key
    ("9f01ff", CborNonCanonical),                          # indefinite array
    ("9f01", CborMalformed),                               # indefinite and truncated
    ("0102", CborMalformed),                               # trailing byte
    ("62c328", CborMalformed),                             # invalid UTF-8
    ("f93c00", None),                                      # 1.0 as a half float
    ("fa3f800000", CborNonCanonical),                      # 1.0 as a single float
    ("1c", CborMalformed),                                 # reserved additional information
    ("f0", CborMalformed),                                 # unassigned simple value
    ("d99400a0", None),                                    # a tag around an empty map
])
def test_strict_decoding(hex_bytes, error):
    raw = bytes.fromhex(hex_bytes)
    if error is None:
        cbor.decode(raw)
    else:
        with pytest.raises(error):
            cbor.decode(raw)


def test_decode_item_reports_spans():
    raw = cbor.encode([b"ab", {1: "x"}, Tag(38137, [1])])
    _, end = cbor.decode_item(raw, 1)
    assert raw[1:end] == cbor.encode(b"ab")
    assert cbor.decode(raw)[2] == Tag(38137, [1])
    assert cbor.head(6, 38137) == bytes.fromhex("d994f9")


def test_nesting_limit_is_malformed():
    with pytest.raises(CborMalformed, match="deep"):
        cbor.decode(b"\x81" * 100 + b"\x00")
