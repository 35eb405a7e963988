"""Sig submission as a running node speaks it, V1 and V2, from both sides, over real TCP.

Node X is a full node with diffusion; node B is a healthy peer that dialled X from its
topology. A scripted peer (:class:`Rogue`) connects to X and plays either side of protocol
11: it pulls from X (X serves its mempool) or serves to X (X pulls into its validation
pipeline). Every protocol violation must end the rogue's connection with the reference
error, and only that connection: B keeps its one connection and messages still flow.
"""

from __future__ import annotations

import cbor2
import pytest
import trio

from miniprotocols import keep_alive
from miniprotocols.local_msg_submission import ACCEPTED
from miniprotocols.sig_submission import Side, payload_span
from dmq.diffusion.sig_submission import ServingPeer
from ouroboros_mux.mux import Mode, Provenance

from dmq.trace import ConnectionClosed

from tests.miniprotocols.sig_submission.helpers import ListSigSource

from .network import NOW, pool, submit, wait_until
from .rogue import Rogue, open_side

VERSIONS = [1, 2]


def closed_events(node, label: str) -> list[ConnectionClosed]:
    return [e for e in node.events if isinstance(e, ConnectionClosed) and e.peer == label]


class CountingSource(ListSigSource):
    """Records how many ids each request asked for."""

    def __init__(self, messages) -> None:
        super().__init__(messages)
        self.requested: list[int] = []

    def ids_after(self, position, limit):
        self.requested.append(limit)
        return super().ids_after(position, limit)


# -- the good path, both versions, both directions -------------------------------------

@pytest.mark.parametrize("version", VERSIONS)
async def test_a_peer_pulls_the_mempool_byte_for_byte_and_serves_new_messages(pair, version):
    held = [pool(n).sign(n, int(NOW) + 900) for n in range(3)]
    assert await submit(pair.x, held) == [ACCEPTED] * 3
    async with Rogue(pair.x.port, version) as rogue:
        d = rogue.dialect
        pull = await open_side(rogue, Side.PULLING)
        await pull.send(d.request_ids(True, 0, 33))
        announced = (await pull.recv()).ids
        assert announced == tuple((m.message_id, len(m.raw)) for m in held)  # mempool order, exact sizes
        await pull.send(d.request_bodies(tuple(i for i, _ in announced)))
        assert (await pull.recv()).messages == tuple(m.raw for m in held)  # the received bytes, not re-encoded

        # The other direction on the same connection: X pulls what the rogue serves, more than
        # one request (33) and more than the window (132) can carry; the rogue's real serving
        # peer checks every request X makes against the reference's rules.
        fresh = [pool(n % 10).sign(100 + n, int(NOW) + 900) for n in range(150)]
        source = CountingSource([m.raw for m in fresh])
        serving = ServingPeer(d, rogue.channel(Side.SERVING), source,
                              blocking_timeout=None if d.reply_no_ids is None else 1.0)
        async with trio.open_nursery() as inner:
            inner.start_soon(serving.run)
            ids = {m.message_id for m in fresh}
            await wait_until(lambda: ids <= pair.x.accepted() and ids <= pair.b.held(), 10,
                             what="the rogue's messages at X and relayed to B")
            inner.cancel_scope.cancel()
        # Keep-alive both ways: X pings the rogue; the rogue's ping is answered by X.
        client = keep_alive.KeepAliveClient(rogue.channels[(12, Mode.INITIATOR)])
        assert await client.ping() >= 0
        assert max(source.requested) == 33  # never more ids per request than the reference asks
        stats = pair.x.node.diffusion.peers.get(rogue.label, Provenance.INBOUND)
        assert stats.version == version and stats.duplex is True and stats.messages_accepted == len(fresh)
        await wait_until(lambda: stats.keep_alive_rtt is not None, 5, what="X's keep-alive to the rogue")
        assert stats.bytes_in > sum(len(m.raw) for m in fresh) and stats.bytes_out > sum(len(m.raw) for m in held)
    await pair.assert_healthy()


