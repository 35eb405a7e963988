"""Sig submission V1 and V2 codecs: the docs/protocol/node-to-node.md 9.3 / 9.4 bytes, round trips, strict decoding."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from miniprotocols import sig_submission_v1 as v1
from miniprotocols import sig_submission_v2 as v2
from miniprotocols.framework import CodecError
from ouroboros_mux.cbor import CborError

from .helpers import h, make_message

ID = bytes(range(32))
ID_HEX = ID.hex()
V1, V2 = v1.SIG_SUBMISSION_V1.codec, v2.SIG_SUBMISSION_V2.codec
S1, S2 = v1.SigSubmissionV1State, v2.SigSubmissionV2State


# -- the examples of docs/protocol/node-to-node.md 9.3 (V2) ---------------------------------------------------

@pytest.mark.parametrize("message, wire, state", [
    (v2.MsgRequestSigIds(True, 0, 33), "8401f5001821", S2.IDLE),
    (v2.MsgRequestSigIds(False, 3, 33), "8401f4031821", S2.IDLE),
    (v2.MsgReplyNoSigIds(), "8103", S2.SIG_IDS_BLOCKING),
    (v2.MsgDone(), "8106", S2.IDLE),
    (v2.MsgReplySigIds(((ID, 1000),)), f"82029f825820{ID_HEX}1903e8ff", S2.SIG_IDS_BLOCKING),
    (v2.MsgReplySigIds(()), "82029fff", S2.SIG_IDS_NON_BLOCKING),
    (v2.MsgRequestSigs((ID,)), f"82049f5820{ID_HEX}ff", S2.IDLE),
    (v2.MsgRequestSigs(()), "82049fff", S2.IDLE),
    (v2.MsgReplySigs(()), "82059fff", S2.SIGS),
])
def test_v2_wire_examples(message, wire, state):
    assert V2.encode(message) == h(wire)
    assert V2.decode(state, h(wire)) == message


# -- the examples of docs/protocol/node-to-node.md 9.4 (V1) ---------------------------------------------------

@pytest.mark.parametrize("message, wire, state", [
    (v1.MsgInit(), "8106", S1.INIT),
    (v1.MsgRequestTxIds(True, 0, 33), "8400f5001821", S1.IDLE),
    (v1.MsgRequestTxIds(False, 3, 33), "8400f4031821", S1.IDLE),
    (v1.MsgDone(), "8104", S1.TX_IDS_BLOCKING),
    (v1.MsgReplyTxIds(((ID, 1000),)), f"82019f825820{ID_HEX}1903e8ff", S1.TX_IDS_BLOCKING),
    (v1.MsgReplyTxIds(()), "82019fff", S1.TX_IDS_NON_BLOCKING),
    (v1.MsgRequestTxs((ID,)), f"82029f5820{ID_HEX}ff", S1.IDLE),
    (v1.MsgReplyTxs(()), "82039fff", S1.TXS),
])
def test_v1_wire_examples(message, wire, state):
    assert V1.encode(message) == h(wire)
    assert V1.decode(state, h(wire)) == message


def test_8106_is_init_in_v1_and_done_in_v2():
    assert V1.decode(S1.INIT, h("8106")) == v1.MsgInit()
    assert V2.decode(S2.IDLE, h("8106")) == v2.MsgDone()


@pytest.mark.parametrize("codec, cls, tag, state", [
    (V2, v2.MsgReplySigs, 5, S2.SIGS),
    (V1, v1.MsgReplyTxs, 3, S1.TXS),
])
def test_messages_are_spliced_and_cut_byte_for_byte(codec, cls, tag, state):
    first = make_message(1)
    # The same shape written with non-shortest integers (9-byte kesPeriod): kept as received.
    second = make_message(2).replace(b"\x05\x1a\x6b\x49\xd2\x00", b"\x1b\x00\x00\x00\x00\x00\x00\x00\x05\x1a\x6b\x49\xd2\x00")
    assert second != make_message(2)
    wire = bytes([0x82, tag, 0x9F]) + first + second + b"\xff"
    assert codec.encode(cls((first, second))) == wire
    decoded = codec.decode(state, wire)
    assert decoded.messages == (first, second)


@pytest.mark.parametrize("codec, tag, state", [(V2, 2, S2.SIG_IDS_BLOCKING), (V1, 1, S1.TX_IDS_BLOCKING)])
def test_an_empty_blocking_ids_reply_is_a_decoder_failure(codec, tag, state):
    with pytest.raises(CodecError, match="empty list not permitted"):
        codec.decode(state, bytes([0x82, tag, 0x9F, 0xFF]))


# -- round trips ------------------------------------------------------------------------

ids = st.binary(min_size=32, max_size=32)
sizes = st.integers(0, 0xFFFFFFFF)
word16 = st.integers(0, 0xFFFF)
messages = st.integers(0, 2**32 - 1).map(make_message)


@given(st.booleans(), word16, word16)
def test_request_ids_round_trip(blocking, ack, req):
    for codec, cls, state in ((V1, v1.MsgRequestTxIds, S1.IDLE), (V2, v2.MsgRequestSigIds, S2.IDLE)):
        message = cls(blocking, ack, req)
        assert codec.decode(state, codec.encode(message)) == message


@given(st.lists(st.tuples(ids, sizes), min_size=1, max_size=40))
def test_reply_ids_round_trip(pairs):
    for codec, cls, state in ((V1, v1.MsgReplyTxIds, S1.TX_IDS_BLOCKING), (V2, v2.MsgReplySigIds, S2.SIG_IDS_BLOCKING)):
        message = cls(tuple(pairs))
        assert codec.decode(state, codec.encode(message)) == message


@given(st.lists(ids, max_size=40))
def test_request_bodies_round_trip(wanted):
    for codec, cls, state in ((V1, v1.MsgRequestTxs, S1.IDLE), (V2, v2.MsgRequestSigs, S2.IDLE)):
        message = cls(tuple(wanted))
        assert codec.decode(state, codec.encode(message)) == message


@given(st.lists(messages, max_size=5))
def test_reply_bodies_round_trip(raws):
    for codec, cls, state in ((V1, v1.MsgReplyTxs, S1.TXS), (V2, v2.MsgReplySigs, S2.SIGS)):
        message = cls(tuple(raws))
        assert codec.decode(state, codec.encode(message)) == message


# -- strict decoding ------------------------------------------------------------------

BAD_V2 = [
    ("8401f50018", "truncated"),
    ("8301f500", "request with three items"),
    ("8401f5001a0001000000", "req above word16"),
    ("8401010000", "blocking not a bool"),
    (f"820280", "definite ids list"),
    (f"820281825820{ID_HEX}01", "definite ids list, one pair"),
    (f"82029f835820{ID_HEX}0101ff", "pair of three"),
    (f"82029f82581f{ID_HEX[:-2]}01ff", "31-byte id"),
    (f"82029f825820{ID_HEX}1b0000000100000000ff", "size above word32"),
    (f"820481{'5820' + ID_HEX}", "definite ids request"),
    (f"82049f4100ff", "1-byte id in a request"),
    ("820580", "definite messages list"),
    ("82059f8100ff", "not a message in the reply"),
    (f"82059f845820{ID_HEX}800000ff", "message of four items"),
    (f"82059f855820{ID_HEX}0000000000ff", "payload not an array"),
    ("8107", "unknown tag"),
    ("8203f6", "no-ids with an item"),
    ("9f06ff", "indefinite envelope"),
    ("810600", "trailing bytes"),
    ("a0", "not an array"),
]


@pytest.mark.parametrize("wire, why", BAD_V2, ids=[why for _, why in BAD_V2])
def test_v2_decoder_rejects(wire, why):
    for state in S2:
        if state is S2.DONE:
            continue
        with pytest.raises((CodecError, CborError)):
            V2.decode(state, h(wire))


BAD_V1 = [
    ("8400f50018", "truncated"),
    ("8400f5001a0001000000", "req above word16"),
    ("820180", "definite ids list"),
    ("820280", "definite ids request"),
    ("820380", "definite messages list"),
    ("82039f8100ff", "not a message in the reply"),
    ("8105", "unknown tag"),
    ("820600", "init with an item"),
    ("8401f5001821", "a V2 request"),
]


@pytest.mark.parametrize("wire, why", BAD_V1, ids=[why for _, why in BAD_V1])
def test_v1_decoder_rejects(wire, why):
    for state in S1:
        if state is S1.DONE:
            continue
        with pytest.raises((CodecError, CborError)):
            V1.decode(state, h(wire))


@pytest.mark.parametrize("build", [
    lambda: v2.MsgRequestSigIds(True, -1, 1),
    lambda: v2.MsgRequestSigIds(True, 0, 0x10000),
    lambda: v2.MsgRequestSigIds(1, 0, 1),
    lambda: v2.MsgReplySigIds(((bytes(31), 1),)),
    lambda: v2.MsgReplySigIds(((ID, 2**32),)),
    lambda: v2.MsgRequestSigs((b"x",)),
    lambda: v1.MsgRequestTxIds(False, 0x10000, 0),
    lambda: v1.MsgReplyTxIds(((ID, -1),)),
    lambda: v1.MsgRequestTxs((bytes(33),)),
])
def test_messages_refuse_out_of_range_fields(build):
    with pytest.raises(ValueError):
        build()


def test_a_reply_cannot_carry_a_partial_item():
    with pytest.raises(ValueError, match="not one CBOR item"):
        V2.encode(v2.MsgReplySigs((make_message(1)[:-1],)))
