"""The node's own periodic timers on one coarse grid: whole seconds of trio's clock.

On a small VM every wake of the event loop costs a few hundred microseconds of CPU by itself
(docs/benchmarks.md, "An idle node"), so an idle node's cost is its count of wakes. Timers
whose period the protocol leaves some slack in (keep-alive's next ping, the heap trim) are
set to fire at the next whole second after their planned time rather than at it, and the
node's housekeeping loops whose period is a whole number of seconds (a topic node's due
publications each second, its prune each 5 s, the heap trim each minute) tick on whole
seconds: those of one node that come due within the same second then fire in one wake
instead of one each.
Trio's clock is the host's monotonic clock, so nodes on one host share the grid too and
their pings cross in one burst. A timer is at most one grid step late, never early.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import trio

__all__ = ["GRID", "on_grid", "grid_for", "Ticker"]

#: The grid's step, seconds.
GRID = 1.0


def on_grid(deadline: float, grid: float = GRID) -> float:
    """The first point of the grid at or after ``deadline`` (a time on trio's clock)."""
    return math.ceil(deadline / grid) * grid


def grid_for(period: float) -> Callable[[float], float] | None:
    """:func:`on_grid` for a timer of ``period`` seconds when one grid step is at most a tenth
    of it; None (exact timing) for a shorter period, as tests and simulations set."""
    return on_grid if period >= 10 * GRID else None


class Ticker:
    """A housekeeping loop's sleep: every ``period`` seconds, on the grid when ``period`` is a
    whole number of grid steps (then a tick is at most one step late and never drifts);
    otherwise (a test's short period) ``period`` after the previous tick's work, as a plain
    sleep."""

    __slots__ = ("period", "aligned", "_next")

    def __init__(self, period: float) -> None:
        self.period = period
        self.aligned = period >= GRID and float(period / GRID).is_integer()
        self._next: float | None = None

    async def wait(self) -> None:
        """Sleep until the next tick."""
        if not self.aligned:
            await trio.sleep(self.period)
            return
        now = trio.current_time()
        planned = now + self.period if self._next is None else max(self._next, now)
        self._next = on_grid(planned)
        await trio.sleep_until(self._next)
        self._next += self.period
