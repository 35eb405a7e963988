"""Remembered server answers: the same reply bytes as a fresh server, over a real Unix socket."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from handshake import DMQ_MAINNET_MAGIC, DMQ_NODE_TO_CLIENT, HandshakeRefused, dmq_node_to_client_versions, run_server
from handshake.driver import ServerAnswers
from handshake.protocol import HandshakeServer
from ouroboros_mux.bearer import Bearer
from ouroboros_mux.sdu import SDU
from tests.ouroboros_mux.streams import raw_sdu, unix_stream_pair

N2C = dmq_node_to_client_versions(DMQ_MAINNET_MAGIC)
N2C_PROPOSE = bytes.fromhex("8200a1191001821aad964a09f4")
WRONG_MAGIC = bytes.fromhex("8200a1191001821a00000001f4")


def test_an_accepted_proposal_is_answered_from_memory_with_the_same_bytes():
    answers = ServerAnswers(N2C, DMQ_NODE_TO_CLIENT)
    fresh = HandshakeServer(DMQ_NODE_TO_CLIENT, N2C).receive(N2C_PROPOSE)
    first = answers.answer(N2C_PROPOSE)
    assert N2C_PROPOSE in answers and answers.answer(N2C_PROPOSE) is first
    assert first.data == fresh.data and first.result() == fresh.result()


def test_refusals_are_not_remembered_and_memory_is_bounded():
    answers = ServerAnswers(N2C, DMQ_NODE_TO_CLIENT, capacity=0)
    with pytest.raises(HandshakeRefused):
        answers.answer(WRONG_MAGIC).result()
    assert answers.answer(N2C_PROPOSE).result().version == 4097
    assert WRONG_MAGIC not in answers and N2C_PROPOSE not in answers


async def test_every_connection_gets_the_same_reply_whether_remembered_or_not(tmp_path):
    answers = ServerAnswers(N2C, DMQ_NODE_TO_CLIENT)
    replies = []
    for i in range(3):
        client, server = await unix_stream_pair(tmp_path / f"s{i}")
        peer = Bearer(client)
        await peer.write_sdu(SDU(0, False, N2C_PROPOSE))
        with trio.fail_after(5):
            result = await run_server(Bearer(server), N2C, DMQ_NODE_TO_CLIENT, answers=answers)
            replies.append((await peer.read_sdu()).payload)
        assert result.version == 4097
        await client.aclose()
        await server.aclose()
    assert replies[0] == replies[1] == replies[2] == HandshakeServer(DMQ_NODE_TO_CLIENT, N2C).receive(N2C_PROPOSE).data


@pytest.mark.parametrize("cut", [0, 3, 8, 11])
async def test_a_proposal_already_there_or_arriving_in_pieces_gets_the_same_answer(tmp_path, cut):
    """The server first takes what has arrived without waiting; a proposal not yet whole
    (nothing, part of the header, part of the payload) is finished by the timed read."""
    wire = raw_sdu(0, False, N2C_PROPOSE)
    client, server = await unix_stream_pair(tmp_path / "s")
    if cut:
        await client.send_all(wire[:cut])
    async with trio.open_nursery() as nursery:
        got = []

        async def serve() -> None:
            answers = ServerAnswers(N2C, DMQ_NODE_TO_CLIENT)
            got.append(await run_server(Bearer(server), N2C, DMQ_NODE_TO_CLIENT, answers=answers))

        nursery.start_soon(serve)
        await trio.testing.wait_all_tasks_blocked()
        assert not got
        await client.send_all(wire[cut:])
    assert got[0].version == 4097
    reply = await Bearer(client).read_sdu()
    assert reply.payload == HandshakeServer(DMQ_NODE_TO_CLIENT, N2C).receive(N2C_PROPOSE).data


async def test_a_whole_proposal_already_there_is_answered(tmp_path):
    client, server = await unix_stream_pair(tmp_path / "s")
    await Bearer(client).write_sdu(SDU(0, False, N2C_PROPOSE))
    await trio.testing.wait_all_tasks_blocked()
    with trio.fail_after(5):
        result = await run_server(Bearer(server), N2C, DMQ_NODE_TO_CLIENT)
    assert result.version == 4097
