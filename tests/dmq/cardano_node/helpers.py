"""Small helpers shared by the cardano-node link tests."""

from __future__ import annotations

from collections.abc import Callable

import trio

from dmq.trace import TraceEvent, Tracer


async def eventually(predicate: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
    """Wait until ``predicate()`` holds; fail the test after ``timeout`` seconds."""
    with trio.move_on_after(timeout):
        while not predicate():
            await trio.sleep(0.005)
        return
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


class Recorder:
    """A trace sink keeping every event, with a filter by type."""

    def __init__(self, tracer: Tracer | None = None) -> None:
        self.events: list[TraceEvent] = []
        self.tracer = tracer if tracer is not None else Tracer()
        self.tracer.add_sink(self.events.append)

    def of(self, kind: type) -> list:
        return [event for event in self.events if isinstance(event, kind)]


class TrioClock:
    """The node's clock read from trio's, so a ``MockClock`` drives the link's waits and the
    wall time it compares the epoch's end with alike; wall time is ``wall_at_zero`` plus
    trio's time."""

    def __init__(self, wall_at_zero: float) -> None:
        self.wall_at_zero = wall_at_zero

    def now(self) -> float:
        return self.wall_at_zero + trio.current_time()

    def monotonic(self) -> float:
        return trio.current_time()
