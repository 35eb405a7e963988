"""Interop with a third-party Ouroboros implementation: @harmoniclabs/ouroboros-miniprotocols-ts.

The node scripts beside this file use the package's own codecs and SDU encoder against a
DMQ N2C server assembled here from the real pieces: a bearer on a loopback TCP or Unix
socket, the handshake server, and the mux with the keep-alive responder (12, ingress
limit 1408). What the package cannot do, and how the scripts work around it:

* its Multiplexer dispatches only Cardano protocol numbers, so SDUs on 12 are read from a
  raw socket and decoded with the package's ``unwrapMultiplexerMessages``;
* it writes node-to-client version keys only as Cardano numbers (bit 15 set), so the
  DMQ 4097 proposal is encoded with its node-to-node table encoder, which writes 4097 as
  is (the bytes are checked against our own encoder);
* its node-to-client version data is ``[magic, initiatorOnlyDiffusionMode]``, so
  ``initiatorOnlyDiffusionMode: false`` stands for ``query = false``;
* its HandshakeClient rejects an explicit version table (its ``isVersionTableMap`` reads
  object keys as strings and never matches), so the Cardano proposal is its default
  node-to-client set, V16..V19, for one VersionData;
* it cannot frame a DMQ node-to-node proposal (it drops peer sharing and query from the
  data of versions up to 10), so the server under test is the DMQ N2C one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
import trio

from handshake import (CARDANO_MAINNET_MAGIC, CARDANO_N2C_VERSIONS, CARDANO_NODE_TO_CLIENT, DMQ_MAINNET_MAGIC,
                       DMQ_NODE_TO_CLIENT, HandshakeClient, HandshakeError, HandshakeQueryResult, HandshakeRefused,
                       HandshakeResult, NodeToClientVersionData, VersionMismatch, dmq_node_to_client_versions,
                       run_server)
from miniprotocols.keep_alive import INGRESS_LIMIT, PROTOCOL_NUM, serve
from ouroboros_mux import (Bearer, BearerClosed, ChannelClosed, IngressQueueOverRun, Mode, Mux, MuxError, Provenance, SDUDecodeError,
                           UnknownMiniProtocol, WrongDirection)

pytestmark = pytest.mark.interop

N2C = dmq_node_to_client_versions(DMQ_MAINNET_MAGIC)


@dataclass
class Connection:
    """What happened to one accepted connection, as the server saw it."""

    handshake: HandshakeResult | HandshakeError | HandshakeQueryResult | None = None
    mux_error: MuxError | None = None
    ended: trio.Event = field(default_factory=trio.Event)


class DmqTestServer:
    """Bearer + handshake server + mux with a keep-alive responder, per accepted connection."""

    def __init__(self) -> None:
        self.connections: list[Connection] = []
        self.tcp_port = 0
        self.unix_path = ""

    async def handle(self, stream: trio.abc.Stream) -> None:
        record = Connection()
        self.connections.append(record)
        bearer = Bearer(stream)
        try:
            record.handshake = await run_server(bearer, N2C, DMQ_NODE_TO_CLIENT)
        except (HandshakeError, HandshakeQueryResult) as exc:
            record.handshake = exc
            record.ended.set()
            return
        mux = Mux(bearer, Provenance.INBOUND)
        keep_alive = mux.register(PROTOCOL_NUM, Mode.RESPONDER, INGRESS_LIMIT)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._keep_alive, keep_alive)
            try:
                await mux.run()
            except MuxError as exc:
                record.mux_error = exc
            nursery.cancel_scope.cancel()
        record.ended.set()

    @staticmethod
    async def _keep_alive(channel) -> None:
        try:
            await serve(channel)
        except ChannelClosed:
            return
        # MsgDone: the protocol is over, so the peer may now close without an error.
        channel.finish()


@pytest.fixture
async def dmq_server(nursery, tmp_path):
    server = DmqTestServer()
    tcp = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    server.tcp_port = tcp.socket.getsockname()[1]
    server.unix_path = str(tmp_path / "dmq-node.socket")
    sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
    await sock.bind(server.unix_path)
    sock.listen()
    await nursery.start(trio.serve_listeners, server.handle, [tcp, trio.SocketListener(sock)])
    return server


def _endpoint(server: DmqTestServer, transport: str) -> str:
    return f"tcp:127.0.0.1:{server.tcp_port}" if transport == "tcp" else f"unix:{server.unix_path}"


async def _node(node_peer, script: str, *args: str) -> dict:
    with trio.fail_after(30):
        done = await trio.run_process(["node", str(node_peer / script), *args], cwd=node_peer,
                                      capture_stdout=True, capture_stderr=True, check=False)
    if done.returncode != 0:
        pytest.fail(f"{script} exited {done.returncode}:\n{done.stderr.decode()[-3000:]}")
    lines = done.stdout.decode().strip().splitlines()
    return json.loads(lines[-1])


@pytest.mark.parametrize("transport", ["tcp", "unix"])
async def test_cardano_n2c_proposal_from_the_package_is_refused_listing_4097(node_peer, dmq_server, transport):
    result = await _node(node_peer, "handshake_cardano.mjs", _endpoint(dmq_server, transport),
                         str(CARDANO_MAINNET_MAGIC))
    # The package proposed its Cardano N2C versions, V16..V19, byte for byte as we would ...
    v16_to_v19 = {v: NodeToClientVersionData(CARDANO_MAINNET_MAGIC) for v in CARDANO_N2C_VERSIONS[:4]}
    cardano_propose = HandshakeClient(CARDANO_NODE_TO_CLIENT, v16_to_v19).propose()
    assert result["sent"] == [{"protocol": 0, "payload": cardano_propose.hex()}]
    # ... our refusal is byte-exact and the package decodes it as VersionMismatch [4097] ...
    assert result["replyType"] == "HandshakeRefuse"
    assert result["reply"] == "8202820081191001"
    assert result["validVersions"] == [4097]
    # ... and the server closed the connection after refusing.
    assert result["peerClosed"] is True
    with trio.fail_after(5):
        await dmq_server.connections[0].ended.wait()
    outcome = dmq_server.connections[0].handshake
    assert isinstance(outcome, HandshakeRefused) and outcome.reason == VersionMismatch((4097,))
    assert len(dmq_server.connections) == 1


@pytest.mark.parametrize("transport", ["tcp", "unix"])
@pytest.mark.parametrize("case, error, header", [
    ("wrong-direction", WrongDirection, "800c0003"),
    ("unknown-protocol", UnknownMiniProtocol, "00020003"),
    ("zero-length", SDUDecodeError, "000c0000"),
    ("ingress-overrun", IngressQueueOverRun, "000c05dc"),
])
async def test_bad_frames_from_the_package_close_only_their_connection(node_peer, dmq_server, transport, case,
                                                                        error, header):
    result = await _node(node_peer, "raw_frames.mjs", _endpoint(dmq_server, transport), str(DMQ_MAINNET_MAGIC), case)
    assert result["frameHeader"] == header
    # Every connection first completed a real handshake: the package's proposal is the
    # reference N2C proposal, and it decoded our accept as version 4097 with our magic.
    for handshake in result["handshakes"]:
        assert handshake["proposed"] == "8200a1191001821aad964a09f4"
        assert handshake["reply"] == "8301191001821aad964a09f4"
        assert handshake["responderBit"] is True
        assert (handshake["version"], handshake["magic"]) == (4097, DMQ_MAINNET_MAGIC)
    assert result["offenderClosed"] is True
    # The connection opened before and the one opened after both kept working.
    assert result["cookies"] == [1, 2, 3]

    bystander, offender, fresh = dmq_server.connections
    with trio.fail_after(5):
        for connection in (bystander, offender, fresh):
            await connection.ended.wait()
    assert isinstance(offender.mux_error, error)
    # The others ended when the script closed them after MsgDone: cleanly, or with
    # BearerClosed when the close is read before the keep-alive task has seen MsgDone.
    for connection in (bystander, fresh):
        assert connection.mux_error is None or isinstance(connection.mux_error, BearerClosed)
    assert all(isinstance(c.handshake, HandshakeResult) for c in dmq_server.connections)
