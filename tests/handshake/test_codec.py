"""The handshake codec against the example bytes of docs/protocol/handshake.md 4.8 and vectors.json, and the decoder rules of 4.3."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import handshake
from handshake import (CARDANO_NODE_TO_CLIENT, DMQ_NODE_TO_CLIENT, DMQ_NODE_TO_NODE, HandshakeCodecError,
                       HandshakeDecodeError, MsgAcceptVersion, MsgProposeVersions, MsgQueryReply, MsgRefuse,
                       MsgReplyVersions, Refused, State, VersionMismatch, decode_message, encode_message)

from .examples import N2C_MAINNET, WIRE_EXAMPLES

N2C_DATA = "821aad964a09f4"


def _decode(link, state, hex_bytes):
    return decode_message(link, state, bytes.fromhex(hex_bytes))


@pytest.mark.parametrize("name, link_name, state_name, message, hex_bytes", WIRE_EXAMPLES,
                         ids=[e[0] for e in WIRE_EXAMPLES])
def test_wire_examples_encode_and_decode_byte_for_byte(name, link_name, state_name, message, hex_bytes):
    link = getattr(handshake, link_name)
    raw = bytes.fromhex(hex_bytes)
    assert encode_message(message) == raw
    decoded = decode_message(link, State[state_name], raw)
    assert decoded == message
    assert encode_message(decoded) == raw


def test_wire_small_n2c_vectors(vectors):
    small = vectors["wire_small"]
    propose = bytes.fromhex(small["n2c_handshake_propose_mainnet"])
    accept = bytes.fromhex(small["n2c_handshake_accept_mainnet"])
    table = handshake.dmq_node_to_client_versions(handshake.DMQ_MAINNET_MAGIC)
    assert encode_message(MsgProposeVersions.from_table(table)) == propose
    assert encode_message(MsgAcceptVersion(4097, N2C_MAINNET.to_cbor())) == accept
    assert decode_message(DMQ_NODE_TO_CLIENT, State.PROPOSE, propose).table == {4097: bytes.fromhex(N2C_DATA)}
    assert decode_message(DMQ_NODE_TO_CLIENT, State.CONFIRM, accept) == MsgAcceptVersion(4097, N2C_MAINNET.to_cbor())


@pytest.mark.parametrize("reason, hex_bytes", [
    (VersionMismatch((4097,)), "8202820081191001"),
    (VersionMismatch(()), "8202820080"),
    (HandshakeDecodeError(4097, "bad"), "8202830119100163626164"),
    (Refused(4097, "no"), "82028302191001626e6f"),
])
def test_each_refuse_reason_round_trips(reason, hex_bytes):
    raw = bytes.fromhex(hex_bytes)
    assert encode_message(MsgRefuse(reason)) == raw
    assert _decode(DMQ_NODE_TO_CLIENT, State.CONFIRM, hex_bytes) == MsgRefuse(reason)


def test_version_mismatch_keeps_versions_the_link_does_not_know():
    # A Cardano node refusing us lists its own (Cardano) numbers: keep them for the operator.
    raw = "82028200" + "82" + "198010" + "198017"
    assert _decode(DMQ_NODE_TO_CLIENT, State.CONFIRM, raw) == MsgRefuse(VersionMismatch((32784, 32791)))


def test_refuse_reason_with_an_unknown_version_is_a_decode_failure():
    with pytest.raises(HandshakeCodecError, match="refuse reason"):
        _decode(DMQ_NODE_TO_CLIENT, State.CONFIRM, "820283021901026161")  # Refused(258, "a")


def test_unknown_version_keys_are_skipped_silently():
    # N2C server: 1 (N2N), 4097 (ours), 32784 (Cardano), text "x", -1 and 2**64-1 are all keys.
    raw = ("8200a6" + "01" + N2C_DATA + "191001" + N2C_DATA + "198010" + N2C_DATA
           + "6178" + N2C_DATA + "20" + N2C_DATA + "1bffffffffffffffff" + N2C_DATA)
    message = _decode(DMQ_NODE_TO_CLIENT, State.PROPOSE, raw)
    assert message.table == {4097: bytes.fromhex(N2C_DATA)}


def test_cardano_versions_are_unknown_to_a_dmq_n2c_decoder_and_vice_versa():
    cardano_propose = WIRE_EXAMPLES[11][4]
    assert _decode(DMQ_NODE_TO_CLIENT, State.PROPOSE, cardano_propose) == MsgProposeVersions(())
    assert _decode(CARDANO_NODE_TO_CLIENT, State.PROPOSE, "8200a1191001" + N2C_DATA) == MsgProposeVersions(())
    # 0x9001 has bit 12 set, but clearing it leaves 0x8001, not 1.
    assert _decode(DMQ_NODE_TO_CLIENT, State.PROPOSE, "8200a1199001" + N2C_DATA) == MsgProposeVersions(())


def test_unknown_keys_may_appear_anywhere_but_known_keys_must_ascend():
    d = "841aad964a09f401f4"
    ok = _decode(DMQ_NODE_TO_NODE, State.PROPOSE, "8200a3" + "01" + d + "1903e8" + d + "02" + d)
    assert [v for v, _ in ok.versions] == [1, 2]
    with pytest.raises(HandshakeCodecError, match="unordered version"):
        _decode(DMQ_NODE_TO_NODE, State.PROPOSE, "8200a2" + "02" + d + "01" + d)
    with pytest.raises(HandshakeCodecError, match="unordered version"):
        _decode(DMQ_NODE_TO_NODE, State.PROPOSE, "8200a2" + "01" + d + "01" + d)


def test_non_shortest_integers_are_read_like_the_reference():
    # cborg accepts any integer width; version 4097 written in 4 bytes is still 4097.
    message = _decode(DMQ_NODE_TO_CLIENT, State.PROPOSE, "8200a11a00001001" + N2C_DATA)
    assert message.table == {4097: bytes.fromhex(N2C_DATA)}


def test_indefinite_version_table_is_rejected():
    with pytest.raises(HandshakeCodecError, match="definite-length map"):
        _decode(DMQ_NODE_TO_CLIENT, State.PROPOSE, "8200bf191001" + N2C_DATA + "ff")
    with pytest.raises(HandshakeCodecError, match="definite-length map"):
        _decode(DMQ_NODE_TO_CLIENT, State.CONFIRM, "8203bf191001" + N2C_DATA + "ff")


def test_indefinite_outer_list_is_rejected():
    with pytest.raises(HandshakeCodecError, match="definite-length array"):
        _decode(DMQ_NODE_TO_CLIENT, State.PROPOSE, "9f00a1191001" + N2C_DATA + "ff")


def test_version_data_stays_raw_even_when_it_would_not_decode():
    raw_data = "9f1aad964a09f4ff"  # indefinite list: only an error once this version is chosen
    message = _decode(DMQ_NODE_TO_CLIENT, State.PROPOSE, "8200a1191001" + raw_data)
    assert message.table == {4097: bytes.fromhex(raw_data)}


@pytest.mark.parametrize("state, hex_bytes, expected", [
    (State.PROPOSE, "830102" + N2C_DATA, r"codecHandshake \(StPropose\) unexpected key \(1, 3\)"),
    (State.PROPOSE, "8202820080", r"unexpected key \(2, 2\)"),
    (State.CONFIRM, "8300a0f4", r"unexpected key \(0, 3\)"),
    (State.CONFIRM, "820480", r"unexpected key \(4, 2\)"),
    (State.CONFIRM, "830107" + N2C_DATA, "not a recognised DMQ node-to-client version"),
    (State.CONFIRM, "8202830119100101", "expected text string"),
    (State.PROPOSE, "8200a1191001", "premature end"),
    (State.PROPOSE, "8200a0" + "00", "trailing bytes"),
    (State.PROPOSE, "a0", "expected array"),
])
def test_malformed_messages_are_codec_errors(state, hex_bytes, expected):
    with pytest.raises(HandshakeCodecError, match=expected):
        _decode(DMQ_NODE_TO_CLIENT, state, hex_bytes)


def test_a_proposal_received_while_waiting_for_a_reply_is_a_reply():
    raw = WIRE_EXAMPLES[0][4]
    message = _decode(DMQ_NODE_TO_NODE, State.CONFIRM, raw)
    assert isinstance(message, MsgReplyVersions)
    assert encode_message(message) == bytes.fromhex(raw)


def test_unordered_tables_cannot_be_built():
    with pytest.raises(ValueError, match="strictly ascending"):
        MsgQueryReply(((2, b"\xf6"), (1, b"\xf6")))


_tables = st.dictionaries(st.sampled_from(sorted(handshake.DMQ_NODE_TO_NODE.versions)),
                          st.builds(handshake.NodeToNodeVersionData, st.integers(0, 2**32 - 1), st.booleans(),
                                    st.booleans(), st.booleans()), min_size=1)


@given(_tables)
def test_any_n2n_table_round_trips(table):
    message = MsgProposeVersions.from_table(table)
    raw = encode_message(message)
    decoded = decode_message(DMQ_NODE_TO_NODE, State.PROPOSE, raw)
    assert decoded == message
    assert {v: DMQ_NODE_TO_NODE.decode_data(d) for v, d in decoded.versions} == table


@given(st.binary(max_size=64), st.sampled_from(list(State)[:2]))
def test_arbitrary_bytes_decode_or_fail_with_a_codec_error(data, state):
    try:
        message = decode_message(DMQ_NODE_TO_CLIENT, state, data)
    except HandshakeCodecError:
        return
    # Whatever decodes re-encodes canonically to a message that decodes to the same value.
    assert decode_message(DMQ_NODE_TO_CLIENT, state, encode_message(message)) == message
