"""The node's timer grid (dmq/timer_grid.py): timers move to the next whole second, never earlier."""

from __future__ import annotations

import pytest
import trio
from trio.testing import MockClock

from dmq.timer_grid import GRID, Ticker, grid_for, on_grid


def test_a_deadline_moves_up_to_the_next_grid_point_and_one_on_it_stays():
    assert GRID == 1.0
    assert on_grid(10.2) == 11.0
    assert on_grid(11.0) == 11.0
    assert on_grid(0.001) == 1.0
    assert on_grid(7.5, grid=5) == 10.0
    for deadline in (3.0001, 59.9, 1234.5678):
        assert deadline <= on_grid(deadline) < deadline + GRID


def test_only_timers_ten_steps_long_or_more_are_aligned():
    assert grid_for(10.0) is on_grid      # keep-alive's 10 s: at most 1 s later
    assert grid_for(60.0) is on_grid
    assert grid_for(1.0) is None          # a test's short interval stays exact
    assert grid_for(0.02) is None


def test_a_ticker_of_whole_seconds_ticks_on_whole_seconds_and_does_not_drift():
    ticks = []

    async def main():
        await trio.sleep(0.3)
        ticker = Ticker(5.0)
        with trio.move_on_after(21):
            while True:
                await ticker.wait()
                ticks.append(trio.current_time())
                await trio.sleep(0.4)  # the tick's work

    trio.run(main, clock=MockClock(autojump_threshold=0))
    assert ticks == [6.0, 11.0, 16.0, 21.0]


def test_a_late_tick_goes_to_the_next_grid_point_and_a_short_period_stays_exact():
    ticks = []

    async def main():
        ticker = Ticker(1.0)
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
