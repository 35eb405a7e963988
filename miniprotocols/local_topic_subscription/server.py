"""The local topic subscription server: the protocol loop over a node-side handler.

The handler (the node's :class:`~topics.session.TopicSession`) owns the subscriptions and the
semantics; this loop only receives a request, asks the handler, and sends its answer, so the
state table is enforced by the driver in one place. A request whose rules a client broke
(an acknowledgement of an unknown subscription or of an item not yet delivered) makes the
handler raise :class:`TopicProtocolError`, which ends the connection.
"""

from __future__ import annotations

from typing import Any, Protocol

from ouroboros_mux.channel import ChannelClosed, MessageChannel

from ..framework import Driver, ProtocolError, Role, as_driver
from .spec import LOCAL_TOPIC_SUBSCRIPTION
from .types import (
    MsgDone,
    MsgJoin,
    MsgLeave,
    MsgPublish,
    MsgPull,
    MsgRequestNext,
    MsgSubscribe,
    MsgUnsubscribe,
    TopicState,
)

__all__ = ["TopicHandler", "TopicProtocolError", "serve"]


class TopicProtocolError(ProtocolError):
    """A request that is well formed but breaks a rule of docs/topics-design.md 3.4."""

    def __init__(self, detail: str) -> None:
        super().__init__(LOCAL_TOPIC_SUBSCRIPTION.name, TopicState.IDLE, detail)


class TopicHandler(Protocol):
    async def subscribe(self, request: MsgSubscribe) -> Any: ...
    async def unsubscribe(self, request: MsgUnsubscribe) -> Any: ...
    async def join(self, request: MsgJoin) -> Any: ...
    async def leave(self, request: MsgLeave) -> Any: ...
    async def pull(self, request: MsgPull) -> Any: ...
    async def publish(self, request: MsgPublish) -> Any: ...
    async def request_next(self, request: MsgRequestNext) -> Any: ...
    def close(self) -> None: ...


_DISPATCH = {
    MsgSubscribe: "subscribe",
    MsgUnsubscribe: "unsubscribe",
    MsgJoin: "join",
    MsgLeave: "leave",
    MsgPull: "pull",
    MsgPublish: "publish",
    MsgRequestNext: "request_next",
}


async def serve(driver_or_channel: Driver | MessageChannel, handler: TopicHandler) -> None:
    """Serve one client until MsgDone or the end of its stream; the handler is closed after."""
    driver = as_driver(driver_or_channel, LOCAL_TOPIC_SUBSCRIPTION, Role.SERVER)
    try:
        while True:
            try:
                request = await driver.recv()
            except ChannelClosed:
                return
            if isinstance(request, MsgDone):
                return
            reply = await getattr(handler, _DISPATCH[type(request)])(request)
            try:
                await driver.send(reply)
            except ChannelClosed:
                return
    finally:
        handler.close()
