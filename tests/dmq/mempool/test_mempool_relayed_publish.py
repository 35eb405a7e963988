"""Relayed messages are published a round of the event loop after their acceptance (dmq/mempool/memory.py).

What the round buys is checked on real sockets: input that had already arrived when a relayed
message was accepted is read before any publish hook hears of the message. The rest: a local
submission is still published at once (and takes the relayed entries before it along, in
mempool order, each once), a stopping mempool publishes what waits, and a mempool whose
background task is not running publishes relayed messages at once.
"""

from __future__ import annotations

import socket
from contextlib import asynccontextmanager

import trio
import trio.testing

from dmq.clock import ManualClock
from dmq.mempool import Mempool

from .messages import make_message

NOW = 1_800_000_000


def hooked(mempool: Mempool) -> list[list[int]]:
    """Every publish's handed-over indices, the hook renewed after each (as a parked serving peer does)."""
    calls: list[list[int]] = []

    def on_publish(published):
        calls.append([index for index, _, _ in published])
        mempool.call_on_publish(on_publish)

    mempool.call_on_publish(on_publish)
    return calls


@asynccontextmanager
async def running_mempool():
    """A mempool with its background task running (the relayed publisher), and its publishes' indices."""
    mempool = Mempool(ManualClock(now=NOW))
    calls = hooked(mempool)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(mempool.run)
            yield mempool, calls, nursery


async def test_input_that_woke_the_accepting_round_is_read_before_a_relayed_publish():
    """A reader woken by the poll that began the round in which a relayed message is accepted
    takes its input before any publish hook hears of the message, whichever of the two trio runs
    first in that round (it runs a round's tasks in either order, at random)."""
    mempool = Mempool(ManualClock(now=NOW))
    calls = hooked(mempool)
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    accepted_first = 0
    with ours, theirs, trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            await nursery.start(mempool.run)
            for seed in range(1, 41):
                order: list[str] = []

                async def reader():
                    await trio.lowlevel.wait_readable(ours)
                    order.append("read " + ours.recv(100).decode())  # in the round the poll woke it

                nursery.start_soon(reader)
                await trio.testing.wait_all_tasks_blocked()
                theirs.send(b"announcement")  # a peer's announcement arrives ...
                # ... and this task, runnable, meets the reader in the next round, as a relay's
                # reader holding a body meets the reader of another peer's announcement of it.
                await trio.lowlevel.cancel_shielded_checkpoint()
                if not order:
                    accepted_first += 1
                mempool.call_on_publish(lambda published: order.append("published"))
                message = make_message(seed, NOW + 600)
                mempool.submit_relayed([message])
                assert mempool.contains(message.message_id)  # held at once (a second copy is a duplicate)
                await trio.testing.wait_all_tasks_blocked()
                assert order == ["read announcement", "published"]
                if accepted_first >= 3:
                    break
            nursery.cancel_scope.cancel()
    assert accepted_first >= 3  # the acceptance ran before the reader in some rounds: those are the test
    assert calls == [[i] for i in range(seed)]


async def test_a_local_submission_publishes_at_once_with_the_relayed_ones_before_it():
    async with running_mempool() as (mempool, calls, nursery):
        mempool.submit_relayed([make_message(1, NOW + 600)])
        mempool.submit_relayed([make_message(2, NOW + 600)])
        mempool.append([make_message(3, NOW + 600)])  # a local submission's append
        assert calls == [[0, 1, 2]]
        mempool.submit_relayed([make_message(4, NOW + 600)])
        assert calls == [[0, 1, 2]]
        await trio.testing.wait_all_tasks_blocked()
        assert calls == [[0, 1, 2], [3]]  # each once, in mempool order
        assert [i for i, _, _ in mempool.ids_after(-1, 10)] == [0, 1, 2, 3]
        nursery.cancel_scope.cancel()


async def test_a_stopping_mempool_publishes_what_waits():
    async with running_mempool() as (mempool, calls, nursery):
        await trio.testing.wait_all_tasks_blocked()
        mempool.submit_relayed([make_message(1, NOW + 600)])
        nursery.cancel_scope.cancel()
    assert calls == [[0]]
    mempool.submit_relayed([make_message(2, NOW + 600)])  # no publisher any more: at once
    assert calls == [[0], [1]]


def test_without_its_task_a_mempool_publishes_relayed_messages_at_once():
    mempool = Mempool(ManualClock(now=NOW))
    calls = hooked(mempool)
    mempool.submit_relayed([make_message(1, NOW + 600)])
    assert calls == [[0]]
    assert [i for i, _, _ in mempool.ids_after(-1, 10)] == [0]
