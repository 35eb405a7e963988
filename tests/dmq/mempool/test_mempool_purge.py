"""The background purge wakes only when something can expire (dmq/mempool/memory.py ``Mempool.run``).

On trio's autojump clock with the mempool's wall clock tied to it (``TrioClock``), so a
sleep of an hour takes no real time and each of the purge's wakes is one ``purge_passes``.
"""

from __future__ import annotations

import trio

from dmq.clock import TrioClock
from dmq.mempool import Mempool

from .messages import make_message

NOW = 1_800_000_000


async def started(nursery: trio.Nursery, **options) -> Mempool:
    mempool = Mempool(TrioClock(NOW - trio.current_time()), **options)
    await nursery.start(mempool.run)
    return mempool


async def test_an_empty_mempool_is_never_purged(autojump_clock):
    async with trio.open_nursery() as nursery:
        mempool = await started(nursery)
        await trio.sleep(3600)
        assert mempool.purge_passes == 1  # the one at start
        nursery.cancel_scope.cancel()


async def test_the_purge_sleeps_until_the_soonest_expiry(autojump_clock):
    async with trio.open_nursery() as nursery:
        mempool = await started(nursery, expiry_max_sleep=7200)
        mempool.append([make_message(1, NOW + 1000)])
        await trio.sleep(999)
        assert len(mempool) == 1
        passes = mempool.purge_passes
        assert passes <= 2  # the start, and the wake for the first message
        await trio.sleep(2)
        assert len(mempool) == 0
        assert mempool.purge_passes == passes + 1
        await trio.sleep(3600)
        assert mempool.purge_passes == passes + 1  # empty again: no more wakes
        nursery.cancel_scope.cancel()


async def test_an_append_with_a_sooner_expiry_wakes_the_purge(autojump_clock):
    async with trio.open_nursery() as nursery:
        mempool = await started(nursery, expiry_max_sleep=7200)
        late, soon = make_message(1, NOW + 5000), make_message(2, NOW + 100)
        mempool.append([late])
        await trio.sleep(10)
        mempool.append([soon])
        await trio.sleep(91)  # now + 101: the sooner one is gone, though the purge slept toward + 5000
        assert not mempool.contains(soon.message_id) and mempool.contains(late.message_id)
        passes = mempool.purge_passes
        # A later expiry does not wake it.
        mempool.append([make_message(3, NOW + 6000)])
        await trio.sleep(4000)
        assert mempool.purge_passes == passes
        await trio.sleep(900)  # past + 5000
        assert not mempool.contains(late.message_id) and len(mempool) == 1
        assert mempool.purge_passes == passes + 1
        nursery.cancel_scope.cancel()


class SteppedClock(TrioClock):
    """Trio's time as wall time, stepped forward on demand (a wall clock set by NTP)."""

    def step(self, seconds: float) -> None:
        self.epoch += seconds


async def test_a_stepped_wall_clock_is_followed_within_the_longest_sleep(autojump_clock):
    clock = SteppedClock(NOW - trio.current_time())
    mempool = Mempool(clock, expiry_max_sleep=60)
    async with trio.open_nursery() as nursery:
        await nursery.start(mempool.run)
        message = make_message(1, NOW + 3000)
        mempool.append([message])
        cursor = mempool.cursor()
        await trio.sleep(1)
        clock.step(3000)
        # Held past its expiry until the purge looks again, but never handed out.
        assert mempool.contains(message.message_id)
        assert await cursor.next_batch(blocking=False, limit=10) == ([], False)
        assert mempool.lookup_unexpired(message.message_id) is None
        await trio.sleep(60)
        assert not mempool.contains(message.message_id)
        nursery.cancel_scope.cancel()


async def test_the_shortest_sleep_bounds_the_wakes_of_messages_expiring_at_once(autojump_clock):
    async with trio.open_nursery() as nursery:
        mempool = await started(nursery, expiry_interval=0.05)
        for seed in range(100):
            mempool.append([make_message(seed, NOW)])  # expired on arrival
            await trio.sleep(0.001)
        # 0.1 s of appends: each pass purges what arrived since the last, at most one per 50 ms.
        await trio.sleep(0.1)
        assert len(mempool) == 0
        assert mempool.purge_passes <= 6
        nursery.cancel_scope.cancel()
