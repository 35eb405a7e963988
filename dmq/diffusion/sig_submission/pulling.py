"""The pulling peer of sig submission, both versions: ask for ids and bodies, feed the node.

The loop follows the reference's pipelined pulling peer: with nothing outstanding and nothing
to fetch it makes the one kind of request that may block (every announced id
acknowledged); otherwise it pipelines a body request and, right behind it, a non-blocking
request for more ids, so the next ids arrive while bodies are still on the way. It
collects replies (oldest first, as the serving peer answers in order) whenever it cannot
usefully send. New ids are only asked for behind a body request, never on their own,
which keeps an idle peer from polling.

What to fetch is the node's decision (:meth:`SigSink.wanted`), made per ids reply, and
every claim the node registered is given back exactly once through
:meth:`SigSink.release`, including when the protocol dies with an error or is cancelled.
Received messages reach :meth:`SigSink.accept` in announcement order; a
:class:`~dmq.diffusion.sig_submission.interfaces.DisconnectPeer` it raises ends the run.
"""

from __future__ import annotations

from collections import deque

from ouroboros_mux.channel import MessageChannel

from miniprotocols.framework import Driver, as_driver
from miniprotocols.sig_submission.dialect import Dialect, Side
from .pull_window import BodyBatch, PullWindow
from .interfaces import SigSink
from miniprotocols.sig_submission.limits import (
    BYTES_IN_FLIGHT_PER_PEER,
    MAX_IDS_PER_REQUEST,
    MAX_UNACKNOWLEDGED_IDS,
)
from .policy import MAX_BATCHES_IN_FLIGHT, SIZE_TOLERANCE

__all__ = ["PullingPeer"]


class PullingPeer:
    """Pull one peer's messages into ``sink`` over ``driver_or_channel`` in ``dialect``'s wire format."""

    def __init__(self, dialect: Dialect, driver_or_channel: Driver | MessageChannel, sink: SigSink, *,
                 max_ids_per_request: int = MAX_IDS_PER_REQUEST,
                 window: int = MAX_UNACKNOWLEDGED_IDS,
                 max_bytes_in_flight: int = BYTES_IN_FLIGHT_PER_PEER,
                 max_batches_in_flight: int = MAX_BATCHES_IN_FLIGHT,
                 size_tolerance: int = SIZE_TOLERANCE) -> None:
        self.dialect = dialect
        self.driver = as_driver(driver_or_channel, dialect.spec, dialect.pulling_role)
        self.sink = sink
        self.window = PullWindow(dialect.version, max_ids_per_request=max_ids_per_request, window=window,
                                 max_bytes_in_flight=max_bytes_in_flight,
                                 max_batches_in_flight=max_batches_in_flight, size_tolerance=size_tolerance)
        # What each outstanding pipelined request will be answered with, oldest first.
        self._expected: deque[tuple[str, int | BodyBatch]] = deque()
        self._stopping = False
        #: Messages handed to the sink, and ids the peer omitted from its replies.
        self.accepted = 0
        self.omitted = 0

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
        dialect = self.dialect
        window = self.window
        if dialect.init is not None:
            await self.driver.recv()  # MsgInit: the table allows nothing else first
        while True:
            if not self._expected:
                if self._stopping:
                    if dialect.done_by is Side.PULLING:
                        await self.driver.send(dialect.done())
                    return
                if window.can_request_bodies():
                    await self._request_bodies()
                elif not await self._blocking_request():
                    return
            elif not self._stopping and window.can_request_bodies():
                await self._request_bodies()
            else:
                await self._collect()

    async def _request_bodies(self) -> None:
        window = self.window
        batch = window.next_batch()
        await self.driver.send(self.dialect.request_bodies(batch.ids), pipelined=True)
        self._expected.append(("bodies", batch))
        more = window.non_blocking_request()
        if more is not None:
            ack, req = more
            await self.driver.send(self.dialect.request_ids(False, ack, req), pipelined=True)
            self._expected.append(("ids", req))

    async def _blocking_request(self) -> bool:
        """Ask for ids and wait; False when the V1 serving peer ended the protocol instead."""
        dialect = self.dialect
        ack, req = self.window.blocking_request()
        await self.driver.send(dialect.request_ids(True, ack, req))
        reply = await self.driver.recv()
        if isinstance(reply, dialect.done):
            return False
        if dialect.reply_no_ids is not None and isinstance(reply, dialect.reply_no_ids):
            self.window.on_no_ids(req)
        else:
            self.window.on_ids_reply(req, reply.ids, self.sink.wanted)
        return True

    async def _collect(self) -> None:
        kind, detail = self._expected.popleft()
        reply = await self.driver.recv()
        if kind == "ids":
            assert isinstance(detail, int)
            self.window.on_ids_reply(detail, reply.ids, self.sink.wanted)
            return
        assert isinstance(detail, BodyBatch)
        outcome = self.window.on_bodies_reply(detail, reply.messages)
        if outcome.omitted:
            self.omitted += len(outcome.omitted)
            self.sink.release(outcome.omitted)
        if outcome.ready:
            try:
                await self.sink.accept(list(outcome.ready))
                self.accepted += len(outcome.ready)
            finally:
                self.sink.release(outcome.ready_ids)