@pytest.mark.parametrize("version", VERSIONS)
async def test_expired_messages_are_never_announced_and_omitted_from_replies(pair, version):
    clock = pair.net.clock
    soon, later = pool(1).sign(1, int(NOW) + 5), pool(2).sign(2, int(NOW) + 900)
    gone = pool(3).sign(3, int(NOW) + 2)
    assert await submit(pair.x, [gone, soon, later]) == [ACCEPTED] * 3
    clock.advance(3)  # ``gone`` expired: never announced
    async with Rogue(pair.x.port, version) as rogue:
        d = rogue.dialect
        pull = await open_side(rogue, Side.PULLING)
        await pull.send(d.request_ids(True, 0, 33))
        assert [i for i, _ in (await pull.recv()).ids] == [soon.message_id, later.message_id]
        clock.advance(3)  # ``soon`` expired after its announcement: left out of the bodies reply
        await pull.send(d.request_bodies((soon.message_id, later.message_id)))
        assert (await pull.recv()).messages == (later.raw,)
        await pull.send(d.request_ids(False, 1, 5))  # nothing new: an empty non-blocking reply
        assert (await pull.recv()).ids == ()
        assert not rogue.ended.is_set()


# -- violations of a pulling peer (X serves) -----------------------------------------------

async def ack_too_many(d, drv):
    await drv.send(d.request_ids(True, 1, 5))


async def request_too_many(d, drv):
    await drv.send(d.request_ids(True, 0, 133))


async def blocking_with_outstanding_ids(d, drv):
    await drv.send(d.request_ids(True, 0, 3))
    await drv.recv()
    await drv.send(d.request_ids(True, 0, 3))


async def blocking_for_nothing(d, drv):
    await drv.send(d.request_ids(True, 0, 0))


async def non_blocking_with_nothing_outstanding(d, drv):
    await drv.send(d.request_ids(False, 0, 3))


async def body_never_announced(d, drv):
    await drv.send(d.request_ids(True, 0, 1))
    await drv.recv()
    await drv.send(d.request_bodies((bytes(32),)))


SERVING_VIOLATIONS = {
    "ack_too_many": (ack_too_many, "AckedTooMany"),
    "request_too_many": (request_too_many, "RequestedTooMany"),
    "blocking_with_outstanding_ids": (blocking_with_outstanding_ids, "ProtocolErrorRequestBlocking"),
    "blocking_for_nothing": (blocking_for_nothing, "ProtocolErrorRequestedNothing"),
    "non_blocking_with_nothing_outstanding": (non_blocking_with_nothing_outstanding,
                                              "ProtocolErrorRequestNonBlocking"),
    "body_never_announced": (body_never_announced, "ProtocolErrorRequestedUnavailable"),
}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("case", SERVING_VIOLATIONS)
async def test_violations_of_a_pulling_peer_end_its_connection_only(pair, version, case):
    script, expected = SERVING_VIOLATIONS[case]
    assert await submit(pair.x, [pool(n).sign(n, int(NOW) + 900) for n in range(5)]) == [ACCEPTED] * 5
    async with Rogue(pair.x.port, version) as rogue:
        await script(rogue.dialect, await open_side(rogue, Side.PULLING))
        await rogue.wait_closed()
        label = rogue.label
    await wait_until(lambda: closed_events(pair.x, label), 5, what="X's trace of the closed connection")
    assert expected in closed_events(pair.x, label)[0].error
    await pair.assert_healthy()


# -- violations of a serving peer (X pulls) ------------------------------------------------

def raw_ids(messages):
    return tuple((m.message_id, len(m.raw)) for m in messages)


async def more_ids_than_requested(d, drv):
    request = await drv.recv()
    extra = [pool(n % 10).sign(500 + n, int(NOW) + 900) for n in range(request.req + 1)]
    await drv.send(d.reply_ids(raw_ids(extra)))


async def body_not_requested(d, drv):
    await drv.recv()
    announced, other = pool(1).sign(600, int(NOW) + 900), pool(2).sign(601, int(NOW) + 900)
    await drv.send(d.reply_ids(raw_ids([announced])))
    request = await drv.recv()
    assert isinstance(request, d.request_bodies) and request.ids == (announced.message_id,)
    await drv.send(d.reply_bodies((other.raw,)))


