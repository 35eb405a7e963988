"""The sans-IO client and server: the server algorithm of docs/protocol/handshake.md 4.5, client checks, simultaneous open, states."""

from __future__ import annotations

import pytest

from handshake import (CARDANO_MAINNET_MAGIC, CARDANO_NODE_TO_CLIENT, DMQ_MAINNET_MAGIC, DMQ_NODE_TO_CLIENT, DMQ_NODE_TO_NODE,
                       HandshakeClient, HandshakeCodecError, HandshakeDecodeError, HandshakeQueryResult,
                       HandshakeRefused, HandshakeResult, HandshakeServer, InvalidServerSelection,
                       MsgAcceptVersion, MsgRefuse, NodeToClientVersionData, NodeToNodeVersionData,
                       NotRecognisedVersion, Refused, State, UnexpectedHandshakeMessage, VersionDataError,
                       VersionMismatch, cardano_node_to_client_versions, decode_message,
                       dmq_node_to_client_versions, dmq_node_to_node_versions, encode_message)
from handshake.spec import TRANSITIONS

N2C = dmq_node_to_client_versions(DMQ_MAINNET_MAGIC)
N2N = dmq_node_to_node_versions(DMQ_MAINNET_MAGIC)
PREPROD_DMQ = 2147483649


def _exchange(link, client_table, server_table):
    """Run both sans-IO peers against each other; returns (client outcome, server reply)."""
    client = HandshakeClient(link, client_table)
    server = HandshakeServer(link, server_table)
    reply = server.receive(client.propose())
    try:
        return client.receive(reply.data), reply
    except Exception as exc:  # the client's outcome, whatever it is, is what the tests look at
        return exc, reply


def test_n2c_accept_agrees_on_4097_with_the_exact_reply_bytes():
    outcome, reply = _exchange(DMQ_NODE_TO_CLIENT, N2C, N2C)
    expected = HandshakeResult(4097, NodeToClientVersionData(DMQ_MAINNET_MAGIC))
    assert reply.data.hex() == "8301191001821aad964a09f4"
    assert reply.result() == expected
    assert outcome == expected


def test_n2n_server_picks_the_highest_common_version():
    only_v1 = {1: N2N[1]}
    outcome, reply = _exchange(DMQ_NODE_TO_NODE, only_v1, N2N)
    assert outcome.version == reply.result().version == 1
    outcome, reply = _exchange(DMQ_NODE_TO_NODE, N2N, N2N)
    assert reply.data.hex() == "830102841aad964a09f401f4"
    assert outcome == HandshakeResult(2, NodeToNodeVersionData(DMQ_MAINNET_MAGIC))


def test_cardano_versions_proposed_to_a_dmq_n2c_server_are_refused_listing_4097():
    server = HandshakeServer(DMQ_NODE_TO_CLIENT, N2C)
    # What a Cardano N2C client (cardano-cli, a Pallas DmqClient on Windows) sends.
    cardano = HandshakeClient(CARDANO_NODE_TO_CLIENT, cardano_node_to_client_versions(CARDANO_MAINNET_MAGIC)).propose()
    reply = server.receive(cardano)
    assert reply.data.hex() == "8202820081191001"
    with pytest.raises(HandshakeRefused) as info:
        reply.result()
    assert info.value.reason == VersionMismatch((4097,))
    assert info.value.by_peer is False


def test_client_sees_the_version_mismatch_as_a_refusal_by_the_peer():
    outcome, _ = _exchange(DMQ_NODE_TO_NODE, {1: N2N[1]}, {2: N2N[2]})
    assert isinstance(outcome, HandshakeRefused)
    assert outcome.by_peer is True
    assert outcome.reason == VersionMismatch((2,))
    assert "no common version (the server knows [2])" in str(outcome)


def test_magic_mismatch_is_refused_with_the_version_data_texts():
    outcome, reply = _exchange(DMQ_NODE_TO_CLIENT, dmq_node_to_client_versions(PREPROD_DMQ), N2C)
    expected = Refused(4097, "version data mismatch: NodeToClientVersionData {networkMagic = NetworkMagic 2912307721, "
                             "query = False} /= NodeToClientVersionData {networkMagic = NetworkMagic 2147483649, "
                             "query = False}")
    assert decode_message(DMQ_NODE_TO_CLIENT, State.CONFIRM, reply.data) == MsgRefuse(expected)
    assert isinstance(outcome, HandshakeRefused) and outcome.reason == expected


