"""The in-flight registry shared by the node's pulling peers, and the claiming sink over it."""

from __future__ import annotations

import pytest
import trio

from miniprotocols.framework import Driver, ExceededTimeLimit
from dmq.diffusion.sig_submission import ClaimingSink, PullingPeer, InFlightRegistry, ServingPeer
from ouroboros_mux.channel import memory_channel_pair

from tests.miniprotocols.sig_submission.helpers import ListSigSource, make_message, message_id, run_together

A, B, C = b"a" * 32, b"b" * 32, b"c" * 32


def test_one_owner_per_id():
    registry = InFlightRegistry()
    assert registry.claim("p1", [A, B, A]) == [A, B]
    assert registry.claim("p2", [B, C]) == [C]
    assert registry.owner(B) == "p1" and registry.owner(C) == "p2" and len(registry) == 3
    registry.release("p2", [A, B])  # not p2's: untouched
    assert registry.owner(A) == "p1" and registry.owner(B) == "p1"
    registry.release("p1", [A])
    assert not registry.in_flight(A) and registry.claim("p2", [A]) == [A]
    assert registry.claimed_by("p2") == {A, C}


def test_a_dead_peer_frees_all_its_claims():
    registry = InFlightRegistry()
    registry.claim("p1", [A, B])
    registry.claim("p2", [C])
    assert registry.release_peer("p1") == sorted([A, B])
    assert registry.release_peer("p1") == []
    assert registry.claim("p3", [A, B, C]) == [A, B]
    assert len(registry) == 3


async def test_claiming_sink_skips_what_the_node_holds():
    registry = InFlightRegistry()
    got = []

    async def accept(batch):
        got.extend(batch)

    sink = ClaimingSink(registry, "p1", holds={B}.__contains__, accept=accept)
    assert sink.wanted([(A, 700), (B, 700), (C, 700)]) == [A, C]
    await sink.accept([b"raw"])
    sink.release([A])
    assert registry.claimed_by("p1") == {C} and got == [b"raw"]


async def test_claims_of_a_failed_peer_go_back_and_another_peer_fetches(dialect, autojump_clock):
    """A peer dies mid-way; the ids it held become fetchable from the next peer announcing them."""
    messages = [make_message(n) for n in range(10)]
    registry = InFlightRegistry()
    held: dict[bytes, bytes] = {}

    async def accept(batch):
        for raw in batch:
            held[message_id(raw)] = raw

    # The first peer announces everything, then never answers the body request.
    a, b = memory_channel_pair(11)
    first = PullingPeer(dialect, a, ClaimingSink(registry, "first", holds=held.__contains__, accept=accept))
    scripted = Driver(b, dialect.spec, dialect.serving_role)

    async def silent_serving():
        if dialect.init is not None:
            await scripted.send(dialect.init())
        request = await scripted.recv()
        await scripted.send(dialect.reply_ids(tuple((message_id(m), len(m)) for m in messages[: request.req])))
        await scripted.recv()  # the body request, never answered
        assert registry.claimed_by("first") == {message_id(m) for m in messages}
        await trio.sleep_forever()

    with pytest.raises(ExceededTimeLimit):
        await run_together(silent_serving, first.run)
    assert len(registry) == 0 and held == {}

    c, d = memory_channel_pair(11)
    second = PullingPeer(dialect, c, ClaimingSink(registry, "second", holds=held.__contains__, accept=accept))
    serving = ServingPeer(dialect, d, ListSigSource(messages))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serving.run)
        nursery.start_soon(second.run)
        while len(held) < len(messages):
            await trio.sleep(1)
        nursery.cancel_scope.cancel()
    assert sorted(held.values()) == sorted(messages)
    assert len(registry) == 0
