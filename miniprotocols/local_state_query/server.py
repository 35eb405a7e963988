"""The local state query server: answers from a source of ledger states.

cardano-node plays this side; the project needs it to test its client against a peer that
follows the same state table byte for byte. ``ledger.acquire(target)`` returns a handle on
the acquired state, or an :class:`~.types.AcquireFailure`; ``ledger.answer(handle, query)``
returns the raw CBOR result. The server frames the answers and nothing else. The client
closing the connection while idle is a normal end.
"""

from __future__ import annotations

from typing import Any, Protocol

from ouroboros_mux.channel import ChannelClosed, MessageChannel

from ..framework import Driver, Role, as_driver
from .spec import LOCAL_STATE_QUERY
from .types import (
    AcquireFailure,
    AcquireTarget,
    LocalStateQueryState,
    MsgAcquire,
    MsgAcquired,
    MsgDone,
    MsgFailure,
    MsgQuery,
    MsgReAcquire,
    MsgRelease,
    MsgResult,
)

__all__ = ["LedgerStates", "serve"]


class LedgerStates(Protocol):
    async def acquire(self, target: AcquireTarget) -> Any:
        """A handle on the state at ``target``, or an :class:`AcquireFailure`."""

    async def answer(self, state: Any, query: bytes) -> bytes:
        """The raw CBOR result of ``query`` asked of ``state``."""


async def serve(driver_or_channel: Driver | MessageChannel, ledger: LedgerStates) -> None:
    """Serve one client until ``MsgDone`` or, while idle, the end of its stream."""
    driver = as_driver(driver_or_channel, LOCAL_STATE_QUERY, Role.SERVER)
    state: Any = None
    while True:
        try:
            message = await driver.recv()
        except ChannelClosed:
            if driver.state is LocalStateQueryState.IDLE:
                return
            raise
        if isinstance(message, MsgDone):
            return
        if isinstance(message, (MsgAcquire, MsgReAcquire)):
            state = await ledger.acquire(message.target)
            if isinstance(state, AcquireFailure):
                await driver.send(MsgFailure(state))
                state = None
            else:
                await driver.send(MsgAcquired())
        elif isinstance(message, MsgQuery):
            await driver.send(MsgResult(await ledger.answer(state, message.query)))
        else:
            assert isinstance(message, MsgRelease)
            state = None
