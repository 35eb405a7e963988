"""Blocking wrappers for scripts and programs that do not run trio themselves.

Each call is one ``trio.run``: the publisher needs nothing more (it opens one connection per
message anyway); a consumer's connection lives for the duration of one :func:`consume` call,
which collects messages until it has ``count`` of them, the node has nothing more to give
(non-blocking), or ``timeout`` seconds have passed.
"""

from __future__ import annotations

import os
from typing import Any, Callable

import trio

from miniprotocols.local_msg_submission import SubmitResult

from dmq.clock import Clock, SystemClock

from .consumer import DEFAULT_RECONNECT_DELAY, Consumer, ReceivedMessage
from .deduplicator import DEFAULT_DEDUP_TTL
from dmq.kes_period import KesPeriodSource
from .network import resolve_dmq_magic
from .publisher import Publisher
from dmq.signer import DEFAULT_TTL, MessageBuilder, SigningCredentials

__all__ = ["publish", "submit", "consume"]


def publish(
    socket_path: str | os.PathLike[str],
    body: bytes,
    *,
    network: str | int,
    credentials: SigningCredentials,
    kes_periods: KesPeriodSource,
    ttl: int = DEFAULT_TTL,
    clock: Clock | None = None,
) -> SubmitResult:
    """Sign ``body`` and submit it to the node; the node's verdict."""
    builder = MessageBuilder(credentials, kes_periods, clock or SystemClock(), ttl)
    publisher = Publisher(socket_path, resolve_dmq_magic(network), builder)
    return trio.run(publisher.publish, bytes(body))


def submit(socket_path: str | os.PathLike[str], raw_message: bytes, *, network: str | int) -> SubmitResult:
    """Submit an already signed message; the node's verdict."""
    return trio.run(Publisher(socket_path, resolve_dmq_magic(network)).submit, bytes(raw_message))


def consume(
    socket_path: str | os.PathLike[str],
    *,
    network: str | int,
    count: int | None = None,
    blocking: bool = True,
    timeout: float | None = None,
    parse_body: Callable[[bytes], Any] | None = None,
    dedup_ttl: int | None = DEFAULT_DEDUP_TTL,
    reconnect_delay: float = DEFAULT_RECONNECT_DELAY,
) -> list[ReceivedMessage]:
    """Collect messages from the node over one connection.

    Blocking: request until ``count`` messages arrived (one request when ``count`` is None).
    Non-blocking: request until the node says it has no more (or ``count`` is reached).
    Messages beyond ``count`` in the last reply are not returned.
    """
    magic = resolve_dmq_magic(network)

    async def collect() -> list[ReceivedMessage]:
        received: list[ReceivedMessage] = []
        async with Consumer(socket_path, magic, parse_body=parse_body, dedup_ttl=dedup_ttl,
                            reconnect_delay=reconnect_delay) as consumer:
            with trio.move_on_after(float("inf") if timeout is None else timeout):
                while count is None or len(received) < count:
                    if blocking:
                        received.extend(await consumer.consume())
                        if count is None:
                            break
                    else:
                        batch, has_more = await consumer.poll()
                        received.extend(batch)
                        if not has_more:
                            break
        return received if count is None else received[:count]

    return trio.run(collect)
