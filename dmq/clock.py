"""Injected time.

Expiry reads the wall clock (POSIX seconds with a fraction), rate limits and timeouts read
a monotonic clock, exactly as the reference node does (docs/protocol/validation.md section 6.11). Everything
that needs time takes a :class:`Clock`, so tests run deterministically and fast, and the
capacity model can run at mainnet scale in simulated time.
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable

import trio

__all__ = ["Clock", "SystemClock", "ManualClock", "TrioClock"]


@runtime_checkable
class Clock(Protocol):
    def now(self) -> float:
        """Wall-clock POSIX time in seconds, with a fraction."""

    def monotonic(self) -> float:
        """A clock that never goes back, in seconds, for intervals only."""


class SystemClock:
    """The machine's clocks."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


class ManualClock:
    """A clock that moves only when told to; wall and monotonic time advance together."""

    def __init__(self, now: float = 1_800_000_000.0, monotonic: float = 1_000.0) -> None:
        self._now = float(now)
        self._mono = float(monotonic)

    def now(self) -> float:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a manual clock only moves forward; use set_wall() for a wall-clock jump")
        self._now += seconds
        self._mono += seconds

    def set_wall(self, now: float) -> None:
        """Jump the wall clock (forward or back) without touching monotonic time."""
        self._now = float(now)


class TrioClock:
    """Time as the running trio loop keeps it, with the wall clock ``epoch`` seconds ahead.

    Under ``trio.testing.MockClock`` this is virtual time: a simulated network's nodes then
    expire messages, rate-limit pools and time out peers on the same clock that delays
    their links and wakes their sleeps, and time jumps whenever every task waits.
    """

    def __init__(self, epoch: float) -> None:
        self.epoch = float(epoch)

    def now(self) -> float:
        return self.epoch + trio.current_time()

    def monotonic(self) -> float:
        return trio.current_time()
