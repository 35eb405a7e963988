"""The node's housekeeping loops on one grid: they tick together, in one wake.

On a small VM every wake of the event loop costs a few hundred microseconds of CPU by itself
(docs/benchmarks.md, "An idle node"), so an idle node's cost is its count of wakes. A loop
that sleeps its period after its work drifts away from the others; loops whose period is a
whole number of seconds (a topic node's due publications each second, its prune each 5 s and
its disk measurement, the heap trim each minute) instead tick on the points of one grid, one
second apart, so those of one process due in the same second run in one wake.

Each process has its own offset of the grid (``PHASE``): nodes sharing a host do not wake in
step, and the housekeeping of one does not queue behind another's on the same cores. The grid
is not used for the protocol timers the peers see (keep-alive's next ping): aligning those was
measured and did not reduce an idle node's wakes (docs/benchmarks.md, "An idle node").
"""

from __future__ import annotations

import math
import random

import trio

__all__ = ["GRID", "PHASE", "on_grid", "Ticker"]

#: The grid's step, seconds.
GRID = 1.0
#: This process's offset of the grid on trio's clock, in [0, GRID), from a generator of its own
#: (drawing from the module-level one at import would shift any sequence seeded before it).
PHASE = random.Random().random() * GRID


def on_grid(deadline: float, grid: float = GRID, phase: float = PHASE) -> float:
    """The first point of the grid (``phase + k * grid``) at or after ``deadline``; a deadline
    within a nanosecond past a point (a point computed again, with rounding) is on it."""
    return math.ceil((deadline - phase) / grid - 1e-9) * grid + phase


class Ticker:
    """A housekeeping loop's sleep: every ``period`` seconds, on the grid when ``period`` is a
    whole number of grid steps (then a tick is at most one step late and never drifts);
    otherwise (a test's short period) ``period`` after the previous tick's work, as a plain
    sleep."""

    __slots__ = ("period", "aligned", "phase", "_next")

    def __init__(self, period: float, phase: float = PHASE) -> None:
        self.period = period
        self.aligned = period >= GRID and float(period / GRID).is_integer()
        self.phase = phase
        self._next: float | None = None

    async def wait(self) -> None:
        """Sleep until the next tick."""
        if not self.aligned:
            await trio.sleep(self.period)
            return
        now = trio.current_time()
        planned = now + self.period if self._next is None else max(self._next, now)
        self._next = on_grid(planned, phase=self.phase)
        await trio.sleep_until(self._next)
        self._next += self.period
