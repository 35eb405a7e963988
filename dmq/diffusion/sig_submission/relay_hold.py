"""A short random hold before announcing relayed ids, one timer for the whole node.

In a mesh every relay accepts a message at about the same moment (each pulled it from the
same first announcer) and, announcing it at once, crosses the announcements of the others:
every id then travels every link in both directions. If each relay waits a random time in
``[0, limit]`` first, the one that draws the shortest announces it, its peers learn that it
holds the id (:class:`~dmq.diffusion.sig_submission.known_held.KnownHeld`) and leave it out
when their own hold ends (docs/protocol/node-to-node.md 9.8).

One draw per relayed message per node, shared by every serving peer of the node: what keeps
two nodes from crossing is that their draws differ, and sharing the draw lets one wake of one
task answer all the node's held requests for that message (no task, timer or cancel scope
per connection per message). Locally submitted messages are never held: they have no other
announcer to cross.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable
from itertools import count

import trio

__all__ = ["RelayHold"]


class RelayHold:
    """The node's timer of held announcements; ``limit`` seconds at most (0: nothing is held)."""

    def __init__(self, limit: float, rng: random.Random | None = None) -> None:
        if not math.isfinite(limit) or limit < 0:
            raise ValueError(f"the relay hold is a number of seconds >= 0, got {limit!r}")
        self.limit = limit
        self._rng = rng or random.Random()
        self._key: object = None
        self._due = -math.inf
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._order = count()
        self._sleep: trio.CancelScope | None = None
        self._running = False

    @property
    def active(self) -> bool:
        """Whether holding is on and the timer runs (otherwise every answer goes out at once)."""
        return self.limit > 0 and self._running

    def due_for(self, key: object) -> float:
        """When an answer whose newest relayed message is ``key`` may go out (one draw per key)."""
        if key != self._key:
            self._key = key
            self._due = trio.current_time() + self._rng.uniform(0.0, self.limit)
        return self._due

    def call_at(self, due: float, callback: Callable[[], None]) -> None:
        """Call ``callback`` from the timer's task at ``due`` (it must not raise or wait)."""
        heapq.heappush(self._heap, (due, next(self._order), callback))
        sleep = self._sleep
        if sleep is not None and due < sleep.deadline:
            sleep.deadline = due

    def __len__(self) -> int:
        return len(self._heap)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Call every held answer when it is due, until cancelled."""
        heap = self._heap
        self._running = True
        task_status.started()
        try:
            while True:
                with trio.CancelScope(deadline=heap[0][0] if heap else math.inf) as self._sleep:
                    await trio.sleep_forever()
                self._sleep = None
                now = trio.current_time()
                while heap and heap[0][0] <= now:
                    heapq.heappop(heap)[2]()
        finally:
            self._running = False
            self._sleep = None
