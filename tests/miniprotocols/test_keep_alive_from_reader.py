"""The keep-alive server over a real mux: echoes from the connection's reader, the same limits and errors.

Over a mux channel the reader answers each keep-alive (``serve`` through a ``Handoff``); the
server's task sleeps until the 97 s limit passes or something needs it. These tests run the
server over two muxes on a loopback TCP connection, the client side driven message by message.
"""

from __future__ import annotations

import collections
import random

import pytest
import trio

from miniprotocols.framework import DecoderFailure, Direction, Driver, ExceededTimeLimit, ProtocolError, Role
from miniprotocols.keep_alive import (
    INGRESS_LIMIT,
    KEEP_ALIVE,
    PROTOCOL_NUM,
    KeepAliveClient,
    KeepAliveState,
    MsgDone,
    MsgKeepAlive,
    MsgKeepAliveResponse,
    serve,
)
from ouroboros_mux import Bearer, Mode, Mux, Provenance
from ouroboros_mux.channel import ChannelClosed
from ouroboros_mux.errors import BearerClosed
from tests.ouroboros_mux.streams import tcp_stream_pair

from .helpers import h


class _TaskSteps(trio.abc.Instrument):
    """How many times each task (by name) was scheduled."""

    def __init__(self) -> None:
        self.steps: collections.Counter[str] = collections.Counter()

    def before_task_step(self, task) -> None:
        self.steps[task.name] += 1


async def _over_mux(server, client) -> None:
    """Run ``server(channel)`` and ``client(channel)`` on the two ends of one loopback connection."""
    connecting, accepted = await tcp_stream_pair()
    initiator = Mux(Bearer(connecting), Provenance.OUTBOUND)
    responder = Mux(Bearer(accepted), Provenance.INBOUND)
    client_channel = initiator.register(PROTOCOL_NUM, Mode.INITIATOR, INGRESS_LIMIT)
    server_channel = responder.register(PROTOCOL_NUM, Mode.RESPONDER, INGRESS_LIMIT)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(initiator.run)
        nursery.start_soon(responder.run)
        async with trio.open_nursery() as peers:
            peers.start_soon(server, server_channel, name="keep-alive server")
            peers.start_soon(client, client_channel)
        initiator.stop()
        responder.stop()


async def test_the_reader_echoes_every_keep_alive_and_the_server_task_sleeps_through_them():
    seen = []
    rtts: list[float] = []
    steps = _TaskSteps()
    server_driver = None

    async def server(channel):
        nonlocal server_driver
        server_driver = Driver(channel, KEEP_ALIVE, Role.SERVER, trace=seen.append)
        await serve(server_driver)

    async def client(channel):
        keep_alive = KeepAliveClient(channel, interval=0, rng=random.Random(7), on_rtt=rtts.append)
        for _ in range(40):
            await keep_alive.ping()
        await keep_alive.done()

    trio.lowlevel.add_instrument(steps)
    try:
        await _over_mux(server, client)
    finally:
        trio.lowlevel.remove_instrument(steps)
    cookies = random.Random(7)
    expected = [cookies.randrange(0x10000) for _ in range(40)]
    received = [e.message for e in seen if e.direction is Direction.RECEIVED]
    sent = [e.message for e in seen if e.direction is Direction.SENT]
    assert received == [MsgKeepAlive(c) for c in expected] + [MsgDone()]
    assert sent == [MsgKeepAliveResponse(c) for c in expected]
    assert len(rtts) == 40 and server_driver.done
    # The task ran to start, to end on MsgDone and little else: not once per keep-alive.
    assert steps.steps["keep-alive server"] < 10, steps.steps


async def test_over_a_mux_the_server_waits_97_seconds_from_its_last_echo(autojump_clock):
    echoed_at = []
    raised = []

    async def server(channel):
        with pytest.raises(ExceededTimeLimit) as info:
            await serve(channel)
        raised.append((trio.current_time(), info.value.state))

    async def client(channel):
        driver = Driver(channel, KEEP_ALIVE, Role.CLIENT)
        for cookie in (1, 2, 3):
            await driver.send(MsgKeepAlive(cookie))
            assert await driver.recv() == MsgKeepAliveResponse(cookie)
            echoed_at.append(trio.current_time())
            await trio.sleep(60)  # under the limit: each echo starts it again
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        async def run_and_stop():
            await _over_mux(server, client)

        nursery.start_soon(run_and_stop)
        while not raised:
            await trio.sleep(1)
        nursery.cancel_scope.cancel()
    (ended, state), = raised
    assert state is KeepAliveState.CLIENT
    assert ended - echoed_at[-1] == pytest.approx(97.0, abs=0.5)
    assert echoed_at[-1] - echoed_at[0] == pytest.approx(120.0, abs=0.5)


@pytest.mark.parametrize("wire, error", [
    (h("8201182a"), ProtocolError),       # a response, from the client: not allowed in the client state
    (h("82001a00010000"), DecoderFailure),  # a cookie beyond a word16
])
async def test_over_a_mux_what_the_reader_refuses_is_raised_from_the_server_task(wire, error):
    raised = []

    async def server(channel):
        with pytest.raises(error):
            await serve(channel)
        raised.append(error)
        channel.finish()

    async def client(channel):
        driver = Driver(channel, KEEP_ALIVE, Role.CLIENT)
        await driver.send(MsgKeepAlive(5))
        assert await driver.recv() == MsgKeepAliveResponse(5)
        await channel.send(wire)
        channel.finish()

    await _over_mux(server, client)
    assert raised == [error]


async def test_over_a_mux_the_end_of_the_connection_is_raised_from_the_server_task():
    raised = []
    connecting, accepted = await tcp_stream_pair()
    initiator = Mux(Bearer(connecting), Provenance.OUTBOUND)
    responder = Mux(Bearer(accepted), Provenance.INBOUND)
    client_channel = initiator.register(PROTOCOL_NUM, Mode.INITIATOR, INGRESS_LIMIT)
    server_channel = responder.register(PROTOCOL_NUM, Mode.RESPONDER, INGRESS_LIMIT)

    async def server():
        with pytest.raises(ChannelClosed):
            await serve(server_channel)
        raised.append(ChannelClosed)

    async def run_responder():
        with pytest.raises(BearerClosed):  # the server was still running
            await responder.run()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(initiator.run)
        nursery.start_soon(run_responder)
        nursery.start_soon(server)
        driver = Driver(client_channel, KEEP_ALIVE, Role.CLIENT)
        await driver.send(MsgKeepAlive(9))
        assert await driver.recv() == MsgKeepAliveResponse(9)
        initiator.stop()  # the peer closes the connection while the server waits for the next keep-alive
    assert raised == [ChannelClosed]
