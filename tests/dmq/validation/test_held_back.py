"""A peer's message refused only by check 3 is held and admitted when its pool's window has passed.

Real pieces throughout: the ingress and validator, an LMDB mempool in ``tmp_path`` with its
writer running, real signed messages; time is trio's virtual clock, so a 5 s window costs nothing.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from dmq.clock import TrioClock
from dmq.codec import encode_message
from dmq.held_back import MAX_HELD_PER_POOL
from dmq.ingress import Ingress
from dmq.mempool import DurableMempool
from dmq.trace import MessageAccepted, MessageHeld, MessageRejected, Tracer
from dmq.validation import SigTooFrequent, Validator

from .support import NOW, TTL, pool, ready_view

P = pool(21)
Q = pool(22)
DELAY = 5.0
PEER = "198.18.0.7:3001"


def raw(message) -> bytes:
    return encode_message(message.signed_bytes, message.kes_signature, message.opcert, message.cold_vk,
                          message_id=message.message_id)


def signed(p, nonce: int, *, expires_in: int = TTL, bad_kes: bool = False):
    return p.message(nonce=nonce, expires_at=int(NOW) + expires_in, sign_period=4 if bad_kes else None)


class Node:
    """An ingress over a durable mempool, a tracer that keeps its events, and the held-back runner."""

    def __init__(self, tmp_path) -> None:
        self.clock = TrioClock(NOW)
        self.events: list = []
        self.tracer = Tracer(self.clock.now)
        self.tracer.add_sink(self.events.append)
        self.validator = Validator(ready_view(P, Q, clock=self.clock), self.clock, min_sig_delay=DELAY)
        self.mempool = DurableMempool(tmp_path / "db", self.clock, run_blocking=_inline)
        self.ingress = Ingress(self.mempool, self.validator, self.tracer)

    def holds(self, message) -> bool:
        return self.mempool.contains(message.message_id)

    def of(self, kind) -> list:
        return [e for e in self.events if isinstance(e, kind)]


async def _inline(fn, *args):
    return fn(*args)


def run(tmp_path, scenario) -> None:
    async def main():
        node = Node(tmp_path)
        async with trio.open_nursery() as nursery:
            await nursery.start(node.mempool.run)
            nursery.start_soon(node.ingress.held_back.run, node.ingress.admit)
            await scenario(node)
            nursery.cancel_scope.cancel()
        node.mempool.close()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_a_message_refused_as_too_frequent_is_admitted_when_the_window_has_passed(tmp_path):
    first, second = signed(P, 1), signed(P, 2)

    async def scenario(node: Node):
        assert await node.ingress.submit_local(raw(first)) is None
        await trio.sleep(2.0)
        verdict = await node.ingress.submit_from_peer([raw(second)], PEER)
        # The refusal and the reference's reaction are unchanged.
        assert isinstance(verdict.outcomes[0].error, SigTooFrequent)
        assert isinstance(verdict.disconnect, SigTooFrequent)
        assert not node.holds(second)
        held = node.of(MessageHeld)
        assert [(e.message_id, e.origin) for e in held] == [(second.message_id, PEER)]
        assert held[0].due_in == pytest.approx(DELAY - 2.0)
        await trio.sleep(DELAY - 2.0 - 0.01)
        assert not node.holds(second)
        await trio.sleep(0.02)
        assert node.holds(second)
        accepted = node.of(MessageAccepted)[-1]
        assert (accepted.message_id, accepted.origin) == (second.message_id, PEER)
        # Spacing is kept: accepted exactly one window after the first.
        assert node.validator.state.last_accepted(P.pool_id) == pytest.approx(DELAY)
        assert len(node.ingress.held_back) == 0

    run(tmp_path, scenario)


def test_a_batch_whose_connection_ends_during_the_commit_is_traced_and_its_too_frequent_message_held(tmp_path):
    """The connection's task is cancelled while the batch's group commit is on its way to disk (a
    peer gone, a partition): the store keeps the accepted message regardless, so the node must
    trace it as accepted, once, and still hold the batch's too-frequent message for later."""
    first, second, other = signed(P, 1), signed(P, 2), signed(Q, 1)

    async def scenario(node: Node):
        assert await node.ingress.submit_local(raw(first)) is None
        await trio.sleep(2.0)
        with trio.CancelScope() as connection:
            connection.cancel()  # cancelled at its first wait: the commit's
            await node.ingress.submit_from_peer([raw(other), raw(second)], PEER)
        assert node.holds(other)
        assert [e.message_id for e in node.of(MessageAccepted) if e.origin == PEER] == [other.message_id]
        assert [e.message_id for e in node.of(MessageHeld)] == [second.message_id]
        await trio.sleep(DELAY)
        assert node.holds(second)

    run(tmp_path, scenario)


