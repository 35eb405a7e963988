"""The keep-alive client: a keep-alive every interval, a fresh random cookie each time.

Like the reference, it sends the first keep-alive at once, then after every response
waits ``interval`` seconds before the next; a response with another cookie is fatal
(:class:`KeepAliveCookieMismatch`). The server's 60 s limit on a response is enforced by
the driver. Round-trip times are measured on the trio clock, so a test clock makes them
deterministic.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import trio

from ouroboros_mux.channel import MessageChannel

from ..framework import Driver, Role, as_driver
from .spec import KEEP_ALIVE
from .types import KEEP_ALIVE_INTERVAL, KeepAliveCookieMismatch, MsgDone, MsgKeepAlive, MsgKeepAliveResponse

__all__ = ["KeepAliveClient"]


class KeepAliveClient:
    """Drive the client side of keep-alive.

    ``on_rtt`` is called with every measured round trip in seconds (the reference feeds
    these samples to its peer quality estimates); :attr:`rtt` holds the latest.
    """

    def __init__(self, driver_or_channel: Driver | MessageChannel, *,
                 interval: float = KEEP_ALIVE_INTERVAL,
                 rng: random.Random | None = None,
                 on_rtt: Callable[[float], None] | None = None) -> None:
        if interval < 0:
            raise ValueError(f"keep-alive interval must not be negative, got {interval}")
        self.driver = as_driver(driver_or_channel, KEEP_ALIVE, Role.CLIENT)
        self.interval = interval
        self._rng = rng if rng is not None else random.Random()
        self._on_rtt = on_rtt
        self._stop = trio.Event()
        self.rtt: float | None = None

    async def ping(self) -> float:
        """One keep-alive round trip; returns (and records) its duration in seconds."""
        cookie = self._rng.randrange(0x10000)
        started = trio.current_time()
        await self.driver.send(MsgKeepAlive(cookie))
        reply = await self.driver.recv()
        rtt = trio.current_time() - started
        assert isinstance(reply, MsgKeepAliveResponse)  # the only message the table allows
        if reply.cookie != cookie:
            raise KeepAliveCookieMismatch(cookie, reply.cookie)
        self.rtt = rtt
        if self._on_rtt is not None:
            self._on_rtt(rtt)
        return rtt

    async def run(self) -> None:
        """Ping until :meth:`stop` is called, then send MsgDone and return."""
        while not self._stop.is_set():
            await self.ping()
            with trio.CancelScope(deadline=trio.current_time() + self.interval):  # move_on_after, without its wrapper
                await self._stop.wait()
        await self.done()

    def stop(self) -> None:
        """Ask :meth:`run` to end the protocol at its next pause (not mid round trip)."""
        self._stop.set()

    async def done(self) -> None:
        """Send MsgDone now."""
        await self.driver.send(MsgDone())
