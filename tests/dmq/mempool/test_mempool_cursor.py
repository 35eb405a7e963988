"""Cursors over the mempool: the local-notification semantics of docs/protocol/local-protocols.md 8.2."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from dmq.clock import ManualClock
from dmq.mempool import Mempool

from .messages import make_message

NOW = 1_800_000_000


def filled(count: int, ttl: int = 600) -> tuple[Mempool, ManualClock, list]:
    clock = ManualClock(now=NOW)
    mempool = Mempool(clock)
    messages = [make_message(i, NOW + ttl) for i in range(count)]
    mempool.append(messages)
    return mempool, clock, messages


async def test_non_blocking_returns_at_once_even_when_empty():
    mempool, _, _ = filled(0)
    cursor = mempool.cursor()
    with trio.fail_after(1):
        assert await cursor.next_batch(blocking=False, limit=10) == ([], False)
    assert cursor.position == -1


async def test_limit_1000_has_more_and_cursor_advances_to_last_delivered():
    mempool, _, messages = filled(2500)
    cursor = mempool.cursor()
    batch, has_more = await cursor.next_batch(blocking=False, limit=1000)
    assert [e.raw for e in batch] == [m.raw for m in messages[:1000]]
    assert has_more and cursor.position == 999
    batch, has_more = await cursor.next_batch(blocking=True, limit=1000)
    assert [e.index for e in batch] == list(range(1000, 2000)) and has_more
    batch, has_more = await cursor.next_batch(blocking=False, limit=1000)
    assert [e.index for e in batch] == list(range(2000, 2500))
    assert not has_more and cursor.position == 2499
    assert await cursor.next_batch(blocking=False, limit=1000) == ([], False)


async def test_exactly_limit_remaining_means_no_more():
    mempool, _, _ = filled(5)
    batch, has_more = await mempool.cursor().next_batch(blocking=False, limit=5)
    assert len(batch) == 5 and not has_more


async def test_blocking_waits_for_an_append_and_wakes_every_waiter():
    mempool, _, _ = filled(0)
    cursors = [mempool.cursor() for _ in range(110)]
    results: dict[int, list] = {}

    async def reader(number, cursor):
        batch, _ = await cursor.next_batch(blocking=True, limit=1000)
        results[number] = [e.index for e in batch]

    async with trio.open_nursery() as nursery:
        for number, cursor in enumerate(cursors):
            nursery.start_soon(reader, number, cursor)
        await trio.testing.wait_all_tasks_blocked()
        assert results == {}
        mempool.append([make_message(1, NOW + 60), make_message(2, NOW + 60)])
    assert results == {number: [0, 1] for number in range(110)}
    assert all(cursor.position == 1 for cursor in cursors)


async def test_blocking_ignores_appends_that_are_already_expired():
    mempool, _, _ = filled(0)
    cursor = mempool.cursor()
    got = []

    async def reader():
        got.extend((await cursor.next_batch(blocking=True, limit=10))[0])

    async with trio.open_nursery() as nursery:
        nursery.start_soon(reader)
        await trio.testing.wait_all_tasks_blocked()
        mempool.append([make_message(1, NOW)])  # expires_at <= now: never delivered
        await trio.testing.wait_all_tasks_blocked()
        assert got == []
        mempool.append([make_message(2, NOW + 1)])
    assert [e.index for e in got] == [1]


async def test_cancelled_blocking_wait_leaves_the_cursor_where_it_was():
    mempool, _, _ = filled(3)
    cursor = mempool.cursor(2)
    with trio.move_on_after(0.01) as scope:
        await cursor.next_batch(blocking=True, limit=10)
    assert scope.cancelled_caught and cursor.position == 2


async def test_expired_messages_are_skipped_and_never_delivered():
    clock = ManualClock(now=NOW)
    mempool = Mempool(clock)
    mempool.append([make_message(i, NOW + (10 if i % 2 else 100)) for i in range(6)])
    cursor = mempool.cursor()
    clock.advance(10)
    batch, has_more = await cursor.next_batch(blocking=True, limit=2)
    assert [e.index for e in batch] == [0, 2] and has_more
    mempool.expire()
    batch, has_more = await cursor.next_batch(blocking=False, limit=10)
    assert [e.index for e in batch] == [4] and not has_more


async def test_a_late_cursor_starts_at_the_beginning_and_sees_everything_unexpired():
    mempool, clock, messages = filled(4)
    early = mempool.cursor()
    await early.next_batch(blocking=False, limit=1000)
    mempool.append([make_message(100, NOW + 5)])
    clock.advance(5)
    late = mempool.cursor()
    batch, has_more = await late.next_batch(blocking=True, limit=1000)
    assert [e.message_id for e in batch] == [m.message_id for m in messages]
    assert not has_more
    assert await early.next_batch(blocking=False, limit=1000) == ([], False)


async def test_end_cursor_sees_only_new_messages():
    mempool, _, _ = filled(3)
    cursor = mempool.cursor("end")
    assert await cursor.next_batch(blocking=False, limit=10) == ([], False)
    mempool.append([make_message(50, NOW + 60)])
    batch, _ = await cursor.next_batch(blocking=True, limit=10)
    assert [e.index for e in batch] == [3]


async def test_limit_must_be_positive():
    mempool, _, _ = filled(1)
    with pytest.raises(ValueError):
        await mempool.cursor().next_batch(blocking=False, limit=0)


async def test_background_expiry_purges_on_its_own():
    clock = ManualClock(now=NOW)
    mempool = Mempool(clock, expiry_interval=0.001, expiry_max_sleep=0.01)  # the clock jumps
    mempool.append([make_message(1, NOW + 1), make_message(2, NOW + 100)])
    async with trio.open_nursery() as nursery:
        await nursery.start(mempool.run)
        clock.advance(1)
        with trio.fail_after(5):
            while len(mempool) != 1:
                await trio.sleep(0.001)
        nursery.cancel_scope.cancel()
    assert not mempool.contains(make_message(1, NOW + 1).message_id)
