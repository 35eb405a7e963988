"""The mempool as readers and writers in the node see it, held in memory only.

This is the single source of truth of accepted messages (docs/architecture.md principle 5):
local notification clients and outbound peers are cursors over it, the validation pipeline
asks it for duplicates and appends to it. :class:`~dmq.mempool.durable.DurableMempool` adds
persistence without changing anything a reader sees.

Readers wait for new messages on one :class:`trio.Event` that is replaced on a publish:
a publish is one ``set()`` however many cursors wait, which stays cheap with hundreds of
peers and aggregators parked on it. A publish nobody waits for (the usual one: the serving
peers park on :meth:`Mempool.call_on_publish`) keeps the event as it is instead of making a
new one.

The background purge sleeps until the soonest expiry it knows and is woken early only by a
publish that brings a sooner one; with nothing held it does not wake at all. An idle node
wakes for nothing (every wake of its event loop costs a few hundred microseconds of CPU on a
small VM, docs/benchmarks.md).

Relayed messages become visible a round of the event loop after the one that accepted them:
:meth:`Mempool.submit_relayed` holds the reader horizon and wakes a task of the mempool's,
which publishes in the next round. A relay accepts a message at about the moment its other
peers accept it from the same origin, and each then announces it to the others; when the
body and a peer's announcement of the same id arrive together, the poll that wakes the
accepting reader wakes that peer's reader too, and trio runs the two in either order. By the
next round every reader that poll woke has run, so those ids are known to be held and not
announced back (docs/protocol/node-to-node.md 9.8). A round waits for no timer (trio polls
for I/O with a zero timeout while a task is runnable): no virtual time passes in a simulated
network, and on a real node the publish waits only for work that was already due. A local
submission, and whatever relayed entries wait before it, is published at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

import trio

from dmq.clock import Clock

from .cursor import MempoolCursor
from .entry import StoredMessage
from .log import AppendableMessage, MessageLog

__all__ = ["Mempool", "DEFAULT_EXPIRY_INTERVAL", "EXPIRY_MAX_SLEEP"]

#: The shortest sleep of the background purge (the reference loop: about 50 ms).
DEFAULT_EXPIRY_INTERVAL = 0.05
#: The longest, while messages are held: the purge sleeps until the soonest expiry it knows
#: (a publish with a sooner one wakes it early), but no longer than this. The sleep runs on
#: the event loop's monotonic clock while expiry reads the wall clock, so a wall clock stepped
#: forward (or a test's jumping clock, which sets a short bound) is followed at most this
#: late. Readers never see an expired message however late the purge (they compare with the
#: clock); a purge only frees memory and disk. With nothing held the purge waits for a
#: publish, without a timer.
EXPIRY_MAX_SLEEP = 60.0


class Mempool:
    """Ordered log of accepted messages with an id index, an expiry index and reader wake-ups."""

    def __init__(self, clock: Clock, *, expiry_interval: float = DEFAULT_EXPIRY_INTERVAL,
                 expiry_max_sleep: float = EXPIRY_MAX_SLEEP) -> None:
        self._clock = clock
        self._log = MessageLog()
        #: Whether the id is in the duplicate set (docs/protocol/validation.md 6.1 step 2): the
        #: log's id index itself, with no method of the mempool's around it.
        self.contains: Callable[[bytes], bool] = self._log.contains
        #: The held entry with this id (even one that expired but was not purged yet), or None.
        self.get: Callable[[bytes], StoredMessage | None] = self._log.get
        #: The index of the held entry with this id (even one that expired but was not purged yet), or None.
        self.index_of: Callable[[bytes], int | None] = self._log.index_of
        self._expiry_interval = expiry_interval
        #: The purge's longest sleep. A clock that jumps (a test's scaled clock) is followed at
        #: most this late, since the sleep toward the soonest expiry runs in real time.
        self._expiry_max_sleep = expiry_max_sleep
        #: Wall time at which the sleeping purge looks next (inf: it waits for a publish; -inf:
        #: it was woken already).
        self._purge_at = math.inf
        #: Set by a publish that holds an expiry before ``_purge_at``.
        self._purge_wake = trio.Event()
        #: Passes of the purge (its wakes), for tests and inspection.
        self.purge_passes = 0
        self._published = trio.Event()
        #: Whether a reader took ``_published`` to wait on since it was made: only then does a
        #: publish set it and make the next one.
        self._published_taken = False
        self._on_publish: list[Callable[[], None]] = []
        #: The horizon relayed messages wait to be published up to (see the module docstring).
        self._relayed_upto = -1
        #: Whether the relayed publisher runs (in :meth:`run`); without it relayed messages are
        #: published at once.
        self._relayed_publisher = False
        #: The relayed publisher's task while it waits for a relayed publish, else None.
        self._relayed_waiter: trio.lowlevel.Task | None = None
        #: Called with the entries each expiry pass removed (tracing, metrics, recording).
        self.expiry_observers: list[Callable[[list[StoredMessage]], None]] = []

    @property
    def clock(self) -> Clock:
        return self._clock

    # -- membership and size -------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._log)

    @property
    def bytes_held(self) -> int:
        return self._log.bytes_held

    @property
    def next_index(self) -> int:
        return self._log.next_index

    # -- writing ----------------------------------------------------------------------------

    def append(
        self,
        messages: Iterable[AppendableMessage],
        pool_state_updates: Mapping[Any, Any] | None = None,
    ) -> list[int]:
        """Append validated messages; returns their indices. Readers see them at once.

        ``pool_state_updates`` is accepted for symmetry with the durable mempool and ignored:
        without a store there is nothing to keep it consistent with.
        """
        return self._append(messages, self._publish)

    def _append(self, messages: Iterable[AppendableMessage], publish: Callable[[int], None]) -> list[int]:
        """Append to the log and hand the last new index to ``publish`` (at once, or a round later)."""
        entries = self._log.append(messages)
        if entries:
            publish(entries[-1].index)
        return [entry.index for entry in entries]

    async def submit(
        self,
        messages: Iterable[AppendableMessage],
        pool_state_updates: Mapping[Any, Any] | None = None,
        *,
        relayed: bool = False,
    ) -> list[int]:
        """Append and return once the messages are as safe as this mempool makes them.

        The one write the node's ingress makes, whatever the mempool. ``relayed``: the
        messages came from a peer, which offers them again if they are lost, so nothing
        waits for them (a durable mempool commits them with its next group); the call then
        returns without yielding.
        """
        if relayed:
            return self.submit_relayed(messages, pool_state_updates)
        indices = self.append(messages, pool_state_updates)
        await trio.lowlevel.checkpoint()
        return indices

    def submit_relayed(
        self,
        messages: Iterable[AppendableMessage],
        pool_state_updates: Mapping[Any, Any] | None = None,
    ) -> list[int]:
        """``submit(..., relayed=True)`` without a coroutine: nothing waits for relayed messages.

        For the node-to-node ingress, which accepts a pulled batch in the connection's reader
        (no task wakes for it). The messages count as held when this returns (a second copy
        is a duplicate) and become visible a round of the event loop later (module
        docstring); a durable mempool commits them with its next group.
        """
        return self._append(messages, self._publish_relayed)

    def expire(self, now: float | None = None) -> list[StoredMessage]:
        """Purge messages with ``expires_at <= now`` (default: the clock's wall time)."""
        return self._log.expire(self._clock.now() if now is None else now)

    # -- reading ----------------------------------------------------------------------------

    def messages_after(self, position: int, limit: int) -> list[StoredMessage]:
        """Up to ``limit`` unexpired messages after ``position``, in mempool order."""
        return self._log.messages_after(position, limit, self._clock.now())

    def ids_after(self, position: int, limit: int) -> list[tuple[int, bytes, int]]:
        """``(index, message_id, size)`` of up to ``limit`` unexpired messages after ``position``.

        For outbound sig-submission peers, which keep their own position and announce ids in
        mempool order from the start (docs/protocol/node-to-node.md 9.3, 9.7).
        """
        log = self._log
        if position >= log.visible_upto:
            # Nothing visible after it (the usual answer to a serving peer that is up to date,
            # whose blocking request is then parked): no clock read, no scan.
            return []
        return log.ids_after(position, limit, self._clock.now())

    def lookup_unexpired(self, message_id: bytes) -> StoredMessage | None:
        """The message to send for a requested id, or None if it expired or is not held."""
        return self._log.lookup_unexpired(message_id, self._clock.now())

    async def wait_after(self, position: int) -> None:
        """Return once at least one unexpired message exists after ``position``."""
        while True:
            published = self._published
            if self._log.has_unexpired_after(position, self._clock.now()):
                return
            self._published_taken = True
            await published.wait()

    def call_on_publish(self, callback: Callable[[list[tuple[int, bytes, int]]], None]) -> None:
        """Call ``callback`` once, in the publishing task, the next time new messages become visible.

        For readers that answer without a task of their own (a serving peer's parked blocking
        request): no task is woken per reader, and ``callback`` must not raise or wait. It is
        handed what :meth:`ids_after` would give for the newly visible messages, read once for
        every reader called at that publish (one list they share and must not change): a
        reader that had read everything visible before needs no read of its own.
        """
        self._on_publish.append(callback)

    def cursor(self, start: Literal["beginning", "end"] | int = "beginning") -> MempoolCursor:
        """A cursor before the first held message, after the last one, or after an index."""
        if start == "beginning":
            return MempoolCursor(self, -1)
        if start == "end":
            return MempoolCursor(self, self._log.next_index - 1)
        if isinstance(start, int) and not isinstance(start, bool) and start >= -1:
            return MempoolCursor(self, start)
        raise ValueError(f"cursor start must be 'beginning', 'end' or an index >= -1, got {start!r}")

    def __iter__(self):
        """Held entries in index order (inspection and tests)."""
        return iter(self._log)

    # -- background work --------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Publish relayed messages and purge expired ones as they expire (``EXPIRY_MAX_SLEEP``), until cancelled."""
        async with trio.open_nursery() as nursery:
            await nursery.start(self._publish_relayed_soon)
            task_status.started()
            await self._purge()

    async def _purge(self) -> None:
        shortest = self._expiry_interval
        longest = max(shortest, self._expiry_max_sleep)
        while True:
            self.purge_passes += 1
            passed = trio.current_time()
            removed = self.expire()
            if removed:
                for observe in self.expiry_observers:
                    observe(removed)
            soonest = self._log.soonest_expiry()
            if soonest is None:
                self._purge_at, delay = math.inf, math.inf
            else:
                now = self._clock.now()
                delay = min(longest, max(shortest, soonest - now))
                self._purge_at = now + delay
            self._purge_wake = trio.Event()
            with trio.move_on_after(delay):
                await self._purge_wake.wait()
            # Woken early by a publish: still at most one pass per shortest sleep, however
            # many publishes bring sooner expiries.
            await trio.sleep_until(passed + shortest)

    def _publish_relayed(self, upto: int) -> None:
        """Publish relayed entries up to ``upto`` a round later (module docstring), or at once without the publisher."""
        if not self._relayed_publisher:
            self._publish(upto)
            return
        if upto > self._relayed_upto:
            self._relayed_upto = upto
        waiter = self._relayed_waiter
        if waiter is not None and upto > self._log.visible_upto:
            self._relayed_waiter = None
            trio.lowlevel.reschedule(waiter)

    async def _publish_relayed_soon(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The relayed publisher: woken by a relayed append, it publishes in the next round.

        Its wake is the round: by the time it runs, the poll has run and so has every task
        of the accepting round. The horizon only grows and every publish reaches it, so every
        relayed entry accepted before it runs goes in its publish, in mempool order; those
        published sooner (by a local submission behind them) are not published again. On the
        way out what still waits is published at once: no reader misses it.
        """
        me = trio.lowlevel.current_task()
        self._relayed_publisher = True
        task_status.started()
        try:
            while True:
                if self._relayed_upto <= self._log.visible_upto:
                    self._relayed_waiter = me
                    await trio.lowlevel.wait_task_rescheduled(self._abort_relayed_wait)
                if self._relayed_upto > self._log.visible_upto:
                    self._publish(self._relayed_upto)
        finally:
            self._relayed_publisher = False
            self._relayed_waiter = None
            if self._relayed_upto > self._log.visible_upto:
                self._publish(self._relayed_upto)

    def _abort_relayed_wait(self, _raise_cancel) -> trio.lowlevel.Abort:
        self._relayed_waiter = None
        return trio.lowlevel.Abort.SUCCEEDED

    def _publish(self, upto: int) -> None:
        log = self._log
        soonest = log.soonest_expiry()
        if soonest is not None and soonest < self._purge_at:
            self._purge_at = -math.inf  # told once; the purge looks again when it wakes
            self._purge_wake.set()
        after = log.visible_upto
        if log.publish(upto):
            if self._published_taken:
                published, self._published = self._published, trio.Event()
                self._published_taken = False
                published.set()
            if self._on_publish:
                callbacks, self._on_publish = self._on_publish, []
                fresh = log.ids_after(after, upto - after, self._clock.now())
                for callback in callbacks:
                    callback(fresh)
