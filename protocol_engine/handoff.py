"""A peer run from its channel's reader, and the task that sleeps meanwhile.

A peer whose rounds need no waiting (a sig-submission serving peer answering from memory, a
pulling peer taking in id replies) is cheaper run by the mux reader than by its own task: the
channel calls the peer's ``consume`` as bytes arrive (``MuxChannel.on_bytes``), which takes the
messages with :meth:`Driver.recv_nowait <protocol_engine.driver.Driver.recv_nowait>` and queues
replies with ``send_nowait``, with no task switch per round. What it cannot do there (wait for
room to send, for the node, for the end of the protocol) it hands over to the peer's own task,
which sleeps in :meth:`Handoff.wait` until then.

The task's sleep has a deadline (a state's time limit, a reply the peer owes by a time). A trio
cancel scope per sleep (entered, registered in trio's deadline heap, exited) was a good part of
what a round costs: the pulling peer's task sleeps once per message it accepts. So the sleeping
task parks without a scope, and the deadlines are kept by one timer task per trio run
(:class:`_Timer`, a system task) that wakes a handoff's task once its :attr:`Handoff.deadline` has
passed. The timer is lazy as the scope was: each handoff holds at most one entry in the timer's
heap, and a later deadline (the next round's limit, later than the last) is only recorded; when
the entry comes due, the timer wakes the task if its deadline has passed, or files the entry
again at the deadline it has now. A deadline that moves on every round costs a float store, and
the timer wakes about once per time limit per handoff, not once per round. Only when the entry
filed would come due in less than half the time to the new deadline is the new one filed at once
(the old entry goes stale, and the timer drops stale entries from the top of its heap without
waking for them): an idle connection's limit, cleared by a reply shortly before it would have
passed and set again by the next request, then costs the timer no wake that finds nothing due.
"""

from __future__ import annotations

import heapq
import itertools
import math
import weakref
from collections.abc import Callable
from typing import Any

import trio

__all__ = ["Alarm", "Handoff"]


class _Timer:
    """The deadlines of a trio run's sleeping handoffs and its alarms: one system task, one heap, one
    cancel scope.

    An entry is ``(when, order, handoff or alarm)``, weakly held (a connection that ended is not
    kept by its last entry). An entry is live while the holder's ``_filed`` is its ``when``; any
    other is stale and dropped when it comes due.
    """

    __slots__ = ("_heap", "_order", "_scope", "_next")

    _current = trio.lowlevel.RunVar("protocol_engine.handoff.timer")

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, weakref.ref]] = []
        self._order = itertools.count()
        self._scope: trio.CancelScope | None = None
        self._next = math.inf

    @classmethod
    def current(cls) -> _Timer:
        """This run's timer, started on first use."""
        try:
            return cls._current.get()
        except LookupError:
            timer = cls()
            cls._current.set(timer)
            trio.lowlevel.spawn_system_task(timer._run, name="protocol_engine.handoff.timer")
            return timer

    def file(self, handoff: Handoff | Alarm, when: float) -> None:
        """Come due for ``handoff`` (wake its task) or for an alarm (call it) at ``when``; the holder's
        earlier entries, if any, become stale."""
        stale = handoff._filed  # its earlier entry, if live, becomes stale
        handoff._filed = when
        heap = self._heap
        heapq.heappush(heap, (when, next(self._order), weakref.ref(handoff)))
        if when < self._next or stale == self._next:
            self._next = self._first_live()
            if self._scope is not None:
                self._scope.deadline = self._next

    def _first_live(self) -> float:
        """When the earliest live entry comes due (inf: none), the stale ones before it dropped."""
        heap = self._heap
        while heap:
            when, _, ref = heap[0]
            handoff = ref()
            if handoff is not None and handoff._filed == when:
                return when
            heapq.heappop(heap)
        return math.inf

    async def _run(self) -> None:
        heap = self._heap
        while True:
            with trio.CancelScope(deadline=self._next) as self._scope:
                await trio.sleep_forever()
            self._scope = None
            now = trio.current_time()
            while heap and heap[0][0] <= now:
                when, _, ref = heapq.heappop(heap)
                handoff = ref()
                if handoff is not None and handoff._filed == when:
                    handoff._filed = math.inf
                    handoff._due(self, now)
            self._next = self._first_live()


class Alarm:
    """A call made in the timer's task at a set time, for work a peer does from its reader after a
    wait of its own choosing (the pulling peer's hold after known ids): no task of the peer's wakes
    for it, only the timer, which serves every handoff's deadline and every alarm in one wake.

    ``callback`` must not raise (a peer's ``consume`` hands what fails to its task). At most one
    time is set; setting another replaces it; :meth:`cancel` clears it.
    """

    __slots__ = ("_callback", "_filed", "_timer", "__weakref__")

    def __init__(self, callback: Callable[[], None]) -> None:
        self._callback = callback
        # When this alarm's live entry in the timer comes due (inf: none).
        self._filed = math.inf
        self._timer: _Timer | None = None

    def set(self, when: float) -> None:
        """Call the callback at ``when`` on trio's clock (or at the timer's next wake, if that is past)."""
        timer = self._timer
        if timer is None:
            timer = self._timer = _Timer.current()
        timer.file(self, when)

    def cancel(self) -> None:
        """No call (the entry in the timer goes stale)."""
        self._filed = math.inf

    def _due(self, timer: _Timer, now: float) -> None:
        self._callback()


