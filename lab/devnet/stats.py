"""Latency percentiles and message rates, kept incrementally for a live view.

A devnet run sees at most a few hundred thousand deliveries, so latencies are kept exactly
rather than sketched: the percentiles printed are the true ones, by the nearest-rank rule.
They are sorted when read, not on insertion: sorted insertion moves half the list per value,
which for the 300,000 deliveries of a 100-node run is minutes of CPU. Rates are counted over a
sliding window of recent arrivals.
"""

from __future__ import annotations

import math
from collections import deque

__all__ = ["LatencyRecorder", "RateWindow", "nearest_rank"]


def nearest_rank(ordered: list[float], fraction: float) -> float:
    """The nearest-rank percentile of an ascending list: the smallest value with at least
    ``fraction`` of the values at or below it."""
    if not ordered:
        raise ValueError("no values")
    if not 0 < fraction <= 1:
        raise ValueError(f"a percentile fraction is in (0, 1], got {fraction}")
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


class LatencyRecorder:
    """Every latency added, in seconds."""

    def __init__(self) -> None:
        self._values: list[float] = []
        self._sorted = True

    def add(self, seconds: float) -> None:
        self._values.append(seconds)
        self._sorted = False

    def __len__(self) -> int:
        return len(self._values)

    @property
    def _ordered(self) -> list[float]:
        if not self._sorted:
            self._values.sort()
            self._sorted = True
        return self._values

    def percentile(self, fraction: float) -> float | None:
        """``None`` until something was added."""
        return nearest_rank(self._ordered, fraction) if self._values else None

    @property
    def maximum(self) -> float | None:
        return self._ordered[-1] if self._values else None

    def summary(self) -> dict[str, float | None]:
        """p50, p90, p99 and max in milliseconds (``None`` when empty), for reports."""
        def ms(value: float | None) -> float | None:
            return None if value is None else round(value * 1000, 3)

        return {"p50_ms": ms(self.percentile(0.5)), "p90_ms": ms(self.percentile(0.9)),
                "p99_ms": ms(self.percentile(0.99)), "max_ms": ms(self.maximum)}


class RateWindow:
    """Events per second over the last ``window`` seconds (of a monotonic clock)."""

    def __init__(self, window: float = 5.0) -> None:
        if window <= 0:
            raise ValueError(f"a rate window is positive, got {window}")
        self.window = window
        self._times: deque[float] = deque()

    def add(self, at: float, count: int = 1) -> None:
        self._times.extend([at] * count)

    def rate(self, now: float) -> float:
        horizon = now - self.window
        while self._times and self._times[0] <= horizon:
            self._times.popleft()
        return len(self._times) / self.window
