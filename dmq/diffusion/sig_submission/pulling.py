"""The pulling peer of sig submission, both versions: ask for ids and bodies, feed the node.

The loop follows the reference's pipelined pulling peer: with nothing outstanding and nothing
to fetch it makes the one kind of request that may block (every announced id
acknowledged); otherwise it pipelines a body request and, right behind it, a non-blocking
request for more ids, so the next ids arrive while bodies are still on the way. In V2, behind
the body request for the last wanted bodies, that request is the blocking one itself, which
saves a round per fetch (docs/protocol/node-to-node.md 9.10). It
collects replies (oldest first, as the serving peer answers in order) whenever it cannot
usefully send. New ids are only asked for behind a body request, never on their own,
which keeps an idle peer from polling.

What to fetch is the node's decision (:meth:`SigSink.wanted`), made per ids reply, and
every claim the node registered is given back exactly once through
:meth:`SigSink.release`, including when the protocol dies with an error or is cancelled.
Received messages reach :meth:`SigSink.accept` in announcement order; a
:class:`~dmq.diffusion.sig_submission.interfaces.DisconnectPeer` it raises ends the run.

The loop is written once, as a generator that yields what it needs done (send a request,
receive the next reply, hand a batch to the node), and run one of two ways. Over a mux
channel, the mux reader runs it as replies arrive (``MuxChannel.on_bytes``): a reply is taken
with ``Driver.recv_nowait`` and the next requests are queued with ``send_nowait``, with no task
switch per reply; each reply wait keeps its state's time limit, counted from when the loop
starts waiting for it, as ``Driver.recv`` counts it. A batch the node takes without waiting
(:meth:`SigSink.accept_now`: the node's ingress admits a peer's messages that way) is handed
to it there too. What needs waiting (the node's ``accept``, room in a full send buffer) is
handed to the peer's task
(:class:`~protocol_engine.Handoff`), which does it and gives the loop back to the
reader; so are the loop's end and any error, which the task returns or raises. Over any other channel the task runs the loop with
``Driver.send`` and ``Driver.recv``. Either way the requests, their order and the windows are
the same.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Generator

import trio

from dmq.timer_grid import on_grid
from ouroboros_mux.channel import MessageChannel

from miniprotocols.framework import Alarm, Driver, ExceededTimeLimit, Handoff, as_driver
from miniprotocols.sig_submission.dialect import Dialect, Side
from .pull_window import BodiesOutcome, BodyBatch, PullWindow
from .interfaces import SigSink
from miniprotocols.sig_submission.limits import (
    BYTES_IN_FLIGHT_PER_PEER,
    MAX_IDS_PER_REQUEST,
    MAX_UNACKNOWLEDGED_IDS,
)
from .policy import MAX_BATCHES_IN_FLIGHT, SIZE_TOLERANCE

__all__ = ["PullingPeer"]

#: What the loop yields: ``(_SEND, message, pipelined)``, ``(_RECV,)`` (it is sent the reply),
#: ``(_ACCEPT, outcome)`` (a bodies reply settled messages for the node), ``(_PAUSE, seconds)``
#: (the hold after known ids).
_SEND, _RECV, _ACCEPT, _PAUSE = "send", "recv", "accept", "pause"
#: A hold from the reader ends on the next point of this grid (seconds on trio's clock) after its
#: time: the holds of a node's peers that end within one step end in one wake of the timer, whose
#: every wake (a cancel scope's deadline) costs more than the few ids a hold gathers.
HOLD_GRID = 0.01
#: The reader's hold: over (else ``_HOLDING``, or None: no hold).
_HOLDING, _OVER = "holding", "over"
_RECEIVE = (_RECV,)
#: What the reader hands to the task beside a step of the loop: the loop's end, or an error.
_STEP, _END, _FAILED = "step", "end", "failed"

Step = tuple
Loop = Generator[Step, object, None]


class PullingPeer:
    """Pull one peer's messages into ``sink`` over ``driver_or_channel`` in ``dialect``'s wire format."""

    def __init__(self, dialect: Dialect, driver_or_channel: Driver | MessageChannel, sink: SigSink, *,
                 max_ids_per_request: int = MAX_IDS_PER_REQUEST,
                 window: int = MAX_UNACKNOWLEDGED_IDS,
                 max_bytes_in_flight: int = BYTES_IN_FLIGHT_PER_PEER,
                 max_batches_in_flight: int = MAX_BATCHES_IN_FLIGHT,
                 size_tolerance: int = SIZE_TOLERANCE,
                 hold_after_known: float = 0.0,
                 hold_after_known_max: float | None = None) -> None:
        self.dialect = dialect
        #: Seconds to wait before the next blocking request when a blocking request's reply
        #: announced only ids the node already has or fetches from another peer (0: none).
        self.hold_after_known = hold_after_known
        #: The longest such wait: each further reply of known ids only, in a row, doubles the hold up
        #: to this (None, or no more than ``hold_after_known``: the hold does not grow).
        self.hold_after_known_max = max(hold_after_known, hold_after_known_max or 0.0)
        self.driver = as_driver(driver_or_channel, dialect.spec, dialect.pulling_role)
        self.sink = sink
        self.window = PullWindow(dialect.version, max_ids_per_request=max_ids_per_request, window=window,
                                 max_bytes_in_flight=max_bytes_in_flight,
                                 max_batches_in_flight=max_batches_in_flight, size_tolerance=size_tolerance)
        # What each outstanding request will be answered with, oldest first.
        self._expected: deque[tuple[str, int | BodyBatch]] = deque()
        self._stopping = False
        #: Messages handed to the sink, and ids the peer omitted from its replies.
        self.accepted = 0
        self.omitted = 0
        # Run from the reader: the loop, the step it waits on (None: it is owed ``_result``),
        # and the time limit of the reply it waits for (None: not waiting for one).
        self._loop: Loop | None = None
        self._step: Step | None = None
        self._result: object = None
        self._timed: tuple | None = None
        # Run from the reader: the hold's state, and the alarm that ends it (in the timer's task).
        self._hold: str | None = None
        self._alarm: Alarm | None = None
        self._handoff: Handoff | None = None
        self._sink_accept_now = getattr(sink, "accept_now", None)
        #: Whether the blocking request may go behind a body request (see ``_request_bodies``): only
        #: where the serving peer never answers it with ``done`` (V2), so its reply leads back to idle.
        self._blocking_ahead = dialect.done_by is Side.PULLING

    def stop(self) -> None:
        """Stop asking; once every outstanding reply is in, end the run.

        V2 then sends ``MsgDone``. V1 has no message for this side to end with: the run
        returns with the protocol idle and the connection is closed by its owner. A
        blocking request already sent is awaited first (in V2 the serving peer answers it
        within its 17 s).
        """
        self._stopping = True

    async def run(self) -> None:
        """Pull until stopped or until the V1 serving peer ends the protocol."""
        try:
            await self.driver.run(self._run)
        finally:
            claimed = self.window.claimed()
            if claimed:
                self.sink.release(claimed)

    async def _run(self) -> None:
        if self.dialect.init is not None:
            await self.driver.recv()  # MsgInit: the table allows nothing else first
        channel = self.driver.channel
        if hasattr(channel, "on_bytes"):
            await self._run_from_reader(channel)
        else:
            await self._run_in_task()

    # -- the loop ----------------------------------------------------------------------
    def _pull(self) -> Loop:
        dialect = self.dialect
        window = self.window
        expected = self._expected
        hold = self.hold_after_known
        longest = self.hold_after_known_max
        # The last blocking request's reply announced ids, none of them to fetch from this peer;
        # and the next hold (twice the last one in a row, at most the longest).
        known_only = False
        next_hold = hold
        while True:
            if not expected:
                if self._stopping:
                    if dialect.done_by is Side.PULLING:
                        yield _SEND, dialect.done(), False
                    return
                if window.can_request_bodies():
                    yield from self._request_bodies()
                elif known_only and hold > 0:
                    # The peer announces what the node has already: it is behind the node's other
                    # peers, and asking again at once would only bring each new id in a round of its
                    # own. Its next ids are asked for a little later, together; the longer it stays
                    # behind, the later (up to the longest hold), as more of its ids are known by then.
                    known_only = False
                    yield _PAUSE, next_hold
                    next_hold = min(next_hold * 2, longest)
                else:
                    # Every announced id acknowledged, nothing outstanding: the one request that blocks.
                    ack, req = window.blocking_request()
                    yield _SEND, dialect.request_ids(True, ack, req), False
                    expected.append(("blocking", req))
            elif not self._stopping and window.can_request_bodies():
                yield from self._request_bodies()
            else:
                kind, detail = expected.popleft()
                reply = yield _RECEIVE
                if kind == "ids":
                    window.on_ids_reply(detail, reply.ids, self.sink.wanted)
                    continue
                if kind == "blocking":  # sent on its own, or behind the last body request (V2)
                    if isinstance(reply, dialect.done):
                        return  # the V1 serving peer ended the protocol
                    if dialect.reply_no_ids is not None and isinstance(reply, dialect.reply_no_ids):
                        window.on_no_ids(detail)
                    else:
                        window.on_ids_reply(detail, reply.ids, self.sink.wanted)
                        # A reply as long as the request allowed says the peer has more ready: a
                        # backlog (after a restart, or on a new link) is walked without a hold,
                        # however much of it the node holds already.
                        known_only = not window.can_request_bodies() and len(reply.ids) < detail
                        if not known_only:
                            next_hold = hold  # something to fetch, or more to come: the first hold again
                    continue
                outcome = window.on_bodies_reply(detail, reply.messages)
                if outcome.omitted:
                    self.omitted += len(outcome.omitted)
                    self.sink.release(outcome.omitted)
                if outcome.ready:
                    yield _ACCEPT, outcome

    def _request_bodies(self) -> Loop:
        """A body request and, right behind it, a request for more ids if one is useful.

        When the batch is the last wanted one, that request is the blocking one, acknowledging
        every announced id (:meth:`PullWindow.blocking_request_ahead`): the peer then announces
        its next ids in its reply, and the round of a non-blocking request and of the blocking
        request after the bodies is saved. Only where the blocking state's every reply leads
        back to idle (V2), so the request can be pipelined; in V1 the serving peer may answer
        it with ``MsgDone``.
        """
        window = self.window
        batch = window.next_batch()
        yield _SEND, self.dialect.request_bodies(batch.ids), True
        self._expected.append(("bodies", batch))
        if self._blocking_ahead and not self._stopping:
            ahead = window.blocking_request_ahead()
            if ahead is not None:
                ack, req = ahead
                yield _SEND, self.dialect.request_ids(True, ack, req), True
                self._expected.append(("blocking", req))
                return
        more = window.non_blocking_request()
        if more is not None:
            ack, req = more
            yield _SEND, self.dialect.request_ids(False, ack, req), True
            self._expected.append(("ids", req))

    async def _accept(self, outcome: BodiesOutcome) -> None:
        try:
            await self.sink.accept(list(outcome.ready))
            self.accepted += len(outcome.ready)
        finally:
            self.sink.release(outcome.ready_ids)

    def _accept_now(self, outcome: BodiesOutcome) -> bool:
        """:meth:`_accept` in the reader, if the sink takes the batch without waiting (``SigSink.accept_now``)."""
        accept_now = self._sink_accept_now
        if accept_now is None:
            return False
        try:
            if not accept_now(list(outcome.ready)):
                return False
            self.accepted += len(outcome.ready)
        except BaseException:
            self.sink.release(outcome.ready_ids)
            raise
        self.sink.release(outcome.ready_ids)
        return True

    async def _do(self, step: Step) -> object:
        """Do one step of the loop in the task; return what the loop is owed for it."""
        kind = step[0]
        if kind is _SEND:
            await self.driver.send(step[1], pipelined=step[2])
            return None
        if kind is _RECV:
            return await self.driver.recv()
        if kind is _PAUSE:
            await trio.sleep(step[1])
            return None
        await self._accept(step[1])
        return None

    async def _run_in_task(self) -> None:
        loop = self._pull()
        result = None
        while True:
            try:
                step = loop.send(result)
            except StopIteration:
                return
            result = await self._do(step)

    # -- run from the mux reader ---------------------------------------------------------
    async def _run_from_reader(self, channel) -> None:
        self._loop = self._pull()
        self._step = None
        self._result = None
        handoff = self._handoff = Handoff(channel, self._consume)
        try:
            while True:
                handed = await handoff.wait()
                if handed is None:  # the reply did not come within its state's time limit
                    state, limit = self._timed
                    raise ExceededTimeLimit(self.driver.spec.name, state, limit)
                kind, value = handed
                if kind is _END:
                    return
                if kind is _FAILED:
                    raise value
                self._result = await self._do(value)
                self._step = None
        finally:
            if self._alarm is not None:  # a hold left when the protocol ended or failed
                self._alarm.cancel()
                self._alarm = None  # it calls back into this peer: no cycle kept past the run

    def _consume(self) -> None:
        """In the reader: run the loop as far as replies here and room to send allow; hand over the rest."""
        handoff = self._handoff
        if handoff.handed:
            return
        driver = self.driver
        loop = self._loop
        step = self._step
        try:
            while True:
                if step is not None:
                    kind = step[0]
                    if kind is _RECV:
                        reply = driver.recv_nowait()
                        if reply is None:
                            if self._timed is None:
                                self._wait_for_reply()
                            return
                        if self._timed is not None:
                            self._timed = None
                            handoff.deadline = math.inf
                        self._result = reply
                    elif kind is _SEND and driver.channel.send_nowait(b""):
                        driver.send_nowait(step[1], pipelined=step[2])
                        self._result = None
                    elif kind is _ACCEPT and self._accept_now(step[1]):
                        self._result = None
                    elif kind is _PAUSE:
                        if self._hold is not _OVER:
                            if self._hold is None:  # the alarm runs the loop on, with no wake of the task
                                self._hold = _HOLDING
                                alarm = self._alarm
                                if alarm is None:
                                    alarm = self._alarm = Alarm(self._hold_over)
                                alarm.set(on_grid(trio.current_time() + step[1], HOLD_GRID, 0.0))
                            return
                        self._hold = None
                        self._result = None
                    else:
                        handoff.hand_over(_STEP, step)
                        return
                step = self._step = loop.send(self._result)
        except StopIteration:
            handoff.hand_over(_END, None)
        except Exception as exc:  # raised again from the peer's task, as its own receive or send would
            handoff.hand_over(_FAILED, exc)

    def _hold_over(self) -> None:
        """The alarm, in the timer's task: the hold is over; run the loop on as the reader would."""
        if self._hold is _HOLDING:
            self._hold = _OVER
            self._consume()

    def _wait_for_reply(self) -> None:
        """The loop starts waiting for the next reply: its state's time limit starts now, as in ``Driver.recv``."""
        state, limit = self._timed = self.driver.time_limit()
        if limit is not None:
            self._handoff.wake_after(limit)
