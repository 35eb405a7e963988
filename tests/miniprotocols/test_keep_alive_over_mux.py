"""Keep-alive client and server over a real loopback TCP connection through two muxes."""

from __future__ import annotations

import random

import trio

from miniprotocols.framework import Direction, Driver, Role
from miniprotocols.keep_alive import INGRESS_LIMIT, KEEP_ALIVE, PROTOCOL_NUM, KeepAliveClient, MsgDone, MsgKeepAlive, serve
from ouroboros_mux import Bearer, Mode, Mux
from ouroboros_mux import Provenance
from tests.ouroboros_mux.streams import tcp_stream_pair


async def test_keep_alive_over_two_muxes_on_loopback_tcp():
    connecting, accepted = await tcp_stream_pair()
    initiator = Mux(Bearer(connecting), Provenance.OUTBOUND)
    responder = Mux(Bearer(accepted), Provenance.INBOUND)
    client_channel = initiator.register(PROTOCOL_NUM, Mode.INITIATOR, INGRESS_LIMIT)
    server_channel = responder.register(PROTOCOL_NUM, Mode.RESPONDER, INGRESS_LIMIT)

    seen = []
    server_driver = Driver(server_channel, KEEP_ALIVE, Role.SERVER, trace=seen.append)
    rtts: list[float] = []
    client = KeepAliveClient(client_channel, interval=0.02, rng=random.Random(5), on_rtt=rtts.append)
    cookies = random.Random(5)

    async def run_server():
        await serve(server_driver)
        server_channel.finish()

    async def run_client():
        async with trio.open_nursery() as inner:
            inner.start_soon(client.run)
            while len(rtts) < 3:
                await trio.sleep(0.01)
            client.stop()
        client_channel.finish()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(initiator.run)
        nursery.start_soon(responder.run)
        async with trio.open_nursery() as peers:
            peers.start_soon(run_server)
            peers.start_soon(run_client)
        initiator.stop()
        responder.stop()

    received = [e.message for e in seen if e.direction is Direction.RECEIVED]
    assert received[-1] == MsgDone()
    assert received[:-1] == [MsgKeepAlive(cookies.randrange(0x10000)) for _ in range(len(received) - 1)]
    assert len(received) - 1 == len(rtts) >= 3
    assert all(0 < rtt < 5 for rtt in rtts)
    assert client.driver.done and server_driver.done
    assert client_channel.counters().sdus_out == len(rtts) + 1
    assert initiator.error is None and responder.error is None
