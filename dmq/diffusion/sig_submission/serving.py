"""The serving peer of sig submission, both versions: announce the mempool, send bodies.

It answers strictly in order, one request at a time (the pulling peer may pipeline; the
driver collects its requests one by one). Ids are announced from the mempool's start in
mempool order, each once; expired messages are never announced and are silently left out
of body replies. A blocking request waits for the mempool: in V2 for at most
``blocking_timeout`` seconds (17 in the reference, under the pulling peer's 20 s limit), then
``MsgReplyNoSigIds``; in V1 indefinitely, unless :meth:`ServingPeer.stop` asks the peer
to end, which V1 does with ``MsgDone`` in place of the reply, as the reference does on a
``Terminate`` control message.
"""

from __future__ import annotations

import trio

from ouroboros_mux.channel import MessageChannel

from miniprotocols.framework import Driver, as_driver
from miniprotocols.framework.cbor_write import CheckedItems
from miniprotocols.sig_submission.dialect import Dialect, Side
from .interfaces import SigSource
from .serve_window import ServeWindow
from miniprotocols.sig_submission.limits import MAX_UNACKNOWLEDGED_IDS

from .policy import BLOCKING_REPLY_TIMEOUT

__all__ = ["ServingPeer"]


class ServingPeer:
    """Serve ``source`` to one peer over ``driver_or_channel`` in ``dialect``'s wire format."""

    def __init__(self, dialect: Dialect, driver_or_channel: Driver | MessageChannel, source: SigSource, *,
                 blocking_timeout: float | None = BLOCKING_REPLY_TIMEOUT,
                 window: int = MAX_UNACKNOWLEDGED_IDS,
                 start_position: int = -1) -> None:
        if dialect.reply_no_ids is None:
            blocking_timeout = None
        elif blocking_timeout is None or blocking_timeout <= 0:
            raise ValueError(f"the V{dialect.version} serving peer must answer a blocking request in time, "
                             f"got timeout {blocking_timeout!r}")
        self.driver = as_driver(driver_or_channel, dialect.spec, dialect.serving_role)
        self.dialect = dialect
        self.source = source
        self._checked_items = bool(getattr(source, "checked_items", False))
        self.blocking_timeout = blocking_timeout
        self.window = ServeWindow(dialect.version, window=window, position=start_position)
        self._stopping = False
        self._blocked: trio.CancelScope | None = None

    def stop(self) -> None:
        """V1 only: end the protocol with ``MsgDone`` at the current or next blocking request.

        As with the reference's ``Terminate``, the stop wins over ids that are available:
        a blocking request after it gets ``MsgDone`` even if the mempool has grown.
        """
        if self.dialect.done_by is not Side.SERVING:
            raise RuntimeError(f"in V{self.dialect.version} only the pulling side can end the protocol")
        self._stopping = True
        if self._blocked is not None:
            self._blocked.cancel()

    async def run(self) -> None:
        """Serve until the protocol ends (V2: the pulling peer's ``MsgDone``; V1: :meth:`stop`)."""
        await self.driver.run(self._serve)

    async def _serve(self) -> None:
        dialect = self.dialect
        driver = self.driver
        if dialect.init is not None:
            await driver.send(dialect.init())
        while True:
            request = await driver.recv()
            if isinstance(request, dialect.request_ids):
                if not await self._reply_ids(request):
                    return
            elif isinstance(request, dialect.request_bodies):
                await self._reply_bodies(request)
            else:
                assert isinstance(request, dialect.done)
                return

    async def _reply_ids(self, request) -> bool:
        """Answer a request for ids; False once the protocol ended (V1 ``MsgDone``)."""
        window = self.window
        window.on_request_ids(request.blocking, request.ack, request.req)
        if request.blocking and self._stopping:
            await self.driver.send(self.dialect.done())
            return False
        entries = self.source.ids_after(window.position, request.req)
        if request.blocking and not entries:
            entries = await self._wait_for_ids(request.req)
            if not entries:
                if self._stopping:
                    await self.driver.send(self.dialect.done())
                    return False
                await self.driver.send(self.dialect.reply_no_ids())
                return True
        await self.driver.send(self.dialect.reply_ids(window.announce(entries)))
        return True

    async def _wait_for_ids(self, req: int) -> list[tuple[int, bytes, int]]:
        """Wait for new mempool entries; empty after the V2 timeout or a V1 stop."""
        deadline = trio.current_time() + self.blocking_timeout if self.blocking_timeout is not None else float("inf")
        with trio.CancelScope(deadline=deadline) as self._blocked:
            try:
                while True:
                    await self.source.wait_for_ids_after(self.window.position)
                    entries = self.source.ids_after(self.window.position, req)
                    if entries:
                        return entries
                    await trio.sleep(0)
            finally:
                self._blocked = None
        return []

    async def _reply_bodies(self, request) -> None:
        self.window.on_request_bodies(request.ids)
        lookup = self.source.lookup
        found = [raw for raw in map(lookup, request.ids) if raw is not None]
        await self.driver.send(self.dialect.reply_bodies(CheckedItems(found) if self._checked_items else tuple(found)))
