"""The trio driver over real bearers: loopback TCP, Unix sockets, and in-memory streams for timing."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from handshake import (CARDANO_MAINNET_MAGIC, CARDANO_NODE_TO_CLIENT, DMQ_MAINNET_MAGIC, DMQ_NODE_TO_CLIENT,
                       DMQ_NODE_TO_NODE, HandshakeBearerError, HandshakeCodecError, HandshakeQueryResult,
                       HandshakeRefused, HandshakeResult, HandshakeSizeLimitExceeded, HandshakeTimeLimitExceeded,
                       NodeToClientVersionData, NodeToNodeVersionData, UnexpectedHandshakeMessage, VersionMismatch,
                       cardano_node_to_client_versions, dmq_node_to_client_versions, dmq_node_to_node_versions,
                       run_client, run_server)
from ouroboros_mux.bearer import Bearer, connect_tcp, connect_unix
from ouroboros_mux.errors import BearerClosed, SDUReadTimeout
from ouroboros_mux.sdu import SDU

N2C = dmq_node_to_client_versions(DMQ_MAINNET_MAGIC)
N2N = dmq_node_to_node_versions(DMQ_MAINNET_MAGIC)
N2C_PROPOSE = bytes.fromhex("8200a1191001821aad964a09f4")


async def _outcome(coro):
    try:
        return await coro
    except Exception as exc:  # each test inspects the outcome, whichever it is
        return exc


async def _handshake_over(listener, connect, client_table, client_link, server_table, server_link):
    """One connection through ``listener``: server and client handshakes run concurrently."""
    results: dict = {}

    async def serve():
        results["server_bearer"] = bearer = Bearer(await listener.accept())
        results["server"] = await _outcome(run_server(bearer, server_table, server_link))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve)
        results["client_bearer"] = bearer = await connect()
        results["client"] = await _outcome(run_client(bearer, client_table, client_link))
    return results


@pytest.fixture(params=["tcp", "unix"])
def handshake_over_socket(request, tmp_path):
    """Runs one handshake over a real loopback TCP connection or a real Unix socket."""

    async def run(client_table, server_table, link, client_link=None):
        if request.param == "tcp":
            listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
            port = listener.socket.getsockname()[1]
            connect = lambda: connect_tcp("127.0.0.1", port)  # noqa: E731
        else:
            path = tmp_path / "dmq-node.socket"
            sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
            await sock.bind(str(path))
            sock.listen()
            listener = trio.SocketListener(sock)
            connect = lambda: connect_unix(path)  # noqa: E731
        try:
            return await _handshake_over(listener, connect, client_table, client_link or link, server_table, link)
        finally:
            await listener.aclose()

    return run


async def test_n2c_handshake_agrees_over_a_real_socket(handshake_over_socket):
    results = await handshake_over_socket(N2C, N2C, DMQ_NODE_TO_CLIENT)
    expected = HandshakeResult(4097, NodeToClientVersionData(DMQ_MAINNET_MAGIC))
    assert results["client"] == results["server"] == expected
    # An agreed handshake leaves both bearers open for the mux.
    assert not results["client_bearer"].closed and not results["server_bearer"].closed
    assert results["client_bearer"].sdus_out == results["server_bearer"].sdus_out == 1
    await results["client_bearer"].aclose()
    await results["server_bearer"].aclose()


async def test_n2n_handshake_agrees_on_initiator_only_over_a_real_socket(handshake_over_socket):
    client_table = dmq_node_to_node_versions(DMQ_MAINNET_MAGIC, initiator_only=True)
    results = await handshake_over_socket(client_table, N2N, DMQ_NODE_TO_NODE)
    expected = HandshakeResult(2, NodeToNodeVersionData(DMQ_MAINNET_MAGIC, initiator_only=True, peer_sharing=False))
    assert results["client"] == results["server"] == expected
    await results["client_bearer"].aclose()
    await results["server_bearer"].aclose()


async def test_cardano_client_is_refused_by_a_dmq_n2c_server_and_both_sides_close(handshake_over_socket):
    cardano = cardano_node_to_client_versions(CARDANO_MAINNET_MAGIC)
    results = await handshake_over_socket(cardano, N2C, DMQ_NODE_TO_CLIENT, client_link=CARDANO_NODE_TO_CLIENT)
    client, server = results["client"], results["server"]
    assert isinstance(client, HandshakeRefused) and client.by_peer is True
    assert client.reason == VersionMismatch((4097,))
    assert isinstance(server, HandshakeRefused) and server.by_peer is False
    assert server.reason == VersionMismatch((4097,))
    assert results["client_bearer"].closed and results["server_bearer"].closed


async def test_query_over_a_real_socket_ends_when_the_client_closes(handshake_over_socket):
    querying = dmq_node_to_client_versions(DMQ_MAINNET_MAGIC, query=True)
    start = trio.current_time()
    results = await handshake_over_socket(querying, N2C, DMQ_NODE_TO_CLIENT)
    assert isinstance(results["client"], HandshakeQueryResult)
    assert results["client"].versions == {4097: NodeToClientVersionData(DMQ_MAINNET_MAGIC)}
    assert isinstance(results["server"], HandshakeQueryResult)
    assert results["server"].versions == {4097: NodeToClientVersionData(DMQ_MAINNET_MAGIC, query=True)}
    # The server waited for the client to close, not for its 20 s delay.
    assert trio.current_time() - start < 5
    assert results["client_bearer"].closed and results["server_bearer"].closed


async def test_simultaneous_open_over_one_tcp_connection():
    """Both ends run the client: each reads the other's proposal as the reply (M = 0 both ways)."""
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    port = listener.socket.getsockname()[1]
    results = {}
    a_table = dmq_node_to_node_versions(DMQ_MAINNET_MAGIC)
    b_table = {1: NodeToNodeVersionData(DMQ_MAINNET_MAGIC, peer_sharing=False)}

    async def side(name, bearer, table):
        results[name] = await run_client(bearer, table, DMQ_NODE_TO_NODE)

    async with trio.open_nursery() as nursery:
        a = await connect_tcp("127.0.0.1", port)
        b = Bearer(await listener.accept())
        nursery.start_soon(side, "a", a, a_table)
        nursery.start_soon(side, "b", b, b_table)
    await listener.aclose()
    expected = HandshakeResult(1, NodeToNodeVersionData(DMQ_MAINNET_MAGIC, peer_sharing=False))
    assert results == {"a": expected, "b": expected}
    await a.aclose()
    await b.aclose()