def test_a_message_failing_another_check_is_not_held(tmp_path):
    first, forged = signed(P, 1), signed(P, 2, bad_kes=True)

    async def scenario(node: Node):
        assert await node.ingress.submit_local(raw(first)) is None
        verdict = await node.ingress.submit_from_peer([raw(forged)], PEER)
        assert isinstance(verdict.outcomes[0].error, SigTooFrequent)
        assert node.of(MessageHeld) == []
        await trio.sleep(DELAY * 3)
        assert not node.holds(forged)

    run(tmp_path, scenario)


def test_a_local_client_gets_its_refusal_and_nothing_is_held(tmp_path):
    first, second = signed(P, 1), signed(P, 2)

    async def scenario(node: Node):
        assert await node.ingress.submit_local(raw(first)) is None
        assert isinstance(await node.ingress.submit_local(raw(second)), SigTooFrequent)
        await trio.sleep(DELAY * 3)
        assert node.of(MessageHeld) == []
        assert not node.holds(second)

    run(tmp_path, scenario)


def test_held_messages_of_a_pool_are_released_one_window_apart_oldest_first(tmp_path):
    first = signed(P, 1)
    later = [signed(P, n, expires_in=TTL - 10 * n) for n in range(2, 2 + MAX_HELD_PER_POOL + 1)]
    other_pool = signed(Q, 1)

    async def scenario(node: Node):
        assert await node.ingress.submit_local(raw(first)) is None
        for message in later:
            await node.ingress.submit_from_peer([raw(message)], PEER)
        # A copy of one already held, from another peer, is refused again but not held twice.
        await node.ingress.submit_from_peer([raw(later[0])], "198.18.0.8:3001")
        # One more than the pool's limit was offered: the last one is not held.
        assert [e.message_id for e in node.of(MessageHeld)] == [m.message_id for m in later[:MAX_HELD_PER_POOL]]
        # Another pool is not held up by them.
        assert await node.ingress.submit_local(raw(other_pool)) is None
        await trio.sleep(DELAY * (MAX_HELD_PER_POOL + 2))
        accepted_at = {e.message_id: e.at for e in node.of(MessageAccepted) if e.pool_id == P.pool_id}
        del accepted_at[first.message_id]
        held = later[:MAX_HELD_PER_POOL]
        assert set(accepted_at) == {m.message_id for m in held}
        # The lowest expiresAt (the oldest signature) first, each a window after the one before.
        order = sorted(held, key=lambda m: m.expires_at)
        times = [accepted_at[m.message_id] for m in order]
        assert times == sorted(times)
        assert all(b - a >= DELAY for a, b in zip(times, times[1:]))
        assert not node.holds(later[-1])

    run(tmp_path, scenario)


def test_a_held_message_that_expires_meanwhile_is_refused_at_release(tmp_path):
    first = signed(P, 1)
    short_lived = signed(P, 2, expires_in=3)

    async def scenario(node: Node):
        assert await node.ingress.submit_local(raw(first)) is None
        await node.ingress.submit_from_peer([raw(short_lived)], PEER)
        assert len(node.of(MessageHeld)) == 1
        await trio.sleep(DELAY + 1)
        assert not node.holds(short_lived)
        assert node.of(MessageRejected)[-1].reason == "SigExpired"

    run(tmp_path, scenario)


def test_a_held_message_that_arrived_meanwhile_is_not_stored_twice(tmp_path):
    first, second = signed(P, 1), signed(P, 2)

    async def scenario(node: Node):
        assert await node.ingress.submit_local(raw(first)) is None
        await node.ingress.submit_from_peer([raw(second)], PEER)
        await trio.sleep(DELAY + 0.5)
        # Released once; a later copy from another peer is a duplicate.
        verdict = await node.ingress.submit_from_peer([raw(second)], "198.18.0.8:3001")
        assert verdict.outcomes[0].error is not None and verdict.disconnect is None
        assert len([e for e in node.of(MessageAccepted) if e.message_id == second.message_id]) == 1

    run(tmp_path, scenario)