class Handoff:
    """What ``consume`` (run by ``channel``'s reader) hands to the peer's task, and the task's sleep.

    ``channel`` offers ``on_bytes`` (``MuxChannel``, or a wrapper of one); ``consume`` must not
    raise: what it cannot handle it passes to :meth:`hand_over`.
    """

    __slots__ = ("_channel", "_consume", "_handed", "handed", "_task", "_filed", "_timer", "_clock",
                 "deadline", "__weakref__")

    def __init__(self, channel: Any, consume: Callable[[], None]) -> None:
        self._channel = channel
        self._consume = consume
        self._handed: tuple[Any, Any] | None = None
        #: Whether something waits for the task (the reader then has nothing more to do): a plain
        #: attribute, as ``consume`` asks it on every call.
        self.handed = False
        # The task sleeping in :meth:`wait` (None: it is not asleep). One task waits on a handoff, so
        # it is woken directly, without a parking lot.
        self._task: trio.lowlevel.Task | None = None
        # When this handoff's live entry in the timer comes due (inf: none).
        self._filed = math.inf
        self._timer: _Timer | None = None
        # Trio's clock, read directly by wake_after (trio.current_time() is two wrappers around it).
        self._clock = trio.lowlevel.current_clock()
        #: When the sleeping task must wake although nothing was handed over (trio's clock).
        self.deadline = math.inf

    def hand_over(self, kind: Any, value: Any) -> None:
        """Give ``(kind, value)`` to the task and stop running ``consume`` until it waits again."""
        self._handed = (kind, value)
        self.handed = True
        self._channel.on_bytes(None)
        self._wake()

    def wake_by(self, deadline: float) -> None:
        """Set :attr:`deadline`; the timer is told only when its entry would wake the task too late."""
        self._set_deadline(deadline, self._clock.current_time())

    def wake_after(self, seconds: float) -> None:
        """:meth:`wake_by` ``seconds`` from now (the peers set a reply's time limit so on every round)."""
        now = self._clock.current_time()
        self._set_deadline(now + seconds, now)

    def _set_deadline(self, deadline: float, now: float) -> None:
        """Set :attr:`deadline` and file it if the live entry would wake the sleeping task too late, or
        would come due (and find ``deadline`` not yet passed) in less than half the time to it: filing
        it now then spares the timer that wake."""
        self.deadline = deadline
        filed = self._filed
        if self._task is not None and deadline < filed or filed - now < (deadline - now) / 2 < math.inf:
            self._file(deadline)

    async def wait(self) -> tuple[Any, Any] | None:
        """Run ``consume`` from the reader until it hands something over; return that.

        ``consume`` runs once at once (for what is already buffered). Returns None when
        :attr:`deadline` passes first; raises what cancels the task.
        """
        channel = self._channel
        self.handed = self._handed is not None  # a cancelled wait left it set (:meth:`_abort`)
        channel.on_bytes(self._consume)
        try:
            self._consume()
            while self._handed is None:
                deadline = self.deadline
                if deadline != math.inf:
                    if deadline <= trio.current_time():
                        return None
                    if deadline < self._filed:
                        self._file(deadline)
                self._task = trio.lowlevel.current_task()
                await trio.lowlevel.wait_task_rescheduled(self._abort)
        finally:
            self._task = None
            channel.on_bytes(None)
        handed, self._handed = self._handed, None
        self.handed = False
        return handed

    def _wake(self) -> None:
        task = self._task
        if task is not None:
            self._task = None
            trio.lowlevel.reschedule(task)

    def _abort(self, raise_cancel: Any) -> trio.lowlevel.Abort:
        """The sleeping task is being cancelled (trio calls this as the cancellation begins, before the
        task runs again): from now on nothing runs ``consume`` for it, since the reader, the timer's
        alarms and a publisher all ask :attr:`handed` first. So a connection being torn down writes
        nothing more, although its task unwinds only when trio next schedules it (a hold's alarm that
        comes due in the same batch would otherwise still send the peer's next request)."""
        self._task = None
        self.handed = True
        return trio.lowlevel.Abort.SUCCEEDED

    def _file(self, deadline: float) -> None:
        timer = self._timer
        if timer is None:
            timer = self._timer = _Timer.current()
        timer.file(self, deadline)

    def _due(self, timer: _Timer, now: float) -> None:
        """The timer's entry came due: wake the sleeping task if its deadline passed, else file the one it has now."""
        if self._task is None:
            return  # the next wait files its deadline if it needs one
        deadline = self.deadline
        if deadline <= now:
            self._wake()
        elif deadline != math.inf:
            timer.file(self, deadline)
