"""The housekeeping loops' grid (dmq/timer_grid.py): ticks on the grid's points, never earlier."""

from __future__ import annotations

import pytest
import trio
from trio.testing import MockClock

from dmq.timer_grid import GRID, PHASE, Ticker, on_grid


def test_a_deadline_moves_up_to_the_next_grid_point_and_one_on_it_stays():
    assert GRID == 1.0 and 0 <= PHASE < GRID
    assert on_grid(10.2, phase=0) == 11.0
    assert on_grid(11.0, phase=0) == 11.0
    assert on_grid(10.2, phase=0.25) == 10.25
    assert on_grid(10.3, phase=0.25) == 11.25
    assert on_grid(7.5, grid=5, phase=0) == 10.0
    for deadline in (3.0001, 59.9, 1234.5678):
        assert deadline <= on_grid(deadline) < deadline + GRID


def test_a_ticker_of_whole_seconds_ticks_on_the_grid_and_does_not_drift():
    ticks = []

    async def main():
        await trio.sleep(0.3)
        ticker = Ticker(5.0, phase=0.5)
        with trio.move_on_after(21):
            while True:
                await ticker.wait()
                ticks.append(trio.current_time())
                await trio.sleep(0.4)  # the tick's work

    trio.run(main, clock=MockClock(autojump_threshold=0))
    assert ticks == [5.5, 10.5, 15.5, 20.5]


def test_tickers_of_one_process_tick_together():
    ticks = {1.0: [], 5.0: []}

    async def loop(period):
        ticker = Ticker(period)
        while True:
            await ticker.wait()
            ticks[period].append(trio.current_time())

    async def main():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(loop, 1.0)
            await trio.sleep(2.7)  # started at another time, with another period
            nursery.start_soon(loop, 5.0)
            await trio.sleep(20)
            nursery.cancel_scope.cancel()

    trio.run(main, clock=MockClock(autojump_threshold=0))
    assert len(ticks[5.0]) >= 3 and set(ticks[5.0]) <= set(ticks[1.0])  # every 5 s tick shares a wake


def test_a_late_tick_goes_to_the_next_grid_point_and_a_short_period_stays_exact():
    ticks = []

    async def main():
        ticker = Ticker(1.0, phase=0)
        await ticker.wait()
        ticks.append(trio.current_time())
        await trio.sleep(2.5)  # work that overruns the next two ticks
        await ticker.wait()
        ticks.append(trio.current_time())
        short = Ticker(0.05)
        assert not short.aligned
        await short.wait()
        ticks.append(trio.current_time())

    trio.run(main, clock=MockClock(autojump_threshold=0))
    assert ticks == [1.0, 4.0, pytest.approx(4.05)]
