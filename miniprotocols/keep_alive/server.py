"""The keep-alive server: echo every cookie until the client says done.

The 97 s wait for the next keep-alive is the driver's time limit of the client state;
when it passes the driver raises ExceededTimeLimit and the connection is closed. A peer
closing the stream while the protocol runs surfaces as ``ChannelClosed``: on N2N that ends
the connection anyway, so the server does not hide it.
"""

from __future__ import annotations

from ouroboros_mux.channel import MessageChannel

from ..framework import Driver, Role, as_driver
from .spec import KEEP_ALIVE
from .types import MsgDone, MsgKeepAlive, MsgKeepAliveResponse

__all__ = ["serve"]


async def serve(driver_or_channel: Driver | MessageChannel) -> None:
    """Answer keep-alives until MsgDone."""
    driver = as_driver(driver_or_channel, KEEP_ALIVE, Role.SERVER)
    while True:
        message = await driver.recv()
        if isinstance(message, MsgDone):
            return
        assert isinstance(message, MsgKeepAlive)
        await driver.send(MsgKeepAliveResponse(message.cookie))
