"""The local state query client: what the DMQ node runs against cardano-node.

Each call is one step of the state table (acquire, query, release, done); the driver
rejects a step taken in the wrong state, so a caller cannot, say, query without having
acquired. An acquire the server refuses is not a protocol error (the protocol is back in
its idle state and may try again), so it is raised as its own :class:`AcquireFailed`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ouroboros_mux.channel import MessageChannel

from ..framework import Driver, Role, as_driver
from .spec import LOCAL_STATE_QUERY
from .types import (
    VOLATILE_TIP,
    AcquireFailure,
    AcquireTarget,
    ImmutableTip,
    MsgAcquire,
    MsgDone,
    MsgFailure,
    MsgQuery,
    MsgReAcquire,
    MsgRelease,
    MsgResult,
    SpecificPoint,
    VolatileTip,
)

__all__ = ["AcquireFailed", "LocalStateQueryClient", "describe_target"]


def describe_target(target: AcquireTarget) -> str:
    if isinstance(target, VolatileTip):
        return "the volatile tip"
    if isinstance(target, ImmutableTip):
        return "the immutable tip"
    assert isinstance(target, SpecificPoint)
    return f"point {target.point.hex()}"


class AcquireFailed(Exception):
    """The server answered an acquire with ``MsgFailure``."""

    def __init__(self, failure: AcquireFailure, target: AcquireTarget) -> None:
        super().__init__(f"cardano-node could not acquire {describe_target(target)}: {failure.reference_name}")
        self.failure = failure
        self.target = target


class LocalStateQueryClient:
    def __init__(self, driver_or_channel: Driver | MessageChannel) -> None:
        self.driver = as_driver(driver_or_channel, LOCAL_STATE_QUERY, Role.CLIENT)

    async def acquire(self, target: AcquireTarget = VOLATILE_TIP) -> None:
        """Acquire ``target``; raise :class:`AcquireFailed` if the server cannot."""
        await self.driver.send(MsgAcquire(target))
        await self._acquired_or_failed(target)

    async def reacquire(self, target: AcquireTarget = VOLATILE_TIP) -> None:
        """Swap the acquired state for ``target`` (on failure the protocol is idle again)."""
        await self.driver.send(MsgReAcquire(target))
        await self._acquired_or_failed(target)

    async def _acquired_or_failed(self, target: AcquireTarget) -> None:
        reply = await self.driver.recv()
        if isinstance(reply, MsgFailure):
            raise AcquireFailed(reply.failure, target)

    async def query(self, query: bytes) -> bytes:
        """Ask one query of the acquired state; return the result's raw CBOR."""
        await self.driver.send(MsgQuery(query))
        reply = await self.driver.recv()
        assert isinstance(reply, MsgResult)  # the only message the table allows here
        return reply.result

    async def release(self) -> None:
        await self.driver.send(MsgRelease())

    async def done(self) -> None:
        await self.driver.send(MsgDone())

    @asynccontextmanager
    async def acquired(self, target: AcquireTarget = VOLATILE_TIP) -> AsyncIterator[LocalStateQueryClient]:
        """Acquire ``target`` for the block, release it afterwards.

        When the block raises, nothing is sent: the caller is abandoning the connection,
        and a release after a half-finished query would itself be out of turn.
        """
        await self.acquire(target)
        yield self
        await self.release()