async def larger_than_announced(d, drv):
    await drv.recv()
    message = pool(1).sign(602, int(NOW) + 900, body_size=800)
    await drv.send(d.reply_ids(((message.message_id, len(message.raw) - 100),)))
    await drv.recv()
    await drv.send(d.reply_bodies((message.raw,)))


async def over_the_bodies_byte_limit(d, drv):
    await drv.recv()
    message = pool(1).sign(603, int(NOW) + 900)
    await drv.send(d.reply_ids(raw_ids([message])))
    await drv.recv()
    # [5 or 3, [_ <a 99 000-byte string> ...: no message of the state may exceed 98 000 bytes.
    tag = 3 if d.version == 1 else 5
    await drv.channel.send(bytes([0x82, tag, 0x9F, 0x5A]) + (99_000).to_bytes(4, "big") + bytes(99_000))


async def not_a_message(d, drv):
    await drv.recv()
    message = pool(1).sign(604, int(NOW) + 900)
    # The message's outer shape and carried id, but a payload the strict decoder refuses
    # (an empty body): a decode failure of the batch, which ends the connection.
    start, end = payload_span(message.raw)
    broken = message.raw[:start] + cbor2.dumps([b"", 0, int(NOW) + 900]) + message.raw[end:]
    await drv.send(d.reply_ids(((message.message_id, len(broken)),)))
    await drv.recv()
    await drv.send(d.reply_bodies((broken,)))


PULLING_VIOLATIONS = {
    "more_ids_than_requested": (more_ids_than_requested, "IdsNotRequested"),
    "body_not_requested": (body_not_requested, "NotRequested"),
    "larger_than_announced": (larger_than_announced, "ProtocolErrorTxSizeError"),
    "over_the_bodies_byte_limit": (over_the_bodies_byte_limit, "ExceededSizeLimit"),
    "not_a_message": (not_a_message, "MessageDecodeError"),
}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("case", PULLING_VIOLATIONS)
async def test_violations_of_a_serving_peer_end_its_connection_only(pair, version, case):
    script, expected = PULLING_VIOLATIONS[case]
    async with Rogue(pair.x.port, version) as rogue:
        await script(rogue.dialect, await open_side(rogue, Side.SERVING))
        await rogue.wait_closed()
        label = rogue.label
    await wait_until(lambda: closed_events(pair.x, label), 5, what="X's trace of the closed connection")
    assert expected in closed_events(pair.x, label)[0].error
    assert len(pair.x.node.diffusion.registry) == 0  # every claim given back
    await pair.assert_healthy()


# -- one fetch per id across peers ---------------------------------------------------------

@pytest.mark.parametrize("version", VERSIONS)
async def test_an_id_in_flight_from_one_peer_or_already_held_is_not_fetched_from_another(pair, version):
    held = pool(3).sign(700, int(NOW) + 900)
    assert await submit(pair.x, [held]) == [ACCEPTED]
    wanted = pool(4).sign(701, int(NOW) + 900)
    announcement = ((wanted.message_id, len(wanted.raw)),)
    async with Rogue(pair.x.port, version) as first, Rogue(pair.x.port, version) as second:
        d = first.dialect
        one, two = await open_side(first, Side.SERVING), await open_side(second, Side.SERVING)
        await one.recv()
        await one.send(d.reply_ids(announcement))
        request = await one.recv()
        assert isinstance(request, d.request_bodies) and request.ids == (wanted.message_id,)
        # The second peer announces the same id (now in flight from the first) and one X holds.
        await two.recv()
        await two.send(d.reply_ids(announcement + ((held.message_id, len(held.raw)),)))
        follow_up = await two.recv()
        # Nothing to fetch: both acknowledged at once, in a blocking request for more.
        assert isinstance(follow_up, d.request_ids)
        assert (follow_up.blocking, follow_up.ack) == (True, 2)
        await one.send(d.reply_bodies((wanted.raw,)))
        await wait_until(lambda: wanted.message_id in pair.x.accepted(), 5, what="the message from the first peer")
        assert pair.x.node.diffusion.peers.get(first.label, Provenance.INBOUND).messages_accepted == 1
        assert pair.x.node.diffusion.peers.get(second.label, Provenance.INBOUND).messages_accepted == 0