@pytest.mark.parametrize("raw_data, text", [
    ("9f1aad964a09f4ff", "unknown encoding: TListI [TInt 2912307721,TBool False]"),
    ("821b0000000100000000f4", "networkMagic out of bound: 4294967296"),
])
def test_undecodable_chosen_data_is_refused_with_handshake_decode_error(raw_data, text):
    server = HandshakeServer(DMQ_NODE_TO_CLIENT, N2C)
    reply = server.receive(bytes.fromhex("8200a1191001" + raw_data))
    assert decode_message(DMQ_NODE_TO_CLIENT, State.CONFIRM, reply.data) == MsgRefuse(HandshakeDecodeError(4097, text))


def test_n2n_peer_sharing_out_of_bound_is_refused():
    server = HandshakeServer(DMQ_NODE_TO_NODE, N2N)
    reply = server.receive(bytes.fromhex("8200a102841aad964a09f407f4"))
    assert decode_message(DMQ_NODE_TO_NODE, State.CONFIRM, reply.data) == MsgRefuse(
        HandshakeDecodeError(2, "peerSharing is out of bound: 7"))


def test_only_the_highest_common_version_is_decoded():
    good, bad = "841aad964a09f401f4", "f6"
    server = HandshakeServer(DMQ_NODE_TO_NODE, N2N)
    # Bad data for version 1 does not matter when 2 is chosen ...
    assert server.receive(bytes.fromhex(f"8200a201{bad}02{good}")).result().version == 2
    # ... but bad data for version 2 is refused, without falling back to 1.
    server = HandshakeServer(DMQ_NODE_TO_NODE, N2N)
    reply = server.receive(bytes.fromhex(f"8200a201{good}02{bad}"))
    assert decode_message(DMQ_NODE_TO_NODE, State.CONFIRM, reply.data) == MsgRefuse(
        HandshakeDecodeError(2, "unknown encoding: TNull"))


def test_query_gets_the_servers_whole_table_and_no_connection():
    querying = dmq_node_to_client_versions(DMQ_MAINNET_MAGIC, query=True)
    outcome, reply = _exchange(DMQ_NODE_TO_CLIENT, querying, N2C)
    assert reply.data.hex() == "8203a1191001821aad964a09f4"
    assert reply.is_query
    # The server learns what the client proposed; the client learns the server's table.
    with pytest.raises(HandshakeQueryResult) as info:
        reply.result()
    assert info.value.versions == {4097: NodeToClientVersionData(DMQ_MAINNET_MAGIC, query=True)}
    assert isinstance(outcome, HandshakeQueryResult)
    assert outcome.versions == {4097: NodeToClientVersionData(DMQ_MAINNET_MAGIC)}


def test_a_server_configured_for_query_answers_queries_too():
    outcome, reply = _exchange(DMQ_NODE_TO_NODE, N2N, dmq_node_to_node_versions(DMQ_MAINNET_MAGIC, query=True))
    assert reply.is_query
    assert set(outcome.versions) == {1, 2}


def test_query_reply_entries_that_do_not_decode_are_kept_as_errors():
    client = HandshakeClient(DMQ_NODE_TO_NODE, N2N)
    client.propose()
    with pytest.raises(HandshakeQueryResult) as info:
        client.receive(bytes.fromhex("8203a201841aad964a09f401f402f6"))
    assert info.value.versions[1] == NodeToNodeVersionData(DMQ_MAINNET_MAGIC)
    assert isinstance(info.value.versions[2], VersionDataError)
    assert info.value.versions[2].text == "unknown encoding: TNull"


def test_client_rejects_an_accepted_version_it_did_not_propose():
    client = HandshakeClient(DMQ_NODE_TO_NODE, {2: N2N[2]})
    client.propose()
    with pytest.raises(NotRecognisedVersion) as info:
        client.receive(encode_message(MsgAcceptVersion(1, N2N[1].to_cbor())))
    assert (info.value.version, info.value.proposed) == (1, (2,))


