"""C1 (classification) and the common envelope with minimal padding (docs/topics-design.md 2.2, 2.3)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topics import cbor
from topics.classify import ADAPTER_TAGS, TAG_RANGE, TopicClass, classify, tag_head
from topics.envelope import EnvelopeError, decode_envelope, encode_envelope, pad_length
from topics.reasons import MALFORMED, NON_CANONICAL, TOO_LARGE, UNKNOWN_TOPIC


def test_tag_heads():
    assert {name: tag_head(tag).hex() for name, tag in ADAPTER_TAGS.items()} == {
        "upsycle": "d994f9", "blocklace": "d994fa", "dmsg": "d994fb"}
    assert [tag_head(t).hex() for t in range(38140, 38144)] == ["d994fc", "d994fd", "d994fe", "d994ff"]


@given(st.binary(max_size=64))
def test_every_byte_string_has_exactly_one_class(body):
    found = classify(body)
    assert found.kind in TopicClass
    tagged = len(body) >= 3 and body[0] == 0xD9 and int.from_bytes(body[1:3], "big") in TAG_RANGE
    assert (found.kind is TopicClass.RAW) == (not tagged)
    if found.kind is TopicClass.ADAPTER:
        assert ADAPTER_TAGS[found.adapter] == int.from_bytes(body[1:3], "big")
    if found.kind is TopicClass.UNKNOWN:
        assert int.from_bytes(body[1:3], "big") >= 38140


@given(st.integers(0, 1994), st.binary(max_size=200))
def test_every_mithril_shaped_body_is_raw(length, rest):
    assert classify(length.to_bytes(2, "big") + rest).kind is TopicClass.RAW


def test_a_non_minimal_tag_head_is_raw():
    assert classify(bytes.fromhex("da000094f9") + b"\x80" * 90).kind is TopicClass.RAW


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(ADAPTER_TAGS.values())), st.integers(0, 30), st.binary(max_size=1900))
def test_envelopes_are_padded_minimally_and_classify_to_their_adapter(tag, kind, payload):
    try:
        body = encode_envelope(tag, kind, [payload])
    except EnvelopeError as exc:
        assert exc.reason is TOO_LARGE
        return
    assert 90 <= len(body) <= 2000
    env = decode_envelope(body)
    assert (env.tag, env.kind, env.content) == (tag, kind, [payload])
    assert env.content_raw == cbor.encode([payload])
    found = classify(body)
    assert found.kind is TopicClass.ADAPTER and ADAPTER_TAGS[found.adapter] == tag
    if env.pad:
        assert len(body) - env.pad - len(cbor.head(2, env.pad)) < 90   # needed
        assert pad_length(len(body) - env.pad - len(cbor.head(2, env.pad))) == env.pad  # and minimal


def test_padding_rules():
    body = encode_envelope(38137, 0, 1)
    env = decode_envelope(body)
    unpadded = bytes.fromhex("d994f9") + cbor.head(4, 4) + b"\x01\x00\x01"
    longer = unpadded + cbor.encode(bytes(env.pad + 1))
    with pytest.raises(EnvelopeError) as err:
        decode_envelope(longer)
    assert err.value.reason is NON_CANONICAL
    nonzero = unpadded + cbor.encode(b"\x01" + bytes(env.pad - 1))
    with pytest.raises(EnvelopeError) as err:
        decode_envelope(nonzero)
    assert err.value.reason is NON_CANONICAL
    big = encode_envelope(38137, 0, b"x" * 100)
    padded_big = bytes.fromhex("d994f9") + cbor.head(4, 4) + big[4:] + cbor.encode(b"")
    with pytest.raises(EnvelopeError) as err:
        decode_envelope(padded_big)
    assert err.value.reason is NON_CANONICAL


def test_pad_length_edge_around_the_two_byte_head():
    # 24 zero bytes need a 2-byte head: some lengths are reached only by over-shooting by one.
    assert pad_length(65) == 24 and 65 + 2 + 24 == 91
    assert pad_length(66) == 23 and 66 + 1 + 23 == 90
    assert pad_length(89) == 0 and pad_length(90) is None


X = b"x" * 96
HEAD = tag_head(38137)


@pytest.mark.parametrize(("body", "reason"), [
    (HEAD + cbor.encode([2, 0, X]), UNKNOWN_TOPIC),                         # version 2
    (HEAD + cbor.encode({1: X}), MALFORMED),                                 # not an array
    (HEAD + cbor.encode([1, X]), MALFORMED),                                 # two fields
    (HEAD + cbor.encode([1, 0, X]) + b"\x00", MALFORMED),                   # trailing byte
    (HEAD + bytes.fromhex("8301180000") + cbor.encode(X), NON_CANONICAL),    # kind not shortest
    (HEAD + cbor.encode([1, -1, X]), MALFORMED),                             # kind not a uint
    (HEAD + cbor.encode([1, 0, "x" * 2000]), TOO_LARGE),
])
def test_envelope_rejects(body, reason):
    with pytest.raises(EnvelopeError) as err:
        decode_envelope(body)
    assert err.value.reason is reason
