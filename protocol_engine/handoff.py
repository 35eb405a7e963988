"""A peer run from its channel's reader, and the task that sleeps meanwhile.

A peer whose rounds need no waiting (a sig-submission serving peer answering from memory, a
pulling peer taking in id replies) is cheaper run by the mux reader than by its own task: the
channel calls the peer's ``consume`` as bytes arrive (``MuxChannel.on_bytes``), which takes the
messages with :meth:`Driver.recv_nowait <protocol_engine.driver.Driver.recv_nowait>` and queues
replies with ``send_nowait``, with no task switch per round. What it cannot do there (wait for
room to send, for the node, for the end of the protocol) it hands over to the peer's own task,
which sleeps in :meth:`Handoff.wait` until then.

The task's sleep has a deadline (a state's time limit, a reply the peer owes by a time). Moving a
trio cancel scope's deadline costs a good part of a round, so :attr:`Handoff.deadline` is read
lazily: the sleeping scope keeps the deadline it had when the task fell asleep unless a sooner one
comes, and a scope that fires before the current deadline only puts the task to sleep again. A
deadline that moves on every round costs a float store.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import trio

__all__ = ["Handoff"]


class Handoff:
    """What ``consume`` (run by ``channel``'s reader) hands to the peer's task, and the task's sleep.

    ``channel`` offers ``on_bytes`` (``MuxChannel``, or a wrapper of one); ``consume`` must not
    raise: what it cannot handle it passes to :meth:`hand_over`.
    """

    __slots__ = ("_channel", "_consume", "_handed", "_lot", "_scope", "_scope_deadline", "deadline")

    def __init__(self, channel: Any, consume: Callable[[], None]) -> None:
        self._channel = channel
        self._consume = consume
        self._handed: tuple[Any, Any] | None = None
        self._lot = trio.lowlevel.ParkingLot()
        self._scope: trio.CancelScope | None = None
        self._scope_deadline = math.inf
        #: When the sleeping task must wake although nothing was handed over (trio's clock).
        self.deadline = math.inf

    @property
    def handed(self) -> bool:
        """Whether something waits for the task (the reader then has nothing more to do)."""
        return self._handed is not None

    def hand_over(self, kind: Any, value: Any) -> None:
        """Give ``(kind, value)`` to the task and stop running ``consume`` until it waits again."""
        self._handed = (kind, value)
        self._channel.on_bytes(None)
        self._lot.unpark_all()

    def wake_by(self, deadline: float) -> None:
        """Set :attr:`deadline`; the sleeping scope moves only when it would wake the task too late."""
        self.deadline = deadline
        if deadline < self._scope_deadline and self._scope is not None:
            self._scope.deadline = self._scope_deadline = deadline

    async def wait(self) -> tuple[Any, Any] | None:
        """Run ``consume`` from the reader until it hands something over; return that.

        ``consume`` runs once at once (for what is already buffered). Returns None when
        :attr:`deadline` passes first; raises what cancels the task.
        """
        channel = self._channel
        channel.on_bytes(self._consume)
        try:
            self._consume()
            while self._handed is None:
                deadline = self.deadline
                if deadline != math.inf and deadline <= trio.current_time():
                    return None
                with trio.CancelScope(deadline=deadline) as self._scope:
                    self._scope_deadline = deadline
                    await self._lot.park()
        finally:
            self._scope = None
            self._scope_deadline = math.inf
            channel.on_bytes(None)
        handed, self._handed = self._handed, None
        return handed
