"""Messages a peer delivered too soon after their pool's last one, admitted once the spacing allows.

Check 3 (docs/protocol/validation.md 6.2) is on arrival time: a pool's message that reaches
this node less than ``MinSigDelay`` after the pool's previous accepted one is refused as
``SigTooFrequent``. In a healthy network that never happens, but after a partition heals (or a
slow path delivers a pool's message late) the pool's *next* message can arrive inside the
window. Every peer announces a message once per connection, so a node that refused it may never
be offered it again: the message is lost at that node for good (docs/network-scale.md,
"Findings").

This node keeps such a message instead of forgetting it, and hands it to the ingress again when
the pool's window has passed, where it goes through every check once more, as if it had
arrived then. Nothing changes on the wire: the refusal is traced and the peer is treated as the
reference treats it (``dmq.validation.reactions``); the pool's accepted rate still never exceeds
one message per ``MinSigDelay`` at this node.

Bounds, because the messages come from peers: a message is held only when it passes every
other check, so only a staked pool's own keys can produce one (checking it costs what any
message with a failing KES signature already costs), and at most ``MAX_HELD_PER_POOL`` per pool,
released one window apart, oldest signature first. Held messages live in memory: a restart
forgets them, like any message not yet received.
"""

from __future__ import annotations

import heapq
from collections.abc import Awaitable, Callable

import trio

from dmq.message import DmqMessage
from dmq.trace import MessageHeld, Tracer
from dmq.validation import Validator

__all__ = ["HeldBack"]

#: Held messages per pool: after a partition of a few of the pool's periods a node misses that
#: many of its messages. Worst case held: this x staked pools x message size (4 x 3,000 x 3 KB).
MAX_HELD_PER_POOL = 4

#: What releases a held message: ``admit([message], origin)`` on the ingress.
Admit = Callable[[list[DmqMessage], str], Awaitable[object]]


class HeldBack:
    """The messages waiting for their pool's window; :meth:`run` releases them when due.

    Each pool with held messages has one entry in a heap of due times: its window's end
    (the last accepted message's monotonic time plus ``MinSigDelay``). When it is due, the
    pool's oldest held message goes to the ingress; if more wait, the pool's next due time is
    taken from the state that admission left (the spacing restarts at each accepted message).
    """

    def __init__(self, validator: Validator, tracer: Tracer) -> None:
        self.validator = validator
        self.tracer = tracer
        #: pool id -> its held messages and their origins, oldest signature (lowest expiresAt) first.
        self._held: dict[bytes, list[tuple[DmqMessage, str]]] = {}
        self._due: list[tuple[float, bytes]] = []
        self._changed = trio.Event()

    def __len__(self) -> int:
        return sum(len(held) for held in self._held.values())

    def _window_end(self, pool_id: bytes, now: float) -> float:
        last = self.validator.state.last_accepted(pool_id)
        return now if last is None else max(now, last + self.validator.min_sig_delay)

    def offer(self, message: DmqMessage, origin: str) -> bool:
        """Hold ``message``, refused by check 3 from ``origin``, if it may be held; True when it is."""
        pool_id = message.pool_id
        held = self._held.get(pool_id)
        if held is not None and (len(held) >= MAX_HELD_PER_POOL
                                 or any(m.message_id == message.message_id for m, _ in held)):
            return False
        if self.validator.check(message, rate_limit=False) is not None:
            return False
        now = self.validator.clock.monotonic()
        due = self._window_end(pool_id, now)
        if held is None:
            held = self._held[pool_id] = []
            heapq.heappush(self._due, (due, pool_id))
        held.append((message, origin))
        held.sort(key=lambda entry: entry[0].expires_at)
        self.tracer.emit(MessageHeld(self.tracer.now(), message.message_id, pool_id, origin, due - now))
        self._changed.set()
        return True

    def due(self, now: float) -> list[tuple[DmqMessage, str]]:
        """Take, for each pool whose window has passed at monotonic time ``now``, its oldest held message."""
        released = []
        while self._due and self._due[0][0] <= now:
            _, pool_id = heapq.heappop(self._due)
            held = self._held[pool_id]
            released.append(held.pop(0))
            if not held:
                del self._held[pool_id]
        return released

    def _reschedule(self, now: float) -> None:
        """Give every pool that still holds messages but has no due time its next window's end."""
        scheduled = {pool_id for _, pool_id in self._due}
        for pool_id in self._held.keys() - scheduled:
            heapq.heappush(self._due, (self._window_end(pool_id, now), pool_id))

    async def run(self, admit: Admit) -> None:
        """Release each held message to ``admit`` when its window has passed, for the node's lifetime."""
        clock = self.validator.clock
        while True:
            released = self.due(clock.monotonic())
            for message, origin in released:
                await admit([message], origin)
            if released:
                self._reschedule(clock.monotonic())
            self._changed = trio.Event()
            if self._due:
                with trio.move_on_after(max(0.0, self._due[0][0] - clock.monotonic())):
                    await self._changed.wait()
            else:
                await self._changed.wait()
