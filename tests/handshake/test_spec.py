"""The handshake as the protocol engine's data, and its peers on the engine's machine."""

from __future__ import annotations

import pytest

from handshake import (CARDANO_NODE_TO_CLIENT, DMQ_MAINNET_MAGIC, DMQ_NODE_TO_CLIENT, DMQ_NODE_TO_NODE,
                       HandshakeClient, HandshakeServer, MsgProposeVersions, State, UnexpectedHandshakeMessage,
                       dmq_node_to_client_versions)
from handshake.driver import ServerAnswers
from handshake.protocol import unexpected_message
from handshake.spec import TRANSITIONS, protocol_spec
from protocol_engine import Agency, ProtocolMachine, ProtocolSpec, ProtocolViolation, Role

N2C = dmq_node_to_client_versions(DMQ_MAINNET_MAGIC)
N2C_PROPOSE = bytes.fromhex("8200a1191001821aad964a09f4")


@pytest.mark.parametrize("link, time_limit", [(DMQ_NODE_TO_NODE, 10.0), (DMQ_NODE_TO_CLIENT, None),
                                              (CARDANO_NODE_TO_CLIENT, None)])
def test_each_link_is_one_engine_spec_with_its_limits(link, time_limit):
    spec = protocol_spec(link)
    assert isinstance(spec, ProtocolSpec) and protocol_spec(link) is spec
    assert spec.initial is State.PROPOSE and dict(spec.transitions) == dict(TRANSITIONS)
    assert {s: v.agency for s, v in spec.states.items()} == {
        State.PROPOSE: Agency.CLIENT, State.CONFIRM: Agency.SERVER, State.DONE: Agency.NOBODY}
    for state in (State.PROPOSE, State.CONFIRM):
        assert (spec.states[state].byte_limit, spec.states[state].time_limit) == (5760, time_limit)
    assert spec.is_terminal(State.DONE)


def test_the_peers_move_on_the_engines_machine():
    client, server = HandshakeClient(DMQ_NODE_TO_CLIENT, N2C), HandshakeServer(DMQ_NODE_TO_CLIENT, N2C)
    assert isinstance(client.machine, ProtocolMachine) and client.machine.role is Role.CLIENT
    assert server.machine.role is Role.SERVER and server.machine.spec is protocol_spec(DMQ_NODE_TO_CLIENT)
    reply = server.receive(client.propose())
    assert client.state is State.CONFIRM and server.state is State.DONE
    client.receive(reply.data)
    assert client.machine.done and server.machine.done


def test_the_engines_verdicts_are_worded_as_handshake_errors():
    spec = protocol_spec(DMQ_NODE_TO_CLIENT)
    machine = ProtocolMachine(spec, Role.SERVER)
    proposal = MsgProposeVersions(((4097, bytes.fromhex("821aad964a09f4")),))
    with pytest.raises(ProtocolViolation) as info:
        machine.on_send(proposal)
    error = unexpected_message(spec, Role.SERVER, info.value.state, proposal, sending=True)
    assert isinstance(error, UnexpectedHandshakeMessage)
    assert str(error) == "the server cannot send in StPropose"
    # A client is never sent a proposal in StPropose: the engine refuses what the client did not await.
    client = ProtocolMachine(spec, Role.CLIENT)
    with pytest.raises(ProtocolViolation) as info:
        client.on_receive(proposal)
    assert str(unexpected_message(spec, Role.CLIENT, info.value.state, proposal, sending=False)) == \
        "the client cannot receive MsgProposeVersions in StPropose"


def test_remembered_answers_are_the_specs_codec_and_decode_and_encode_as_the_links_codec():
    answers = ServerAnswers(N2C, DMQ_NODE_TO_CLIENT)
    assert answers.spec.codec is answers and answers.spec.states == protocol_spec(DMQ_NODE_TO_CLIENT).states
    link_codec = protocol_spec(DMQ_NODE_TO_CLIENT).codec
    first = answers.decode(State.PROPOSE, N2C_PROPOSE)
    assert first == link_codec.decode(State.PROPOSE, N2C_PROPOSE)
    assert N2C_PROPOSE not in answers  # no reply remembered yet: the bytes are not either
    reply = answers.reply_to(first)
    assert answers.encode(reply.message) == link_codec.encode(reply.message) == reply.data
    again = answers.decode(State.PROPOSE, N2C_PROPOSE)  # now the bytes are remembered with the reply
    assert N2C_PROPOSE in answers and answers.decode(State.PROPOSE, N2C_PROPOSE) is again
    assert answers.reply_to(again) is reply
    # Capacity 0: nothing remembered, and the link's own spec serves.
    plain = ServerAnswers(N2C, DMQ_NODE_TO_CLIENT, capacity=0)
    assert plain.spec is protocol_spec(DMQ_NODE_TO_CLIENT)
    plain.reply_to(plain.decode(State.PROPOSE, N2C_PROPOSE))
    assert N2C_PROPOSE not in plain and plain.decode(State.PROPOSE, N2C_PROPOSE) is not None


def test_a_table_the_link_cannot_speak_is_refused_when_the_answers_are_made():
    with pytest.raises(ValueError, match="empty"):
        ServerAnswers({}, DMQ_NODE_TO_CLIENT)
