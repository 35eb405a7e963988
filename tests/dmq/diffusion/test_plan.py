"""The connection plan (which instances run where), the on-demand start, and the accept pacing."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from miniprotocols import keep_alive
from miniprotocols.keep_alive import KEEP_ALIVE, MsgKeepAlive
from miniprotocols.framework import Driver, ExceededTimeLimit, Role
from miniprotocols.sig_submission_v1 import DIALECT as V1
from miniprotocols.sig_submission_v2 import DIALECT as V2
from ouroboros_mux.bearer import Bearer
from ouroboros_mux.channel import memory_channel_pair
from ouroboros_mux.mux import Mode, Mux, Provenance

from dmq.config import AcceptedConnectionsLimit
from dmq.diffusion import INGRESS_LIMITS, OnDemandChannel, Protocol, connection_plan, soft_limit_delay, started_on_demand
from miniprotocols.sig_submission import Side

I, R = Mode.INITIATOR, Mode.RESPONDER


def pairs(plan) -> set[tuple[int, Mode]]:
    return {(int(i.protocol), i.mode) for i in plan}


@pytest.mark.parametrize("we_opened, duplex, sharing, expected", [
    (True, True, True, {(11, I), (11, R), (12, I), (12, R), (13, I), (13, R)}),
    (True, True, False, {(11, I), (11, R), (12, I), (12, R)}),
    (False, True, True, {(11, I), (11, R), (12, I), (12, R), (13, I), (13, R)}),
    (True, False, False, {(11, I), (12, I)}),     # we are (or talk to) InitiatorOnly: one direction
    (False, False, False, {(11, R), (12, R)}),    # an InitiatorOnly peer dialled us
])
def test_instances_follow_who_opened_and_what_was_agreed(we_opened, duplex, sharing, expected):
    plan = connection_plan(we_opened=we_opened, duplex=duplex, peer_sharing=sharing)
    assert pairs(plan) == expected
    assert all(i.on_demand == (i.mode is R) for i in plan)


def test_peer_sharing_without_duplex_is_impossible():
    with pytest.raises(ValueError):
        connection_plan(we_opened=True, duplex=False, peer_sharing=True)


def test_ingress_limits_are_the_references():
    assert dict(INGRESS_LIMITS) == {Protocol.SIG_SUBMISSION: 101_640, Protocol.KEEP_ALIVE: 1_408,
                                    Protocol.PEER_SHARING: 5_760}


def test_which_instance_pulls_depends_on_the_version():
    # V1: the connection initiator serves; V2: it pulls (docs/protocol/node-to-node.md 9.1).
    assert (V1.side_of(True), V1.side_of(False)) == (Side.SERVING, Side.PULLING)
    assert (V2.side_of(True), V2.side_of(False)) == (Side.PULLING, Side.SERVING)


async def test_a_responder_started_on_demand_has_no_time_limit_before_the_first_message(autojump_clock):
    ours, theirs = memory_channel_pair(keep_alive.PROTOCOL_NUM)
    channel = OnDemandChannel(ours)
    served = []

    async def server():
        await channel.wait_for_start(KEEP_ALIVE)
        served.append(trio.current_time())
        await keep_alive.serve(channel)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(server)
        await trio.sleep(500)  # far beyond the 97 s the server allows between keep-alives
        client = Driver(theirs, KEEP_ALIVE, Role.CLIENT)
        await client.send(MsgKeepAlive(7))
        assert (await client.recv()).cookie == 7
        assert served == [500]
        nursery.cancel_scope.cancel()


async def test_once_started_the_protocol_limits_apply(autojump_clock):
    ours, theirs = memory_channel_pair(keep_alive.PROTOCOL_NUM)
    channel = OnDemandChannel(ours)
    client = Driver(theirs, KEEP_ALIVE, Role.CLIENT)
    await client.send(MsgKeepAlive(1))
    await channel.wait_for_start(KEEP_ALIVE)
    started = trio.current_time()
    with pytest.raises(ExceededTimeLimit):
        await keep_alive.serve(channel)  # answers the first, then waits for the next one in vain
    assert (await client.recv()).cookie == 1
    assert trio.current_time() - started == pytest.approx(97.0)


async def test_a_mux_channel_started_on_demand_runs_the_protocol_itself_from_its_first_message(autojump_clock):
    """Over a mux channel the protocol runs on the channel itself (no wrapper between the driver
    and the channel on every message), its first message left queued while it waited; over any
    other channel an ``OnDemandChannel`` holds the first message. Both serve it the same."""
    client_stream, server_stream = trio.testing.memory_stream_pair()
    client_mux = Mux(Bearer(client_stream), Provenance.OUTBOUND)
    server_mux = Mux(Bearer(server_stream), Provenance.INBOUND)
    theirs = client_mux.register(keep_alive.PROTOCOL_NUM, Mode.INITIATOR, 1000)
    ours = server_mux.register(keep_alive.PROTOCOL_NUM, Mode.RESPONDER, 1000)
    mem_ours, mem_theirs = memory_channel_pair(keep_alive.PROTOCOL_NUM)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(client_mux.run)
        nursery.start_soon(server_mux.run)
        for channel, peer in ((ours, theirs), (mem_ours, mem_theirs)):
            started = []

            async def server(channel=channel, started=started):
                target = await started_on_demand(channel, KEEP_ALIVE)
                started.append(target)
                await keep_alive.serve(target)

            async with trio.open_nursery() as serving:
                serving.start_soon(server)
                await trio.sleep(500)  # no time limit before the first message
                client = Driver(peer, KEEP_ALIVE, Role.CLIENT)
                await client.send(MsgKeepAlive(7))
                assert (await client.recv()).cookie == 7
                if channel is ours:
                    assert started == [ours]
                else:
                    assert type(started[0]) is OnDemandChannel
                await client.send(MsgKeepAlive(8))
                assert (await client.recv()).cookie == 8
                serving.cancel_scope.cancel()
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("connections, delay", [(1, 0.0), (384, 0.0), (385, 5.0 / 128), (448, 2.5), (512, 5.0)])
def test_the_accept_pause_grows_linearly_from_the_soft_to_the_hard_limit(connections, delay):
    assert soft_limit_delay(AcceptedConnectionsLimit(512, 384, 5.0), connections) == pytest.approx(delay)
