"""The serving peer of sig submission, both versions: announce the mempool, send bodies.

It answers strictly in order, one request at a time (the pulling peer may pipeline; the
driver collects its requests one by one). Ids are announced from the mempool's start in
mempool order, each once; expired messages are never announced and are silently left out
of body replies. A blocking request waits for the mempool: in V2 for at most
``blocking_timeout`` seconds (17 in the reference, under the pulling peer's 20 s limit), then
``MsgReplyNoSigIds``; in V1 indefinitely, unless :meth:`ServingPeer.stop` asks the peer
to end, which V1 does with ``MsgDone`` in place of the reply, as the reference does on a
``Terminate`` control message.

On a duplex connection the serving peer leaves out ids the peer is known to hold (it
announced them to us: :class:`~dmq.diffusion.sig_submission.known_held.KnownHeld`); its
position still moves past them, so to the peer they look like messages that expired, and a
blocking request whose new entries are all known waits as if nothing were new
(docs/protocol/node-to-node.md 9.8).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import trio

from ouroboros_mux.channel import MessageChannel

from miniprotocols.framework import Driver, Handoff, as_driver
from miniprotocols.framework.cbor_write import CheckedItems
from miniprotocols.sig_submission.dialect import Dialect, Side
from .interfaces import SigSource
from .known_held import KnownHeld
from .serve_window import ServeWindow
from miniprotocols.sig_submission.limits import MAX_UNACKNOWLEDGED_IDS

from .policy import BLOCKING_REPLY_TIMEOUT

__all__ = ["ServingPeer"]

#: What the reader hands over to the peer's task: a request as received, a request for ids
#: already checked against the window (it waits for the mempool or meets a V1 stop), or an error.
_REQUEST, _CHECKED, _FAILED = "request", "checked", "failed"


class ServingPeer:
    """Serve ``source`` to one peer over ``driver_or_channel`` in ``dialect``'s wire format."""

    def __init__(self, dialect: Dialect, driver_or_channel: Driver | MessageChannel, source: SigSource, *,
                 blocking_timeout: float | None = BLOCKING_REPLY_TIMEOUT,
                 window: int = MAX_UNACKNOWLEDGED_IDS,
                 start_position: int = -1,
                 known: KnownHeld | None = None) -> None:
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
        # What the reader hands over to the task: (_REQUEST or _CHECKED, request) or (_FAILED, exception);
        # its deadline is the V2 MsgReplyNoSigIds of a parked request.
        self._handoff: Handoff | None = None
        # A blocking request for ids parked in the mempool (its publish answers it).
        self._parked = None
        self._publish_hook = getattr(source, "call_on_publish", None)
        # Whether ``_on_published`` waits in the source's publish hook. One at a time: a V2
        # request that timed out leaves its hook, which then serves the next parked request
        # (a publish hands each hook the new entries, and must reach this peer once).
        self._hooked = False
        #: Ids the peer holds (it announced them to us on this connection): never announced to it.
        self._known = known
        self._index_of = getattr(source, "index_of", None)
        if known is not None and self._index_of is not None:
            known.unpassed = self._unpassed

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
        if self._parked is not None:
            request, self._parked = self._parked, None
            self._handoff.hand_over(_CHECKED, request)

    async def run(self) -> None:
        """Serve until the protocol ends (V2: the pulling peer's ``MsgDone``; V1: :meth:`stop`)."""
        await self.driver.run(self._serve)

    async def _serve(self) -> None:
        dialect = self.dialect
        driver = self.driver
        if dialect.init is not None:
            await driver.send(dialect.init())
        channel = driver.channel
        from_reader = hasattr(channel, "on_bytes") and \
            driver.spec.states[driver.machine.receiving_state()].time_limit is None
        checked = False
        while True:
            if from_reader:
                request, checked = await self._handed_over()
            else:
                request = await driver.recv()
            if isinstance(request, dialect.request_ids):
                if not await self._reply_ids(request, checked=checked):
                    return
            elif isinstance(request, dialect.request_bodies):
                await self._reply_bodies(request)
            else:
                assert isinstance(request, dialect.done)
                return

    # -- answering in the mux reader ---------------------------------------------------
    # A request that can be answered from memory at once (bodies; ids the mempool has, or a
    # non-blocking request) is answered by the channel's reader as its bytes arrive: the
    # same checks on the driver's state machine and the window, the same reply bytes, and
    # no task switch for the round. Anything else (a blocking request that must wait, the
    # pulling peer's MsgDone, a V1 stop, a full send buffer, a broken rule, the end of the
    # connection) is handed over to the peer's task, which treats it as it always did.

    async def _handed_over(self):
        """The next request the reader could not answer, and whether its window check is done.

        Raises what the reader's receive or answer raised (a protocol error, the channel's end).
        """
        handoff = self._handoff
        if handoff is None:
            handoff = self._handoff = Handoff(self.driver.channel, self._consume)
        try:
            while (handed := await handoff.wait()) is None:
                # The V2 blocking timeout: nothing was published for the parked request.
                self._parked = None
                handoff.deadline = math.inf
                await self.driver.send(self.dialect.reply_no_ids())
        finally:
            self._parked = None
            handoff.deadline = math.inf
        kind, value = handed
        if kind is _FAILED:
            raise value
        return value, kind is _CHECKED

    def _consume(self) -> None:
        """In the reader: answer every complete request that needs no waiting; hand over the first other."""
        if self._handoff.handed or self._parked is not None:
            return
        driver = self.driver
        dialect = self.dialect
        channel = driver.channel
        try:
            while True:
                request = driver.recv_nowait()
                if request is None:
                    return
                if not channel.send_nowait(b""):  # no room for a reply now: the task waits for it
                    reply = None
                elif isinstance(request, dialect.request_bodies):
                    reply = self._bodies_reply(request)
                elif isinstance(request, dialect.request_ids):
                    reply = self._ids_reply_now(request)
                    if reply is None:
                        if self._stopping or self._publish_hook is None:
                            self._handoff.hand_over(_CHECKED, request)
                        else:
                            self._park(request)
                        return
                else:
                    reply = None
                if reply is None:
                    self._handoff.hand_over(_REQUEST, request)
                    return
                driver.send_nowait(reply)
        except Exception as exc:  # raised again from the peer's task, as its own receive or send would
            self._handoff.hand_over(_FAILED, exc)

    def _ids_reply_now(self, request):
        """Check a request for ids and build its reply; None if it must wait (or meets a V1 stop)."""
        window = self.window
        window.on_request_ids(request.blocking, request.ack, request.req)
        if request.blocking and self._stopping:
            return None
        entries = self._fresh(request.req)
        if request.blocking and not entries:
            return None
        return self.dialect.reply_ids(window.announce(entries))

    def _fresh(self, req: int, published: list[tuple[int, bytes, int]] | None = None) -> list[tuple[int, bytes, int]]:
        """Up to ``req`` entries after the position that the peer is not known to hold.

        ``published``: what the source's publish handed over (every unexpired entry made
        visible since this peer last read, so nothing after the position is fresh but these),
        in place of a read. When every entry read is known to the peer, the position moves
        past them and the next ones are read, so a request whose new entries are all known
        waits as if nothing were new; a read shorter than ``req`` reached the end, and no
        read follows it. Known ids among or after kept ones are passed by the next
        announcement or read.
        """
        window = self.window
        ids_after = self.source.ids_after
        if published is None:
            entries = ids_after(window.position, req)
        else:
            entries = published if len(published) <= req else published[:req]
        known = self._known
        if known is None or not known.ids:
            return entries
        while entries:
            held = known.ids
            kept = [entry for entry in entries if entry[1] not in held]
            if kept:
                return kept
            for entry in entries:
                known.discard(entry[1])
            window.skip_to(entries[-1][0])
            if len(entries) < req:
                return []
            entries = ids_after(window.position, req)
        return entries

    def _unpassed(self, ids: Iterable[bytes]) -> list[bytes]:
        """Of ``ids``, in order, those of messages the position has not passed (not held, or held after
        it): ids to remember as known. A passed one the peer need not be told of again."""
        index_of = self._index_of
        position = self.window.position
        return [i for i in ids if (index := index_of(i)) is None or index > position]

    def _park(self, request) -> None:
        """Leave a blocking request with nothing new to the mempool's next publish (and the V2 deadline)."""
        self._parked = request
        self.driver.channel.owe_reply()
        if self.blocking_timeout is not None:
            self._handoff.wake_after(self.blocking_timeout)
        self._hook()

    def _hook(self) -> None:
        if not self._hooked:
            self._hooked = True
            self._publish_hook(self._on_published)

    def _on_published(self, published: list[tuple[int, bytes, int]] | None = None) -> None:
        """In the publishing task: answer the parked request if the mempool now has ids for it.

        ``published``: the newly visible entries, if the source hands them over
        (``Mempool.call_on_publish``); a parked request had read everything before them.
        """
        self._hooked = False
        request = self._parked
        handoff = self._handoff
        if request is None or handoff.handed:
            return
        try:
            entries = self._fresh(request.req, published)
            if not entries:  # what was published expired already, or the peer holds it
                self._hook()
                return
            self._parked = None
            handoff.deadline = math.inf
            if not self.driver.channel.send_nowait(b""):
                handoff.hand_over(_CHECKED, request)
                return
            self.driver.send_nowait(self.dialect.reply_ids(self.window.announce(entries)))
        except Exception as exc:  # raised again from the peer's task
            handoff.hand_over(_FAILED, exc)
            return
        self._consume()

    def _bodies_reply(self, request):
        self.window.on_request_bodies(request.ids)
        lookup = self.source.lookup
        found = [raw for raw in map(lookup, request.ids) if raw is not None]
        return self.dialect.reply_bodies(CheckedItems(found) if self._checked_items else tuple(found))

    async def _reply_ids(self, request, *, checked: bool = False) -> bool:
        """Answer a request for ids; False once the protocol ended (V1 ``MsgDone``).

        ``checked``: the request was checked against the window and found to be blocking
        with nothing to announce or to meet a V1 stop (:meth:`_ids_reply_now` gave None).
        """
        if not checked:
            reply = self._ids_reply_now(request)
            if reply is not None:
                await self.driver.send(reply)
                return True
        if self._stopping:
            await self.driver.send(self.dialect.done())
            return False
        entries = await self._wait_for_ids(request.req)
        if not entries:
            if self._stopping:
                await self.driver.send(self.dialect.done())
                return False
            await self.driver.send(self.dialect.reply_no_ids())
            return True
        await self.driver.send(self.dialect.reply_ids(self.window.announce(entries)))
        return True

    async def _wait_for_ids(self, req: int) -> list[tuple[int, bytes, int]]:
        """Wait for new mempool entries; empty after the V2 timeout or a V1 stop."""
        deadline = trio.current_time() + self.blocking_timeout if self.blocking_timeout is not None else float("inf")
        with trio.CancelScope(deadline=deadline) as self._blocked:
            try:
                while True:
                    await self.source.wait_for_ids_after(self.window.position)
                    entries = self._fresh(req)
                    if entries:
                        return entries
                    await trio.sleep(0)
            finally:
                self._blocked = None
        return []

    async def _reply_bodies(self, request) -> None:
        await self.driver.send(self._bodies_reply(request))
