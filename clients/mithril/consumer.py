"""Consuming messages from the local DMQ node, the Mithril aggregator's way.

``DmqConsumerClientPallas`` (``internal/mithril-dmq/src/consumer/client/pallas.rs``) keeps one
cached connection and only ever sends blocking requests (``[0, true]``). On any error it drops
the connection; the next call opens a new one, after the aggregator's wait on error (1 s by
default), and the node then replays its whole mempool, which the deduplicator absorbs
(docs/protocol/local-protocols.md 8.3). It does not check ids or signatures: the node it trusts has validated them.
Each message is delivered with ``party_id``, the bech32 pool id of its cold key, and, when the
consumer has a body parser, the parsed body; a body that does not parse fails the whole
batch, as in Mithril.

A request interrupted by cancellation stays outstanding on the connection: the next call
collects its reply instead of asking again, as the Mithril client does when it finds the
protocol busy.

A :class:`Consumer` is an async context manager: the connection's tasks live in its nursery
between calls.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable

import trio

from miniprotocols.local_msg_notification import (
    LocalNotificationState,
    MsgClientDone,
    MsgReplyMessagesBlocking,
    MsgRequestMessages,
)

from dmq.clock import Clock, SystemClock
from dmq.codec import MessageDecodeError, decode_message
from dmq.message import DmqMessage
from dmq.opcert import pool_id_bech32

from .connection import EXCHANGE_ERRORS, LocalConnection
from .deduplicator import DEFAULT_DEDUP_TTL, Deduplicator
from .errors import DmqClientError, UnreadableMessage

__all__ = ["Consumer", "ReceivedMessage", "DEFAULT_RECONNECT_DELAY"]

#: The aggregator's ``signature_processor_wait_delay_on_error_ms`` default, in seconds.
DEFAULT_RECONNECT_DELAY = 1.0


@dataclass(frozen=True, slots=True)
class ReceivedMessage:
    """One delivered message: its exact bytes decoded, who sent it, and the parsed body if asked."""

    message: DmqMessage
    party_id: str
    payload: Any = None


class Consumer:
    """Receives the node's messages over one long-lived connection."""

    def __init__(
        self,
        socket_path: str | os.PathLike[str],
        network_magic: int,
        *,
        parse_body: Callable[[bytes], Any] | None = None,
        clock: Clock | None = None,
        reconnect_delay: float = DEFAULT_RECONNECT_DELAY,
        dedup_ttl: int | None = DEFAULT_DEDUP_TTL,
    ) -> None:
        """``dedup_ttl=None`` delivers every copy the node sends (no de-duplication)."""
        if reconnect_delay < 0:
            raise ValueError(f"reconnect delay must be non-negative, got {reconnect_delay}")
        self.socket_path = os.fspath(socket_path)
        self.network_magic = network_magic
        self.parse_body = parse_body
        self.reconnect_delay = reconnect_delay
        self.deduplicator = None if dedup_ttl is None else Deduplicator(clock or SystemClock(), dedup_ttl)
        self._connection: LocalConnection | None = None
        self._nursery: trio.Nursery | None = None
        self._nursery_manager = None
        self._reconnect_at = -float("inf")
        #: Connections opened so far (each one replays the node's mempool).
        self.connections_opened = 0

    # -- lifetime ------------------------------------------------------------------
    async def __aenter__(self) -> Consumer:
        self._nursery_manager = trio.open_nursery()
        self._nursery = await self._nursery_manager.__aenter__()
        return self

    async def __aexit__(self, exc_type, exc, traceback) -> bool:
        # The block's own exception is not handed to the nursery, which would wrap it in an
        # exception group: the connection is aborted, its task ends, the exception goes on as is.
        await self._close_connection(graceful=exc_type is None)
        manager, self._nursery_manager, self._nursery = self._nursery_manager, None, None
        await manager.__aexit__(None, None, None)
        return False

    @property
    def connected(self) -> bool:
        return self._connection is not None and not self._connection.ended

    # -- consuming -----------------------------------------------------------------
    async def consume(self) -> list[ReceivedMessage]:
        """Wait for the next messages (one blocking request); new ones only, when de-duplicating."""
        received, _ = await self._request(blocking=True)
        return received

    async def poll(self) -> tuple[list[ReceivedMessage], bool]:
        """Ask without waiting (a non-blocking request): the messages and the node's "has more"."""
        return await self._request(blocking=False)

    async def _request(self, *, blocking: bool) -> tuple[list[ReceivedMessage], bool]:
        connection = await self._connect()
        try:
            raws, has_more = await self._exchange(connection, blocking)
            received = [self._receive(raw) for raw in raws]
        except EXCHANGE_ERRORS as exc:
            self._drop()
            raise connection.lost(exc) from None
        except UnreadableMessage:
            self._drop()
            raise
        if self.deduplicator is not None:
            received = self.deduplicator.fresh(received, lambda item: item.message.body)
        return received, has_more

    async def _exchange(self, connection: LocalConnection, blocking: bool) -> tuple[tuple[bytes, ...], bool]:
        driver = connection.notification.driver
        if driver.state is LocalNotificationState.IDLE:
            # Queuing three bytes never blocks; shielded so that the state and the wire agree.
            with trio.CancelScope(shield=True):
                await driver.send(MsgRequestMessages(blocking))
        reply = await driver.recv()
        if isinstance(reply, MsgReplyMessagesBlocking):
            return reply.messages, False
        return reply.messages, reply.has_more

    def _receive(self, raw: bytes) -> ReceivedMessage:
        try:
            message = decode_message(raw)
        except MessageDecodeError as exc:
            raise UnreadableMessage(f"DMQ node at {self.socket_path} sent a message that does not decode: {exc}") from None
        payload = None
        if self.parse_body is not None:
            try:
                payload = self.parse_body(message.body)
            except ValueError as exc:
                raise UnreadableMessage(
                    f"message {message.message_id.hex()}: the body does not parse: {exc}") from None
        return ReceivedMessage(message, pool_id_bech32(message.pool_id), payload)

    # -- the cached connection -----------------------------------------------------
    async def _connect(self) -> LocalConnection:
        if self._nursery is None:
            raise RuntimeError("use the Consumer as an async context manager (async with Consumer(...) as c)")
        if self._connection is not None and not self._connection.ended:
            return self._connection
        self._connection = None
        await trio.sleep_until(self._reconnect_at)
        try:
            self._connection = await LocalConnection.open(self._nursery, self.socket_path, self.network_magic)
        except DmqClientError:
            self._reconnect_at = trio.current_time() + self.reconnect_delay
            raise
        self.connections_opened += 1
        return self._connection

    def _drop(self) -> None:
        if self._connection is not None:
            self._connection.abort()
            self._connection = None
        self._reconnect_at = trio.current_time() + self.reconnect_delay

    async def _close_connection(self, *, graceful: bool) -> None:
        connection, self._connection = self._connection, None
        if connection is None or connection.ended:
            return
        driver = connection.notification.driver
        if not graceful or driver.state is not LocalNotificationState.IDLE:
            connection.abort()
            return
        try:
            with trio.CancelScope(shield=True):
                await driver.send(MsgClientDone())
                await connection.close()
        except EXCHANGE_ERRORS:
            connection.abort()