# -- in-memory bearers: the peer is driven by hand, time is the autojump clock -------------

def _bearers() -> tuple[Bearer, Bearer]:
    ours, theirs = trio.testing.memory_stream_pair()
    return Bearer(ours), Bearer(theirs)


async def test_n2n_server_gives_up_after_10_s_without_a_proposal(autojump_clock):
    ours, _theirs = _bearers()
    start = trio.current_time()
    with pytest.raises(HandshakeTimeLimitExceeded, match=r"within 10 s in state StPropose"):
        await run_server(ours, N2N, DMQ_NODE_TO_NODE)
    assert trio.current_time() - start == pytest.approx(10.0)
    assert ours.closed


async def test_n2n_client_gives_up_after_10_s_without_a_reply(autojump_clock):
    ours, theirs = _bearers()
    start = trio.current_time()
    with pytest.raises(HandshakeTimeLimitExceeded, match="StConfirm"):
        await run_client(ours, N2N, DMQ_NODE_TO_NODE)
    assert trio.current_time() - start == pytest.approx(10.0)
    sent = await theirs.read_sdu()
    assert (sent.protocol_num, sent.from_responder) == (0, False)
    assert sent.payload.hex() == "8200a201841aad964a09f401f402841aad964a09f401f4"


async def test_n2c_and_cardano_links_have_no_time_limit(autojump_clock):
    for link, table in ((DMQ_NODE_TO_CLIENT, N2C),
                        (CARDANO_NODE_TO_CLIENT, cardano_node_to_client_versions(CARDANO_MAINNET_MAGIC))):
        ours, _theirs = _bearers()
        with trio.move_on_after(3600) as scope:
            await run_server(ours, table, link)
        assert scope.cancelled_caught  # still waiting an hour later


async def test_server_reply_is_one_sdu_with_the_m_bit_set(autojump_clock):
    ours, theirs = _bearers()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(run_server, ours, N2C, DMQ_NODE_TO_CLIENT)
        await theirs.write_sdu(SDU(0, False, N2C_PROPOSE))
        reply = await theirs.read_sdu()
    assert (reply.protocol_num, reply.from_responder) == (0, True)
    assert reply.payload.hex() == "8301191001821aad964a09f4"