@pytest.mark.parametrize("data, text", [
    (NodeToClientVersionData(PREPROD_DMQ).to_cbor(), "version data mismatch"),
    (bytes.fromhex("9f1aad964a09f4ff"), "unknown encoding: TListI"),
])
def test_client_rejects_server_data_that_is_not_acceptable_or_does_not_decode(data, text):
    client = HandshakeClient(DMQ_NODE_TO_CLIENT, N2C)
    client.propose()
    with pytest.raises(InvalidServerSelection, match=text) as info:
        client.receive(encode_message(MsgAcceptVersion(4097, data)))
    assert info.value.version == 4097


def test_client_agrees_with_the_servers_reply_not_just_its_own_data():
    # The server answers with the agreed data; the client combines it with its own again.
    client = HandshakeClient(DMQ_NODE_TO_NODE, N2N)
    client.propose()
    server_data = NodeToNodeVersionData(DMQ_MAINNET_MAGIC, initiator_only=True, peer_sharing=False)
    result = client.receive(encode_message(MsgAcceptVersion(2, server_data.to_cbor())))
    assert result == HandshakeResult(2, NodeToNodeVersionData(DMQ_MAINNET_MAGIC, True, False, False))


def test_simultaneous_open_both_sides_pick_the_highest_common_version():
    a_table = dmq_node_to_node_versions(DMQ_MAINNET_MAGIC)
    b_table = {1: NodeToNodeVersionData(DMQ_MAINNET_MAGIC, initiator_only=True, peer_sharing=False)}
    a = HandshakeClient(DMQ_NODE_TO_NODE, a_table)
    b = HandshakeClient(DMQ_NODE_TO_NODE, b_table)
    a_propose, b_propose = a.propose(), b.propose()
    a_result, b_result = a.receive(b_propose), b.receive(a_propose)
    expected = HandshakeResult(1, NodeToNodeVersionData(DMQ_MAINNET_MAGIC, True, False, False))
    assert a_result == b_result == expected
    assert a.state is b.state is State.DONE


def test_simultaneous_open_without_a_common_version_is_a_local_refusal():
    a = HandshakeClient(DMQ_NODE_TO_NODE, {1: N2N[1]})
    a.propose()
    with pytest.raises(HandshakeRefused) as info:
        a.receive(HandshakeClient(DMQ_NODE_TO_NODE, {2: N2N[2]}).propose())
    assert info.value.reason == VersionMismatch((1,))
    assert info.value.by_peer is False


def test_transition_table_is_the_protocols():
    assert {(s.value, m.__name__): t.value for (s, m), t in TRANSITIONS.items()} == {
        ("StPropose", "MsgProposeVersions"): "StConfirm",
        ("StConfirm", "MsgAcceptVersion"): "StDone",
        ("StConfirm", "MsgRefuse"): "StDone",
        ("StConfirm", "MsgQueryReply"): "StDone",
        ("StConfirm", "MsgReplyVersions"): "StDone",
    }


def test_moves_outside_the_state_machine_are_protocol_errors():
    client = HandshakeClient(DMQ_NODE_TO_CLIENT, N2C)
    with pytest.raises(HandshakeCodecError, match=r"\(StPropose\) unexpected key \(1, 3\)"):
        client.receive(bytes.fromhex("8301191001821aad964a09f4"))  # a reply before proposing
    client.propose()
    with pytest.raises(UnexpectedHandshakeMessage, match="cannot send in StConfirm"):
        client.propose()
    client.receive(bytes.fromhex("8301191001821aad964a09f4"))
    with pytest.raises(UnexpectedHandshakeMessage, match="after the handshake finished"):
        client.receive(bytes.fromhex("8301191001821aad964a09f4"))
    server = HandshakeServer(DMQ_NODE_TO_CLIENT, N2C)
    server.receive(bytes.fromhex("8200a1191001821aad964a09f4"))
    with pytest.raises(UnexpectedHandshakeMessage, match="after the handshake finished"):
        server.receive(bytes.fromhex("8200a1191001821aad964a09f4"))


def test_local_tables_the_link_cannot_speak_are_configuration_errors():
    with pytest.raises(ValueError, match="version 1 is not one of \\[4097\\]"):
        HandshakeClient(DMQ_NODE_TO_CLIENT, {1: NodeToClientVersionData(1)})
    with pytest.raises(ValueError, match="needs NodeToNodeVersionData"):
        HandshakeServer(DMQ_NODE_TO_NODE, {1: NodeToClientVersionData(1)})
    with pytest.raises(ValueError, match="empty"):
        HandshakeServer(DMQ_NODE_TO_NODE, {})
