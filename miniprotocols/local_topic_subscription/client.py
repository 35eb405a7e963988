"""The local topic subscription client: one method per request, answers as messages."""

from __future__ import annotations

from typing import Any

from ouroboros_mux.channel import MessageChannel

from ..framework import Driver, Role, as_driver
from .spec import LOCAL_TOPIC_SUBSCRIPTION
from .types import (
    MAX_ITEMS_PER_REPLY,
    Auth,
    Durable,
    MsgDone,
    MsgJoin,
    MsgLeave,
    MsgPublish,
    MsgPull,
    MsgReplyNext,
    MsgRequestNext,
    MsgSubscribe,
    MsgUnsubscribe,
    Resume,
)

__all__ = ["LocalTopicClient"]


class LocalTopicClient:
    def __init__(self, driver_or_channel: Driver | MessageChannel) -> None:
        self.driver = as_driver(driver_or_channel, LOCAL_TOPIC_SUBSCRIPTION, Role.CLIENT)

    async def _ask(self, request: Any) -> Any:
        await self.driver.send(request)
        return await self.driver.recv()

    async def subscribe(self, filter_: list[dict[int, Any]], start: int | Resume = 0,
                        durable: Durable | None = None) -> Any:
        """MsgSubscribed or MsgReject."""
        return await self._ask(MsgSubscribe(filter_, start, durable))

    async def unsubscribe(self, sub_id: int, forget: bool = False) -> Any:
        return await self._ask(MsgUnsubscribe(sub_id, forget))

    async def join(self, subscriber: bytes, group: bytes, local: bool, auth: Auth) -> Any:
        return await self._ask(MsgJoin(subscriber, group, local, auth))

    async def leave(self, subscriber: bytes, group: bytes, auth: Auth) -> Any:
        return await self._ask(MsgLeave(subscriber, group, auth))

    async def pull(self, subscriber: bytes, group: bytes, ids: list[bytes]) -> Any:
        return await self._ask(MsgPull(subscriber, group, tuple(ids)))

    async def publish(self, body: bytes) -> Any:
        """MsgPublished or MsgReject."""
        return await self._ask(MsgPublish(body))

    async def next(self, *, blocking: bool, acks: list[tuple[int, int]] = (),
                   max_items: int = MAX_ITEMS_PER_REPLY) -> MsgReplyNext:
        return await self._ask(MsgRequestNext(blocking, tuple(acks), max_items))

    async def done(self) -> None:
        await self.driver.send(MsgDone())
