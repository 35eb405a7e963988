"""Every invalid class of docs/protocol/validation.md section 6, from a local client and from a peer, at a node.

Both tests run the whole adversarial stream at one node X while an aggregator holds a
blocking notification request and a healthy peer B pulls everything X relays. Each invalid
message must get its exact reply (local) or its exact reaction (peer); at the end X stored,
the aggregator was notified of and B received exactly the honest messages, and after a
restart X's database holds nothing else either.

The reactions per sig-submission version, with B's view, are in
``tests/dmq/diffusion/test_reactions.py``; the reference reply bytes of a real ``dmq-node``
process in ``tests/e2e/test_local_service_process.py``; ``NotInitialized`` (a node still
waiting for its first stake snapshot) in ``tests/dmq/validation/test_rules.py``.
"""

from __future__ import annotations

import trio

from miniprotocols.local_msg_submission import ACCEPTED

from tests.dmq.diffusion.network import MAGIC, LocalClient, wait_until
from tests.dmq.diffusion.rogue import Rogue
from tests.dmq.diffusion.test_reactions import serve_to
from tests.e2e.raw_n2c import ConnectionLost, RawN2CClient
from tests.miniprotocols.sig_submission.helpers import ListSigSource

from .invalid_messages import CLOSED, INVALID_CLASSES, prepare_world, reply_matches
from .world import World, start_world


async def submit_on_its_own_connection(world: World, raw: bytes) -> object:
    """The raw reply, or CLOSED when the node ends the connection without one."""
    async with await RawN2CClient.connect(world.x.socket) as client:
        await client.handshake(MAGIC)
        try:
            with trio.fail_after(5):
                return await client.submit(raw)
        except ConnectionLost:
            return CLOSED


async def assert_every_invalid_class_was_seen(world: World) -> None:
    await world.assert_only_honest_messages_everywhere()
    x = await world.net.restart(world.x)
    await wait_until(lambda: x.node.mempool is not None, 5, what="X restarted")
    assert x.held() == {raw[3:35] for raw in world.honest}, "the database holds something else"


async def each_invalid_class(world: World, client: LocalClient):
    """The world prepared (honest messages through ``client``), then each class and its bytes."""
    async def submit_honest(raw: bytes) -> None:
        assert await client.submission.submit(raw) == ACCEPTED
        world.honest.append(raw)

    await prepare_world(world, submit_honest)
    await submit_honest(world.honest_message().raw)
    for case in INVALID_CLASSES:
        if case.before is not None:
            await case.before(world, submit_honest)
        yield case, case.build(world)


async def test_every_invalid_class_over_the_local_socket(nursery, tmp_path):
    world = await start_world(nursery, tmp_path)
    wrong: dict[str, object] = {}
    async with LocalClient(world.x.socket) as client:
        async for case, raw in each_invalid_class(world, client):
            if case.local == CLOSED:
                reply = await submit_on_its_own_connection(world, raw)
            else:
                reply = await client.submission.submit(raw)
                rejected = world.rejections(world.x, raw[3:35])
                assert rejected and rejected[-1].reaction == "reject", case.name
            if not reply_matches(case.local, reply):
                wrong[case.name] = reply
        # The same connection, after all of it, still accepts.
        last = world.honest_message().raw
        assert await client.submission.submit(last) == ACCEPTED
        world.honest.append(last)
    assert not wrong, f"wrong replies: {wrong}"
    await assert_every_invalid_class_was_seen(world)


async def peer_serves(world: World, raw: bytes, case, marker: bytes) -> str:
    """A rogue peer serves ``raw`` then ``marker`` (an honest message); the observed reaction."""
    source = ListSigSource([raw])
    bad_id = raw[3:35]
    async with Rogue(world.x.port, 2) as rogue, trio.open_nursery() as nursery:
        await serve_to(world.x, rogue, source, nursery)
        if case.peer == "disconnect":
            await rogue.wait_closed()
            await wait_until(lambda: world.closed(rogue.label), 5, what="X's trace of the closed connection")
            error = world.closed(rogue.label)[0].error
            assert case.peer_error in error, f"{case.name}: closed with {error}"
            reaction = "disconnect"
        else:
            if case.peer == "trace":
                await wait_until(lambda: world.rejections(world.x, bad_id), 5, what=f"X rejecting {case.name}")
                rejected = world.rejections(world.x, bad_id)[-1]
                assert rejected.reason.split(" ", 1)[0] == case.name and rejected.reaction == "trace"
            source.append(marker)
            await wait_until(lambda: marker[3:35] in world.x.held(), 5, what="the next message of the same peer")
            assert not rogue.ended.is_set(), f"{case.name}: the connection ended"
            world.honest.append(marker)
            reaction = "trace" if bad_id in source.lookups else "not-fetched"
        nursery.cancel_scope.cancel()
    return reaction


async def test_every_invalid_class_from_a_peer(nursery, tmp_path):
    world = await start_world(nursery, tmp_path)
    reactions: dict[str, str] = {}
    async with LocalClient(world.x.socket) as client:
        async for case, raw in each_invalid_class(world, client):
            reactions[case.name] = await peer_serves(world, raw, case, world.honest_message().raw)
    assert reactions == {case.name: case.peer for case in INVALID_CLASSES}
    await assert_every_invalid_class_was_seen(world)