async def test_a_proposal_split_over_two_sdus_is_still_read(autojump_clock):
    ours, theirs = _bearers()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(run_server, ours, N2C, DMQ_NODE_TO_CLIENT)
        await theirs.write_sdu(SDU(0, False, N2C_PROPOSE[:5]))
        await theirs.write_sdu(SDU(0, False, N2C_PROPOSE[5:]))
        assert (await theirs.read_sdu()).payload.hex() == "8301191001821aad964a09f4"


async def test_query_server_closes_after_20_s_if_the_client_stays(autojump_clock):
    ours, theirs = _bearers()
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        async def client_that_stays():
            await theirs.write_sdu(SDU(0, False, bytes.fromhex("8200a1191001821aad964a09f5")))
            assert (await theirs.read_sdu()).payload.hex() == "8203a1191001821aad964a09f4"
            with pytest.raises(BearerClosed):
                await theirs.read_sdu()

        nursery.start_soon(client_that_stays)
        with pytest.raises(HandshakeQueryResult):
            await run_server(ours, N2C, DMQ_NODE_TO_CLIENT)
    assert trio.current_time() - start == pytest.approx(20.0)


async def test_a_message_over_5760_bytes_is_a_size_limit_error(autojump_clock):
    ours, theirs = _bearers()
    # A well-formed proposal whose unknown version carries 6000 bytes of data.
    padding = b"\x59\x17\x70" + bytes(6000)
    big = bytes.fromhex("8200a2") + bytes.fromhex("1903e8") + padding + bytes.fromhex("191001821aad964a09f4")
    await theirs.write_sdu(SDU(0, False, big))
    with pytest.raises(HandshakeSizeLimitExceeded, match="exceeds 5760 bytes"):
        await run_server(ours, N2C, DMQ_NODE_TO_CLIENT)
    assert ours.closed


async def test_an_incomplete_message_growing_past_5760_bytes_is_a_size_limit_error(autojump_clock):
    ours, theirs = _bearers()
    await theirs.write_sdu(SDU(0, False, bytes.fromhex("8200a21903e8") + b"\x5a\x00\x01\x00\x00" + bytes(3000)))
    await theirs.write_sdu(SDU(0, False, bytes(3000)))
    with pytest.raises(HandshakeSizeLimitExceeded):
        await run_server(ours, N2C, DMQ_NODE_TO_CLIENT)


@pytest.mark.parametrize("sdu, error, text", [
    (SDU(12, False, bytes.fromhex("8200182a")), UnexpectedHandshakeMessage, "mini-protocol 12"),
    (SDU(0, False, b"\xff\x00"), HandshakeCodecError, "malformed"),
    (SDU(0, False, bytes.fromhex("8200bf191001821aad964a09f4ff")), HandshakeCodecError, "definite-length map"),
])
async def test_server_closes_on_protocol_errors(autojump_clock, sdu, error, text):
    ours, theirs = _bearers()
    await theirs.write_sdu(sdu)
    with pytest.raises(error, match=text):
        await run_server(ours, N2C, DMQ_NODE_TO_CLIENT)
    assert ours.closed


async def test_peer_closing_before_replying_is_a_bearer_error(autojump_clock):
    ours, theirs = _bearers()
    async with trio.open_nursery() as nursery:
        async def close_after_propose():
            await theirs.read_sdu()
            await theirs.aclose()

        nursery.start_soon(close_after_propose)
        with pytest.raises(HandshakeBearerError) as info:
            await run_client(ours, N2C, DMQ_NODE_TO_CLIENT)
    assert isinstance(info.value.cause, BearerClosed)
    assert ours.closed


async def test_an_sdu_stalled_mid_header_times_out_after_10_s_even_on_n2c(autojump_clock):
    """N2C has no per-state limit, but the handshake's SDU timeout still bounds a started SDU."""
    ours_stream, theirs_stream = trio.testing.memory_stream_pair()
    ours = Bearer(ours_stream, sdu_timeout=30.0)
    await theirs_stream.send_all(bytes.fromhex("00000000"))  # half a header, then nothing
    start = trio.current_time()
    with pytest.raises(HandshakeBearerError) as info:
        await run_server(ours, N2C, DMQ_NODE_TO_CLIENT)
    assert isinstance(info.value.cause, SDUReadTimeout)
    assert trio.current_time() - start == pytest.approx(10.0)
