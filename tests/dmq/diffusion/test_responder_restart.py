"""A peer may end a responder of the node cleanly and start it again on the same connection.

The reference's inbound governor starts every responder again on demand after a clean
finish (docs/protocol/mux.md 2.3). A Haskell peer relies on it: demoting the node hot -> warm ends sig
submission (the only hot protocol), promoting it again starts sig submission anew on the
same connection; warm -> cold -> warm on a kept connection does the same with keep-alive
and peer sharing. A scripted peer (:class:`Rogue`) plays that peer over real TCP against a
running node, in both sig-submission versions, and checks that messages flow again after
each re-promotion, that a connection with a responder still running stays up however long
it idles, and that one with none running is closed cleanly after ``ProtocolIdleTimeout``.
"""

from __future__ import annotations

import pytest
import trio

from miniprotocols import keep_alive, peer_sharing
from miniprotocols.local_msg_submission import ACCEPTED
from miniprotocols.sig_submission import Side
from dmq.diffusion.sig_submission import ServingPeer
from ouroboros_mux.mux import Mode, Provenance


from tests.miniprotocols.sig_submission.helpers import ListSigSource

from .network import NOW, Network, pool, submit, wait_until
from .rogue import Rogue, open_side
from .test_sig_submission_at_the_node import closed_events

#: Short enough for a quick test, long enough for a loaded machine to re-promote within it.
IDLE_TIMEOUT = 2.0
#: A responder that is not started again leaves the peer's request unanswered: fail, not hang.
ROUND_TRIP_LIMIT = 5.0


@pytest.fixture
async def x(stake_file, nursery):
    """One node, dialling nobody, with a short ``ProtocolIdleTimeout``."""
    net = Network(nursery, stake_file)
    return await net.start("x", config_overrides={"protocol_idle_timeout": IDLE_TIMEOUT})


async def hot_round(x, rogue: Rogue, tag: int) -> None:
    """One hot period of sig submission, ended by the peer the way its demotion ends it.

    V1: the peer serves (X's responder pulls) and answers X's next blocking request with
    MsgDone. V2: the peer pulls X's mempool, from its start, and sends MsgDone from idle.
    """
    d = rogue.dialect
    message = pool(tag % 10).sign(tag, int(NOW) + 900)
    with trio.fail_after(ROUND_TRIP_LIMIT):
        if d.side_of(True) is Side.SERVING:
            serving = ServingPeer(d, rogue.channel(Side.SERVING), ListSigSource([message.raw]))
            async with trio.open_nursery() as nursery:
                nursery.start_soon(serving.run)
                await wait_until(lambda: message.message_id in x.accepted(), ROUND_TRIP_LIMIT,
                                 what=f"message {tag} pulled by X")
                serving.stop()  # MsgDone at X's next blocking request; run() then returns
        else:
            assert await submit(x, [message]) == [ACCEPTED]
            held = [entry.raw for entry in x.node.mempool.messages_after(-1, 1 << 30)]
            pull = await open_side(rogue, Side.PULLING)
            await pull.send(d.request_ids(True, 0, 33))
            announced = (await pull.recv()).ids
            assert [size for _, size in announced] == [len(raw) for raw in held]  # the mempool from its start
            await pull.send(d.request_bodies(tuple(i for i, _ in announced)))
            assert (await pull.recv()).messages == tuple(held)
            await pull.send(d.done())


@pytest.mark.parametrize("version", [1, 2])
async def test_a_peer_demotes_and_promotes_the_node_on_one_connection(x, version):
    async with Rogue(x.port, version, initiator_only=True) as rogue:
        ping = keep_alive.KeepAliveClient(rogue.channels[(12, Mode.INITIATOR)])
        with trio.fail_after(ROUND_TRIP_LIMIT):
            await ping.ping()
        await hot_round(x, rogue, 1)  # hot, then demoted to warm: sig submission ended

        # Warm for longer than the idle timeout: keep-alive still runs, so the connection stays.
        await trio.sleep(IDLE_TIMEOUT * 1.25)
        with trio.fail_after(ROUND_TRIP_LIMIT):
            await ping.ping()
        await hot_round(x, rogue, 2)  # promoted to hot again: a new sig-submission instance

        # Keep-alive ends too; the peer starts both again within the idle timeout.
        await ping.done()
        ping = keep_alive.KeepAliveClient(rogue.channels[(12, Mode.INITIATOR)])
        with trio.fail_after(ROUND_TRIP_LIMIT):
            await ping.ping()
        await hot_round(x, rogue, 3)
        # The restart called off the close that the idle connection was heading for.
        await trio.sleep(IDLE_TIMEOUT * 1.25)
        with trio.fail_after(ROUND_TRIP_LIMIT):
            await ping.ping()
        assert len(x.node.diffusion.registry) == 0  # no claim outlives the instance that made it
        stats = x.node.diffusion.peers.get(rogue.label, Provenance.INBOUND)
        if rogue.dialect.side_of(True) is Side.SERVING:
            assert stats.messages_accepted == 3
        assert not rogue.ended.is_set()

        # Nothing runs any more: X closes the connection, cleanly, once the idle timeout has passed.
        await ping.done()
        ended_at = trio.current_time()
        await rogue.wait_closed(IDLE_TIMEOUT + ROUND_TRIP_LIMIT)
        assert trio.current_time() - ended_at >= IDLE_TIMEOUT * 0.9
        label = rogue.label
    await wait_until(lambda: closed_events(x, label), 5, what="X's trace of the closed connection")
    assert closed_events(x, label)[0].error is None


async def test_keep_alive_and_peer_sharing_start_again_after_msg_done(x):
    async with Rogue(x.port, 2, peer_sharing=True) as rogue:
        assert rogue.result.agreed_data.peer_sharing
        async with trio.open_nursery() as nursery:
            # X's own peer-sharing client may ask this peer: it gets an empty answer.
            nursery.start_soon(peer_sharing.serve, rogue.channels[(13, Mode.RESPONDER)], lambda amount: [])
            with trio.fail_after(ROUND_TRIP_LIMIT):
                for _ in range(3):
                    ping = keep_alive.KeepAliveClient(rogue.channels[(12, Mode.INITIATOR)])
                    await ping.ping()
                    await ping.done()
                    sharing = peer_sharing.PeerSharingClient(rogue.channels[(13, Mode.INITIATOR)])
                    assert await sharing.request(5) == []  # X knows no shareable peer
                    await sharing.done()
            assert not rogue.ended.is_set()
            nursery.cancel_scope.cancel()
