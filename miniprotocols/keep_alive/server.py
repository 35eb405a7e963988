"""The keep-alive server: echo every cookie until the client says done.

The 97 s wait for the next keep-alive is the driver's time limit of the client state;
when it passes the driver raises ExceededTimeLimit and the connection is closed. A peer
closing the stream while the protocol runs surfaces as ``ChannelClosed``: on N2N that ends
the connection anyway, so the server does not hide it.

Over a channel with a reader (``MuxChannel.on_bytes``) the echo needs no waiting, so the
reader answers each keep-alive as it arrives (:class:`protocol_engine.Handoff`), as a
sig-submission serving peer answers its requests: no task switch per keep-alive, the same
checks on the driver's state machine, the same reply bytes. The 97 s limit then starts
where the task's receive would start it, once the echo is queued, and the server's task
sleeps until it passes or the reader hands over what needs the task: ``MsgDone``, an echo
that finds the send buffer full, an error, the end of the channel.
"""

from __future__ import annotations

from ouroboros_mux.channel import MessageChannel

from ..framework import Driver, ExceededTimeLimit, Handoff, Role, as_driver
from .spec import KEEP_ALIVE
from .types import MsgDone, MsgKeepAlive, MsgKeepAliveResponse

__all__ = ["serve"]

#: What the reader hands over to the server's task: a message as received, or an error.
_MESSAGE, _FAILED = "message", "failed"


async def serve(driver_or_channel: Driver | MessageChannel) -> None:
    """Answer keep-alives until MsgDone."""
    driver = as_driver(driver_or_channel, KEEP_ALIVE, Role.SERVER)
    if hasattr(driver.channel, "on_bytes"):
        await _ReaderServer(driver).run()
        return
    while True:
        message = await driver.recv()
        if isinstance(message, MsgDone):
            return
        assert isinstance(message, MsgKeepAlive)
        await driver.send(MsgKeepAliveResponse(message.cookie))


class _ReaderServer:
    """The server run from its channel's reader; its task waits for what the reader hands over."""

    __slots__ = ("_driver", "_handoff", "_timed")

    def __init__(self, driver: Driver) -> None:
        self._driver = driver
        self._handoff = Handoff(driver.channel, self._consume)
        # The state the next keep-alive is received in and its time limit.
        self._timed = driver.time_limit()

    async def run(self) -> None:
        driver = self._driver
        handoff = self._handoff
        self._wait_for_next()
        while True:
            handed = await handoff.wait()
            if handed is None:  # no keep-alive within the client state's time limit
                state, limit = self._timed
                raise ExceededTimeLimit(driver.spec.name, state, limit)
            kind, message = handed
            if kind is _FAILED:
                raise message
            if isinstance(message, MsgDone):
                return
            assert isinstance(message, MsgKeepAlive)
            await driver.send(MsgKeepAliveResponse(message.cookie))
            self._wait_for_next()

    def _wait_for_next(self) -> None:
        """The wait for the next keep-alive starts now, as the task's receive would start it."""
        self._handoff.wake_after(self._timed[1])

    def _consume(self) -> None:
        """In the reader: echo every keep-alive here while the send buffer has room; hand over the rest."""
        handoff = self._handoff
        if handoff.handed:
            return
        driver = self._driver
        try:
            while True:
                message = driver.recv_nowait()
                if message is None:
                    return
                if type(message) is not MsgKeepAlive or not driver.channel.send_nowait(b""):
                    handoff.hand_over(_MESSAGE, message)
                    return
                driver.send_nowait(MsgKeepAliveResponse(message.cookie))
                self._wait_for_next()
        except Exception as exc:  # raised again from the server's task, as its own receive would
            handoff.hand_over(_FAILED, exc)
